"""What linking made of each document, kept with the store so that the next ingest links again
only what a change can affect (`ingest.link.link_corpus`).

Linking reads the whole corpus, but most of its work is per document: the document's subject,
the names it gives things (which depend on the rest of the corpus only through the words it
writes in lower case and its documents' subjects: each document records which of those it
asked about, and what the answer was), and then, per unit, what it is about and what it claims
(which depend on the corpus's entities: their names and types, one digest for the corpus). A
document whose text, recorded answers and entity digest are unchanged gets back what it made
before; the others are linked again. The result is the one a fresh link of the corpus makes
(the ingest tests compare them); a change to the linking code or the lexicon starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

from pydantic import BaseModel, Field

from ingest.names import squash, surface_keys
from kg import cues
from kg.documents import EvidenceUnit
from kg.lexicon import Lexicon
from kg.schema import Entity, NodeType, Relation, normalize_name

__all__ = [
    "LINK_CACHE_VERSION",
    "DocLinks",
    "FoundName",
    "LinkCache",
    "Lookups",
    "NameChanges",
    "SubjectName",
    "entities_digest",
    "linker_fingerprint",
    "units_digest",
]

#: Bumped when what the cache holds changes shape.
LINK_CACHE_VERSION = 1

#: The modules whose code decides what linking makes of a document: their source is part of the
#: fingerprint, so that changing them links every document again (no version to forget).
_LINKING_MODULES = (
    "ingest.link",
    "ingest.link_cache",
    "ingest.discover",
    "ingest.claims",
    "ingest.names",
    "ingest.patterns",
    "ingest.resolve",
    "kg.lexicon",
    "kg.patterns",
    "kg.schema",
)


def linker_fingerprint(lexicon: Lexicon) -> str:
    """A digest of the linking code and the lexicon: a cache made under another is not used."""
    digest = hashlib.sha256(str(LINK_CACHE_VERSION).encode())
    for name in _LINKING_MODULES:
        module = sys.modules.get(name)
        source = getattr(module, "__file__", None)
        digest.update(Path(source).read_bytes() if source else name.encode())
    entries = [e.model_dump(mode="json") for e in lexicon.entries.values()]
    patterns = [(p.pattern, t.value) for p, t in lexicon.patterns]
    blob = json.dumps([entries, lexicon.terms, patterns], sort_keys=True, ensure_ascii=False)
    digest.update(blob.encode("utf-8"))
    digest.update(cues.fingerprint().encode())
    return digest.hexdigest()[:24]


class Lookups(AbstractSet[str]):
    """A view of a set of words that remembers which words it was asked about and what it
    answered: discovery's result stands while the same questions get the same answers.

    >>> words = Lookups({"fast", "engine"})
    >>> "fast" in words, "Candle" in words
    (True, False)
    >>> sorted(words.asked_in), sorted(words.asked_out)
    (['fast'], ['Candle'])
    """

    def __init__(self, words: AbstractSet[str]) -> None:
        self.words = words
        self.asked_in: set[str] = set()
        self.asked_out: set[str] = set()

    def __contains__(self, word: object) -> bool:
        found = word in self.words
        if isinstance(word, str):
            (self.asked_in if found else self.asked_out).add(word)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.words)

    def __len__(self) -> int:
        return len(self.words)


class SubjectName(BaseModel):
    """`ingest.discover.DocumentSubject`, its unit as an index into the document's units."""

    name: str
    aliases: list[str]
    type: NodeType
    unit: int


class FoundName(BaseModel):
    """`ingest.discover.Discovered`, its unit as an index into the document's units."""

    name: str
    unit: int
    aliases: list[str] = Field(default_factory=list)
    type: NodeType | None = None
    how: str = ""


class DocLinks(BaseModel):
    """What linking made of one document, and what it depended on."""

    hash: str = Field(description="the document's content hash")
    units: str = Field(description="`units_digest` of the document's units")
    plain: list[str] = Field(description="words the document writes in lower case")
    subject: SubjectName | None = None
    asked: bool = Field(False, description="whether `found` and the answers below were filled")
    found: list[FoundName] = Field(default_factory=list)
    plain_in: list[str] = Field(default_factory=list, description="asked of the plain words: in")
    plain_out: list[str] = Field(default_factory=list, description="asked: not in")
    known_in: list[str] = Field(default_factory=list, description="asked of the subjects: in")
    known_out: list[str] = Field(default_factory=list, description="asked: not in")
    # what the units say: valid while the corpus's entities (`LinkCache.entities`) and this
    # document's subject stay what they were
    linked: bool = Field(False, description="whether the fields below were filled")
    subject_id: str | None = None
    about: list[str | None] = Field(default_factory=list, description="each unit's subject")
    named: list[list[str]] = Field(default_factory=list, description="each unit's mentions")
    relations: list[Relation] = Field(default_factory=list)
    situations: list[Entity] = Field(default_factory=list)
    used: list[str] = Field(default_factory=list)

    def answers_stand(self, plain: AbstractSet[str], known: AbstractSet[str]) -> bool:
        """Whether the plain words and subjects the document's discovery asked about answer as
        they did."""
        return (
            all(w in plain for w in self.plain_in)
            and not any(w in plain for w in self.plain_out)
            and all(n in known for n in self.known_in)
            and not any(n in known for n in self.known_out)
        )


