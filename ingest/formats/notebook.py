"""A Jupyter notebook as a document: its Markdown cells as text, its code cells as code blocks.

The file is JSON, which no person quotes; the document's text is what a reader of the notebook
sees, written as Markdown: each Markdown cell's source as it is, each code cell's source in a
fence labelled with the notebook's language, cells separated by a blank line. Outputs, raw
cells and metadata are dropped. Spans and quotes index this text (`Document.media_type` is
`NOTEBOOK`); the Markdown reader cuts it into blocks.
"""

from __future__ import annotations

import re
from typing import Any

from kg.errors import IngestError

__all__ = ["NOTEBOOK", "notebook_text"]

NOTEBOOK = "application/x-ipynb+json"


def _fence(code: str) -> str:
    """A backtick fence longer than any run of backticks at a line start in the code.

    >>> _fence("x = 1"), _fence("```\\nnested\\n```")
    ('```', '````')
    """
    runs = [len(m.group(0).lstrip()) for m in re.finditer(r"(?m)^[ \t]*`{3,}", code)]
    return "`" * max([3, *(n + 1 for n in runs)])


def _language(metadata: Any) -> str:
    """The notebook's language: its kernel's, else its language_info's, else python."""
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = (metadata.get(key) or {}).get(field)
        if isinstance(value, str) and re.fullmatch(r"[\w+#.\-]{1,20}", value):
            return value.lower()
    return "python"


def notebook_text(raw: str) -> str:
    """The readable text of a notebook's JSON (see the module docstring).

    Raises `IngestError` when the JSON is no notebook nbformat can read.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook()
    >>> nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("x = 1")]
    >>> print(notebook_text(nbformat.writes(nb)))
    # Title
    <BLANKLINE>
    ```python
    x = 1
    ```
    <BLANKLINE>
    """
    import nbformat  # only for a corpus with notebooks

    try:
        notebook = nbformat.reads(raw, as_version=nbformat.NO_CONVERT)
        if notebook.get("nbformat", 0) < 4:
            notebook = nbformat.convert(notebook, 4)
    except Exception as err:  # nbformat raises JSON, schema and conversion errors of its own
        raise IngestError(f"unreadable notebook: {type(err).__name__}: {err}") from None
    language = _language(notebook.get("metadata") or {})
    parts: list[str] = []
    for cell in notebook.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        source = source.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        if not source.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(source)
        elif cell.get("cell_type") == "code":
            fence = _fence(source)
            parts.append(f"{fence}{language}\n{source}\n{fence}")
    return "\n\n".join(parts) + "\n" if parts else ""
