"""Link a corpus: one entity per named thing, then every unit to what it is about and what it names.

Runs over the whole corpus after each document was parsed into evidence units (it is cheap: one
pass of a name matcher over the units), so a name discovered in one README is recognised in all
the others ("Flash Attention" in ExLlamaV2's README is FlashAttention's project).

1. **Entities**: the lexicon's, each document's subject, and the names documents give to things
   (`ingest.discover`), merged by normalised name; a name that only ever appeared as a bare
   token and that nothing types is dropped (a version string is not a thing).
2. **Subjects**: a unit is about the entity it leads with ("**NNCF** - …", "ExLlamaV2 now
   supports …", "For example, QLoRA is …") or its lead term names in a closing parenthesis
   ("易用接口（Keras 式）：…"), else the entity its lead-in sentence or table row
   names, else its section's (a heading that names something), else the document's subject:
   the project whose docs hold it (`ingest.context`) unless the page says it is about another
   thing, else the one `document_subject` finds. A sentence that opens by pointing back
   ("This method …", "该方法…") is about what the sentence before it in its paragraph was.
3. **Claims**: the unit's subject relates to every other entity the unit names, typed by the
   named thing and the words around it (`claim_relation`); the unit is the edge's evidence. A
   sentence or clause of the unit that opens with a thing and a verb speaks of that thing
   instead, within its own span, in a unit about nothing as a whole too ("部署：各有所长，
   A 通过 B 也可部署，C 需要 D": A claims B, C claims D). A thing listed beside the subject
   ("常见选择：A、B", "A, B or C") is its peer, merely mentioned.
4. **Advice**: a unit shaped "For <situation>: use <thing>" / "<情形>：用 <thing>" recommends
   the thing for that situation (`advice`): a Scenario or Persona node, or the hardware or
   platform the situation names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ingest.claims import advice, claim_relation, listed_together
from ingest.context import Project
from ingest.discover import (
    Discovered,
    common_word,
    discover_names,
    document_subject,
    is_readme,
    looks_like_entity,
    reads_as_chinese,
    type_from_name,
)
from ingest.link_cache import (
    DocLinks,
    FoundName,
    LinkCache,
    Lookups,
    NameChanges,
    SubjectName,
    entities_digest,
    linker_fingerprint,
    units_digest,
)
from ingest.names import NameMatcher, flex_pattern
from ingest.patterns import LOCATION_AFFIX, MARK_NO, MARK_YES
from ingest.resolve import is_person
from kg import cues
from kg.documents import Document, EvidenceUnit, UnitKind
from kg.lexicon import Lexicon, Mention
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

__all__ = [
    "CorpusLinks",
    "NameMatcher",
    "advice",
    "claim_relation",
    "flex_pattern",
    "link_corpus",
    "links_a_repository",
]


_PREDICATE = re.compile(
    # "FlashAttention-2 (beta)", "FlashAttention-2 with CUDA": a short qualifier, then the verb
    rf"\s*(?:[（(][^）)]{{0,40}}[）)])?\s*(?:{cues.alternatives('document.predicate_qualifier')} "
    rf"[\w.+\-]+ )?(?:{cues.alternatives('document.predicate')}|[:：])"
)
#: a sentence's opening phrase before the thing it speaks of ("For example, X is …", "例如，X 是…")
_OPENING = rf"(?:{cues.alternatives('document.opener')}\s*[,，、]?\s*)"
_OPENER = re.compile(rf"^\s*{_OPENING}$", re.I)
#: "This method …", "该方法…": a sentence about the thing the sentence before it named
_ANAPHOR = re.compile(rf"^\s*{_OPENING}?{cues.alternatives('document.anaphor')}", re.I)
#: What a lead term or a heading can make a unit about: things one uses, not a platform, a
#: piece of hardware, a criterion or a concept ("Hardware: …", "## macOS, Linux, WSL",
#: "**Unified memory**: …" describe the document's subject).
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
    )
)
_HEADING_LEAD = re.compile(rf"^{cues.alternatives('document.heading_lead')}\s*", re.I)
#: "三者都支持…", "Both run on …": a clause opening by counting the things named before it
_GROUP_ANAPHOR = re.compile(cues.alternatives("document.group_anaphor"), re.I)
_GROUP_AT = re.compile(r"(?:^|(?<=[：:，,；;。.!?]))\s*")
_NUMERALS = {"两": 2, "二": 2, "三": 3, "四": 4, "both": 2, "two": 2, "three": 3, "four": 4}
#: a lead term's closing parenthesis, and what may follow the one name inside it ("Quillon 风格")
_LEAD_PARENTHESIS = re.compile(r"[（(]\s*([^（）()]+?)\s*[）)]\s*$")
_NAME_MODIFIER = re.compile(rf"[\s-]?(?:{cues.alternatives('names.name_modifier')})?", re.I)


@dataclass
class CorpusLinks:
    """What linking produced: entities and claim relations, units with subjects and mentions."""

    extraction: Extraction
    units: list[EvidenceUnit]
    subjects: dict[str, str] = field(default_factory=dict)  # document id -> subject entity id
    cache: LinkCache = field(default_factory=LinkCache)  # for the next link (`previous`)


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


def _type_columns(registry: _Registry, found: list[tuple[Document, Discovered]]) -> None:
    """The names one table header lists side by side are things of one kind: one nothing typed
    takes the kind most of its typed siblings have ("| Feature | Heron | Egret |", Heron an
    engine: Egret is one too)."""
    headers = dict.fromkeys(tuple(item.unit.header) for _doc, item in found if item.how == "column")
    for header in headers:
        keys = [normalize_name(cell.strip()) for cell in header[1:]]
        ids = {registry.by_name[k] for k in keys if k in registry.by_name}
        types = [registry.entities[e].type for e in ids]
        types += [
            entry.type
            for cell, key in zip(header[1:], keys, strict=True)
            if key not in registry.by_name
            and (entry := registry.lexicon.lookup(cell.strip())) is not None
        ]
        kinds = Counter(t for t in types if t != NodeType.CONCEPT)
        if not kinds:
            continue
        (kind, count), total = kinds.most_common(1)[0], sum(kinds.values())
        if 2 * count <= total:
            continue  # the typed siblings do not agree on a kind
        for eid in sorted(ids):
            if registry.entities[eid].type == NodeType.CONCEPT:
                registry.entities[eid].type = kind


#: a name and a version or stage number: `Qwen3`, `ZeRO2`, `FlashAttention-2`, `ExLlama v2`
_VERSIONED = re.compile(r"^(.*?[A-Za-z])[\s\-_]?[vV]?\d+(?:\.\d+)*$")


def _type_versions(registry: _Registry) -> None:
    """A version or a stage of a thing is a thing of its kind: one nothing typed whose name is
    a typed name and a number (`ZeRO2` beside the parallel strategy ZeRO) takes that kind."""
    for entity in registry.entities.values():
        version = _VERSIONED.match(entity.name)
        if entity.type != NodeType.CONCEPT or version is None:
            continue
        head = version.group(1)
        known = registry.by_name.get(normalize_name(head))
        entry = registry.lexicon.lookup(head)
        kind = (
            registry.entities[known].type
            if known is not None
            else (entry.type if entry is not None else NodeType.CONCEPT)
        )
        if kind != NodeType.CONCEPT:
            entity.type = kind


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
    """Words the corpus writes in lower case in English running text ("optimization",
    "support"). In Chinese text a word in Latin letters is a name or code whatever its case
    ("kestrel 支持多卡推理"), no ordinary word.

    >>> def u(text):
    ...     return EvidenceUnit(id=text, doc="d", start=0, end=1, kind="sentence", text=text)
    >>> sorted(_plain_words([u("Kestrel supports fast serving."), u("kestrel 支持多卡推理。")]))
    ['fast', 'serving', 'supports']
    """
    words: set[str] = set()
    for unit in units:
        if unit.kind in (UnitKind.SENTENCE, UnitKind.ITEM) and not reads_as_chinese(unit.text):
            words.update(re.findall(r"(?<![A-Za-z.\-_/])[a-z][a-z\-]+(?![A-Za-z_])", unit.text))
    return words


def _shaped(name: str) -> bool:
    """A name that cannot be an ordinary word: inner capitals, digits, dots, all capitals."""
    return bool(re.search(r"[a-z][A-Z]|\d|\.|^[A-Z]{2,}|^[a-z]+$|[\u4e00-\u9fff]", name))


def link_corpus(
    documents: list[tuple[Document, list[EvidenceUnit]]],
    lexicon: Lexicon,
    previous: LinkCache | None = None,
    same_units: Collection[str] = (),
    projects: Mapping[str, Project | None] | None = None,
) -> CorpusLinks:
    """Entities, claims and unit subjects over a whole corpus (see the module docstring).

    `previous` is the `CorpusLinks.cache` of an earlier link: what each document made then is
    taken back where nothing it depends on changed (`ingest.link_cache`); the result is the one
    linking without it makes. `same_units`: documents whose units are known to be the ones
    `previous` was made from (a store's, kept with it): not compared again. `projects`: the
    project whose docs hold each document (`ingest.context`): the document's subject unless
    the page says it is about something else (`_own_subject`)."""
    documents = sorted(documents, key=lambda d: d[0].id)
    fingerprint = linker_fingerprint(lexicon)
    before = (
        previous.documents if previous is not None and previous.fingerprint == fingerprint else {}
    )
    records = {
        doc.id: _read_document(doc, units, lexicon, before.get(doc.id), doc.id in same_units)
        for doc, units in documents
    }
    plain = set().union(*(r.plain for r in records.values()))
    registry = _Registry(lexicon)
    subjects: dict[str, str] = {}
    token_counts: Counter[str] = Counter()
    found: list[tuple[Document, Discovered]] = []
    project_ids: set[str] = set()
    for doc, units in documents:
        subject = records[doc.id].subject
        project = (projects or {}).get(doc.id)
        if project is not None and units and not _own_subject(subject, project, doc, units):
            subjects[doc.id] = _add_project(registry, project, subject, doc, units)
            project_ids.add(subjects[doc.id])
        elif subject is not None:
            unversioned = _unversioned(subject.name)
            aliases = [*subject.aliases, *([unversioned] if unversioned != subject.name else [])]
            subjects[doc.id] = registry.add(
                subject.name, subject.type, aliases, _evidence(doc, units[subject.unit])
            )
    known = frozenset(normalize_name(registry.entities[e].name) for e in subjects.values())
    for doc, units in documents:
        for item in _discovered(records[doc.id], units, lexicon, plain, known):
            found.append((doc, item))
            if item.how == "token":
                token_counts[normalize_name(item.name)] += 1
    for doc, item in found:
        typed = item.type or _pattern_type(item.name, lexicon)
        source = doc.text[item.unit.start : item.unit.end]
        if typed is None and links_a_repository(item.name, source):
            typed = NodeType.TOOL  # a project with its own repository, as a README's subject is
        if (
            item.how == "token"
            and typed is None
            and lexicon.lookup(item.name) is None
            and token_counts[normalize_name(item.name)] < 3
        ):
            continue
        registry.add(item.name, typed, item.aliases, _evidence(doc, item.unit))
    _type_columns(registry, found)
    _type_versions(registry)
    for eid in project_ids:  # a project nothing typed is a tool, as a README's subject is
        if registry.entities[eid].type == NodeType.CONCEPT:
            registry.entities[eid].type = type_from_name(registry.entities[eid].name) or (
                NodeType.TOOL
            )
    registry.settle_names(set(subjects.values()))
    editions = _editions(registry.entities, set(subjects.values()), lexicon)
    ids = _final_ids(registry)
    subjects = {doc: ids[eid] for doc, eid in subjects.items()}
    entities = {
        ids[eid]: e.model_copy(update={"id": ids[eid]}) for eid, e in registry.entities.items()
    }
    surfaces = _surfaces(entities.values(), lexicon, plain)
    for entry in lexicon.entries.values():
        if entry.id not in entities:
            entities[entry.id] = Entity(id=entry.id, type=entry.type, name=entry.name)
    types = {k: e.type for k, e in entities.items()}
    context = entities_digest(surfaces, types)
    changes = (
        None
        if previous is None or not before or previous.entities == context
        else NameChanges(previous, surfaces, types)
    )
    again = [
        (doc, units)
        for doc, units in documents
        if not records[doc.id].linked
        or records[doc.id].subject_id != subjects.get(doc.id)
        or (changes is not None and changes.touch(records[doc.id], _texts([(doc, units)])))
    ]
    if again:
        # the names of a corpus make a large pattern: only those the units linked again can hold
        within = None if len(again) == len(documents) else "\n".join(_texts(again))
        matcher = NameMatcher(surfaces, within, verbs=lexicon.verbs)
        for doc, units in again:
            records[doc.id] = _link_units(
                doc, units, records[doc.id], matcher, subjects.get(doc.id), types, lexicon
            )
    relations: list[Relation] = []
    linked: list[EvidenceUnit] = []
    used: set[str] = set(subjects.values())
    for doc, units in documents:
        record = records[doc.id]
        relations.extend(record.relations)
        used.update(record.used)
        for situation in record.situations:
            entities.setdefault(situation.id, situation)
        linked.extend(
            unit
            if unit.subject == about and unit.mentions == named
            else unit.model_copy(update={"subject": about, "mentions": named})
            for unit, about, named in zip(units, record.about, record.named, strict=True)
        )
    for part, whole in editions:
        relations.append(
            Relation(
                source=ids[part],
                relation=RelationType.PART_OF,
                target=ids[whole],
                evidence=[entities[ids[part]].evidence[0]],
            )
        )
    relations.extend(_own_units_claims(documents, records, subjects, relations, types))
    used |= {r.source for r in relations} | {r.target for r in relations}
    kept = sorted((entities[e] for e in used if e in entities), key=lambda e: e.id)
    extraction = Extraction(doc="(corpus)", doc_hash="", entities=kept, relations=relations)
    cache = LinkCache(
        fingerprint=fingerprint,
        entities=context,
        surfaces=sorted(set(surfaces)),
        types=types,
        documents=records,
    )
    return CorpusLinks(extraction=extraction, units=linked, subjects=subjects, cache=cache)


def _own_units_claims(
    documents: list[tuple[Document, list[EvidenceUnit]]],
    records: Mapping[str, DocLinks],
    subjects: Mapping[str, str],
    relations: list[Relation],
    types: Mapping[str, NodeType],
) -> list[Relation]:
    """A claim of each document's subject on a thing that only its own units are about and
    that no claim touches ("| CodeLlama | EXL2 4.0 bpw | 34B |" in ExLlamaV2's README, a
    "### ColossalChat" section of Colossal-AI's): the document names it, typed by the words of
    the unit that first does (`claim_relation`), that unit its evidence. A criterion a heading
    names ("## Features") is a section of the document, no claim."""
    touched = {r.source for r in relations} | {r.target for r in relations}
    found: dict[str, Relation] = {}
    for doc, units in documents:
        owner = subjects.get(doc.id)
        if owner is None:
            continue
        for unit, about in zip(units, records[doc.id].about, strict=True):
            if about is None or about == owner or about in touched or about in found:
                continue
            if types.get(about) in (None, NodeType.CRITERION):
                continue
            relation = claim_relation(unit.text, 0, 0, types[about])
            found[about] = Relation(
                source=owner, relation=relation, target=about, evidence=[_evidence(doc, unit)]
            )
    return list(found.values())


_DEFINES = re.compile(
    rf"\s*(?:[（(][^）)]{{0,40}}[）)])?\s*{cues.alternatives('document.copula')}\b", re.I
)


def _own_subject(
    subject: SubjectName | None, project: Project, doc: Document, units: list[EvidenceUnit]
) -> bool:
    """Whether a page of a project's docs says it is about something else than the project:
    its own subject is another name, and the page is a README (a sub-project's) or defines
    that name as a thing one uses ("Brindle Serve is a model server for …")."""
    if subject is None:
        return False
    names = {normalize_name(n) for n in [project.project, *project.aliases]}
    if normalize_name(subject.name) in names or subject.type not in SOLUTION_TYPES:
        return False
    if is_readme(doc.id):
        return True
    text = units[subject.unit].text
    at = normalize_name(text).find(normalize_name(subject.name))
    return at == 0 and _DEFINES.match(text[len(subject.name) :]) is not None


def _add_project(
    registry: _Registry,
    project: Project,
    subject: SubjectName | None,
    doc: Document,
    units: list[EvidenceUnit],
) -> str:
    """The project's entity, with a unit of the page that names it as its evidence (the
    page's first unit where none does); typed by the manifest, else by the page's own subject
    where that is the project."""
    names = [project.project, *project.aliases]
    keys = [normalize_name(n) for n in names]
    readable = [u for u in units if u.kind != UnitKind.CODE] or units
    unit = next((u for u in readable if any(k in normalize_name(u.text) for k in keys)), None)
    node_type = project.type
    if node_type is None and subject is not None and normalize_name(subject.name) in keys:
        node_type = subject.type
    return registry.add(
        project.project, node_type, list(project.aliases), _evidence(doc, unit or readable[0])
    )


def _read_document(
    doc: Document,
    units: list[EvidenceUnit],
    lexicon: Lexicon,
    before: DocLinks | None,
    same_units: bool = False,
) -> DocLinks:
    """What linking reads of one document alone (its plain words and its subject), taken from
    `before` when that was made of the same text and units (`same_units`: known to be)."""
    if before is not None and before.hash == doc.hash and same_units:
        return before
    digest = units_digest(units)
    if before is not None and before.hash == doc.hash and before.units == digest:
        return before
    subject = document_subject(doc, units, lexicon)
    at = {id(u): i for i, u in enumerate(units)}
    return DocLinks(
        hash=doc.hash,
        units=digest,
        plain=sorted(_plain_words(units)),
        subject=None
        if subject is None
        else SubjectName(
            name=subject.name, aliases=subject.aliases, type=subject.type, unit=at[id(subject.unit)]
        ),
    )


def _discovered(
    record: DocLinks,
    units: list[EvidenceUnit],
    lexicon: Lexicon,
    plain: set[str],
    known: frozenset[str],
) -> list[Discovered]:
    """The names a document gives things (`discover_names`): the record's while the plain
    words and subjects it asked about answer as they did, else found again (and recorded)."""
    if record.asked and record.answers_stand(plain, known):
        return [
            Discovered(f.name, units[f.unit], list(f.aliases), f.type, f.how) for f in record.found
        ]
    asked_plain, asked_known = Lookups(plain), Lookups(known)
    found = discover_names(units, lexicon, asked_plain, asked_known)
    at = {id(u): i for i, u in enumerate(units)}
    record.found = [
        FoundName(name=f.name, unit=at[id(f.unit)], aliases=list(f.aliases), type=f.type, how=f.how)
        for f in found
    ]
    record.plain_in, record.plain_out = sorted(asked_plain.asked_in), sorted(asked_plain.asked_out)
    record.known_in, record.known_out = sorted(asked_known.asked_in), sorted(asked_known.asked_out)
    record.asked = True
    return found


def _texts(documents: list[tuple[Document, list[EvidenceUnit]]]) -> Iterator[str]:
    """Every text the linker matches names in: units, lead terms, lead-ins, section titles."""
    for _doc, units in documents:
        for unit in units:
            yield unit.text
            yield unit.lead
            yield unit.context
            yield from unit.heading_path[-3:]


def _link_units(
    doc: Document,
    units: list[EvidenceUnit],
    record: DocLinks,
    matcher: NameMatcher,
    doc_subject: str | None,
    types: dict[str, NodeType],
    lexicon: Lexicon,
) -> DocLinks:
    """What a document's units are about, what they name and claim (see the module docstring):
    into a copy of its record."""
    heading_subjects: dict[str, str | None] = {}
    previous: str | None = None
    about_all: list[str | None] = []
    named_all: list[list[str]] = []
    relations: list[Relation] = []
    situations: list[Entity] = []
    used: set[str] = set()
    last_end = 0
    # the mentions of the last two units of the section a unit is in (`_group_clauses`)
    recent: list[list[Mention]] = []
    section: tuple[str, ...] = ()
    for unit in units:
        mentions = matcher.find(unit.text)
        about = _unit_subject(unit, mentions, matcher, heading_subjects, doc_subject)
        if "\n\n" in doc.text[last_end : unit.start].replace("\r", ""):
            previous = None  # a sentence speaks of the one before it in its paragraph only
        if unit.kind == UnitKind.SENTENCE and (about is None or _ANAPHOR.match(unit.text)):
            about = previous or about
        previous = about if unit.kind == UnitKind.SENTENCE else previous
        last_end = max(last_end, unit.end)
        about_all.append(about)
        named_all.append(list(dict.fromkeys(m.key for m in mentions)))
        ev = _evidence(doc, unit)
        advised = advice(unit.text, mentions, types)
        if advised is not None:
            situation, made = _situation(advised[0], ev, lexicon, types)
            if made is not None:
                situations.append(made)
            relations.append(
                Relation(
                    source=situation,
                    relation=RelationType.RECOMMENDED_FOR,
                    target=advised[1],
                    evidence=[ev],
                )
            )
        for thing, marked, feature in _marked_claims(unit, matcher, types):
            relations.append(Relation(source=thing, relation=marked, target=feature, evidence=[ev]))
            used.update((thing, feature))
        speakers = _sentence_subjects(unit.text, mentions)
        speakers += _clause_subjects(unit.text, mentions)
        speakers += _clause_openers(unit.text, mentions)
        recent = [] if section != unit.heading_path else recent
        section = unit.heading_path
        groups = _group_clauses(unit.text, mentions, recent, types)
        recent = [*recent[-1:], mentions]
        if about is None and not speakers and not groups:
            continue
        if about is not None:
            used.add(about)
        for mention in mentions:
            source = _speaker(speakers, mention.start) or about
            if mention.key == source:
                source = about  # the thing a clause speaks of is the unit subject's
            # the things a counting clause holding the mention counts claim it too
            counted = next((things for s, e, things in groups if s <= mention.start < e), [])
            sources: list[str | None] = [*([] if mention.key in counted else counted), source]
            if mention.key not in types or types[mention.key] == NodeType.CRITERION:
                continue  # "performance" in running text is no claim about a criterion
            relation = claim_relation(unit.text, mention.start, mention.end, types[mention.key])
            for claimant in dict.fromkeys(sources):
                if claimant is None or claimant == mention.key:
                    continue
                peer = any(
                    listed_together(unit.text, own, mention, mentions)
                    for own in mentions
                    if own.key == claimant
                )
                relations.append(
                    Relation(
                        source=claimant,
                        # named beside it in one list: its peer
                        relation=RelationType.MENTIONS if peer else relation,
                        target=mention.key,
                        evidence=[ev],
                    )
                )
                used.update((claimant, mention.key))
    return record.model_copy(
        update={
            "linked": True,
            "subject_id": doc_subject,
            "about": about_all,
            "named": named_all,
            "relations": relations,
            "situations": situations,
            "used": sorted(used),
        }
    )


def _situation(
    name: str, ev: Evidence, lexicon: Lexicon, types: dict[str, NodeType]
) -> tuple[str, Entity | None]:
    """The node a situation names: the lexicon's hardware or platform ("on Windows"), else a
    Persona ("beginners") or Scenario node of its own; with the entity to add where the corpus
    has none by that id."""
    bare = LOCATION_AFFIX.sub("", name)
    entry = lexicon.lookup(name) or lexicon.lookup(bare)
    if entry is not None:
        made = Entity(id=entry.id, type=entry.type, name=entry.name)
        return entry.id, (made if entry.id not in types else None)
    node_type = NodeType.PERSONA if is_person(name) else NodeType.SCENARIO
    eid = entity_id(node_type, name)
    made = Entity(id=eid, type=node_type, name=name, evidence=[ev])
    return eid, (made if eid not in types else None)


#: the address of a code repository's home (`host/owner/name`, nothing after but an anchor or a
#: query): a person's or an organisation's page (`host/owner`) or a file in a repository is none
_REPOSITORY = (
    r"https?://(?:www\.)?(?:github\.com|gitlab\.com|gitee\.com|codeberg\.org|bitbucket\.org)"
    r"/[\w.\-]+/[\w.\-]+?(?:\.git)?/?(?:[#?][^\s)>\"']*)?"
)


def links_a_repository(name: str, source: str) -> bool:
    """Whether `source` (a unit's text as the file writes it) makes `name` the text of a link to
    a code repository's home: in Markdown, reStructuredText or HTML. The thing a list of links
    names that way is a software project, whatever its name.

    >>> links_a_repository("Quillon", "- [Quillon](https://github.com/acme/quillon): fast")
    True
    >>> links_a_repository("Quillon", "`Quillon <https://gitlab.com/acme/quillon>`_ is fast")
    True
    >>> links_a_repository("Quillon", '<a href="https://github.com/acme/quillon">Quillon</a>')
    True
    >>> links_a_repository("Ada Byron", "**[Ada Byron](https://github.com/adab)**: maintainer")
    False
    >>> links_a_repository("Llama", "[Llama](https://github.com/acme/x/tree/main/llama)")
    False
    """
    name = re.escape(name)
    return any(
        re.search(pattern, source)
        for pattern in (
            rf"\[`?{name}`?\]\(\s*<?{_REPOSITORY}>?\s*\)",
            rf"`{name}\s+<{_REPOSITORY}>`__?",
            rf"<a\s[^>]*href=[\"']{_REPOSITORY}[\"'][^>]*>\s*{name}\s*</a>",
        )
    )


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
        version = _VERSIONED.match(entity.name)
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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")


def _sentence_subjects(text: str, mentions: list[Mention]) -> list[tuple[int, int, str]]:
    """(start, end, entity) of each sentence after a unit's first that opens with a thing one
    uses and a verb: "**Broad Platform Compatibility**: Reduce … OpenVINO supports inference on
    CPU …" claims CPU for OpenVINO, not for the item's label.

    >>> text = "Label: Do things. OpenVINO supports NPUs. It is fast."
    >>> _sentence_subjects(text, [Mention(start=18, end=26, surface="OpenVINO", key="tool:ov")])
    [(18, 42, 'tool:ov')]
    >>> _sentence_subjects(text, [Mention(start=18, end=26, surface="OpenVINO", key="hw:ov")])
    []
    """
    starts = [m.end() for m in _SENTENCE_END.finditer(text)]
    if not starts:
        return []
    spans = zip(starts, [*starts[1:], len(text)], strict=True)
    return [(start, end, key) for start, end in spans if (key := _opener(text, start, mentions))]


def _opener(text: str, start: int, mentions: list[Mention]) -> str | None:
    """The thing one uses that the text from `start` opens with, followed by a verb, if any."""
    first = next((m for m in mentions if m.start >= start), None)
    if (
        first is not None
        and not text[start : first.start].strip()
        and first.key.split(":")[0] in _SUBJECT_PREFIXES
        and _PREDICATE.match(text[first.end :])
    ):
        return first.key
    return None


#: where a clause ends inside a sentence: Chinese commas, semicolons and colons, and a
#: semicolon in either script (an English comma separates list items as often as clauses)
_CLAUSE_END = re.compile(r"[，；;：]|(?<=[.!?])\s+(?=\S)|(?<=[。！？])")


def _clause_openers(text: str, mentions: list[Mention]) -> list[tuple[int, int, str]]:
    """(start, end, entity) of each clause that opens with a thing one uses and a verb, to the
    clause's end: "…，OpenVINO 在 NPU 上跑得最快，llama.cpp 需要…" speaks of OpenVINO in its
    clause only. A unit about nothing as a whole still claims inside such a clause.

    >>> text = "部署：A 的生态最全，B 通过 C、D 也可部署，但稍逊；E 需要 F"
    >>> found = [Mention(start=i, end=i + 1, surface=c, key=f"tool:{c}")
    ...          for i, c in enumerate(text) if c in "ABCDEF"]
    >>> _clause_openers(text, found)
    [(3, 10, 'tool:A'), (11, 24, 'tool:B'), (29, 35, 'tool:E')]
    """
    ends = list(_CLAUSE_END.finditer(text))
    spans = zip([0, *(m.end() for m in ends)], [*(m.start() for m in ends), len(text)], strict=True)
    return [(start, end, key) for start, end in spans if (key := _opener(text, start, mentions))]


_CLAUSE = re.compile(r"[^，,；;。：:]+")
#: "…的前端推理引擎 Paddle.js": a description ending in what kind of thing the name is
_APPOSITIVE = re.compile(cues.alternatives("document.appositive"))


def _clause_subjects(text: str, mentions: list[Mention]) -> list[tuple[int, int, str]]:
    """(start, end, entity) of each Chinese clause that ends by naming what it describes:
    "…以及在浏览器、小程序等环境下使用的前端推理引擎 Paddle.js" speaks of Paddle.js.

    >>> text = "包括面向服务器的推理库 Foo，以及在浏览器中使用的前端引擎 Bar。"
    >>> found = [Mention(start=12, end=15, surface="Foo", key="library:foo"),
    ...          Mention(start=31, end=34, surface="Bar", key="library:bar")]
    >>> _clause_subjects(text, found)
    [(0, 15, 'library:foo'), (16, 34, 'library:bar')]
    """
    found: list[tuple[int, int, str]] = []
    for clause in _CLAUSE.finditer(text):
        inside = [m for m in mentions if clause.start() <= m.start and m.end <= clause.end()]
        if not inside:
            continue
        last = inside[-1]
        if (
            not text[last.end : clause.end()].strip(" ）)")
            and last.key.split(":")[0] in _SUBJECT_PREFIXES
            and _APPOSITIVE.search(text[clause.start() : last.start])
        ):
            found.append((clause.start(), clause.end(), last.key))
    return found


def _marked_claims(
    unit: EvidenceUnit, matcher: NameMatcher, types: Mapping[str, NodeType]
) -> list[tuple[str, RelationType, str]]:
    """A feature matrix's row: where a column's title is a thing's name and the row's cell under
    it only says yes (✅) or no (❌), that thing has, or has not, what the row's first cell
    names (a CPU it runs on, an engine it works with, a method it trains with).

    >>> types = {"e:heron": NodeType.TOOL, "e:egret": NodeType.TOOL, "h:cpu": NodeType.HARDWARE}
    >>> matcher = NameMatcher([("Heron", "e:heron", False), ("Egret", "e:egret", False),
    ...                        ("CPU", "h:cpu", False)])
    >>> row = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind="row",
    ...     text="CPU | ✅ | ❌", cells=["CPU support", "✅", "❌"],
    ...     header=["Feature", "Heron", "Egret"])
    >>> [(s, r.value, t) for s, r, t in _marked_claims(row, matcher, types)]
    [('e:heron', 'RUNS_ON', 'h:cpu'), ('e:egret', 'NOT_SUPPORTED', 'h:cpu')]
    """
    if unit.kind != UnitKind.ROW or len(unit.cells) < 2 or len(unit.header) < 2:
        return []
    first = unit.cells[0]
    features = [
        m for m in matcher.find(first) if types.get(m.key, NodeType.CRITERION) != NodeType.CRITERION
    ]
    claims: list[tuple[str, RelationType, str]] = []
    for cell, title in zip(unit.cells[1:], unit.header[1:], strict=False):
        said = MARK_NO.match(cell) is None
        if said and MARK_YES.match(cell) is None:
            continue
        title = title.strip()
        named = matcher.find(title)
        if len(named) != 1 or (named[0].start, named[0].end) != (0, len(title)):
            continue  # a column about something that is not one thing's name
        thing = named[0].key
        if thing not in types:
            continue
        for feature in features:
            if feature.key == thing:
                continue
            relation = (
                claim_relation(first, feature.start, feature.end, types[feature.key])
                if said
                else RelationType.NOT_SUPPORTED
            )
            claims.append((thing, relation, feature.key))
    return claims


def _group_clauses(
    text: str,
    mentions: list[Mention],
    recent: list[list[Mention]],
    types: Mapping[str, NodeType],
) -> list[tuple[int, int, list[str]]]:
    """(start, end, things) of each clause that opens by counting the things named before it
    ("三者都支持 A、B", "Both run on C"), to the clause's end: the things are the ones of one kind,
    as many as the numeral says, that the text before the clause names, or else the unit before
    it (`recent`, the mentions of the section's last units, latest last). Where the nearest
    text names another count of things of every kind, the clause claims nothing.

    >>> text = "X 和 Y 都很快。两者都支持 Z，但 Z 较慢"
    >>> found = [Mention(start=text.index(c), end=text.index(c) + 1, surface=c, key=f"tool:{c}")
    ...          for c in "XYZ"]
    >>> types = {m.key: NodeType.TOOL for m in found}
    >>> _group_clauses(text, found, [], types)
    [(10, 17, ['tool:X', 'tool:Y'])]
    >>> _group_clauses("三者都支持 Z", found[2:], [found[:2]], types)
    []
    """
    groups: list[tuple[int, int, list[str]]] = []
    for at in _GROUP_AT.finditer(text):
        counted = _GROUP_ANAPHOR.match(text, at.end())
        if counted is None or any(m.start == counted.end() + 1 for m in mentions):
            continue  # "Both PyTorch and JAX …" names its things itself
        word = counted.group(0).lower()
        count = next(n for numeral, n in _NUMERALS.items() if numeral in word)
        before = [m for m in mentions if m.end <= at.start()]
        for named in (before, *reversed(recent)):
            kinds: dict[NodeType, list[str]] = {}
            for m in named:
                if m.key in types and m.key.split(":")[0] in _SUBJECT_PREFIXES:
                    kinds.setdefault(types[m.key], [])
                    if m.key not in kinds[types[m.key]]:
                        kinds[types[m.key]].append(m.key)
            if not kinds:
                continue
            members = [keys for keys in kinds.values() if len(keys) == count]
            if len(members) == 1:
                end = next(
                    (e.start() for e in _CLAUSE_END.finditer(text, counted.end())), len(text)
                )
                groups.append((counted.start(), end, members[0]))
            break
    return groups


def _speaker(speakers: list[tuple[int, int, str]], at: int) -> str | None:
    """The subject of the innermost sentence or clause holding position `at` that names its own."""
    own = [(end - start, key) for start, end, key in speakers if start <= at < end]
    return min(own)[1] if own else None


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
        named = _parenthesized(unit.lead, matcher)
        if named is not None:
            return named
    if mentions and (mentions[0].start <= 1 or _OPENER.match(unit.text[: mentions[0].start])):
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
        # a label over the block ("**Option A (fast)**" before its list), or a short lead-in
        # that names a thing first ("Kestrel backend supports:"), reads as a heading
        label = unit.context.rstrip(":：")
        if label not in heading_subjects:
            heading_subjects[label] = _heading_subject(label, matcher)
        if heading_subjects[label] is not None:
            return heading_subjects[label]
    for title in reversed(unit.heading_path[-3:]):
        if title not in heading_subjects:
            heading_subjects[title] = _heading_subject(title, matcher)
        if heading_subjects[title] is not None:
            return heading_subjects[title]
    return doc_subject


def _parenthesized(lead: str, matcher: NameMatcher) -> str | None:
    """The thing a lead term names in its closing parenthesis, and nothing more there but an
    adjective's ending: a term that says which thing it stands for ("易用接口（Keras 式）",
    "ZeRO offload (DeepSpeed)"). A place, a piece of hardware or a concept there
    ("最快路线（多卡 GPU）") is a condition, not a subject."""
    found = _LEAD_PARENTHESIS.search(lead)
    if found is None:
        return None
    inner = found.group(1)
    named = matcher.find(inner)
    if (
        len(named) == 1
        and named[0].start == 0
        and _NAME_MODIFIER.fullmatch(inner[named[0].end :]) is not None
        and named[0].key.split(":")[0] in _SUBJECT_PREFIXES
    ):
        return named[0].key
    return None


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
