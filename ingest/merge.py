"""Merge per-document extractions into one graph: one node per real-world entity.

Lexicon entities already share ids across documents. A discovered entity (one the lexicon does not
know) may be typed differently in two documents; entities whose names normalise alike are unified
under the most specific type any document gave them, and relations follow the renamed ids. A
relation that no longer fits the schema's endpoint types is dropped and counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import (
    Entity,
    Extraction,
    NodeType,
    entity_id,
    normalize_name,
    relation_allowed,
)

__all__ = ["merge_extractions"]


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
    extractions: list[Extraction], lexicon: Lexicon
) -> tuple[KnowledgeGraph, int]:
    """The merged graph and how many relations were dropped as schema violations."""
    ordered = sorted(extractions, key=lambda x: x.doc)
    mapping = _canonical_ids(ordered, lexicon)
    graph = KnowledgeGraph()
    for extraction in ordered:
        for entity in extraction.entities:
            merged = mapping[entity.id]
            aliases = [a for a in [entity.name, *entity.aliases] if a != merged.name]
            evidence = list(entity.evidence)  # the graph's own list (evidence is immutable)
            graph.add_entity(
                merged.model_copy(update={"aliases": aliases, "evidence": evidence}), adopt=True
            )
    dropped = 0
    for extraction in ordered:
        for relation in extraction.relations:
            source, target = mapping.get(relation.source), mapping.get(relation.target)
            if source is None or target is None or source.id == target.id:
                dropped += 1
                continue
            if not relation_allowed(relation.relation, source.type, target.type):
                dropped += 1
                continue
            criterion = mapping[relation.criterion].id if relation.criterion in mapping else None
            update = {"source": source.id, "target": target.id, "criterion": criterion}
            graph.add_relation(
                relation.model_copy(update={**update, "evidence": list(relation.evidence)}),
                adopt=True,
            )
    return graph, dropped
