"""The document formats kgqa reads, and the reader that cuts each into blocks.

- `.md`, `.markdown` (text/markdown): the file; the Markdown reader (`ingest.markdown`), front
  matter and MyST's cell lines masked (`ingest.formats.dialects`).
- `.mdx` (text/mdx): the file; the Markdown reader, JSX and `import`/`export` masked, and no
  indented code (MDX has none: text indented under a tag is text).
- `.qmd`, `.Rmd` (Quarto and R Markdown: `text/x-quarto`): the file; the Markdown reader,
  Pandoc's front matter, div fences and heading attributes masked, every fence code (a cell).
- `.rst`, `.rest` (text/x-rst): the file; docutils (`ingest.formats.rst`).
- `.ipynb` (application/x-ipynb+json): Markdown cells and fenced code cells
  (`ingest.formats.notebook`); the Markdown reader.
- `.pdf` (application/pdf): the text layer, pages split by form feeds (`ingest.formats.pdf`);
  the plain-text reader, "page N" first in each heading path.
- `.html`, `.htm` (text/html): the page as Markdown-like text; the Markdown reader.
- `.txt`, no suffix (text/plain): the file; Markdown if it reads as Markdown, else the
  plain-text reader (`ingest.structure`).

For the formats whose file is text (Markdown, MDX, reStructuredText, plain text) every span
indexes the file as decoded; for the others (notebooks, PDFs, HTML) it indexes the text above,
which is what the store keeps as the document and what quotes are checked against.
"""

from __future__ import annotations

from pathlib import Path

from ingest.formats.dialects import MDX, QUARTO, masked, unmasked
from ingest.formats.notebook import NOTEBOOK
from ingest.formats.pdf import PDF
from kg.documents import Block, Document

__all__ = [
    "MDX",
    "NOTEBOOK",
    "PDF",
    "QUARTO",
    "RST",
    "document_blocks",
    "media_type_of",
    "reads_as_essay",
]

RST = "text/x-rst"
_MEDIA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdx": MDX,
    ".qmd": QUARTO,
    ".rmd": QUARTO,
    ".rst": RST,
    ".rest": RST,
    ".ipynb": NOTEBOOK,
    ".pdf": PDF,
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    "": "text/plain",
}


def media_type_of(path: Path) -> str | None:
    """The media type of a file by its suffix, or None for a type kgqa does not read.

    >>> media_type_of(Path("docs/index.rst")), media_type_of(Path("a.png"))
    ('text/x-rst', None)
    >>> media_type_of(Path("posts/serving.qmd")), media_type_of(Path("report.Rmd"))
    ('text/x-quarto', 'text/x-quarto')
    """
    return _MEDIA_TYPES.get(path.suffix.lower())


def document_blocks(doc: Document) -> list[Block]:
    """A document's structural blocks, by the reader of its format (module docstring)."""
    from ingest.markdown import is_markdown, parse_markdown
    from ingest.structure import parse_blocks

    if doc.media_type == RST:
        from ingest.formats.rst import parse_rst  # docutils only for a corpus with .rst

        return parse_rst(doc)
    if doc.media_type == PDF:
        from ingest.formats.pdf import parse_pdf

        return parse_pdf(doc)
    if doc.media_type in (MDX, NOTEBOOK, QUARTO, "text/markdown") or is_markdown(doc):
        text = masked(doc.text, mdx=doc.media_type == MDX, pandoc=doc.media_type == QUARTO)
        if text == doc.text:
            return parse_markdown(doc, mdx=doc.media_type == MDX)
        view = doc.model_copy(update={"text": text, "media_type": "text/markdown"})
        return unmasked(parse_markdown(view, mdx=doc.media_type == MDX), doc.text)
    return parse_blocks(doc)


def reads_as_essay(doc: Document) -> bool:
    """Whether the essay extractor reads the document (decision trees, rankings, `A：B` lists):
    plain text and PDFs, and Markdown in plain words; docs formats with markup (reST, MDX,
    notebooks) are read by the corpus linker alone, as READMEs are."""
    from ingest.markdown import is_markdown, is_plain_essay

    if doc.media_type in (RST, MDX, NOTEBOOK):
        return False
    if doc.media_type == PDF:
        return True
    return not is_markdown(doc) or is_plain_essay(doc)
