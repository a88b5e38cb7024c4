"""The knowledge graph: a networkx MultiDiGraph of typed entities and evidenced relations.

Nodes hold an `Entity`, edges a `Relation` (under the edge key `Relation.key`). Adding an entity or
relation that is already there merges it: aliases and evidence are united, nothing is lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import BaseModel

from kg.errors import StoreError
from kg.schema import Entity, Evidence, NodeType, Relation, RelationType, normalize_name

__all__ = ["GraphStats", "KnowledgeGraph"]


#: networkx's adjacency of a multigraph: node -> neighbour -> edge key -> edge data
_Adjacency = dict[str, dict[str, dict[str, dict[str, Any]]]]


class GraphStats(BaseModel):
    """Counts for summaries and the UI status line."""

    entities: int
    relations: int
    documents: int
    entities_by_type: dict[str, int]
    relations_by_type: dict[str, int]


def _merge_evidence(into: list[Evidence], more: Iterable[Evidence]) -> None:
    seen = {(e.doc, e.start, e.end) for e in into}
    for ev in more:
        if (ev.doc, ev.start, ev.end) not in seen:
            into.append(ev)
            seen.add((ev.doc, ev.start, ev.end))
    into.sort(key=lambda e: (e.doc, e.start, e.end))


class KnowledgeGraph:
    """Typed graph operations over a `networkx.MultiDiGraph`."""

    def __init__(self) -> None:
        self.g: nx.MultiDiGraph[str] = nx.MultiDiGraph()
        self._names: dict[str, str] | None = None

    # -- building ---------------------------------------------------------------------------
    def add_entity(self, entity: Entity, *, adopt: bool = False) -> None:
        """Add a node (a copy), or merge aliases and evidence into the node with the same id.

        `adopt`: the graph keeps this entity itself, lists included, and will change them:
        for an entity made for it (copying ~1M objects cost most of opening a large store)."""
        self._names = None
        if entity.id in self.g:
            known: Entity = self.g.nodes[entity.id]["entity"]
            names = {normalize_name(a) for a in [known.name, *known.aliases]}
            known.aliases.extend(a for a in entity.aliases if normalize_name(a) not in names)
            if normalize_name(entity.name) not in names:
                known.aliases.append(entity.name)
            _merge_evidence(known.evidence, entity.evidence)
        else:
            self.g.add_node(entity.id, entity=entity if adopt else entity.model_copy(deep=True))

    def add_relation(self, relation: Relation, *, adopt: bool = False) -> None:
        """Add an edge (a copy) between existing nodes, or merge evidence into the same edge;
        `adopt` as for `add_entity`."""
        for end in (relation.source, relation.target):
            if end not in self.g:
                raise StoreError(f"relation {relation.key} names unknown node {end!r}")
        data = self.g.get_edge_data(relation.source, relation.target, relation.key)
        if data is None:
            self.g.add_edge(
                relation.source,
                relation.target,
                key=relation.key,
                rel=relation if adopt else relation.model_copy(deep=True),
            )
        else:
            known: Relation = data["rel"]
            _merge_evidence(known.evidence, relation.evidence)

    # -- reading ----------------------------------------------------------------------------
    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self.g

    def entity(self, entity_id: str) -> Entity:
        """The entity with this id (KeyError if absent)."""
        entity: Entity = self.g.nodes[entity_id]["entity"]
        return entity

    def entities(self) -> Iterator[Entity]:
        """Every entity, in id order."""
        for node in sorted(self.g.nodes):
            yield self.g.nodes[node]["entity"]

    def relations(self) -> Iterator[Relation]:
        """Every relation, in (source, key, target) order."""
        edges = sorted(self.g.edges(keys=True, data=True), key=lambda e: (e[0], e[2], e[1]))
        for _s, _t, _k, data in edges:
            yield data["rel"]

    def out_relations(self, entity_id: str) -> list[Relation]:
        """Relations leaving a node (none for an unknown one), in `out_edges` order."""
        # networkx's own adjacency dicts: its edge views cost ~3x more a call, and answering asks
        # for a node's relations thousands of times a question
        succ: _Adjacency = self.g._succ  # type: ignore[attr-defined]
        return [d["rel"] for keyed in succ.get(entity_id, {}).values() for d in keyed.values()]

    def in_relations(self, entity_id: str) -> list[Relation]:
        """Relations entering a node (none for an unknown one), in `in_edges` order."""
        pred: _Adjacency = self.g._pred  # type: ignore[attr-defined]
        return [d["rel"] for keyed in pred.get(entity_id, {}).values() for d in keyed.values()]

    def relations_of(self, entity_id: str) -> list[Relation]:
        """Relations touching a node, either way."""
        return self.out_relations(entity_id) + self.in_relations(entity_id)

    def edge(self, source: str, relation: str, target: str) -> Relation | None:
        """The relation `source relation target`, under any criterion, or None."""
        if not self.g.has_node(source) or not self.g.has_node(target):
            return None
        for key, data in (self.g.get_edge_data(source, target) or {}).items():
            if key == relation or str(key).startswith((relation + "@", relation + "#")):
                rel: Relation = data["rel"]
                return rel
        return None

    def find(self, surface: str) -> str | None:
        """The id of the node whose name or alias matches `surface` (normalised), if any."""
        if self._names is None:
            names: dict[str, str] = {}
            for entity in self.entities():
                for name in [entity.name, *entity.aliases]:
                    names.setdefault(normalize_name(name), entity.id)
            self._names = names
        return self._names.get(normalize_name(surface))

    def neighbourhood(self, entity_id: str, hops: int = 1) -> KnowledgeGraph:
        """The subgraph within `hops` edges of a node, either direction."""
        undirected = self.g.to_undirected(as_view=True)
        nodes = nx.single_source_shortest_path_length(undirected, entity_id, cutoff=hops)
        return self.subgraph(nodes)

    def subgraph(self, nodes: Iterable[str]) -> KnowledgeGraph:
        """A copy of the graph restricted to `nodes`."""
        sub = KnowledgeGraph()
        sub.g = self.g.subgraph(list(nodes)).copy()
        return sub

    def documents(self) -> set[str]:
        """Every document that supports some edge or node."""
        docs = {ev.doc for rel in self.relations() for ev in rel.evidence}
        return docs | {ev.doc for ent in self.entities() for ev in ent.evidence}

    def stats(self) -> GraphStats:
        """Counts of entities and relations by type."""
        entities = [data["entity"] for _node, data in self.g.nodes(data=True)]
        relations = [data["rel"] for _s, _t, data in self.g.edges(data=True)]
        documents = {ev.doc for r in relations for ev in r.evidence}
        documents |= {ev.doc for e in entities for ev in e.evidence}
        return GraphStats(
            entities=self.g.number_of_nodes(),
            relations=self.g.number_of_edges(),
            documents=len(documents),
            entities_by_type=dict(sorted(Counter(e.type.value for e in entities).items())),
            relations_by_type=dict(sorted(Counter(r.relation.value for r in relations).items())),
        )

    # -- export -----------------------------------------------------------------------------
    def to_node_link(self, *, with_node_evidence: bool = False) -> dict[str, Any]:
        """networkx node-link JSON (DESIGN.md): nodes with id/type/name/aliases, edges with
        evidence. The store also keeps each node's own evidence (`with_node_evidence`)."""
        nodes = []
        for e in self.entities():
            node: dict[str, Any] = {
                "id": e.id,
                "type": e.type.value,
                "name": e.name,
                "aliases": list(e.aliases),
            }
            if with_node_evidence:
                node["evidence"] = [ev.model_dump(mode="json") for ev in e.evidence]
            nodes.append(node)
        edges = []
        for rel in self.relations():
            edge: dict[str, Any] = {
                "source": rel.source,
                "target": rel.target,
                "key": rel.key,
                "relation": rel.relation.value,
                "evidence": [ev.model_dump(mode="json") for ev in rel.evidence],
            }
            for field in ("criterion", "strength", "rank", "stars", "value", "qualifier"):
                if getattr(rel, field) is not None:
                    edge[field] = getattr(rel, field)
            edges.append(edge)
        return {"directed": True, "multigraph": True, "graph": {}, "nodes": nodes, "edges": edges}

    @classmethod
    def from_parts(
        cls, entities: Iterable[Entity], relations: Iterable[Relation]
    ) -> KnowledgeGraph:
        """The graph of these entities and relations, adopted (not copied): what `entities()`
        and `relations()` of a graph give make that graph again."""
        graph = cls()
        for entity in entities:
            graph.add_entity(entity, adopt=True)
        for relation in relations:
            graph.add_relation(relation, adopt=True)
        return graph

    @classmethod
    def from_node_link(cls, data: dict[str, Any]) -> KnowledgeGraph:
        """Inverse of `to_node_link` (also reads node evidence written by the store). The
        entities and relations made here are adopted, not copied."""
        graph = cls()
        for node in data["nodes"]:
            graph.add_entity(
                Entity(
                    id=node["id"],
                    type=NodeType(node["type"]),
                    name=node["name"],
                    aliases=node.get("aliases", []),
                    evidence=[Evidence.model_validate(ev) for ev in node.get("evidence", [])],
                ),
                adopt=True,
            )
        for edge in data["edges"]:
            graph.add_relation(
                Relation(
                    source=edge["source"],
                    target=edge["target"],
                    relation=RelationType(edge["relation"]),
                    evidence=[Evidence.model_validate(ev) for ev in edge.get("evidence", [])],
                    criterion=edge.get("criterion"),
                    strength=edge.get("strength"),
                    rank=edge.get("rank"),
                    stars=edge.get("stars"),
                    value=edge.get("value"),
                    qualifier=edge.get("qualifier"),
                ),
                adopt=True,
            )
        return graph

    def write_graphml(self, path: Path) -> None:
        """GraphML with the same fields as attributes (lists and evidence as JSON strings)."""
        import json

        data = self.to_node_link()
        out: nx.MultiDiGraph[str] = nx.MultiDiGraph()
        for node in data["nodes"]:
            out.add_node(
                node["id"],
                type=node["type"],
                name=node["name"],
                aliases=json.dumps(node["aliases"], ensure_ascii=False),
            )
        for edge in data["edges"]:
            attrs = {k: v for k, v in edge.items() if k not in ("source", "target", "key")}
            attrs["evidence"] = json.dumps(attrs["evidence"], ensure_ascii=False)
            out.add_edge(edge["source"], edge["target"], key=edge["key"], **attrs)
        nx.write_graphml(out, path, encoding="utf-8")