class LinkCache(BaseModel):
    """Every document's `DocLinks`, under the fingerprint of the code and lexicon that made
    them and the digest of the corpus's entities their units were linked against."""

    version: int = LINK_CACHE_VERSION
    fingerprint: str = ""
    entities: str = Field(default="", description="digest of the names and types linked against")
    surfaces: list[tuple[str, str, bool]] = Field(
        default_factory=list, description="the names looked for: (name, entity, case-sensitive)"
    )
    types: dict[str, NodeType] = Field(default_factory=dict, description="every entity's type")
    documents: dict[str, DocLinks] = Field(default_factory=dict)


class NameChanges:
    """What changed in the corpus's entities between two links, as a document's units can see
    it: the names (squashed, `ingest.names.squash`) whose matches in a text may now be found or
    resolved differently, and the entities whose type changed or that came or went. A
    document none of whose texts holds such a name, and none of whose links names such an
    entity, links as it did."""

    def __init__(
        self,
        before: LinkCache,
        surfaces: list[tuple[str, str, bool]],
        types: dict[str, NodeType],
    ) -> None:
        old, new = set(before.surfaces), set(surfaces)
        changed = old ^ new
        # a found name resolves through its normalised form (and one or two letters less, for a
        # plural): where that resolution changed, every name of a nearby form is affected
        keys_before, keys_now = surface_keys(before.surfaces), surface_keys(surfaces)
        moved = {
            k for k in keys_before.keys() | keys_now.keys() if keys_before.get(k) != keys_now.get(k)
        }
        exact = {k[1:] for k in moved if k.startswith("=")}
        norms = {k for k in moved if not k.startswith("=")}
        names = {s for s, _k, _cs in changed} | exact
        for surface, _key, _cs in old | new:
            norm = normalize_name(surface)
            if any(_near(norm, n) for n in norms):
                names.add(surface)
        self.names = {squash(s.strip()) for s in names}
        self.entities = {
            e for e in before.types.keys() | types.keys() if before.types.get(e) != types.get(e)
        }

    def touch(self, record: DocLinks, texts: Iterable[str]) -> bool:
        """Whether a document's links may change: its links name a changed entity, or its
        texts hold a changed name."""
        named = {k for ks in record.named for k in ks}
        named |= {r.source for r in record.relations}  # the situations a document advises on
        if named & self.entities:
            return True
        if not self.names:
            return False
        joined = squash("\n".join(texts))
        return any(name in joined for name in self.names)


def _near(norm: str, changed: str) -> bool:
    """Whether a name normalised as `norm` may be found as, or resolved through, the changed
    form (a plural adds one or two letters; resolution drops one or two).

    >>> _near("gpu", "gpus"), _near("gpus", "gpu"), _near("gpu", "tpu")
    (True, True, False)
    """
    if abs(len(norm) - len(changed)) > 2:
        return False
    return norm.startswith(changed) or changed.startswith(norm)


def units_digest(units: Iterable[EvidenceUnit]) -> str:
    """A digest of what linking reads of a document's units: the cache's record of them stands
    while the document reads into the same units (its subject and mentions are linking's own)."""
    digest = hashlib.sha256()
    for u in units:
        fields = (u.id, u.kind.value, u.text, u.lead, u.context, *u.heading_path, "", *u.cells)
        digest.update("\0".join([*fields, "", *u.header, "\n"]).encode())
    return digest.hexdigest()[:24]


def entities_digest(surfaces: Iterable[tuple[str, str, bool]], types: dict[str, NodeType]) -> str:
    """A digest of what a unit's links depend on beyond its document: every name the matcher
    looks for (with its entity and case rule) and every entity's type.

    >>> a = entities_digest([("vLLM", "tool:vllm", False)], {"tool:vllm": NodeType.TOOL})
    >>> a == entities_digest([("vLLM", "tool:vllm", True)], {"tool:vllm": NodeType.TOOL})
    False
    """
    digest = hashlib.sha256()
    for surface, key, exact in sorted(set(surfaces)):
        digest.update(f"{surface}\0{key}\0{int(exact)}\n".encode())
    for eid, node_type in sorted(types.items()):
        digest.update(f"{eid}\0{node_type.value}\n".encode())
    return digest.hexdigest()[:24]
