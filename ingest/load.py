"""Load corpus files into `Document`s: Markdown, MDX, Quarto and R Markdown, reStructuredText,
plain text, HTML (UTF-8 or GB18030), Jupyter notebooks and PDFs with a text layer
(`ingest.formats`).

Every file under a corpus root becomes either a `Document` or a one-line reason why it was skipped
(`LoadResult`). Hidden files and folders (names starting with '.') are skipped silently; every other
file that is not loaded yields a skip with its reason (unsupported type, empty, binary, undecodable,
too large, duplicate id, an unreadable notebook, a PDF without text). Newlines are normalised to
'\\n'; the decoded, normalised text is what all spans index. HTML is converted to Markdown-like
text (see `html_to_text`), a notebook to its cells' text (`ingest.formats.notebook`), a PDF to its
text layer (`ingest.formats.pdf`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

import charset_normalizer
from pydantic import BaseModel, ConfigDict, model_validator

from ingest.context import MANIFEST_NAMES
from ingest.formats import NOTEBOOK, PDF, media_type_of
from kg.documents import Document
from kg.errors import IngestError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "LoadResult",
    "decode_bytes",
    "html_to_text",
    "iter_corpus",
    "load_document",
]

DEFAULT_MAX_BYTES = 20 * 1024 * 1024
_GB_FAMILY = {"gb18030", "gbk", "gb2312", "hz"}
_SNIFF = 8192


class LoadResult(BaseModel):
    """One corpus file: its `document`, or the one-line `skip_reason` it was not loaded."""

    model_config = ConfigDict(frozen=True)

    path: Path
    document: Document | None = None
    skip_reason: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> LoadResult:
        if (self.document is None) == (self.skip_reason is None):
            raise ValueError("a LoadResult has either a document or a skip_reason")
        return self


def _is_binary(data: bytes) -> bool:
    """NUL bytes, or more than 10% control bytes, in the first 8 KiB."""
    head = data[:_SNIFF]
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls > 0.1 * max(len(head), 1)


def _looks_like_cjk_text(text: str) -> bool:
    """Most non-ASCII characters are CJK ideographs or CJK/full-width punctuation."""
    wide = [c for c in text if ord(c) > 127]
    if not wide:
        return True
    cjk = sum(
        1
        for c in wide
        if "\u4e00" <= c <= "\u9fff"
        or "\u3000" <= c <= "\u303f"
        or "\uff00" <= c <= "\uffef"
        or "\u2000" <= c <= "\u27bf"
    )
    return cjk >= 0.8 * len(wide)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode file bytes to text; return (text, encoding name). Raise `IngestError` if impossible.

    Tries, in order: UTF-8 with BOM, UTF-16 with BOM, UTF-8, GB18030 (covers GBK/GB2312).

    >>> decode_bytes("框架".encode("gbk"))
    ('框架', 'gb18030')
    >>> decode_bytes(b"\\xef\\xbb\\xbfhi")
    ('hi', 'utf-8-sig')
    """
    if data.startswith(b"\xef\xbb\xbf"):
        candidates = ["utf-8-sig"]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        candidates = ["utf-16"]
    else:
        if _is_binary(data):
            raise IngestError("binary file (NUL or control bytes)")
        candidates = ["utf-8", "gb18030"]
    for enc in candidates:
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            continue
        if enc != "gb18030" or _looks_like_cjk_text(text):
            return text, enc
    guess = charset_normalizer.from_bytes(data[: 1024 * 1024]).best()
    if guess is not None and guess.encoding.lower().replace("_", "") in _GB_FAMILY:
        try:
            return data.decode("gb18030"), "gb18030"
        except UnicodeDecodeError:
            pass
    found = f" (looks like {guess.encoding})" if guess is not None else ""
    raise IngestError(f"undecodable text: not UTF-8, UTF-16 or GB18030{found}")


