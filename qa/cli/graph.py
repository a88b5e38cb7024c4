"""`kgqa graph export|stats|show`: the graph as node-link JSON or GraphML, its counts, and one
entity's neighbourhood with the quotes behind each edge."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kg.graph import GraphStats, KnowledgeGraph
    from qa.config import Settings

__all__ = ["cmd_graph", "register"]


def cmd_graph(args: argparse.Namespace, settings: Settings) -> int:
    """export | stats | show ENTITY."""
    from kg.store import Store

    graph = Store.open(settings.store).graph()
    if args.graph_command == "export":
        _export(graph, args.format, Path(args.out) if args.out else None)
        return 0
    if args.graph_command == "stats":
        stats = graph.stats()
        print(stats.model_dump_json(indent=1) if args.json else _stats_text(stats))
        return 0
    return _show(graph, args.entity)


def _export(graph: KnowledgeGraph, fmt: str, out: Path | None) -> None:
    if fmt == "json":
        text = json.dumps(graph.to_node_link(), ensure_ascii=False, indent=1)
        if out is not None:
            out.write_text(text + "\n", encoding="utf-8")
        else:
            print(text)
    elif out is None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "graph.graphml"
            graph.write_graphml(path)
            sys.stdout.write(path.read_text("utf-8"))
    else:
        graph.write_graphml(out)


def _stats_text(stats: GraphStats) -> str:
    lines = [f"documents: {stats.documents}", f"entities: {stats.entities}"]
    lines += [f"  {k}: {v}" for k, v in stats.entities_by_type.items()]
    lines.append(f"relations: {stats.relations}")
    lines += [f"  {k}: {v}" for k, v in stats.relations_by_type.items()]
    return "\n".join(lines)


def _show(graph: KnowledgeGraph, query: str) -> int:
    from kg.lexicon import Lexicon

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


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_store: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Add `graph export|stats|show` to the `kgqa` parser."""
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
    graph.set_defaults(func=cmd_graph)
