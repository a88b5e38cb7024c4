"""A PDF with a text layer as a document: its pages' text, each block with its page number.

The file is binary; the document's text is the text layer as pypdf extracts it, page after
page, pages separated by a form feed on a line of its own (`PAGE_BREAK`, as `pdftotext`
separates them), ligatures (`ﬁ`) written out. Spans and quotes index this text
(`Document.media_type` is `PDF`). A PDF without a text layer (a scan) or one that cannot be
opened is an `IngestError` with the reason: it is skipped, the rest is ingested.

The plain-text reader (`ingest.structure`) cuts the text into blocks, and each block's heading
path starts with its page ("page 3"): the provenance a citation shows.
"""

from __future__ import annotations

import io
import re

from ingest.structure import parse_blocks
from kg.documents import Block, Document
from kg.errors import IngestError

__all__ = ["PAGE_BREAK", "PDF", "page_of", "parse_pdf", "pdf_text"]

PDF = "application/pdf"
PAGE_BREAK = "\n\f\n"
_LIGATURES = str.maketrans(
    {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
)
_TRAILING = re.compile(r"[ \t]+$", re.M)


def pdf_text(data: bytes) -> str:
    """The text layer of a PDF file's bytes (see the module docstring).

    Raises `IngestError` for an encrypted, unreadable or text-less PDF.
    """
    from pypdf import PdfReader  # only for a corpus with PDFs

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise IngestError("encrypted PDF: decrypt it first (e.g. qpdf --decrypt)")
        pages = [page.extract_text() or "" for page in reader.pages]
    except IngestError:
        raise
    except Exception as err:  # a damaged file fails anywhere in pypdf: one file, one reason
        raise IngestError(f"unreadable PDF: {type(err).__name__}: {err}") from None
    texts = [_clean(p) for p in pages]
    if not any(t.strip() for t in texts):
        raise IngestError(
            f"PDF without a text layer ({len(pages)} pages, no text): run OCR on it first "
            "(e.g. ocrmypdf) and ingest the result"
        )
    return PAGE_BREAK.join(texts) + "\n"


def _clean(page: str) -> str:
    r"""A page's text with '\n' newlines, no NUL or form feed, ligatures written out.

    >>> _clean("e\ufb03cient  \r\nrun\x00")
    'efficient\nrun'
    """
    text = page.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\x00", "")
    return _TRAILING.sub("", text.translate(_LIGATURES)).strip("\n")


def page_of(text: str, offset: int) -> int:
    """The page (1-based) that holds `offset` of a PDF document's text.

    >>> text = "one" + PAGE_BREAK + "two"
    >>> page_of(text, 0), page_of(text, text.index("two"))
    (1, 2)
    """
    return text.count("\f", 0, offset) + 1


def parse_pdf(doc: Document) -> list[Block]:
    """The blocks of a PDF's text, each heading path led by the block's page."""
    blocks = []
    breaks = [m.start() for m in re.finditer("\f", doc.text)]
    page, at = 1, 0
    for block in parse_blocks(doc):
        while at < len(breaks) and breaks[at] < block.start:
            at += 1
            page += 1
        blocks.append(
            block.model_copy(update={"heading_path": (f"page {page}", *block.heading_path)})
        )
    return blocks
