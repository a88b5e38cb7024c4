"""The typed schema of the knowledge graph: node and relation types, evidence, entities, relations.

Everything that crosses a package boundary is one of these pydantic models (or a model in
`kg.documents`). Ids are content-derived and stable: `entity_id(NodeType.FRAMEWORK, "PyTorch")`
is `"framework:pytorch"` on every machine and every run.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ALLOWED_ENDPOINTS",
    "FUNCTIONAL_RELATIONS",
    "IDEA_TYPES",
    "SCHEMA_VERSION",
    "SITUATION_TYPES",
    "SOLUTION_TYPES",
    "Entity",
    "Evidence",
    "Extraction",
    "NodeType",
    "Relation",
    "RelationType",
    "entity_id",
    "normalize_name",
    "relation_allowed",
    "slugify",
]

#: Version of every on-disk format the store writes; load refuses other versions.
#: 2: a recommendation's place in its list is `Relation.rank` (version 1 kept it in `strength`).
#: 3: Platform, Language and License nodes, claim relations, and the evidence units (units.json).
#: 4: the lexical indexes as numpy arrays (lexical.npz, units_lexical.npz); links.json.
SCHEMA_VERSION = 4


class NodeType(StrEnum):
    """What kind of real-world thing a node is."""

    FRAMEWORK = "Framework"
    LIBRARY = "Library"
    INFERENCE_ENGINE = "InferenceEngine"
    TOOL = "Tool"
    HARDWARE = "Hardware"
    PARALLEL_STRATEGY = "ParallelStrategy"
    TECHNIQUE = "Technique"
    FORMAT = "Format"
    MODEL = "Model"
    SCENARIO = "Scenario"
    PERSONA = "Persona"
    CRITERION = "Criterion"
    CONCEPT = "Concept"
    ORGANIZATION = "Organization"
    PLATFORM = "Platform"  # an operating system or compute platform: Linux, WSL, CUDA, ROCm
    LANGUAGE = "Language"  # a programming language: Python, Rust, C++
    LICENSE = "License"  # Apache-2.0, MIT, AGPL-3.0
    EXECUTION_MODE = "ExecutionMode"  # how a framework runs a program: eager, graph mode

    @property
    def prefix(self) -> str:
        """The id prefix: `InferenceEngine` -> `inference-engine`."""
        return re.sub(r"(?<!^)(?=[A-Z])", "-", self.value).lower()


#: Node types that can be recommended: things a person can choose and use.
SOLUTION_TYPES = frozenset(
    {
        NodeType.FRAMEWORK,
        NodeType.LIBRARY,
        NodeType.INFERENCE_ENGINE,
        NodeType.TOOL,
        NodeType.HARDWARE,
        NodeType.PARALLEL_STRATEGY,
        NodeType.TECHNIQUE,
        NodeType.FORMAT,
        NodeType.MODEL,
        NodeType.CONCEPT,
        NodeType.EXECUTION_MODE,
    }
)
#: Node types that name an idea, not a thing one installs or picks on its own.
IDEA_TYPES = frozenset({NodeType.CONCEPT, NodeType.EXECUTION_MODE})
#: Node types that describe a situation a recommendation is for.
SITUATION_TYPES = frozenset(
    {
        NodeType.SCENARIO,
        NodeType.PERSONA,
        NodeType.CRITERION,
        NodeType.HARDWARE,
        NodeType.CONCEPT,
        NodeType.EXECUTION_MODE,
        NodeType.PLATFORM,
    }
)
_ANY = frozenset(NodeType)


class RelationType(StrEnum):
    """Typed edges. Direction reads `source RELATION target`."""

    RECOMMENDED_FOR = "RECOMMENDED_FOR"  # situation -> recommended solution (DESIGN.md example)
    NOT_RECOMMENDED = "NOT_RECOMMENDED"  # situation/criterion -> discouraged solution
    RUNS_ON = "RUNS_ON"  # solution -> hardware
    EXPORTS_TO = "EXPORTS_TO"  # framework -> format / engine
    SHARDS = "SHARDS"  # strategy -> what it shards (parameters, gradients, ...)
    IMPLEMENTS = "IMPLEMENTS"  # concrete thing -> concept/technique/style it implements
    ALTERNATIVE_TO = "ALTERNATIVE_TO"  # symmetric in meaning, stored once
    RANKS_ABOVE = "RANKS_ABOVE"  # a ranks above b under `criterion` (attribute)
    RATED = "RATED"  # solution -> criterion, with `stars` attribute
    SUITS_SCALE = "SUITS_SCALE"  # solution -> scale description ("8–64 卡")
    PART_OF_ECOSYSTEM = "PART_OF_ECOSYSTEM"  # library/tool -> ecosystem (framework/org)
    USED_WITH = "USED_WITH"  # solution -> solution used together in a stack
    HAS_PROPERTY = "HAS_PROPERTY"  # subject -> property concept, from a table cell or definition
    DEFAULT_MODE = (
        "DEFAULT_MODE"  # framework -> execution mode; functional: disagreement = conflict
    )
    SUPPORTS = "SUPPORTS"  # solution -> a format, model, language, feature it supports
    REQUIRES = "REQUIRES"  # solution -> what it needs (a platform, a library, an instruction set)
    NOT_SUPPORTED = "NOT_SUPPORTED"  # solution -> what a document says it does not support
    PART_OF = "PART_OF"  # a component or edition -> the project it belongs to
    LICENSED_UNDER = "LICENSED_UNDER"  # solution -> licence
    MENTIONS = "MENTIONS"  # the quote relates the two and says how; no narrower type fits


#: Allowed (source type, target type) pairs per relation, as (source set, target set).
ALLOWED_ENDPOINTS: dict[RelationType, tuple[frozenset[NodeType], frozenset[NodeType]]] = {
    RelationType.RECOMMENDED_FOR: (SITUATION_TYPES, SOLUTION_TYPES),
    RelationType.NOT_RECOMMENDED: (SITUATION_TYPES, SOLUTION_TYPES),
    RelationType.RUNS_ON: (
        SOLUTION_TYPES | {NodeType.PLATFORM},
        frozenset({NodeType.HARDWARE, NodeType.PLATFORM}),
    ),
    RelationType.EXPORTS_TO: (SOLUTION_TYPES, SOLUTION_TYPES),
    RelationType.SHARDS: (frozenset({NodeType.PARALLEL_STRATEGY}), frozenset({NodeType.CONCEPT})),
    RelationType.IMPLEMENTS: (SOLUTION_TYPES, SOLUTION_TYPES),
    RelationType.ALTERNATIVE_TO: (SOLUTION_TYPES, SOLUTION_TYPES),
    RelationType.RANKS_ABOVE: (SOLUTION_TYPES, SOLUTION_TYPES),
    RelationType.RATED: (SOLUTION_TYPES, frozenset({NodeType.CRITERION})),
    RelationType.SUITS_SCALE: (SOLUTION_TYPES, frozenset({NodeType.SCENARIO, NodeType.CONCEPT})),
    RelationType.PART_OF_ECOSYSTEM: (SOLUTION_TYPES, SOLUTION_TYPES | {NodeType.ORGANIZATION}),
    RelationType.USED_WITH: (SOLUTION_TYPES, SOLUTION_TYPES),
    RelationType.HAS_PROPERTY: (_ANY, _ANY),
    RelationType.DEFAULT_MODE: (
        SOLUTION_TYPES,
        frozenset({NodeType.EXECUTION_MODE, NodeType.CONCEPT, NodeType.TECHNIQUE}),
    ),
    RelationType.SUPPORTS: (_ANY, _ANY),
    RelationType.REQUIRES: (_ANY, _ANY),
    RelationType.NOT_SUPPORTED: (_ANY, _ANY),
    RelationType.PART_OF: (SOLUTION_TYPES | {NodeType.PLATFORM}, _ANY),
    RelationType.LICENSED_UNDER: (_ANY, frozenset({NodeType.LICENSE})),
    RelationType.MENTIONS: (_ANY, _ANY),
}


#: Relations a subject has one value of: two sources giving different targets disagree.
FUNCTIONAL_RELATIONS = frozenset({RelationType.DEFAULT_MODE})


def relation_allowed(relation: RelationType, source: NodeType, target: NodeType) -> bool:
    """Whether the schema allows `source -relation-> target`.

    >>> relation_allowed(RelationType.RUNS_ON, NodeType.INFERENCE_ENGINE, NodeType.HARDWARE)
    True
    >>> relation_allowed(RelationType.RUNS_ON, NodeType.HARDWARE, NodeType.FRAMEWORK)
    False
    """
    sources, targets = ALLOWED_ENDPOINTS[relation]
    return source in sources and target in targets


def normalize_name(text: str) -> str:
    """Fold a surface form for matching: NFKC, lower case, no spaces, dashes or dots.

    >>> normalize_name("Tensor Flow")
    'tensorflow'
    >>> normalize_name("ＰｙＴｏｒｃｈ Lightning")
    'pytorchlightning'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"[\s\-_.·•/]+", "", folded)


