"""The JSON schema an LLM answer must follow: ids are enumerations of what retrieval produced."""

from __future__ import annotations

from typing import Any

__all__ = ["build_answer_schema"]


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


def build_answer_schema(
    recommendation_ids: list[str], citation_ids: list[str], *, max_recommendations: int = 5
) -> dict[str, Any]:
    """JSON schema of an answer whose recommendation and citation ids come from the evidence.

    A server that enforces the schema (llama.cpp's grammar, vLLM's structured outputs) makes it
    impossible for the model to name an id outside the lists, duplicates are dropped, and an empty
    list allows no item at all.

    >>> s = build_answer_schema(["framework:jax", "framework:jax"], [])
    >>> s["properties"]["recommendations"]["items"]["properties"]["id"]["enum"]
    ['framework:jax']
    >>> s["properties"]["citations"]["maxItems"]
    0
    """
    recommendation = {
        "type": "object",
        "properties": {
            "id": _id_array(recommendation_ids, 1)["items"],
            "reason": {"type": "string"},
        },
        "required": ["id", "reason"],
        "additionalProperties": False,
    }
    recommendations: dict[str, Any] = {"type": "array", "items": recommendation}
    recommendations["maxItems"] = (
        min(max_recommendations, len(set(recommendation_ids))) if recommendation_ids else 0
    )
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "recommendations": recommendations,
            "citations": _id_array(citation_ids, len(citation_ids)),
            "abstain": {"type": "boolean"},
        },
        "required": ["answer", "recommendations", "citations", "abstain"],
        "additionalProperties": False,
    }
