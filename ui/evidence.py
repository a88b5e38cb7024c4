"""Quotes as people read them, each shown once with every path it supports.

The verbatim span (`Evidence.quote`, `start`, `end`) stays the evidence: it is what verification
checked and what the UI links to. What a reader sees is `display_quote(quote)`: the same text
without its Markdown (links show their text, emphasis and heading marks go, a table row reads as
its cells).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ingest.markup import strip_markup
from kg.schema import Evidence
from qa.schema import PathEdge

__all__ = ["QuoteGroup", "display_quote", "group_quotes"]

_TABLE_RULE = re.compile(r"\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?")
_LINE_LEAD = re.compile(r"^(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,3}[.)]\s+)")


def _is_table_row(line: str) -> bool:
    return line.startswith("|") or line.count("|") >= 2


def display_quote(quote: str) -> str:
    """The text a reader sees of a verbatim quote: Markdown and HTML markup gone, a table row as
    its cells, heading and list marks dropped, lines joined.

    >>> display_quote("**Hardware:** runs on [NVIDIA GPUs](https://x.y/gpu)")
    'Hardware: runs on NVIDIA GPUs'
    >>> display_quote("| vLLM | ✅ | `pip install vllm` |")
    'vLLM · ✅ · pip install vllm'
    >>> display_quote("## Install\\n- use `uv`")
    'Install use uv'
    """
    lines = []
    for raw in quote.splitlines():
        line = raw.strip()
        if not line or _TABLE_RULE.fullmatch(line):
            continue
        if _is_table_row(line):
            cells = [strip_markup(c) for c in re.split(r"(?<!\\)\|", line.strip("|"))]
            text = " · ".join(c for c in cells if c)
        else:
            text = strip_markup(_LINE_LEAD.sub("", line))
        if text:
            lines.append(text)
    return " ".join(lines) or quote.strip()


class QuoteGroup(BaseModel):
    """One quote, and the edges it supports with the numbers of the paths they are on."""

    evidence: Evidence
    text: str = Field(description="what is shown: `display_quote` of the verbatim quote")
    edges: list[PathEdge] = Field(default_factory=list)
    paths: list[int] = Field(default_factory=list, description="1-based numbers of the paths")


def group_quotes(paths: Sequence[Sequence[PathEdge]], per_edge: int = 2) -> list[QuoteGroup]:
    """Quotes in the order first cited, each once: the first `per_edge` pieces of evidence of
    every edge of every path, grouped by their span.

    >>> ev = Evidence(doc="a.md", quote="**x**", start=0, end=5)
    >>> e1 = PathEdge(source="a", relation="USED_WITH", target="b", evidence=[ev])
    >>> e2 = PathEdge(source="b", relation="USED_WITH", target="c", evidence=[ev])
    >>> [(g.text, g.paths, len(g.edges)) for g in group_quotes([[e1], [e1, e2]])]
    [('x', [1, 2], 2)]
    """
    groups: dict[tuple[str, int, int], QuoteGroup] = {}
    for number, path in enumerate(paths, start=1):
        for edge in path:
            for ev in edge.evidence[:per_edge]:
                key = (ev.doc, ev.start, ev.end)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = QuoteGroup(evidence=ev, text=display_quote(ev.quote))
                if number not in group.paths:
                    group.paths.append(number)
                if not any(
                    (e.source, e.relation, e.target) == (edge.source, edge.relation, edge.target)
                    for e in group.edges
                ):
                    group.edges.append(edge)
    return list(groups.values())
