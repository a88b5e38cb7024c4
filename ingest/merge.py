"""Merge per-document extractions into one graph: one node per real-world entity.

Lexicon entities already share ids across documents. A discovered entity (one the lexicon does not
know) may be typed differently in two documents; entities whose names normalise alike are unified
under the most specific type any document gave them, and relations follow the renamed ids. A
relation that no longer fits the schema's endpoint types is dropped and reported
(`DroppedRelation`: the claim, its evidence and why), never silently.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection

from pydantic import BaseModel

from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import (
    ALLOWED_ENDPOINTS,
    Entity,
    Extraction,
    NodeType,
    Relation,
    entity_id,
    normalize_name,
    relation_allowed,
)

__all__ = ["DroppedRelation", "merge_extractions"]


class DroppedRelation(BaseModel):
    """A claim the merged graph does not keep: its ends (names and types after merging), the
    document and quote it came from, and why."""

    source: str
    relation: str
    target: str
    source_type: str | None = None
    target_type: str | None = None
    doc: str | None = None
    quote: str | None = None
    reason: str


def _types(types: frozenset[NodeType]) -> str:
    """A set of node types in words.

    >>> _types(frozenset({NodeType.PLATFORM, NodeType.HARDWARE}))
    'Hardware or Platform'
    >>> _types(frozenset(NodeType))
    'any type'
    """
    if types == frozenset(NodeType):
        return "any type"
    names = sorted(t.value for t in types)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _misfit(relation: Relation, source: NodeType, target: NodeType) -> str:
    """Which end of a relation has a type the schema does not allow there.

    >>> r = Relation(source="a", relation="RUNS_ON", target="b")
    >>> _misfit(r, NodeType.ORGANIZATION, NodeType.HARDWARE)
    'RUNS_ON does not start at an Organization'
    >>> _misfit(r, NodeType.FRAMEWORK, NodeType.LANGUAGE)
    'RUNS_ON does not end at a Language (only at Hardware or Platform)'
    """
    sources, targets = ALLOWED_ENDPOINTS[relation.relation]
    end, allowed, kind = (
        ("start", sources, source) if source not in sources else ("end", targets, target)
    )
    article = "an" if kind.value[0] in "AEIOU" else "a"
    only = f" (only at {_types(allowed)})" if len(allowed) <= 3 else ""
    return f"{relation.relation.value} does not {end} at {article} {kind.value}{only}"


def _dropped(
    relation: Relation, source: Entity | None, target: Entity | None, reason: str
) -> DroppedRelation:
    ev = relation.evidence[0] if relation.evidence else None
    return DroppedRelation(
        source=source.name if source else relation.source,
        relation=relation.relation.value,
        target=target.name if target else relation.target,
        source_type=source.type.value if source else None,
        target_type=target.type.value if target else None,
        doc=ev.doc if ev else None,
        quote=ev.quote if ev else None,
        reason=reason,
    )


def _canonical_ids(extractions: list[Extraction], lexicon: Lexicon) -> dict[str, Entity]:
    """Map every extracted entity id to the entity it merges into."""
    by_name: dict[str, list[Entity]] = defaultdict(list)
    for extraction in extractions:
        for entity in extraction.entities:
            by_name[normalize_name(entity.name)].append(entity)
    mapping: dict[str, Entity] = {}
    for group in by_name.values():
        entry = lexicon.lookup(group[0].name)
        if entry is not None:
            node_type, name = entry.type, entry.name
        else:
            types = Counter(e.type for e in group if e.type != NodeType.CONCEPT)
            node_type = (
                sorted(types.items(), key=lambda kv: (-kv[1], kv[0].value))[0][0]
                if types
                else NodeType.CONCEPT
            )
            name = sorted(e.name for e in group)[0]
        target = Entity(id=entity_id(node_type, name), type=node_type, name=name)
        for entity in group:
            mapping[entity.id] = target
    return mapping


def merge_extractions(
    extractions: list[Extraction], lexicon: Lexicon, about: Collection[str] | None = None
) -> tuple[KnowledgeGraph, list[DroppedRelation]]:
    """The merged graph and the relations dropped as schema violations (with why).

    `about`: the entities some evidence unit is about. Given, a node that no kept relation
    touches and that no unit is about is left out (a name a sentence mentions in passing,
    claiming nothing of it: the units that mention it still say so)."""
    ordered = sorted(extractions, key=lambda x: x.doc)
    mapping = _canonical_ids(ordered, lexicon)
    graph = KnowledgeGraph()
    kept, dropped = _kept_relations(ordered, mapping)
    touched = {r.source for r in kept} | {r.target for r in kept}
    touched |= {r.criterion for r in kept if r.criterion}
    wanted = None if about is None else {mapping[e].id for e in about if e in mapping} | set(about)
    for extraction in ordered:
        for entity in extraction.entities:
            merged = mapping[entity.id]
            if wanted is not None and merged.id not in touched and merged.id not in wanted:
                continue
            aliases = [a for a in [entity.name, *entity.aliases] if a != merged.name]
            evidence = list(entity.evidence)  # the graph's own list (evidence is immutable)
            graph.add_entity(
                merged.model_copy(update={"aliases": aliases, "evidence": evidence}), adopt=True
            )
    for relation in kept:
        graph.add_relation(relation, adopt=True)
    return graph, dropped


def _kept_relations(
    ordered: list[Extraction], mapping: dict[str, Entity]
) -> tuple[list[Relation], list[DroppedRelation]]:
    """The relations on merged ids that fit the schema, and those dropped (with why)."""
    kept: list[Relation] = []
    dropped: list[DroppedRelation] = []
    for extraction in ordered:
        for relation in extraction.relations:
            source, target = mapping.get(relation.source), mapping.get(relation.target)
            if source is None or target is None:
                why = "an end is not an entity of its document"
                dropped.append(_dropped(relation, source, target, why))
                continue
            if source.id == target.id:
                why = f"both ends are one entity once names are merged ({source.name})"
                dropped.append(_dropped(relation, source, target, why))
                continue
            if not relation_allowed(relation.relation, source.type, target.type):
                why = _misfit(relation, source.type, target.type)
                dropped.append(_dropped(relation, source, target, why))
                continue
            criterion = mapping[relation.criterion].id if relation.criterion in mapping else None
            update = {"source": source.id, "target": target.id, "criterion": criterion}
            kept.append(relation.model_copy(update={**update, "evidence": list(relation.evidence)}))
    return kept, dropped
