"""Merge per-document extractions into one graph: one node per real-world entity.

Lexicon entities already share ids across documents. A discovered entity (one the lexicon does not
know) may be typed differently in two documents; entities whose names normalise alike are unified
under the most specific type any document gave them, and relations follow the renamed ids. Names
that are one thing written two ways join the plainer name that the corpus also writes
(`family_parent`): a `v` before a version (`LLaMA-v2` is `Llama2`), an organisation's name in
front (`Microsoft Phi4` is `Phi4`), the one parameter count written (`ChatGLM2-6B` is `chatglm2`
where no other size of it is). A
relation that no longer fits the schema's endpoint types is dropped and reported
(`DroppedRelation`: the claim, its evidence and why), never silently.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable

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

__all__ = ["DroppedRelation", "family_parent", "merge_extractions"]


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


#: a parameter count at the end of a model's name: `-6B`, ` 13B`, `_0.5B`, `-350M`
_PARAM_COUNT = re.compile(r"[-_ ]\d+(?:\.\d+)?[BbMm]$")
#: a `v` between a name's letters and its version: `LLaMA-v2`, `DINOv2`
_VERSION_V = re.compile(r"(?<=[a-z])v(?=\d)")


def _version_key(name: str) -> str:
    return _VERSION_V.sub("", normalize_name(name))


def family_parent(name: str, names: Iterable[str], lexicon: Lexicon) -> str | None:
    """The plainer of `names` that `name` is another way of writing, or None.

    Plainer: the same name without a `v` before its version, without an organisation (by the
    lexicon) written in front, or without its parameter count where no other count of that name
    is in `names`.

    >>> lexicon = Lexicon.default()
    >>> names = ["Llama2", "LLaMA-v2", "Phi4", "Microsoft Phi4", "ChatGLM2-6B", "chatglm2"]
    >>> [family_parent(n, names, lexicon) for n in names]
    [None, 'Llama2', None, 'Phi4', 'chatglm2', None]
    >>> family_parent("Qwen2-7B", ["Qwen2", "Qwen2-7B", "Qwen2-72B"], lexicon) is None
    True
    >>> family_parent("Microsoft Research", ["Research", "Microsoft Research"], lexicon) is None
    True
    """
    return _Plainer(names, lexicon).parent(name)


class _Plainer:
    """`family_parent` over one set of names, indexed once."""

    def __init__(self, names: Iterable[str], lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        names = set(names)
        self.by_key: dict[str, str] = {}
        for n in sorted(names, key=lambda n: (-len(n), n)):  # the shortest spelling stays
            self.by_key[_version_key(n)] = n
        sized = {normalize_name(n): n for n in names if _PARAM_COUNT.search(n)}
        self.sizes = Counter(_version_key(_PARAM_COUNT.sub("", n)) for n in sized.values())

    def _other(self, key: str, name: str) -> str | None:
        found = self.by_key.get(key)
        return (
            found if found is not None and normalize_name(found) != normalize_name(name) else None
        )

    def parent(self, name: str) -> str | None:
        plain = _version_key(name)
        if plain != normalize_name(name) and (found := self._other(plain, name)) is not None:
            return found
        first, _, rest = name.partition(" ")
        org = self.lexicon.lookup(first) if rest else None
        versioned = org is not None and org.type == NodeType.ORGANIZATION and re.search(r"\d", rest)
        if versioned and (found := self._other(_version_key(rest), name)) is not None:
            return found
        if _PARAM_COUNT.search(name):
            base = _version_key(_PARAM_COUNT.sub("", name))
            if self.sizes[base] == 1:
                return self._other(base, name)
        return None


def _canonical_ids(extractions: list[Extraction], lexicon: Lexicon) -> dict[str, Entity]:
    """Map every extracted entity id to the entity it merges into."""
    by_name: dict[str, list[Entity]] = defaultdict(list)
    for extraction in extractions:
        for entity in extraction.entities:
            by_name[normalize_name(entity.name)].append(entity)
    families = _families(by_name, lexicon)
    mapping: dict[str, Entity] = {}
    for key, own in by_name.items():
        if key not in families:
            continue  # joins its parent's node
        group = [*own, *(e for child in families[key] for e in by_name[child])]
        entry = lexicon.lookup(own[0].name)
        if entry is not None:
            node_type, name = entry.type, entry.name
        else:
            types = Counter(e.type for e in group if e.type != NodeType.CONCEPT)
            node_type = (
                sorted(types.items(), key=lambda kv: (-kv[1], kv[0].value))[0][0]
                if types
                else NodeType.CONCEPT
            )
            name = sorted(e.name for e in own)[0]  # the plainer name names the node
        target = Entity(id=entity_id(node_type, name), type=node_type, name=name)
        for entity in group:
            mapping[entity.id] = target
    return mapping


def _families(by_name: dict[str, list[Entity]], lexicon: Lexicon) -> dict[str, list[str]]:
    """Each group key that names a node, with the keys of the groups that join it: a discovered
    name joins its `family_parent`'s group, and that one its own parent's, to the plainest.
    Scenarios and personas are phrases, not names, and names the lexicon knows are its own:
    neither joins another group."""
    names = {
        key: group[0].name
        for key, group in by_name.items()
        if group[0].type not in (NodeType.SCENARIO, NodeType.PERSONA)
        and lexicon.lookup(group[0].name) is None
    }
    plainer = _Plainer((group[0].name for group in by_name.values()), lexicon)
    parent: dict[str, str] = {}
    for key, name in names.items():
        found = plainer.parent(name)
        if found is not None and normalize_name(found) in by_name:
            parent[key] = normalize_name(found)
    families: dict[str, list[str]] = {key: [] for key in by_name}
    for key in parent:
        root, seen = key, {key}
        while root in parent and parent[root] not in seen:
            root = parent[root]
            seen.add(root)
        if root != key and root in families:  # (each step is shorter: no cycle to follow)
            families[root].extend([key, *families.pop(key, [])])
    return families


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
