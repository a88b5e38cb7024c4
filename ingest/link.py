"""Link a corpus: one entity per named thing, then every unit to what it is about and what it names.

Runs over the whole corpus after each document was parsed into evidence units (it is cheap: one
pass of a name matcher over the units), so a name discovered in one README is recognised in all
the others ("Flash Attention" in ExLlamaV2's README is FlashAttention's project).

1. **Entities**: the lexicon's, each document's subject, and the names documents give to things
   (`ingest.discover`), merged by normalised name; a name that only ever appeared as a bare
   token and that nothing types is dropped (a version string is not a thing).
2. **Subjects**: a unit is about the entity it leads with ("**NNCF** - …", "ExLlamaV2 now
   supports …"), else the entity its lead-in sentence or table row names, else its section's
   (a heading that names something), else the document's subject.
3. **Claims**: the unit's subject relates to every other entity the unit names, typed by the
   named thing and the words around it (`claim_relation`); the unit is the edge's evidence.
4. **Advice**: a unit shaped "For <situation>: use <thing>" / "<情形>：用 <thing>" recommends
   the thing for that situation (`advice`): a Scenario or Persona node, or the hardware or
   platform the situation names.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.discover import (
    Discovered,
    DocumentSubject,
    common_word,
    discover_names,
    document_subject,
    looks_like_entity,
    type_from_name,
)
from ingest.resolve import is_person
from kg.documents import Document, EvidenceUnit, UnitKind
from kg.lexicon import Lexicon, Mention, surface_pattern
from kg.schema import (
    SOLUTION_TYPES,
    Entity,
    Evidence,
    Extraction,
    NodeType,
    Relation,
    RelationType,
    entity_id,
    normalize_name,
)

__all__ = ["CorpusLinks", "NameMatcher", "advice", "claim_relation", "flex_pattern", "link_corpus"]

_RECOMMEND_VERB = (
    r"(?:(?:we\s+)?(?:recommend|suggest)(?:ed)?(?:\s+using)?|use|try|choose|pick|go\s+with|prefer|"
    r"推荐(?:使用)?|建议(?:使用|用)?|首选|选择?|使用|用|考虑)"
)
#: "For edge devices: use X", "If you need 8-bit inference, try X", "边缘设备：用 X"
_ADVICE = (
    re.compile(
        r"^\s*(?:for|if\s+you(?:\s+(?:need|want|have))?|when(?:\s+you\s+(?:need|want))?)\s+"
        r"(?P<situation>[^:,.;!?]{2,60}?)\s*[:,]\s*" + _RECOMMEND_VERB + r"\s+",
        re.I,
    ),
    re.compile(
        r"^\s*(?:对于|如果|若)?(?P<situation>[^：:，,。；;！？]{2,24}?)\s*[：:]\s*"
        + _RECOMMEND_VERB
        + r"\s*"
    ),
)
#: what a situation may name: it is a condition, not a product
_SITUATIONAL = frozenset(
    {NodeType.HARDWARE, NodeType.PLATFORM, NodeType.PERSONA, NodeType.SCENARIO, NodeType.CRITERION}
)

_PREDICATE = re.compile(
    r"\s*(?:[（(][^）)]{0,40}[）)])?\s*(?:'s\b|is\b|are\b|was\b|were\b|has\b|have\b|can\b|will\b|"
    r"now\b|also\b|currently\b|only\b|supports?\b|provides?\b|enables?\b|allows?\b|lets\b|"
    r"uses?\b|runs?\b|offers?\b|includes?\b|requires?\b|needs?\b|works?\b|brings?\b|makes?\b|"
    r"helps?\b|delivers?\b|achieves?\b|accelerates?\b|reduces?\b|adds?\b|comes?\b|ships?\b|"
    r"does\b|doesn't\b|[:：]|是|为|提供|支持|可以|能|让|采用|使用|需要|已|将|基于|通过|现已|"
    r"不|仅|只|目前|还|也|在|会|把|对|适合|适用|用于|跑|运行|先|的)"
)
#: What a lead term or a heading can make a unit about: things one uses, not a platform, a
#: piece of hardware or a criterion ("Hardware: …", "## macOS, Linux, WSL" describe the subject).
_SUBJECT_PREFIXES = frozenset(
    t.prefix
    for t in (
        NodeType.FRAMEWORK,
        NodeType.LIBRARY,
        NodeType.INFERENCE_ENGINE,
        NodeType.TOOL,
        NodeType.FORMAT,
        NodeType.TECHNIQUE,
        NodeType.PARALLEL_STRATEGY,
        NodeType.CONCEPT,
    )
)
_HEADING_LEAD = re.compile(
    r"^(?:what is|why|using|use|about|introducing|使用|为什么选择|关于)\s*", re.I
)
_NEGATION = re.compile(
    r"not (?:yet )?supported|unsupported|no support|"
    r"(?:does|do|did)(?:n't| not) (?:support|work|run)|"
    r"won't|cannot|can't|not available|isn't available|❌|不支持|暂不支持|无法|不能",
    re.I,
)
_REQUIRE = re.compile(
    r"requires?|required|needs?\b|depends? on|dependenc|prerequisite|minimum|at least|>=|≥|"
    r"must have|需要|依赖|要求|最低|前提",
    re.I,
)
_ALTERNATIVE = re.compile(
    r"alternative|instead of|replacement|drop-in|compared (?:to|with)|\bvs\.?\b|versus|faster than|"
    r"better than|than\b|替代|相比|对比|比起|优于|快于",
    re.I,
)
_OWNER = re.compile(
    r"\b(?:by|from|part of|backed by|maintained by|developed by|created by|built by)\s+(?:the\s+)?$"
    r"|(?:由|来自)\s*$",
    re.I,
)
_OWNER_AFTER = re.compile(r"\s*(?:'s\b|’s\b|出品|开发|开源|推出|维护)")
_EXPORT = re.compile(r"export|convert|导出|转换", re.I)
_LICENSE = re.compile(r"licen[cs]e|许可|协议", re.I)
_WRITTEN = re.compile(r"written in|implemented in|built (?:in|with)|for \w+$|编写|实现", re.I)

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_BY_TARGET: dict[NodeType, RelationType] = {
    NodeType.HARDWARE: RelationType.RUNS_ON,
    NodeType.PLATFORM: RelationType.RUNS_ON,
    NodeType.FORMAT: RelationType.SUPPORTS,
    NodeType.MODEL: RelationType.SUPPORTS,
    NodeType.LANGUAGE: RelationType.SUPPORTS,
    NodeType.TECHNIQUE: RelationType.IMPLEMENTS,
    NodeType.PARALLEL_STRATEGY: RelationType.IMPLEMENTS,
    NodeType.LICENSE: RelationType.LICENSED_UNDER,
    NodeType.FRAMEWORK: RelationType.USED_WITH,
    NodeType.LIBRARY: RelationType.USED_WITH,
    NodeType.INFERENCE_ENGINE: RelationType.USED_WITH,
    NodeType.TOOL: RelationType.USED_WITH,
    NodeType.CONCEPT: RelationType.SUPPORTS,
}


def claim_relation(text: str, at: int, end: int, target: NodeType) -> RelationType:
    """How a unit's subject relates to a thing the unit names at `text[at:end]`.

    Words in the same clause before the name decide first (not supported, requires, instead of,
    export), then the kind of thing named.

    >>> claim_relation("Training is not supported on Windows", 29, 36, NodeType.PLATFORM)
    <RelationType.NOT_SUPPORTED: 'NOT_SUPPORTED'>
    >>> claim_relation("Runs on NVIDIA GPUs", 8, 19, NodeType.HARDWARE)
    <RelationType.RUNS_ON: 'RUNS_ON'>
    >>> claim_relation("a drop-in replacement for PyTorch", 26, 33, NodeType.FRAMEWORK)
    <RelationType.ALTERNATIVE_TO: 'ALTERNATIVE_TO'>
    """
    clause_start = max(
        (m.start() for m in re.finditer(r"[.;。；]\s|[,，]\s*(?:but|however|但|不过)", text[:at])),
        default=0,
    )
    before = text[clause_start:at].lstrip(".;。；,， ")
    # what follows the name in its clause, through a list of names ("Linux and Windows are not")
    after = re.split(r"[.;。；,，](?:\s|$)", text[end : end + 80], maxsplit=1)[0]
    after_verb = re.sub(r"^(?:\s*(?:,|and|or|和|与|、)\s*[\w.+\-]+)*", "", after)
    if (
        _NEGATION.search(before[-60:])
        or re.search(r"\bbut not\b|\bnot (?:on|for|with|in)\s*$|(?:不|无法)\S{0,4}$", before[-20:])
        or re.match(r"\s*(?:is|are|was|were)?\s*(?:not\b|n't\b|unsupported|❌|不|暂不)", after_verb)
        or re.match(r"\s*(?:isn't|aren't|is not|are not)\b", after)
    ):
        return RelationType.NOT_SUPPORTED
    if re.match(
        r"[\s\d.+]*(?:or (?:later|newer|above|higher)\s+)?(?:is|are)\s+(?:required|needed)", after
    ):
        return RelationType.REQUIRES
    if target == NodeType.LICENSE or (
        target != NodeType.ORGANIZATION and _LICENSE.search(before[-40:])
    ):
        return RelationType.LICENSED_UNDER if target == NodeType.LICENSE else RelationType.MENTIONS
    if _ALTERNATIVE.search(before[-50:]) and target in SOLUTION_TYPES:
        return RelationType.ALTERNATIVE_TO
    if _EXPORT.search(before[-40:]) and target in (NodeType.FORMAT, NodeType.INFERENCE_ENGINE):
        return RelationType.EXPORTS_TO
    if re.search(r"(?:没有|无|\bwithout|\bno)\s*$", before, re.I):
        return RelationType.MENTIONS  # "适合没有 GPU 的服务器", "works without a GPU"
    if _REQUIRE.search(before[-50:]):
        return RelationType.REQUIRES
    if target == NodeType.ORGANIZATION:
        # "developed by Intel", "Hugging Face 出品": an organisation named beside a provider cue
        # owns the subject; named otherwise ("API providers (OpenAI, Anthropic)") it is mentioned
        own = _OWNER.search(before[-40:]) or _OWNER_AFTER.match(text[end : end + 12])
        return RelationType.PART_OF_ECOSYSTEM if own else RelationType.MENTIONS
    return _BY_TARGET.get(target, RelationType.MENTIONS)


def advice(
    text: str, mentions: list[Mention], types: dict[str, NodeType]
) -> tuple[str, str] | None:
    """(situation, recommended entity id) when `text` is shaped as advice.

    The recommended thing is the first product named right after the verb; the situation may
    name only conditions (hardware, platforms, people, scenarios).

    >>> found = [Mention(start=22, end=30, surface="FooServe", key="fooserve")]
    >>> advice("For edge devices: use FooServe", found, {"fooserve": NodeType.INFERENCE_ENGINE})
    ('edge devices', 'fooserve')
    """
    for pattern in _ADVICE:
        match = pattern.match(text)
        if match is None:
            continue
        situation_end = match.end("situation")
        for mention in mentions:
            kind = types.get(mention.key)
            if mention.start < situation_end and kind not in _SITUATIONAL:
                return None
            if mention.start >= match.end() and mention.start - match.end() <= 2:
                if kind in SOLUTION_TYPES and kind not in (NodeType.HARDWARE, NodeType.CONCEPT):
                    return match.group("situation").strip(), mention.key
                return None
        return None
    return None


def flex_pattern(surface: str) -> str:
    """A regex for a name that tolerates how people split it: `FlashAttention` also matches
    `Flash Attention` and `flash-attention`; `LLaMA-Factory` matches `LlamaFactory`.

    >>> p = re.compile(flex_pattern("flashattention-2"), re.I)
    >>> [bool(p.search(t)) for t in ["Flash Attention 2", "FlashAttention-2", "flashattention2x"]]
    [False, True, False]
    >>> bool(re.search(flex_pattern("FlashAttention"), "via Flash Attention 2.5.7+"))
    True
    """
    pieces: list[str] = []
    prev = ""
    for ch in surface.strip():
        if ch in " -_":
            if pieces and pieces[-1] != r"[\s\-_]?":
                pieces.append(r"[\s\-_]?")
            prev = ch
            continue
        if prev and ((prev.islower() and ch.isupper()) or (prev.isalpha() and ch.isdigit())):
            pieces.append(r"[\s\-_]?")
        pieces.append(re.escape(ch))
        prev = ch
    body = "".join(pieces)
    if re.match(r"[A-Za-z0-9]", surface):
        body = r"(?<![A-Za-z0-9_])" + body
    if re.search(r"[A-Za-z]$", surface):
        body += r"(?:s|es)?(?![A-Za-z0-9_])"
    elif re.search(r"[0-9]$", surface):
        body += r"(?![A-Za-z0-9_]|\.\d)"  # "Flash Attention 2.5.7" is no "FlashAttention-2"
    return body


@dataclass(frozen=True)
class _Surface:
    text: str
    key: str
    case_sensitive: bool


class NameMatcher:
    """Finds entity names in text: longest name first, non-overlapping, word-bounded.

    Names written like ordinary capitalised words ("Candle", "Optimum") match only with that
    capital; shaped names ("vLLM", "llama.cpp", "RTX 4090") match in any case.
    """

    def __init__(self, surfaces: Iterable[tuple[str, str, bool]]) -> None:
        unique = {(s.strip(), k, cs) for s, k, cs in surfaces if len(normalize_name(s)) >= 2}
        ordered = sorted(unique, key=lambda t: (-len(t[0]), t[0], t[1]))
        self._keys: dict[str, str] = {}
        folded_parts, exact_parts = [], []
        for surface, key, case_sensitive in ordered:
            norm = normalize_name(surface)
            self._keys.setdefault(norm, key)
            if case_sensitive:
                self._keys.setdefault("=" + surface, key)
                exact_parts.append(surface_pattern(surface))
            else:
                folded_parts.append(flex_pattern(surface).translate(_ASCII_LOWER))
        self._folded = re.compile("|".join(folded_parts) or "(?!)")
        self._exact = re.compile("|".join(exact_parts) or "(?!)")

    def find(self, text: str) -> list[Mention]:
        """Non-overlapping mentions, longest first where two overlap."""
        found: list[Mention] = []
        for match in self._folded.finditer(text.translate(_ASCII_LOWER)):
            key = self._resolve(text[match.start() : match.end()], exact=False)
            if key is not None:
                found.append(
                    Mention(start=match.start(), end=match.end(), surface=match.group(0), key=key)
                )
        for match in self._exact.finditer(text):
            key = self._resolve(match.group(0), exact=True)
            if key is not None:
                found.append(
                    Mention(start=match.start(), end=match.end(), surface=match.group(0), key=key)
                )
        found.sort(key=lambda m: (m.start, -(m.end - m.start)))
        kept: list[Mention] = []
        for mention in found:
            if kept and mention.start < kept[-1].end:
                continue
            kept.append(mention)
        return kept

    def _resolve(self, surface: str, *, exact: bool) -> str | None:
        if exact and "=" + surface in self._keys:
            return self._keys["=" + surface]
        norm = normalize_name(surface)
        key = self._keys.get(norm)
        if key is None and norm.endswith("s"):
            key = self._keys.get(norm[:-1]) or self._keys.get(norm[:-2])
        return key


@dataclass
class CorpusLinks:
    """What linking produced: entities and claim relations, units with subjects and mentions."""

    extraction: Extraction
    units: list[EvidenceUnit]
    subjects: dict[str, str] = field(default_factory=dict)  # document id -> subject entity id


@dataclass
class _Registry:
    lexicon: Lexicon
    entities: dict[str, Entity] = field(default_factory=dict)
    by_name: dict[str, str] = field(default_factory=dict)
    spellings: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, name: str, node_type: NodeType | None, aliases: list[str], ev: Evidence) -> str:
        eid = self._add(name, node_type, aliases, ev)
        self.spellings.setdefault(eid, Counter())[name] += 1
        return eid

    def settle_names(self, keep: set[str]) -> None:
        """Each discovered entity takes the spelling the corpus uses most (`FlashAttention-2`)."""
        for eid, entity in self.entities.items():
            if eid in keep or self.lexicon.lookup(entity.name) is not None:
                continue
            best = max(
                self.spellings.get(eid, Counter({entity.name: 1})).items(),
                key=lambda kv: (kv[1], kv[0]),
            )[0]
            if best != entity.name:
                entity.aliases = [a for a in entity.aliases if a != best] + [entity.name]
                entity.name = best

    def _add(self, name: str, node_type: NodeType | None, aliases: list[str], ev: Evidence) -> str:
        entry = self.lexicon.lookup(name) or self.lexicon.lookup(_unversioned(name))
        if entry is not None:
            name, node_type, aliases = entry.name, entry.type, [*aliases]
        key = normalize_name(name)
        known = self.by_name.get(key)
        if known is None:
            for alias in aliases:
                known = self.by_name.get(normalize_name(alias))
                if known is not None:
                    break
        if known is not None:
            entity = self.entities[known]
            names = {normalize_name(n) for n in [entity.name, *entity.aliases]}
            for alias in [name, *aliases]:
                if normalize_name(alias) not in names and looks_like_entity(alias):
                    entity.aliases.append(alias)
                    names.add(normalize_name(alias))
                    self.by_name.setdefault(normalize_name(alias), known)
            if entity.type == NodeType.CONCEPT and node_type not in (None, NodeType.CONCEPT):
                entity.type = node_type  # retyped below when ids are fixed
            if len(entity.evidence) < 3 and all(
                e.start != ev.start or e.doc != ev.doc for e in entity.evidence
            ):
                entity.evidence.append(ev)
            return known
        node_type = node_type or NodeType.CONCEPT
        eid = f"tmp:{len(self.entities)}"
        self.entities[eid] = Entity(
            id=eid,
            type=node_type,
            name=name,
            aliases=[a for a in aliases if normalize_name(a) != key and looks_like_entity(a)],
            evidence=[ev],
        )
        self.by_name[key] = eid
        for alias in self.entities[eid].aliases:
            self.by_name.setdefault(normalize_name(alias), eid)
        return eid


def _unversioned(name: str) -> str:
    """A name without a trailing version: `Keras 3` -> `Keras`, `XTuner V1` -> `XTuner`.

    >>> _unversioned("Keras 3"), _unversioned("XTuner V1"), _unversioned("RTX 4090")
    ('Keras', 'XTuner', 'RTX 4090')
    """
    return (
        re.sub(r"(?<=[A-Za-z])\s+[vV]?\d(?:\.\d+)*$", "", name)
        if not re.search(r"\d{3,}$", name)
        else name
    )


def _evidence(doc: Document, unit: EvidenceUnit) -> Evidence:
    return Evidence(
        doc=doc.id,
        quote=doc.text[unit.start : unit.end],
        start=unit.start,
        end=unit.end,
        heading_path=unit.heading_path,
    )


def _plain_words(units: Iterable[EvidenceUnit]) -> set[str]:
    """Words the corpus writes in lower case in running text ("optimization", "support")."""
    words: set[str] = set()
    for unit in units:
        if unit.kind in (UnitKind.SENTENCE, UnitKind.ITEM):
            words.update(re.findall(r"(?<![A-Za-z.\-_/])[a-z][a-z\-]+(?![A-Za-z_])", unit.text))
    return words


def _shaped(name: str) -> bool:
    """A name that cannot be an ordinary word: inner capitals, digits, dots, all capitals."""
    return bool(re.search(r"[a-z][A-Z]|\d|\.|^[A-Z]{2,}|^[a-z]+$|[\u4e00-\u9fff]", name))


def link_corpus(
    documents: list[tuple[Document, list[EvidenceUnit]]], lexicon: Lexicon
) -> CorpusLinks:
    """Entities, claims and unit subjects over a whole corpus (see the module docstring)."""
    documents = sorted(documents, key=lambda d: d[0].id)
    texts = {doc.id: doc for doc, _ in documents}
    plain = _plain_words(u for _, units in documents for u in units)
    registry = _Registry(lexicon)
    subjects: dict[str, str] = {}
    token_counts: Counter[str] = Counter()
    found: list[tuple[Document, Discovered]] = []
    for doc, units in documents:
        subject: DocumentSubject | None = document_subject(doc, units, lexicon)
        if subject is not None:
            unversioned = _unversioned(subject.name)
            aliases = [*subject.aliases, *([unversioned] if unversioned != subject.name else [])]
            subjects[doc.id] = registry.add(
                subject.name, subject.type, aliases, _evidence(doc, subject.unit)
            )
    known = frozenset(normalize_name(registry.entities[e].name) for e in subjects.values())
    for doc, units in documents:
        for item in discover_names(units, lexicon, plain, known):
            found.append((doc, item))
            if item.how == "token":
                token_counts[normalize_name(item.name)] += 1
    for doc, item in found:
        typed = item.type or _pattern_type(item.name, lexicon)
        if (
            item.how == "token"
            and typed is None
            and lexicon.lookup(item.name) is None
            and token_counts[normalize_name(item.name)] < 3
        ):
            continue
        registry.add(item.name, typed, item.aliases, _evidence(doc, item.unit))
    registry.settle_names(set(subjects.values()))
    editions = _editions(registry.entities, set(subjects.values()), lexicon)
    ids = _final_ids(registry)
    subjects = {doc: ids[eid] for doc, eid in subjects.items()}
    entities = {
        ids[eid]: e.model_copy(update={"id": ids[eid]}) for eid, e in registry.entities.items()
    }
    matcher = NameMatcher(_surfaces(entities.values(), lexicon, plain))
    for entry in lexicon.entries.values():
        if entry.id not in entities:
            entities[entry.id] = Entity(id=entry.id, type=entry.type, name=entry.name)
    relations: list[Relation] = []
    linked: list[EvidenceUnit] = []
    used: set[str] = set(subjects.values())
    for doc, units in documents:
        heading_subjects: dict[str, str | None] = {}
        previous: str | None = None
        for unit in units:
            mentions = matcher.find(unit.text)
            about = _unit_subject(unit, mentions, matcher, heading_subjects, subjects.get(doc.id))
            if unit.kind == UnitKind.SENTENCE and about is None:
                about = previous
            previous = about if unit.kind == UnitKind.SENTENCE else previous
            named = list(dict.fromkeys(m.key for m in mentions))
            linked.append(unit.model_copy(update={"subject": about, "mentions": named}))
            ev = _evidence(texts[doc.id], unit)
            advised = advice(unit.text, mentions, {k: e.type for k, e in entities.items()})
            if advised is not None:
                situation = _situation(advised[0], ev, lexicon, entities)
                relations.append(
                    Relation(
                        source=situation,
                        relation=RelationType.RECOMMENDED_FOR,
                        target=advised[1],
                        evidence=[ev],
                    )
                )
            if about is None:
                continue
            used.add(about)
            for mention in mentions:
                if mention.key == about or mention.key not in entities:
                    continue
                target = entities[mention.key]
                if target.type == NodeType.CRITERION:
                    continue  # "performance" in running text is no claim about a criterion
                relation = claim_relation(unit.text, mention.start, mention.end, target.type)
                relations.append(
                    Relation(source=about, relation=relation, target=mention.key, evidence=[ev])
                )
                used.add(mention.key)
    for part, project in editions:
        relations.append(
            Relation(
                source=ids[part],
                relation=RelationType.PART_OF,
                target=ids[project],
                evidence=[entities[ids[part]].evidence[0]],
            )
        )
    used |= {r.source for r in relations} | {r.target for r in relations}
    kept = sorted((entities[e] for e in used if e in entities), key=lambda e: e.id)
    extraction = Extraction(doc="(corpus)", doc_hash="", entities=kept, relations=relations)
    return CorpusLinks(extraction=extraction, units=linked, subjects=subjects)


def _situation(name: str, ev: Evidence, lexicon: Lexicon, entities: dict[str, Entity]) -> str:
    """The node a situation names: the lexicon's hardware or platform ("on Windows"), else a
    Persona ("beginners") or Scenario node of its own."""
    bare = re.sub(r"^(?:在|于|on|in)\s*|\s*(?:上|中|里|内|端)$", "", name, flags=re.I)
    entry = lexicon.lookup(name) or lexicon.lookup(bare)
    if entry is not None:
        entities.setdefault(entry.id, Entity(id=entry.id, type=entry.type, name=entry.name))
        return entry.id
    node_type = NodeType.PERSONA if is_person(name) else NodeType.SCENARIO
    eid = entity_id(node_type, name)
    entities.setdefault(eid, Entity(id=eid, type=node_type, name=name, evidence=[ev]))
    return eid


def _pattern_type(name: str, lexicon: Lexicon) -> NodeType | None:
    typed = type_from_name(name)
    if typed is not None:
        return typed
    return lexicon.pattern_type(name)


def _final_ids(registry: _Registry) -> dict[str, str]:
    """Stable ids from final types and names (`tmp:3` -> `framework:candle`)."""
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for eid, entity in registry.entities.items():
        entry = registry.lexicon.lookup(entity.name)
        final = entry.id if entry is not None else entity_id(entity.type, entity.name)
        if final in taken and entry is None:
            final = entity_id(entity.type, entity.name + " " + str(len(taken)))
        taken.add(final)
        ids[eid] = final
    return ids


def _surfaces(
    entities: Iterable[Entity], lexicon: Lexicon, plain: set[str]
) -> list[tuple[str, str, bool]]:
    """Every name to look for, and whether only its own capitalisation counts: a name that is
    also an ordinary word ("Candle", "Optimum") matches only as written; "Unsloth" in any case."""
    surfaces: list[tuple[str, str, bool]] = []
    for entry in lexicon.entries.values():
        surfaces.extend((s, entry.id, False) for s in entry.surfaces)
    for entity in entities:
        if lexicon.lookup(entity.name) is not None:
            continue
        for name in [entity.name, *entity.aliases]:
            ordinary = not _shaped(name) and all(common_word(w, plain) for w in name.split())
            surfaces.append((name, entity.id, ordinary))
    return surfaces


def _editions(
    entities: dict[str, Entity], subjects: set[str], lexicon: Lexicon
) -> list[tuple[str, str]]:
    """(part, project) pairs: a name that extends a document subject's name is an edition or a
    version of it (`Unsloth Studio`, `FlashAttention-2`), unless it is a subject of its own or a
    name the lexicon knows (ONNX Runtime is no part of ONNX). An untyped part takes the project's
    type."""
    heads = {normalize_name(entities[s].name): s for s in subjects if s in entities}
    pairs = []
    for eid, entity in entities.items():
        if eid in subjects or lexicon.lookup(entity.name) is not None:
            continue
        version = re.match(r"^(.*?[A-Za-z])[\s\-_]?[vV]?\d+(?:\.\d+)*$", entity.name)
        head = heads.get(normalize_name(version.group(1))) if version else None
        if head is None:
            words = entity.name.split()
            for cut in range(len(words) - 1, 0, -1):
                head = heads.get(normalize_name(" ".join(words[:cut])))
                if head is not None:
                    break
        if head is None or head == eid or not entity.evidence:
            continue
        if entity.type == NodeType.CONCEPT:
            entity.type = entities[head].type
        if entity.type in SOLUTION_TYPES or entity.type == NodeType.PLATFORM:
            pairs.append((eid, head))
    return pairs


def _unit_subject(
    unit: EvidenceUnit,
    mentions: list[Mention],
    matcher: NameMatcher,
    heading_subjects: dict[str, str | None],
    doc_subject: str | None,
) -> str | None:
    """What a unit is about (see the module docstring)."""
    if unit.lead:
        lead = matcher.find(unit.lead)
        bare = re.sub(r"\s*[（(][^）)]*[）)]\s*$", "", unit.lead.split(" for ")[0])
        if (
            lead
            and lead[0].start == 0
            and lead[0].end >= len(bare) - 2
            and lead[0].key.split(":")[0] in _SUBJECT_PREFIXES
        ):
            return lead[0].key
    if mentions and mentions[0].start <= 1:
        first = mentions[0]
        if unit.kind in (UnitKind.ROW, UnitKind.HEADING) or (
            # "Windows is not supported" in a README is about the README's project
            first.key.split(":")[0] in _SUBJECT_PREFIXES
            and _PREDICATE.match(unit.text[first.end :])
        ):
            return first.key
    if unit.context:
        context = matcher.find(unit.context)
        if context and context[0].start <= 1 and _PREDICATE.match(unit.context[context[0].end :]):
            return context[0].key
    for title in reversed(unit.heading_path[-3:]):
        if title not in heading_subjects:
            heading_subjects[title] = _heading_subject(title, matcher)
        if heading_subjects[title] is not None:
            return heading_subjects[title]
    return doc_subject


def _heading_subject(title: str, matcher: NameMatcher) -> str | None:
    """The entity a heading is about: "ONNX Runtime", "What is JAX?", "FlashAttention-3 beta"."""
    bare = _HEADING_LEAD.sub("", title).strip(" ?？")
    if len(bare.split()) > 6:
        return None
    mentions = matcher.find(bare)
    if mentions and mentions[0].start == 0 and mentions[0].key.split(":")[0] in _SUBJECT_PREFIXES:
        return mentions[0].key
    return None


def unit_evidence_index(units: Iterable[EvidenceUnit]) -> dict[tuple[str, int, int], EvidenceUnit]:
    """Units by (document, start, end): the unit an edge's evidence is."""
    return {(u.doc, u.start, u.end): u for u in units}