def load_document(path: Path, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Load one file as a `Document` whose id is `path` relative to `root` ('/'-separated).

    Raises `IngestError` (with the document id) for an unsupported type, a file over `max_bytes`
    (checked before reading), an empty, binary or undecodable file.
    """
    doc_id = path.relative_to(root).as_posix()
    media_type = media_type_of(path)
    if media_type is None:
        raise IngestError(f"unsupported file type {path.suffix!r}", doc=doc_id)
    size = path.stat().st_size
    if size > max_bytes:
        raise IngestError(
            f"file larger than the {max_bytes / 2**20:.1f} MiB limit ({size / 2**20:.1f} MiB)",
            doc=doc_id,
        )
    if size == 0:
        raise IngestError("empty file", doc=doc_id)
    data = path.read_bytes()
    try:
        text, encoding = _document_text(data, media_type)
    except IngestError as err:
        raise IngestError(str(err), doc=doc_id) from None
    if not text.strip():
        raise IngestError("empty file (only whitespace or markup)", doc=doc_id)
    if "\x00" in text:
        raise IngestError("binary file (NUL characters)", doc=doc_id)
    return Document.from_text(doc_id, text, encoding=encoding, media_type=media_type)


def _document_text(data: bytes, media_type: str) -> tuple[str, str]:
    """The text a document's spans index, and the encoding it was decoded from."""
    if media_type == PDF:
        from ingest.formats.pdf import pdf_text  # pypdf only for a corpus with PDFs

        return pdf_text(data), "pdf"
    text, encoding = decode_bytes(data)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if media_type == "text/html":
        text = html_to_text(text)
    elif media_type == NOTEBOOK:
        from ingest.formats.notebook import notebook_text  # nbformat only for notebooks

        text = notebook_text(text)
    return text, encoding


IGNORE_FILE = ".kgqaignore"


def _ignore_patterns(root: Path) -> list[str]:
    """Glob patterns (relative paths) from `root/.kgqaignore`: files that are not documents.

    One pattern per line, `#` starts a comment; e.g. the dev question set kept beside the corpus.
    """
    try:
        lines = (root / IGNORE_FILE).read_text("utf-8").splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _corpus_files(root: Path) -> list[Path]:
    """Non-hidden, non-ignored files under `root` (or `root` itself) but corpus manifests,
    sorted by relative path."""
    if root.is_file():
        return [root]
    ignored = _ignore_patterns(root)
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if name.startswith(".") or name in MANIFEST_NAMES:
                continue  # hidden, or what the folder is (`ingest.context`): no document
            if not any(fnmatch.fnmatch(rel, p) for p in ignored):
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def iter_corpus(roots: list[Path], *, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[LoadResult]:
    """Load every file under each root, in root order then sorted path order.

    A root that is a file is loaded with its parent as root. A missing root, or a file whose id was
    already loaded from an earlier root, yields a skip.
    """
    seen: dict[str, Path] = {}
    for root in roots:
        if not root.exists():
            yield LoadResult(path=root, skip_reason="corpus root does not exist")
            continue
        base = root.parent if root.is_file() else root
        for path in _corpus_files(root):
            doc_id = path.relative_to(base).as_posix()
            if doc_id in seen:
                reason = f"duplicate document id {doc_id!r} (already loaded from {seen[doc_id]})"
                yield LoadResult(path=path, skip_reason=reason)
                continue
            try:
                document = load_document(path, base, max_bytes=max_bytes)
            except IngestError as err:
                yield LoadResult(path=path, skip_reason=str(err).removeprefix(f"{doc_id}: "))
                continue
            except OSError as err:
                yield LoadResult(path=path, skip_reason=f"cannot read file: {err.strerror}")
                continue
            seen[doc_id] = path
            yield LoadResult(path=path, document=document)


def html_to_text(html: str) -> str:
    """Convert HTML to Markdown-like text that the structure parser reads.

    Headings become `#` lines, list items `- ` / `1. ` lines (two spaces per nesting level),
    tables pipe tables with a `|---|` separator after the first row, `<pre>` fenced code blocks.

    >>> html_to_text("<h2>Pick</h2><ul><li>PyTorch</li></ul>")
    '## Pick\\n\\n- PyTorch\\n'
    """
    from ingest.html_text import html_to_markdown  # BeautifulSoup only for a corpus with HTML

    return html_to_markdown(html)
