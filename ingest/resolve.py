"""Turn surface text (a table cell, a tree branch, a list head) into entities of one document.

Entities are discovered from structure: a table row's first cell is a subject whatever it names.
The lexicon only canonicalises (`DistributedDataParallel（DDP）` and `DDP` are one node); a name it
does not know becomes a new entity whose type is guessed from its neighbours in the same structure.
"""

from __future__ import annotations

import re
from collections import Counter

from ingest.patterns import LOCATION_AFFIX
from kg import cues
from kg.documents import Document
from kg.lexicon import Lexicon, Mention, surface_pattern
from kg.schema import (
    SOLUTION_TYPES,
    Entity,
    Evidence,
    NodeType,
    Relation,
    RelationType,
    entity_id,
    normalize_name,
)

__all__ = ["DocumentEntities", "clean_surface", "looks_like_name", "split_names"]

_PAREN = re.compile(r"[（(]([^）)]*)[）)]")
_NAME_SPLIT = re.compile(
    rf"\s*(?:\+|/|、|,|，|;|；|\b{cues.alternatives('document.list_join', ('en',))}\b|"
    rf"{cues.alternatives('document.list_join', ('zh',))})\s*"
)
_PERSON_SUFFIX = re.compile(cues.alternatives("document.person_suffix") + "$")
_PERSON_WORDS = cues.pattern("document.person_word")
#: a community channel ("YouTube", "QQ群"): a place people talk, no entity
_CHANNEL = re.compile(rf"^{cues.alternatives('names.channel')}$", re.I)


def clean_surface(text: str) -> tuple[str, list[str]]:
    """Strip decoration and parenthetical notes; return the name and candidate aliases.

    >>> clean_surface("DistributedDataParallel（DDP）")
    ('DistributedDataParallel', ['DDP'])
    >>> clean_surface("**DataParallel（已不推荐）**")
    ('DataParallel', [])
    """
    text = text.strip().strip("*`_ ").strip()
    aliases = [
        inner.strip()
        for inner in _PAREN.findall(text)
        if re.fullmatch(r"[A-Za-z][\w.\- ]{0,30}", inner.strip())
    ]
    name = _PAREN.sub("", text).strip(" ：:-—")
    return name, aliases


#: a pronoun, perhaps after a verb particle ("把它", "this"): it refers, it names nothing
_PRONOUN = re.compile(
    rf"^{cues.alternatives('document.pronoun_particle')}?\s*{cues.alternatives('document.pronoun')}\s*$",
    re.I,
)


def looks_like_name(text: str) -> bool:
    """Whether a surface could name a tool/framework: short, no sentence punctuation.

    >>> looks_like_name("FooServe")
    True
    >>> looks_like_name("这是一句很长的描述，带着标点。"), looks_like_name("GitHub Issues")
    (False, False)
    >>> looks_like_name("O"), looks_like_name("s")  # a letter alone: big-O, the "s" of "GB/s"
    (False, False)
    """
    text = text.strip()
    if len(text) < 2 or len(text) > 40 or re.search(r"[，。！？；,.!?;:：]\s|[，。！？；]", text):
        return False
    if _CHANNEL.match(text):
        return False
    if re.search(r"[A-Za-z]", text):
        return len(text.split()) <= 4
    return len(text) <= 8


def split_names(text: str) -> list[str]:
    """Split a list of names written with `+ / 、 , 或 and`.

    >>> split_names("TF2 + TFLite")
    ['TF2', 'TFLite']
    >>> split_names("FSDP / LoRA（HF peft）")
    ['FSDP', 'LoRA（HF peft）']
    """
    depth = 0
    parts: list[str] = []
    current = ""
    for piece in re.split(r"([（()）])", text):
        if piece in ("（", "("):
            depth += 1
        elif piece in ("）", ")"):
            depth = max(0, depth - 1)
        if depth == 0 and piece not in ("）", ")"):
            chunks = _NAME_SPLIT.split(piece)
            current += chunks[0]
            for chunk in chunks[1:]:
                parts.append(current)
                current = chunk
        else:
            current += piece
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def is_person(text: str) -> bool:
    """Whether a situation names people (a persona) rather than a task.

    >>> is_person("初学者/学生/快速原型")
    True
    >>> is_person("边缘设备")
    False
    """
    parts = re.split(r"[/、,，]", text)
    return any(_PERSON_SUFFIX.search(p.strip()) for p in parts) or bool(_PERSON_WORDS.search(text))


