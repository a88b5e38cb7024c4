"""Ingest benchmark: the bundled corpus, and corpora of real Markdown documents of growing size.

The Markdown documents are the long descriptions in the METADATA of the installed Python
distributions (`importlib.metadata`). Where fewer distributions than asked are installed, the
longest descriptions are split at headings / blank lines into further documents of at least
`--min-chars` characters (the report says how many documents are such pieces).

Reported per corpus: documents, chunks embedded, seconds (model load excluded: the embedder is
loaded and warmed once before timing, and that load is reported apart), documents/s, chunks/s,
peak resident memory (ru_maxrss of this process, monotonic: read it per size in growing order),
and the time of each stage (parse+extract+chunk vs. embedding vs. the rest).

    python benchmarks/bench_ingest.py                    # bundled corpus + 100, 300, 1000 docs
    python benchmarks/bench_ingest.py --sizes 100 300    # extrapolate 1000 from these
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ingest.embed import E5Embedder, EmbedderWrapper, Vectors
from ingest.pipeline import ingest_corpus
from kg.lexicon import Lexicon

REPO = Path(__file__).resolve().parents[1]


class TimedEmbedder(EmbedderWrapper):
    """The real embedder, timing its calls (so embedding can be told apart from the rest)."""

    def __init__(self, inner: E5Embedder) -> None:
        super().__init__(inner)
        self.seconds = 0.0
        self.passages = 0

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed and time."""
        start = time.perf_counter()
        out = self.inner.embed_passages(texts)
        self.seconds += time.perf_counter() - start
        self.passages += len(texts)
        return out


class Figures(BaseModel):
    """One timed ingest."""

    corpus: str
    documents: int
    pieces: int = 0
    chars: int
    chunks: int
    seconds: float
    embed_seconds: float
    docs_per_s: float
    chunks_per_s: float
    peak_rss_mb: float


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _descriptions(min_chars: int) -> list[tuple[str, str]]:
    """(name, Markdown text) of every installed distribution with a long description."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        meta: Any = dist.metadata  # an email.message.Message underneath
        name = str(meta.get("Name") or "")
        body = meta.get_payload() or meta.get("Description") or ""
        if name and len(body.strip()) >= min_chars:
            found.setdefault(re.sub(r"[^\w.-]", "_", name.lower()), str(body))
    return sorted(found.items())


def _pieces(text: str, min_chars: int) -> list[str]:
    """Split a description at headings (or blank lines) into parts of at least `min_chars`."""
    parts = re.split(r"\n(?=#{1,3} )|\n\s*\n(?=\S)", text)
    out: list[str] = []
    buffer = ""
    for part in parts:
        buffer = f"{buffer}\n\n{part}" if buffer else part
        if len(buffer) >= min_chars:
            out.append(buffer)
            buffer = ""
    if buffer and out:
        out[-1] += "\n\n" + buffer
    return out or [text]


def markdown_corpus(target: Path, count: int, min_chars: int = 600) -> tuple[int, int]:
    """Write `count` Markdown documents into `target`; return (documents, of which pieces)."""
    whole = _descriptions(min_chars)
    docs = [(name, text) for name, text in whole]
    pieces = 0
    if len(docs) < count:
        for name, text in sorted(whole, key=lambda kv: -len(kv[1])):
            parts = _pieces(text, min_chars)
            for i, part in enumerate(parts[1:], start=1):
                if len(docs) >= count:
                    break
                docs.append((f"{name}--part{i}", part))
                pieces += 1
    docs = docs[:count]
    target.mkdir(parents=True, exist_ok=True)
    for name, text in docs:
        (target / f"{name}.md").write_text(text, encoding="utf-8")
    return len(docs), pieces


def timed_ingest(
    label: str, corpus: Path, embedder: TimedEmbedder, lexicon: Lexicon, pieces: int = 0
) -> Figures:
    """Ingest `corpus` into a fresh store and measure it."""
    store = Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        embedder.seconds, embedder.passages = 0.0, 0
        start = time.perf_counter()
        report = ingest_corpus([corpus], store, embedder, lexicon)
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(store, ignore_errors=True)
    chars = sum(
        len(p.read_text("utf-8", errors="replace")) for p in corpus.rglob("*") if p.is_file()
    )
    return Figures(
        corpus=label,
        documents=report.documents,
        pieces=pieces,
        chars=chars,
        chunks=report.embedded_chunks,
        seconds=round(seconds, 2),
        embed_seconds=round(embedder.seconds, 2),
        docs_per_s=round(report.documents / seconds, 2),
        chunks_per_s=round(report.embedded_chunks / seconds, 2),
        peak_rss_mb=round(_peak_rss_mb(), 1),
    )


def _print(fig: Figures) -> None:
    rest = fig.seconds - fig.embed_seconds
    print(
        f"{fig.corpus:>16}: {fig.documents:5d} docs ({fig.pieces} pieces) "
        f"{fig.chars / 1e6:6.2f} M chars "
        f"{fig.chunks:6d} chunks  {fig.seconds:8.2f} s (embed {fig.embed_seconds:.2f} s, "
        f"rest {rest:.2f} s)  {fig.docs_per_s:7.2f} docs/s  {fig.chunks_per_s:6.2f} chunks/s  "
        f"peak RSS {fig.peak_rss_mb:.0f} MB",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 300, 1000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-bundled", action="store_true")
    args = parser.parse_args(argv)

    lexicon = Lexicon.default()
    start = time.perf_counter()
    inner = E5Embedder(num_threads=args.threads)
    inner.embed_passages(["warm up"])
    lexicon.entity_mentions("PyTorch")  # compiles the mention regex once
    print(f"model + lexicon load: {time.perf_counter() - start:.2f} s", flush=True)
    embedder = TimedEmbedder(inner)

    results: list[Figures] = []
    if not args.skip_bundled:
        results.append(timed_ingest("bundled corpus", REPO / "corpus", embedder, lexicon))
        _print(results[-1])
    available = len(_descriptions(600))
    print(f"installed distributions with a description >= 600 chars: {available}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-md-") as tmp:
        for size in sorted(args.sizes):
            corpus = Path(tmp) / f"md-{size}"
            _made, pieces = markdown_corpus(corpus, size)
            results.append(timed_ingest(f"markdown x{size}", corpus, embedder, lexicon, pieces))
            _print(results[-1])
    md = [r for r in results if r.corpus.startswith("markdown")]
    if len(md) >= 2:
        a, b = md[0], md[-1]
        slope = (b.seconds - a.seconds) / max(b.documents - a.documents, 1)
        per_chunk = (b.seconds - a.seconds) / max(b.chunks - a.chunks, 1)
        print(
            f"growth: {slope:.3f} s per extra document, {per_chunk:.3f} s per extra chunk "
            f"(s/chunk {a.seconds / max(a.chunks, 1):.3f} -> {b.seconds / max(b.chunks, 1):.3f})"
        )
        if max(r.documents for r in md) < 1000:
            print(f"extrapolated 1000 documents: {b.seconds + slope * (1000 - b.documents):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
