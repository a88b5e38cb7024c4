"""The JSON schema an LLM answer must follow: ids are enumerations of what retrieval produced."""

from __future__ import annotations

from typing import Any

__all__ = ["build_compact_schema"]


def _id_array(ids: list[str], max_items: int) -> dict[str, Any]:
    """An array of strings drawn from ``ids``; empty (``maxItems`` 0) when there is none."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {"type": "array", "items": {"type": "string"}, "maxItems": 0}
    return {
        "type": "array",
        "items": {"type": "string", "enum": unique},
        "maxItems": min(max_items, len(unique)),
    }


def build_compact_schema(
    names: list[str],
    citation_ids: list[str],
    *,
    max_answer_chars: int = 120,
    min_recommendations: int = 0,
    max_recommendations: int = 3,
    max_citations: int = 4,
    with_draft: bool = False,
) -> dict[str, Any]:
    """A small answer schema for small models: picks, then citations, then one short sentence.

    ``recommendations`` is a list of entity *names* drawn from ``names`` (names cost a small model
    fewer tokens and less confusion than ids; the caller maps them back), ``citations`` a list of
    evidence ids, and ``answer`` a string of at most ``max_answer_chars`` characters. Properties
    come in that order, so the model commits to its pick and evidence before it writes the prose
    that explains them, and the grammar bounds how many tokens it can spend. ``with_draft`` puts a
    boolean ``draft_ok`` first: the model confirms the graph composer's picks, or replaces them
    with its own ``recommendations``.

    >>> s = build_compact_schema(["PyTorch", "JAX"], ["P1", "S1"], min_recommendations=1)
    >>> list(s["properties"])
    ['recommendations', 'citations', 'answer']
    >>> picks = s["properties"]["recommendations"]
    >>> picks["items"]["enum"], picks["minItems"]
    (['PyTorch', 'JAX'], 1)
    >>> s["properties"]["answer"]["maxLength"]
    120
    >>> build_compact_schema([], [])["properties"]["recommendations"]["maxItems"]
    0
    >>> list(build_compact_schema(["JAX"], ["P1"], with_draft=True)["properties"])[0]
    'draft_ok'
    """
    picks = _id_array(names, max_recommendations)
    if names and min_recommendations:
        picks["minItems"] = min(min_recommendations, picks["maxItems"])
    cites = _id_array(citation_ids, max_citations)
    if citation_ids:
        cites["minItems"] = 1
    properties: dict[str, Any] = {"draft_ok": {"type": "boolean"}} if with_draft else {}
    properties |= {
        "recommendations": picks,
        "citations": cites,
        "answer": {"type": "string", "minLength": 1, "maxLength": max_answer_chars},
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
