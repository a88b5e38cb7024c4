"""What a store holds, for the first page: its documents, their languages, the most connected
entities, and what to ask it.

    >>> document_language("# 安装\\n用 pip 安装：pip install numbat")
    'zh'
    >>> document_language("# Install")
    'en'
"""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from kg.graph import KnowledgeGraph
from kg.schema import IDEA_TYPES
from ui.graphview import TYPE_COLOURS, TYPE_NAMES
from ui.panels import Lang, t

if TYPE_CHECKING:
    from qa.api import Assistant

__all__ = [
    "EntityCount",
    "StoreOverview",
    "degrees",
    "document_language",
    "overview_panel",
    "store_overview",
]

_SHOWN_DOCUMENTS = 12
#: entity types too general to show as what a store is about
_BACKGROUND = IDEA_TYPES


class EntityCount(BaseModel):
    """An entity and how many edges touch it."""

    id: str
    name: str
    type: str
    degree: int


class StoreOverview(BaseModel):
    """The store at a glance."""

    store: str
    documents: list[str]
    languages: dict[str, int] = Field(description="zh/en -> number of documents")
    entities: int
    relations: int
    top: list[EntityCount]


def document_language(text: str) -> Literal["zh", "en"]:
    """A document's language: Chinese when its Chinese characters are at least a quarter as
    many as its Latin letters (code and names in a Chinese README are Latin), else English."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return "zh" if cjk and cjk * 4 >= latin else "en"


def degrees(graph: KnowledgeGraph) -> Counter[str]:
    """Edges per entity (both directions)."""
    counts: Counter[str] = Counter()
    for relation in graph.relations():
        counts[relation.source] += 1
        counts[relation.target] += 1
    return counts


def store_overview(assistant: Assistant, top: int = 10) -> StoreOverview:
    """Documents, languages, counts and the `top` most connected entities of a store."""
    graph = assistant.graph
    languages = Counter(document_language(text) for text in assistant.documents.values())
    counts = degrees(graph)
    ranked = sorted(
        (e for e in graph.entities() if e.type not in _BACKGROUND and counts[e.id]),
        key=lambda e: (-counts[e.id], e.name.casefold(), e.id),
    )
    stats = graph.stats()
    return StoreOverview(
        store=str(assistant.store.root),
        documents=sorted(assistant.documents),
        languages=dict(sorted(languages.items())),
        entities=stats.entities,
        relations=stats.relations,
        top=[
            EntityCount(id=e.id, name=e.name, type=e.type.value, degree=counts[e.id])
            for e in ranked[:top]
        ],
    )


def overview_panel(overview: StoreOverview, examples: list[str], lang: Lang) -> str:
    """The first page's panel: what the store holds and what to ask it."""
    words = {"zh": "中文", "en": "English"} if lang == "zh" else {"zh": "Chinese", "en": "English"}
    languages = ", ".join(f"{words.get(k, k)} ({n})" for k, n in overview.languages.items())
    shown = overview.documents[:_SHOWN_DOCUMENTS]
    more = len(overview.documents) - len(shown)
    documents = "".join(f"<li><code>{escape(d)}</code></li>" for d in shown)
    if more:
        documents += f"<li>{t('and_more', lang).format(n=more)}</li>"
    entities = "".join(
        f'<li class="kgqa-top-entity" data-id="{escape(e.id)}">'
        f'<i class="kgqa-dot" style="background:{TYPE_COLOURS.get(e.type, "#f1f5f9")}"></i>'
        f"<b>{escape(e.name)}</b> <small>{escape(_type_word(e.type, lang))} · "
        f"{t('edges_n', lang).format(n=e.degree)}</small></li>"
        for e in overview.top
    )
    asks = "".join(f'<li class="kgqa-example">{escape(q)}</li>' for q in examples)
    counts = t("store_counts", lang).format(
        documents=len(overview.documents),
        entities=overview.entities,
        relations=overview.relations,
    )
    return (
        f'<div class="kgqa-panel kgqa-overview" id="kgqa-overview">'
        f"<h3>{t('overview', lang)}</h3><p>{counts}</p>"
        f"<p><b>{t('languages', lang)}:</b> {escape(languages)}</p>"
        f"<h4>{t('documents', lang)}</h4><ul>{documents}</ul>"
        f"<h4>{t('top_entities', lang)}</h4><ul>{entities}</ul>"
        + (f"<h4>{t('what_to_ask', lang)}</h4><ul>{asks}</ul>" if asks else "")
        + f"<p><small>{t('how_to_ask', lang)}</small></p></div>"
    )


def _type_word(kind: str, lang: Lang) -> str:
    zh, en = TYPE_NAMES.get(kind, (kind, kind))
    return zh if lang == "zh" else en
