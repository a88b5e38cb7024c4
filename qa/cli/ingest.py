"""`kgqa ingest`: build or update the store from the corpus directories."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingest.pipeline import IngestReport
    from qa.config import Settings

__all__ = ["ProgressBar", "cmd_ingest", "ingest_with", "register"]


def ingest_with(
    settings: Settings,
    *,
    progress: bool = False,
    project: str | None = None,
    ray: str | None = None,
) -> IngestReport:
    """Ingest the configured corpus into the configured store, with the configured embedder;
    `project`: the project every document documents (`ingest.context`); with `ray` (a cluster
    address, or `auto`), on that Ray cluster's workers (`ingest.ray_ingest`; `workers` then caps
    their number)."""
    from ingest.embed import make_embedder
    from ingest.pipeline import ingest_corpus
    from kg.lexicon import Lexicon

    embedder = make_embedder(
        settings.embedder, cache_dir=settings.cache_dir, spin=settings.ort_spin
    )
    lexicon = Lexicon.default(settings.lexicon)
    options: dict[str, Any] = {
        "embedder_spec": settings.embedder,
        "progress": ProgressBar() if progress else None,
        "max_bytes": settings.max_file_mb * 1024 * 1024,
        "cache_dir": settings.cache_dir,
        "project": project,
    }
    if ray is None:
        return ingest_corpus(
            settings.corpus, settings.store, embedder, lexicon, workers=settings.workers, **options
        )
    from ingest.ray_ingest import RayCluster, RayEmbedder

    with RayCluster(
        ray,
        lexicon,
        embedder_spec=settings.embedder,
        cache_dir=settings.cache_dir,
        spin=settings.ort_spin,
        workers=settings.workers,
    ) as cluster:
        remote = RayEmbedder(embedder, cluster)
        remote.check()
        return ingest_corpus(
            settings.corpus, settings.store, remote, lexicon, ray=cluster, **options
        )


class ProgressBar:
    """Documents done (written or carried over) of all, documents/s, and new chunks and
    chunks/s, on stderr (`ingest.pipeline.IngestProgress`)."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._chunks = 0
        self._started = 0.0

    def start(self, documents: int) -> None:
        """Show the bar."""
        from tqdm import tqdm

        self._bar = tqdm(total=documents, desc="ingest", unit="doc", file=sys.stderr, leave=False)
        self._started = time.perf_counter()

    def advance(self, chunks: int) -> None:
        """One more document, with its new chunks."""
        self._chunks += chunks
        rate = self._chunks / max(time.perf_counter() - self._started, 1e-9)
        self._bar.set_postfix_str(f"{self._chunks} chunks, {rate:.1f} chunks/s", refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        """Take the bar away."""
        self._bar.close()


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    """Build or update the store; print a summary; exit 1 if a document was skipped or failed.

    Files of a type kgqa does not read are listed but are not failures."""
    report = ingest_with(
        settings, progress=True, project=getattr(args, "project", None), ray=args.ray
    )
    if args.json:
        print(report.model_dump_json(indent=1))
        return 0 if report.ok else 1
    stats = report.stats
    print(f"store: {report.store}")
    print(
        f"documents: {report.documents} ({len(report.processed)} processed, "
        f"{len(report.reused)} unchanged, {len(report.removed)} removed); "
        f"chunks embedded: {report.embedded_chunks}"
    )
    if stats is not None:
        print(f"entities: {stats.entities}  " + _counts(stats.entities_by_type))
        print(f"relations: {stats.relations}  " + _counts(stats.relations_by_type))
    if report.dropped:
        print(_dropped_summary(report))
    for item in report.skipped:
        print(f"skipped {item.path}: {item.reason}")
    for item in report.failed:
        print(f"FAILED {item.path}: {item.reason}")
    print(_next_steps(args, settings))
    return 0 if report.ok else 1


def _dropped_summary(report: IngestReport, shown: int = 3) -> str:
    """What the dropped relations are, a few of them, and where to see them all."""
    lines = [
        f"relations dropped as schema violations: {len(report.dropped)} (claims read from "
        "the documents whose ends, once names are merged across documents, have types the "
        "relation does not allow: the graph keeps no such edge; the sentence stays evidence "
        "that answers can quote)"
    ]
    for item in report.dropped[:shown]:
        where = f" [{item.doc}]" if item.doc else ""
        lines.append(f"  {item.source} -{item.relation}-> {item.target}: {item.reason}{where}")
    if len(report.dropped) > shown:
        lines.append(f"  ... {len(report.dropped) - shown} more")
    lines.append('  all of them, with their quotes: kgqa ingest --json (the "dropped" list)')
    return "\n".join(lines)


def _next_steps(args: argparse.Namespace, settings: Settings) -> str:
    """How to ask this store: the same --store (or a kgqa.toml that names it)."""
    from kg.falkor import parse_location
    from kg.store import is_server_store
    from qa.config import Settings as Defaults

    if args.store is None or Path(args.store) == Defaults().store:
        return 'ask it: kgqa ask "QUESTION"   (the web app: kgqa ui)'
    # a server's location as it was written: a path makes "falkordb:/host..." of it
    located = settings.store
    store = parse_location(located).text if is_server_store(located) else str(located)
    return (
        f'ask it: kgqa ask "QUESTION" --store {store}   (also kgqa ui / kgqa eval --store '
        f'{store}; or put store = "{store}" under [kgqa] in ./kgqa.toml to make it the default)'
    )


def _counts(counts: dict[str, int]) -> str:
    """Counts, most first.

    >>> _counts({"a": 1, "b": 3})
    'b 3, a 1'
    """
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `ingest` to the `kgqa` parser."""
    ingest = sub.add_parser("ingest", help="build or update the store")
    with_store(ingest)
    ingest.add_argument("--corpus", type=Path, action="append", help="corpus dir (repeatable)")
    ingest.add_argument("--embedder", default=None, help="e5-int8 (default) | e5 | st:<model dir>")
    ingest.add_argument("--lexicon", type=Path, action="append", help="extra alias lexicon file")
    ingest.add_argument(
        "--workers", type=int, default=None, help="parsing processes (default: cores - 1, <= 4)"
    )
    ingest.add_argument(
        "--project",
        default=None,
        metavar="NAME",
        help="the project the corpus documents: every page's subject unless a page says "
        "otherwise (else found per folder: kgqa-corpus.toml, conf.py, mkdocs.yml, docs/)",
    )
    ingest.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run on a Ray cluster: HOST:PORT of its head, ray://HOST:PORT, or auto",
    )
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    ingest.set_defaults(func=cmd_ingest)
