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
) -> dict[str, Any]:
    """A small answer schema for small models: a decline flag, picks, citations, one sentence.

    ``recommendations`` is a list of entity *names* drawn from ``names`` (names cost a small model
    fewer tokens and less confusion than ids; the caller maps them back), ``citations`` a list of
    evidence ids, and ``answer`` a string of at most ``max_answer_chars`` characters. Properties
    come in that order, after a boolean ``decline`` (the evidence does not answer the question),
    so the model decides whether it can answer, then commits to its pick and evidence before it
    writes the prose that explains them; the grammar bounds how many tokens it can spend.

    >>> s = build_compact_schema(["PyTorch", "JAX"], ["E1", "E2"], min_recommendations=1)
    >>> list(s["properties"])
    ['decline', 'recommendations', 'citations', 'answer']
    >>> picks = s["properties"]["recommendations"]
    >>> picks["items"]["enum"], picks["minItems"]
    (['PyTorch', 'JAX'], 1)
    >>> s["properties"]["answer"]["maxLength"]
    120
    >>> build_compact_schema([], [])["properties"]["recommendations"]["maxItems"]
    0
    """
    picks = _id_array(names, max_recommendations)
    if names and min_recommendations:
        picks["minItems"] = min(min_recommendations, picks["maxItems"])
    properties: dict[str, Any] = {
        "decline": {"type": "boolean"},
        "recommendations": picks,
        "citations": _id_array(citation_ids, max_citations),
        "answer": {"type": "string", "minLength": 1, "maxLength": max_answer_chars},
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
