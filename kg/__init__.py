"""The typed knowledge graph: schema, documents, graph operations, alias lexicon, persistence."""

from kg.documents import Block, BlockKind, Chunk, Document, Snippet, SnippetStatus, content_hash
from kg.schema import (
    SCHEMA_VERSION,
    Entity,
    Evidence,
    NodeType,
    Relation,
    RelationType,
    entity_id,
    normalize_name,
    relation_allowed,
    slugify,
)

__all__ = [
    "SCHEMA_VERSION",
    "Block",
    "BlockKind",
    "Chunk",
    "Document",
    "Entity",
    "Evidence",
    "NodeType",
    "Relation",
    "RelationType",
    "Snippet",
    "SnippetStatus",
    "content_hash",
    "entity_id",
    "normalize_name",
    "relation_allowed",
    "slugify",
]
