"""The graph explorer: find an entity by a name, an alias or a misspelling, and show its
neighbourhood with the evidence of each edge.

`find_entity` takes an id, a name or alias in either language (the lexicon's too: "英伟达"), or a
part of a name; `suggest` ranks names and aliases by fuzzy similarity (rapidfuzz) for a search
that finds nothing ("Qokka" -> "Quokka Serve"); `entity_names` lists every entity for a
browsable list, best-connected first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from qa.schema import PathEdge
from ui.graphview import edges_svg
from ui.overview import degrees
from ui.panels import explorer_panel, not_found_panel, subgraph_panel, text_lang

if TYPE_CHECKING:
    from qa.api import Assistant

__all__ = ["Exploration", "entity_names", "explore", "find_entity", "suggest"]

EXPLORER_EDGE_LIMIT = 40
PICTURE_EDGE_LIMIT = 24
_SUGGEST_CUTOFF = 60.0


class Exploration(BaseModel):
    """What the explorer shows for a search."""

    node: str | None = None
    picture: str = ""
    panel: str = ""
    suggestions: list[str] = Field(default_factory=list, description="names, closest first")


def find_entity(assistant: Assistant, query: str) -> str | None:
    """The node id a search names: an id, a name or alias (zh or en), or a name containing it."""
    graph = assistant.graph
    query = query.strip()
    if not query:
        return None
    entry = assistant.lexicon.lookup(query)
    surfaces = [query, *([entry.name, *entry.aliases] if entry is not None else [])]
    for surface in surfaces:
        node = surface if surface in graph else graph.find(surface)
        if node is not None:
            return node
    if entry is not None and entry.id in graph:
        return entry.id
    # a lexicon entity absent from the graph (an organisation) still finds the nodes named after it
    for surface in surfaces:
        folded = surface.casefold()
        hits = sorted(
            (len(e.name), e.id)
            for e in graph.entities()
            if folded in e.name.casefold() or any(folded in a.casefold() for a in e.aliases)
        )
        if hits:
            return hits[0][1]
    return None


def entity_names(assistant: Assistant) -> list[str]:
    """Every entity's name, most connected first (ties by name); a name two entities share
    appears once."""
    counts = degrees(assistant.graph)
    ranked = sorted(
        assistant.graph.entities(), key=lambda e: (-counts[e.id], e.name.casefold(), e.id)
    )
    return list(dict.fromkeys(e.name for e in ranked))


def suggest(assistant: Assistant, query: str, limit: int = 6) -> list[str]:
    """Entity names closest to a search, by fuzzy similarity to their names and aliases (and
    the lexicon's names for them)."""
    from rapidfuzz import process, utils

    query = query.strip()
    if not query:
        return []
    graph = assistant.graph
    choices: dict[str, str] = {}  # a surface -> the name of its entity
    for entity in graph.entities():
        for surface in [entity.name, *entity.aliases]:
            choices.setdefault(surface, entity.name)
    for entry in assistant.lexicon.entries.values():  # the lexicon's other-language names
        if entry.id in graph:
            for surface in entry.surfaces:
                choices.setdefault(surface, graph.entity(entry.id).name)
    ranked = process.extract(
        query,
        list(choices),
        scorer=_similarity,
        processor=utils.default_process,
        limit=limit * 3,
        score_cutoff=_SUGGEST_CUTOFF,
    )
    names = [choices[surface] for surface, _score, _index in ranked]
    return list(dict.fromkeys(names))[:limit]


def _similarity(query: str, choice: str, **_: object) -> float:
    """Whole-string similarity (rapidfuzz's QRatio), or a part of a longer name (WRatio, a
    little lower) when both have four characters or more: WRatio alone puts "C#" first for
    "pytroch".

    >>> round(_similarity("wombt", "wombat infer")), round(_similarity("pytroch", "c#"))
    (76, 22)
    """
    from rapidfuzz import fuzz

    score = fuzz.QRatio(query, choice)
    if len(query) >= 4 and len(choice) >= 4:
        score = max(score, 0.95 * fuzz.WRatio(query, choice))
    return float(score)


def _edges_of(assistant: Assistant, node: str) -> list[PathEdge]:
    graph = assistant.graph
    relations = graph.out_relations(node) + graph.in_relations(node)
    return [
        PathEdge(source=r.source, relation=r.relation.value, target=r.target, evidence=r.evidence)
        for r in relations
    ]


def explore(assistant: Assistant, query: str) -> Exploration:
    """The explorer's picture, evidence list and (for a miss) suggestions for a search."""
    lang = text_lang(query)
    node = find_entity(assistant, query)
    if node is None:
        names = suggest(assistant, query)
        return Exploration(panel=not_found_panel(query, lang, names), suggestions=names)
    edges = _edges_of(assistant, node)[:EXPLORER_EDGE_LIMIT]
    name = assistant.graph.entity(node).name
    svg = edges_svg(assistant.graph, edges[:PICTURE_EDGE_LIMIT], lang, focus=node, title=name)
    return Exploration(
        node=node,
        picture=subgraph_panel(svg, lang, "neighbourhood_picture"),
        panel=explorer_panel(assistant.graph, node, edges, lang),
    )
