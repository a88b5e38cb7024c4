"""Is an answer grounded? Checked against the *exported* graph (node-link JSON, as `kgqa graph
export` writes it) and the documents as read from disk: never through the verifier the answerer
itself runs, so that a broken verifier cannot vouch for itself."""

from __future__ import annotations

import re
from pathlib import Path

from kg.store import Store
from qa.schema import Answer

__all__ = ["Edges", "assert_grounded", "exported_edges", "grounding_problems"]

#: (source, relation, target) -> the evidence of that edge in the export, as JSON
Edges = dict[tuple[str, str, str], list[dict[str, object]]]

_SPACE = re.compile(r"\s+")


def exported_edges(store: Path) -> Edges:
    """Every edge of a store's graph export with its evidence."""
    export = Store.open(store).graph().to_node_link()
    edges: Edges = {}
    for edge in export["edges"]:
        key = (edge["source"], edge["relation"], edge["target"])
        edges.setdefault(key, []).extend(edge["evidence"])
    return edges


def grounding_problems(answer: Answer, edges: Edges, documents: dict[str, str]) -> list[str]:
    """What is wrong with an answer's citations and recommendations ([] when nothing is).

    Every cited triple is an edge of the export; every quote is verbatim (up to whitespace) in
    its document and is evidence of that edge there; every recommended entity is an end of a cited
    edge (a recommended value, an option the question names that no entity is, is in a cited
    quote)."""
    flat = {doc: _SPACE.sub(" ", text) for doc, text in documents.items()}
    problems: list[str] = []
    for citation in answer.citations:
        if not citation.path:
            problems.append("a citation with an empty path")
        for edge in citation.path:
            triple = (edge.source, edge.relation.value, edge.target)
            if triple not in edges:
                problems.append(f"{triple} is not an edge of the export")
                continue
            if not edge.evidence:
                problems.append(f"{triple} cites no evidence")
            for ev in edge.evidence:
                if ev.doc not in flat:
                    problems.append(f"unknown document {ev.doc}")
                elif _SPACE.sub(" ", ev.quote).strip() not in flat[ev.doc]:
                    problems.append(f"quote not verbatim in {ev.doc}: {ev.quote!r}")
                elif ev.model_dump(mode="json") not in edges[triple]:
                    problems.append(f"{ev.quote!r} is not evidence of {triple}")
    cited = {n for c in answer.citations for e in c.path for n in (e.source, e.target)}
    quotes = _SPACE.sub(
        " ", " ".join(ev.quote for c in answer.citations for e in c.path for ev in e.evidence)
    )
    for r in answer.recommendations:
        if r.id.startswith("value:"):
            # an option the question names (a table's "4090" column), stated by a cited quote
            # or by the quote its reason shows
            if r.name.casefold() not in f"{quotes} {r.reason}".casefold():
                problems.append(f"{r.name} is recommended but no cited quote states it")
        elif r.id not in cited:
            problems.append(f"{r.id} is recommended but is no end of a cited edge")
    return problems


def assert_grounded(answer: Answer, edges: Edges, documents: dict[str, str]) -> None:
    """Fail with every problem `grounding_problems` finds."""
    assert grounding_problems(answer, edges, documents) == []
