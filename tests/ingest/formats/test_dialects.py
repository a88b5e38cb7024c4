"""MDX, MyST and front matter: what is no text is masked, offsets stay the file's."""

from __future__ import annotations

from pathlib import Path

from ingest.formats import MDX, QUARTO, document_blocks
from ingest.formats.dialects import masked
from ingest.load import load_document
from ingest.markup import clean_inline
from ingest.units import document_units
from kg.documents import BlockKind, Document, UnitKind

MDX_PAGE = """\
---
title: Deploy
sidebar_position: 2
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
export const meta = {
  author: 'x',
};

# Deploy Brindle

<Tabs groupId="os" values={[{label: 'Linux', value: 'linux'}, {label: 'Mac > 12', value: 'mac'}]}>
<TabItem value="linux">

Brindle runs on **NVIDIA GPUs** under Linux.

```bash
pip install brindle
```

</TabItem>
</Tabs>

{/* a comment for the site */}

<Callout type="warning">Windows is not supported.</Callout>

| Engine | tok/s |
|---|---|
| Brindle | 120 |
"""


def test_mdx_reads_markdown_without_jsx_or_esm(tmp_path: Path) -> None:
    path = tmp_path / "deploy.mdx"
    path.write_text(MDX_PAGE, "utf-8")
    doc = load_document(path, tmp_path)
    assert doc.media_type == MDX and doc.text == MDX_PAGE  # the file is the document
    blocks = document_blocks(doc)
    for block in blocks:
        assert block.text == doc.text[block.start : block.end]
        for row, spans in zip(block.rows, block.cell_spans, strict=True):
            assert row == [doc.text[s:e] for s, e in spans]
    assert [b.kind for b in blocks] == [
        BlockKind.HEADING,
        BlockKind.PROSE,
        BlockKind.CODE,
        BlockKind.PROSE,
        BlockKind.TABLE,
    ]
    units = document_units(doc, blocks)
    texts = [u.text for u in units]
    assert "Brindle runs on NVIDIA GPUs under Linux." in texts
    assert "Windows is not supported." in texts
    assert not any("import" in t or "TabItem" in t or "comment" in t for t in texts)
    for unit in units:
        if unit.kind == UnitKind.SENTENCE:
            assert clean_inline(doc.text, unit.start, unit.end).text == unit.text


def test_mdx_text_indented_under_a_tag_is_text(tmp_path: Path) -> None:
    page = (
        '# Install\n\n<Tabs>\n  <TabItem value="pip">\n\n'
        "    Brindle installs from PyPI on Linux.\n\n"
        "    ```bash\n    pip install brindle\n    ```\n\n  </TabItem>\n</Tabs>\n"
    )
    path = tmp_path / "install.mdx"
    path.write_text(page, "utf-8")
    blocks = document_blocks(load_document(path, tmp_path))
    assert [(b.kind, b.text) for b in blocks] == [
        (BlockKind.HEADING, "# Install"),
        (BlockKind.PROSE, "Brindle installs from PyPI on Linux."),
        (BlockKind.CODE, "```bash\n    pip install brindle\n    ```"),
    ]


def test_masking_keeps_every_offset() -> None:
    out = masked(MDX_PAGE, mdx=True)
    assert len(out) == len(MDX_PAGE)
    assert [i for i, c in enumerate(out) if c == "\n"] == [
        i for i, c in enumerate(MDX_PAGE) if c == "\n"
    ]
    assert "pip install brindle" in out and "<Tabs" not in out and "import Tabs" not in out


JUPYTEXT = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  name: python3
---

```{raw-cell}
Licensed under the Apache License.
```

+++

(parallel)=
# Parallel Brindle

```{note}
Brindle shards arrays **automatically**.
```

```{code-cell}
:tags: [hide-output]
import brindle
```
"""


def test_jupytext_headers_and_myst_lines_are_no_text() -> None:
    doc = Document.from_text("parallel.md", JUPYTEXT, media_type="text/markdown")
    blocks = document_blocks(doc)
    assert [b.kind for b in blocks] == [BlockKind.HEADING, BlockKind.PROSE, BlockKind.CODE]
    assert blocks[0].heading_path == ("Parallel Brindle",)
    assert blocks[1].text == "Brindle shards arrays **automatically**."
    assert blocks[2].code is not None and blocks[2].code.strip() == "import brindle"
    for block in blocks:
        assert block.text == doc.text[block.start : block.end]


def test_plain_markdown_is_read_as_before() -> None:
    text = "# Brindle\n\n+++ not a cell break in plain Markdown\n\n- a\n"
    doc = Document.from_text("r.md", text, media_type="text/markdown")
    assert masked(text) == text
    assert [b.kind for b in document_blocks(doc)] == [
        BlockKind.HEADING,
        BlockKind.PROSE,
        BlockKind.LIST,
    ]


QUARTO_PAGE = """\
---
title: "Serving Brindle"
format: html
---

## Which server {#sec-server}

::: {.callout-note}
Brindle serves **four models** on one GPU.
:::

```{python}
#| echo: false
# a comment in a cell is code, not a heading
import brindle
```

::: warning
Windows is not supported.
:::
"""


def test_quarto_cells_are_code_and_divs_hold_text(tmp_path: Path) -> None:
    for name in ("serving.qmd", "serving.Rmd"):
        path = tmp_path / name
        path.write_text(QUARTO_PAGE, "utf-8")
        doc = load_document(path, tmp_path)
        assert doc.media_type == QUARTO and doc.text == QUARTO_PAGE
        blocks = document_blocks(doc)
        for block in blocks:
            assert block.text == doc.text[block.start : block.end]
        assert [b.kind for b in blocks] == [
            BlockKind.HEADING,
            BlockKind.PROSE,
            BlockKind.CODE,
            BlockKind.PROSE,
        ]
        assert blocks[0].heading_path == ("Which server",)
        assert blocks[1].text == "Brindle serves **four models** on one GPU."
        assert blocks[2].code is not None and "import brindle" in blocks[2].code
        assert blocks[3].text == "Windows is not supported."
