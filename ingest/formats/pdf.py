"""A PDF with a text layer as a document: its pages' text, each block with its page number.

The file is binary; the document's text is the text layer as pypdf extracts it, page after
page, pages separated by a form feed on a line of its own (`PAGE_BREAK`, as `pdftotext`
separates them), a character the text layer writes in a presentation form read as the
character it presents (`_PRESENTATION`), a control character as the space it stands for.
Spans and quotes index this text (`Document.media_type` is `PDF`). A PDF without a text
layer (a scan) or one that cannot be opened is an `IngestError` with the reason: it is
skipped, the rest is ingested.

The plain-text reader (`ingest.structure`) cuts the text into blocks, and each block's heading
path starts with its page ("page 3"): the provenance a citation shows.
"""

from __future__ import annotations

import io
import re
import unicodedata

from ingest.structure import parse_blocks
from kg.documents import Block, Document
from kg.errors import IngestError

__all__ = ["PAGE_BREAK", "PDF", "page_of", "parse_pdf", "pdf_text"]

PDF = "application/pdf"
PAGE_BREAK = "\n\f\n"
#: presentation forms a text layer writes for ordinary characters, which Unicode's
#: compatibility normalization (NFKC) folds into them: Latin ligatures (ﬁ), the Kangxi radicals
#: and radical supplement that some producers map ideographs to (⾏ for 行, ⽤ for 用: search for
#: 行 finds nothing), CJK compatibility ideographs and mathematical letters (𝑖 for i)
_PRESENTATION = re.compile(
    "[\ufb00-\ufb06\u2e80-\u2fdf\uf900-\ufaff\U0001d400-\U0001d7ff\U0002f800-\U0002fa1f]"
)
#: control characters are never text: a font that maps its space glyph to one (U+0001) writes
#: "fused\x01kernels" for two words
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
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
    r"""A page's text with '\n' newlines, a space for each control character (no form feed
    is left), presentation forms read as the characters they present.

    >>> _clean("e\ufb03cient  \r\nrun\x00")
    'efficient\nrun'
    >>> _clean("在\x01CPU\x01上运\u2f8f，\U0001d456\x01=\x011")
    '在 CPU 上运行，i = 1'
    """
    text = page.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    text = _CONTROL.sub(" ", text)
    text = _PRESENTATION.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)
    return _TRAILING.sub("", text).strip("\n")


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