def slugify(text: str) -> str:
    """A readable, stable slug; CJK characters are kept.

    >>> slugify("PyTorch Lightning")
    'pytorch-lightning'
    >>> slugify("学深度学习/复现论文")
    '学深度学习-复现论文'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    slug = re.sub(r"[^\w+#]+", "-", folded).strip("-")
    return slug[:80] or "x"


def entity_id(node_type: NodeType, name: str) -> str:
    """The stable id of an entity: type prefix plus slug of its canonical name.

    >>> entity_id(NodeType.INFERENCE_ENGINE, "ONNX Runtime")
    'inference-engine:onnx-runtime'
    """
    return f"{node_type.prefix}:{slugify(name)}"


class Evidence(BaseModel):
    """Where a claim comes from: a verbatim quote and its character span in a document."""

    model_config = ConfigDict(frozen=True)

    doc: str = Field(description="document id: path relative to its corpus root")
    quote: str = Field(description="verbatim text of the document between start and end")
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    heading_path: tuple[str, ...] = ()


class Entity(BaseModel):
    """A node: one real-world thing (framework, scenario, criterion, ...)."""

    id: str
    type: NodeType
    name: str
    aliases: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)


class Relation(BaseModel):
    """A typed edge with its provenance and the scalar facts it states."""

    source: str
    relation: RelationType
    target: str
    evidence: list[Evidence] = Field(default_factory=list)
    criterion: str | None = Field(default=None, description="criterion node id (RANKS_ABOVE)")
    strength: str | None = Field(
        default=None, description="ranking operator (RANKS_ABOVE): '>>', '>' or '>='"
    )
    rank: int | None = Field(
        default=None, ge=1, description="place in a list of recommendations, 1 = first"
    )
    stars: int | None = Field(default=None, ge=0, le=10, description="★ count (RATED)")
    value: str | None = Field(default=None, description="the stated value: a table cell, a scale")
    qualifier: str | None = Field(default=None, description="a version the claim is limited to")

    @property
    def key(self) -> str:
        """The identity of the edge among parallel edges: duplicates merge their evidence.

        >>> Relation(source="a", relation=RelationType.RANKS_ABOVE, target="b", criterion="c").key
        'RANKS_ABOVE@c'
        """
        key = self.relation.value
        if self.criterion:
            key += f"@{self.criterion}"
        if self.qualifier:
            key += f"#{self.qualifier}"
        return key


class Extraction(BaseModel):
    """What one document yields: its entities and relations, every one with evidence in it."""

    doc: str
    doc_hash: str
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
