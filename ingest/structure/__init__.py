"""Cut a `Document` into structural `Block`s, each with its exact span in `Document.text`.

Recognised: headings (Markdown `#`, and in plain text: `一、` / `（一）` / `第一章` / `1.` / `1.1`
numbered lines, a document title, and short standalone title lines), pipe tables (outer pipes
optional), decision trees (`├─ └─ │`), bullet and numbered lists (nested by indentation), `A：B`
definitions, code (fenced, or a bare language line such as `python` followed by code whose fences
were lost), and prose paragraphs. Invariants: `block.text == doc.text[block.start:block.end]`,
blocks are sorted and never overlap, and every item/cell span slices the document to its string.

Markdown mode (media type Markdown/HTML, or any `#` heading in the text) only trusts `#` headings.

Modules: `code` (pass 1: lines and code regions), `parser` (pass 2: blocks), `items` (cells,
list items, depths), `inline` (definitions, inline commands, arrows, titles).
"""

from __future__ import annotations

from ingest.structure.inline import (
    command_spans,
    definition_spans,
    split_arrows,
    split_definition,
)
from ingest.structure.parser import parse_blocks

__all__ = [
    "command_spans",
    "definition_spans",
    "parse_blocks",
    "split_arrows",
    "split_definition",
]