class DocumentEntities:
    """Entities and relations of one document as they are discovered, with evidence spans."""

    def __init__(self, doc: Document, lexicon: Lexicon) -> None:
        self.doc = doc
        self.lexicon = lexicon
        self.entities: dict[str, Entity] = {}
        self.relations: list[Relation] = []
        # the pattern of discovered names, and the entity generation it was built for: rebuilt
        # only when an entity is added or retyped (a 5,000-row table must not rebuild it per cell)
        self._generation = 0
        self._pattern_cache: tuple[int, re.Pattern[str] | None, dict[str, str]] | None = None

    # -- evidence ---------------------------------------------------------------------------
    def evidence(self, start: int, end: int, heading_path: tuple[str, ...] = ()) -> Evidence:
        """Evidence for a span of the document; the quote is the verbatim slice, trimmed."""
        text = self.doc.text[start:end]
        lead = len(text) - len(text.lstrip())
        trail = len(text.rstrip())
        start, end = start + lead, start + max(lead, trail)
        return Evidence(
            doc=self.doc.id,
            quote=self.doc.text[start:end],
            start=start,
            end=end,
            heading_path=heading_path,
        )

    # -- entities ---------------------------------------------------------------------------
    def _register(self, node_type: NodeType, name: str, aliases: list[str], ev: Evidence) -> str:
        eid = entity_id(node_type, name)
        known = self.entities.get(eid)
        if known is None:
            self._generation += 1
            self.entities[eid] = Entity(
                id=eid, type=node_type, name=name, aliases=list(aliases), evidence=[ev]
            )
        else:
            known.aliases.extend(a for a in aliases if a not in known.aliases and a != known.name)
            if all(e.start != ev.start for e in known.evidence):
                known.evidence.append(ev)
        return eid

    def known(self, surface: str) -> str | None:
        """The id of a lexicon entity (registered or not) or an already discovered entity."""
        entry = self.lexicon.lookup(surface)
        if entry is not None:
            return entry.id
        key = normalize_name(surface)
        for entity in self.entities.values():
            if key in {normalize_name(n) for n in [entity.name, *entity.aliases]}:
                return entity.id
        return None

    def resolve(
        self,
        surface: str,
        ev: Evidence,
        *,
        default_type: NodeType = NodeType.CONCEPT,
        discover: bool = True,
    ) -> str | None:
        """The entity a surface names: lexicon first, then this document's entities, else new."""
        name, aliases = clean_surface(surface)
        if not name:
            return None
        for candidate in [surface, name, *aliases]:
            entry = self.lexicon.lookup(candidate)
            if entry is not None:
                return self._register(entry.type, entry.name, [], ev)
        if "/" in name or " / " in name:
            # "TVM / Apache TVM": any part the lexicon knows names the whole.
            for part in re.split(r"\s*/\s*", name):
                entry = self.lexicon.lookup(part)
                if entry is not None:
                    return self._register(entry.type, entry.name, [name], ev)
        known = self.known(name)
        if known is not None:
            entity = self.entities[known]
            return self._register(entity.type, entity.name, aliases, ev)
        if not discover or not looks_like_name(name):
            return None
        return self._register(default_type, name, aliases, ev)

    def situation(self, text: str, ev: Evidence, *, persona: bool | None = None) -> str | None:
        """A Scenario or Persona node named by a condition text (a tree branch, a list head)."""
        name = re.sub(r"\s+", " ", text).strip(" ：:？?→-—─")
        if not name or len(name) > 60 or re.search(r"[？?。！!]", name):
            return None  # a sentence (a question and its answer) names no situation
        if _PRONOUN.match(name):
            return None  # "把它用于 AlphaFold": "it" names nothing
        # "在英伟达显卡上" names the hardware itself
        entry = self.lexicon.lookup(name) or self.lexicon.lookup(LOCATION_AFFIX.sub("", name))
        if entry is not None:
            return self._register(entry.type, entry.name, [], ev)
        if persona is None and (len(name) < 2 or not re.search(r"[A-Za-z\u4e00-\u9fff]", name)):
            # a figure ("25 → 200 GB/s": a value that changed) or a lone character names no
            # situation; a scale (a table's column of sizes, `persona=False`) may be a figure
            return None
        is_persona = is_person(name) if persona is None else persona
        node_type = NodeType.PERSONA if is_persona else NodeType.SCENARIO
        return self._register(node_type, name, [], ev)

    def _discovered_pattern(self) -> tuple[re.Pattern[str] | None, dict[str, str]]:
        """A pattern of the things this document discovered (names the lexicon does not know)."""
        if self._pattern_cache is not None and self._pattern_cache[0] == self._generation:
            return self._pattern_cache[1], self._pattern_cache[2]
        names: dict[str, str] = {}
        for entity in self.entities.values():
            key = normalize_name(entity.name)
            if (
                entity.type in SOLUTION_TYPES
                and len(key) >= 3
                and self.lexicon.lookup(entity.name) is None
                and looks_like_name(entity.name)
            ):
                names.setdefault(key, entity.id)
        if not names:
            self._pattern_cache = (self._generation, None, names)
            return None, names
        if self._pattern_cache is not None and self._pattern_cache[2] == names:
            self._pattern_cache = (self._generation, *self._pattern_cache[1:])
            return self._pattern_cache[1], self._pattern_cache[2]
        surfaces = sorted(
            {e.name for e in self.entities.values() if normalize_name(e.name) in names},
            key=len,
            reverse=True,
        )
        pattern = re.compile("|".join(surface_pattern(s) for s in surfaces), re.IGNORECASE)
        self._pattern_cache = (self._generation, pattern, names)
        return pattern, names

    def find_mentions(self, text: str) -> list[Mention]:
        """Lexicon entities, and solution entities this document discovered, named in a text."""
        mentions = self.lexicon.entity_mentions(text)
        pattern, names = self._discovered_pattern()
        if pattern is not None:
            for match in pattern.finditer(text):
                if any(m.start < match.end() and match.start() < m.end for m in mentions):
                    continue
                key = names.get(normalize_name(match.group(0)))
                if key is not None:
                    mentions.append(
                        Mention(
                            start=match.start(), end=match.end(), surface=match.group(0), key=key
                        )
                    )
        return sorted(mentions, key=lambda m: m.start)

    def mention_type(self, mention: Mention) -> NodeType:
        """The node type a mention names."""
        entry = self.lexicon.entries.get(mention.key)
        return entry.type if entry is not None else self.entities[mention.key].type

    def mentions(self, start: int, end: int) -> list[tuple[Mention, str]]:
        """Entity mentions in a span, registered as entities with their own evidence."""
        found = []
        for mention in self.find_mentions(self.doc.text[start:end]):
            ev = self.evidence(start + mention.start, start + mention.end)
            entry = self.lexicon.entries.get(mention.key)
            if entry is not None:
                eid = self._register(entry.type, entry.name, [], ev)
            else:
                entity = self.entities[mention.key]
                eid = self._register(entity.type, entity.name, [], ev)
            found.append((mention, eid))
        return found

    def type_of(self, eid: str) -> NodeType:
        """The type of a registered entity."""
        return self.entities[eid].type

    def majority_solution_type(self, ids: list[str]) -> NodeType:
        """The most common solution type among ids (for typing new siblings)."""
        counts = Counter(self.type_of(i) for i in ids if self.type_of(i) in SOLUTION_TYPES)
        counts.pop(NodeType.CONCEPT, None)
        return counts.most_common(1)[0][0] if counts else NodeType.CONCEPT

    def retype(self, eid: str, node_type: NodeType) -> str:
        """Give a discovered (non-lexicon) entity a better type; returns its new id."""
        entity = self.entities[eid]
        if entity.type == node_type or self.lexicon.lookup(entity.name) is not None:
            return eid
        del self.entities[eid]
        self._generation += 1
        new_id = entity_id(node_type, entity.name)
        for ev in entity.evidence:
            self._register(node_type, entity.name, entity.aliases, ev)
        for rel in self.relations:
            if rel.source == eid:
                rel.source = new_id
            if rel.target == eid:
                rel.target = new_id
        return new_id

    # -- relations --------------------------------------------------------------------------
    def relate(
        self, source: str, relation: RelationType, target: str, ev: Evidence, **attrs: object
    ) -> None:
        """Record a relation (the graph merges duplicates later)."""
        if source == target:
            return
        self.relations.append(
            Relation.model_validate(
                {
                    "source": source,
                    "relation": relation,
                    "target": target,
                    "evidence": [ev],
                    **attrs,
                }
            )
        )
