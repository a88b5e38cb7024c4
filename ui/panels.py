"""HTML of the panels beside the chat: recommendation, cited paths, subgraph, snippets, conflicts.

Everything from documents, questions and the graph is escaped: text in the sources is data, never
markup. Labels follow the question's language (`Lang`: "zh" for Chinese and mixed questions).
"""

from __future__ import annotations

import re
from html import escape
from typing import Literal

from kg.graph import KnowledgeGraph
from qa.api import StoreStatus
from qa.render import format_edge
from qa.schema import Answer, Language, PathEdge, SnippetReport
from qa.snippets.validate import decisive_reason
from ui.evidence import QuoteGroup, group_quotes
from ui.graphview import legend_html

__all__ = [
    "Lang",
    "answer_panel",
    "explorer_panel",
    "feedback_html",
    "lang_of",
    "not_found_panel",
    "quotes_html",
    "status_line",
    "subgraph_panel",
    "t",
    "text_lang",
]

Lang = Literal["zh", "en"]

_TEXT: dict[str, tuple[str, str]] = {
    "recommendation": ("推荐", "Recommendation"),
    "also": ("也可考虑", "Also consider"),
    "citations": ("引用的图路径", "Cited graph paths"),
    "subgraph": ("引用的子图", "Cited subgraph"),
    "snippets": ("代码片段", "Code snippets"),
    "conflict": ("资料之间有分歧", "The sources disagree"),
    "abstained": ("资料未涵盖这个问题。", "Not covered by the sources."),
    "no_recommendation": ("没有明确的推荐。", "No single recommendation."),
    "no_citations": ("没有引用。", "No citations."),
    "notes": ("说明", "Notes"),
    "backend": ("回答来源", "Answered by"),
    "not_found": ("图中没有找到这个实体：", "No entity in the graph matches:"),
    "did_you_mean": ("您是不是要找：", "Did you mean:"),
    "neighbourhood": ("邻居与证据", "Neighbours and evidence"),
    "neighbourhood_picture": ("关系图", "Neighbourhood"),
    "supports": ("支持的路径", "Supports"),
    "path": ("路径", "path"),
    "verbatim": ("原文（逐字）", "verbatim"),
    "section": ("章节", "section"),
    "passed": ("通过", "passed"),
    "failed": ("失败", "failed"),
    "skipped": ("未执行", "skipped"),
    "snippet_levels": ("逐级检查", "Every level of the check"),
    "llm_pending": ("LLM 正在补充回答…", "The LLM is adding its answer…"),
    "read_as": ("理解为", "read as"),
    "overview": ("这个知识库里有什么", "What this store holds"),
    "store_counts": (
        "{documents} 篇文档，{entities} 个实体，{relations} 条关系。",
        "{documents} documents, {entities} entities, {relations} relations.",
    ),
    "languages": ("文档语言", "Languages"),
    "documents": ("文档", "Documents"),
    "and_more": ("……另有 {n} 篇", "… and {n} more"),
    "top_entities": ("关系最多的实体", "Most connected entities"),
    "edges_n": ("{n} 条关系", "{n} edges"),
    "what_to_ask": ("可以这样问", "What to ask"),
    "how_to_ask": (
        "问一个选型问题（某个场景用什么、X 是否支持 Y、A 和 B 怎么选），"
        "回答会引用文档原文和图中的路径；资料没有涉及的问题会被明确拒答。",
        "Ask a selection question (what to use for a situation, whether X supports Y, A or B); "
        "answers cite the documents' own words and the graph's paths, and questions the "
        "documents do not cover are declined.",
    ),
    "entity_list": ("全部实体", "All entities"),
    "suggestions": ("相近的名称", "Close names"),
}


def t(key: str, lang: Lang) -> str:
    """A UI label in one language.

    >>> t("abstained", "en"), t("abstained", "zh")
    ('Not covered by the sources.', '资料未涵盖这个问题。')
    """
    zh, en = _TEXT[key]
    return zh if lang == "zh" else en


def lang_of(language: Language | str) -> Lang:
    """The UI language for a question language: English stays English, the rest is Chinese.

    >>> lang_of(Language.EN), lang_of(Language.MIXED)
    ('en', 'zh')
    """
    return "en" if language == Language.EN else "zh"


def text_lang(text: str) -> Lang:
    """The UI language of a free text (a search box): Chinese if it has any CJK character.

    >>> text_lang("英伟达"), text_lang("TensorRT")
    ('zh', 'en')
    """
    return "zh" if any("\u3400" <= ch <= "\u9fff" for ch in text) else "en"


def _where_html(group: QuoteGroup, lang: Lang) -> str:
    ev = group.evidence
    section = " › ".join(ev.heading_path) if ev.heading_path else ""
    where = escape(ev.doc) + (f" · {t('section', lang)}: {escape(section)}" if section else "")
    return f'<div class="kgqa-where">{where} [{ev.start}:{ev.end}]</div>'


def _quote_block(group: QuoteGroup, lang: Lang) -> str:
    """A quote as read (Markdown rendered to text); the verbatim span in its tooltip."""
    verbatim = escape(f"{t('verbatim', lang)}: {group.evidence.quote}", quote=True)
    return (
        f'<blockquote class="kgqa-quote" title="{verbatim}">“{escape(group.text)}”'
        f"{_where_html(group, lang)}</blockquote>"
    )


def quotes_html(
    graph: KnowledgeGraph, paths: list[list[PathEdge]], lang: Lang, *, numbered: bool = True
) -> str:
    """Each quote once, under the edges it supports (with the numbers of their paths)."""
    items = []
    for group in group_quotes(paths):
        numbers = " ".join(str(n) for n in group.paths)
        edges = "".join(
            f'<li class="kgqa-edge-item">{escape(format_edge(graph, edge, lang))}</li>'
            for edge in group.edges
        )
        tag = (
            f'<span class="kgqa-paths">{t("path", lang)} '
            + ", ".join(f"[{n}]" for n in group.paths)
            + "</span>"
            if numbered
            else ""
        )
        kind = "kgqa-citation kgqa-quote-group" if numbered else "kgqa-quote-group"
        items.append(
            f'<div class="{kind}" data-paths="{numbers}">{tag}'
            f'<ul class="kgqa-supports">{edges}</ul>{_quote_block(group, lang)}</div>'
        )
    return "".join(items)


def _edge_html(graph: KnowledgeGraph, edge: PathEdge, lang: Lang) -> str:
    line = escape(format_edge(graph, edge, lang))
    quotes = "".join(_quote_block(g, lang) for g in group_quotes([[edge]]))
    return f'<div class="kgqa-edge-item"><b>{line}</b>{quotes}</div>'


def answer_panel(graph: KnowledgeGraph, answer: Answer, lang: Lang) -> str:
    """The recommendation, conflicts, cited paths, snippets and notes of an answer, as HTML."""
    parts = ['<div class="kgqa-panel" id="kgqa-answer-panel">']
    if answer.abstained:
        parts.append(f'<div class="kgqa-abstained">{t("abstained", lang)}</div>')
    elif answer.recommendations:
        head, *rest = answer.recommendations
        parts.append(
            f'<div class="kgqa-recommendation"><span>{t("recommendation", lang)}</span> '
            f"<strong>{escape(head.name)}</strong></div>"
        )
        if rest:
            names = ", ".join(escape(r.name) for r in rest)
            parts.append(f'<div class="kgqa-also">{t("also", lang)}: {names}</div>')
    else:
        parts.append(f'<div class="kgqa-norec">{t("no_recommendation", lang)}</div>')
    if answer.conflicts:
        items = "".join(
            "<li>" + "".join(_edge_html(graph, edge, lang) for edge in c.claims) + "</li>"
            for c in answer.conflicts
        )
        parts.append(
            f'<div class="kgqa-conflict"><b>{t("conflict", lang)}</b><ul>{items}</ul></div>'
        )
    if answer.citations:
        paths = [citation.path for citation in answer.citations]
        parts.append(
            f"<h4>{t('citations', lang)} ({len(paths)})</h4>"
            f'<div class="kgqa-citations">{quotes_html(graph, paths, lang)}</div>'
        )
    elif not answer.abstained:
        parts.append(f"<p>{t('no_citations', lang)}</p>")
    if answer.snippets:
        parts.append(f"<h4>{t('snippets', lang)}</h4>")
        parts += [_snippet_card(snippet, lang) for snippet in answer.snippets]
    if answer.notes:
        notes = "".join(f"<li>{escape(n)}</li>" for n in answer.notes)
        parts.append(
            f'<details class="kgqa-notes"><summary>{t("notes", lang)}</summary>'
            f"<ul>{notes}</ul></details>"
        )
    parts.append(
        f'<div class="kgqa-backend">{t("backend", lang)}: {escape(answer.backend)} · '
        f"{answer.latency_ms:.0f} ms</div></div>"
    )
    return "".join(parts)


def _snippet_card(snippet: SnippetReport, lang: Lang) -> str:
    """A snippet's card: its badge and the one line that decided it (for a failure: the line
    of the snippet, the error and why it is the code's fault), the code, then every level of
    the check folded away.

    >>> card = _snippet_card(SnippetReport(code="f(", status="failed",
    ...     detail="language: info — python\\nparse: failed — line 1: `f(` — SyntaxError: x"), "en")
    >>> card.split('<div class="kgqa-snippet-why">')[1].split("</div>")[0]
    'parse: failed — line 1: `f(` — SyntaxError: x'
    """
    status = snippet.status if snippet.status in ("passed", "failed", "skipped") else "skipped"
    why = decisive_reason(snippet.detail)
    levels = (
        f'<details class="kgqa-snippet-levels"><summary>{t("snippet_levels", lang)}</summary>'
        f"<pre>{escape(snippet.detail)}</pre></details>"
        if snippet.detail
        else ""
    )
    return (
        f'<div class="kgqa-snippet"><span class="kgqa-badge kgqa-{status}">{t(status, lang)}</span>'
        f'<div class="kgqa-snippet-why">{escape(why)}</div>'
        f"<pre><code>{escape(snippet.code)}</code></pre>{levels}</div>"
    )


def subgraph_panel(svg: str, lang: Lang, heading: str = "subgraph") -> str:
    """The subgraph picture under a heading (a `t` key), with a legend of the node types it
    shows; empty when there is nothing to draw."""
    if not svg:
        return ""
    types = re.findall(r'class="kgqa-node" data-id="[^"]*" data-type="([^"]+)"', svg)
    return (
        f'<div class="kgqa-subgraph" id="kgqa-subgraph"><h4>{t(heading, lang)}</h4>'
        f"{legend_html(types, lang)}{svg}</div>"
    )


def explorer_panel(graph: KnowledgeGraph, node: str, edges: list[PathEdge], lang: Lang) -> str:
    """An entity's card: name, type, aliases, then each quote once under the edges it
    supports."""
    entity = graph.entity(node)
    aliases = ", ".join(escape(a) for a in entity.aliases)
    quotes = quotes_html(graph, [[edge] for edge in edges], lang, numbered=False)
    return (
        f'<div class="kgqa-panel" id="kgqa-entity"><h3>{escape(entity.name)} '
        f"<small>[{escape(entity.type.value)}] {escape(entity.id)}</small></h3>"
        + (f"<p>{aliases}</p>" if aliases else "")
        + f"<h4>{t('neighbourhood', lang)} ({len(edges)})</h4>{quotes}</div>"
    )


def not_found_panel(query: str, lang: Lang, suggestions: list[str] | None = None) -> str:
    """What the explorer shows when nothing matches (with the names it might have meant)."""
    text = f"{t('not_found', lang)} {escape(query)}"
    if suggestions:
        names = ", ".join(escape(s) for s in suggestions)
        text += f'<div class="kgqa-did-you-mean">{t("did_you_mean", lang)} {names}</div>'
    return f'<div class="kgqa-panel kgqa-abstained">{text}</div>'


def feedback_html(message: str) -> str:
    """The one message about a question that cannot be asked (empty: no message)."""
    if not message:
        return ""
    return f'<div class="kgqa-feedback" role="alert">{escape(message)}</div>'


def status_line(status: StoreStatus) -> str:
    """`store · N documents · N entities · N edges · backend`, both languages at once."""
    s = status.stats
    return (
        f'<div id="kgqa-status"><code>{escape(status.store)}</code> · '
        f"{status.documents} documents 文档 · {s.entities} entities 实体 · "
        f"{s.relations} edges 边 · backend 回答: <b>{escape(status.backend)}</b></div>"
    )


CSS = """
.kgqa-recommendation { font-size: 1.3em; padding: 8px 12px; background: #ecfdf5;
  border-left: 4px solid #059669; border-radius: 6px; margin-bottom: 6px; }
.kgqa-abstained { padding: 8px 12px; background: #f8fafc; border-left: 4px solid #94a3b8;
  border-radius: 6px; }
.kgqa-conflict { padding: 8px 12px; background: #fffbeb; border-left: 4px solid #d97706;
  border-radius: 6px; margin: 6px 0; }
.kgqa-quote { margin: 4px 0 8px 0; padding: 4px 8px; border-left: 3px solid #cbd5e1;
  color: #334155; font-size: 0.92em; }
.kgqa-where { color: #64748b; font-size: 0.85em; }
.kgqa-badge { padding: 1px 8px; border-radius: 10px; font-size: 0.8em; color: white; }
.kgqa-passed { background: #16a34a; } .kgqa-failed { background: #dc2626; }
.kgqa-skipped { background: #64748b; }
.kgqa-snippet-why { font-size: 0.9em; margin: 4px 0; overflow-wrap: anywhere; }
.kgqa-snippet-levels pre { font-size: 0.8em; white-space: pre-wrap; }
.kgqa-backend { color: #64748b; font-size: 0.85em; margin-top: 8px; }
.kgqa-subgraph { overflow-x: auto; }
.kgqa-quote-group { margin: 6px 0 10px 0; }
.kgqa-supports { margin: 2px 0; padding-left: 18px; font-weight: 600; font-size: 0.92em; }
.kgqa-paths { color: #64748b; font-size: 0.8em; }
.kgqa-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 4px 0 8px 0;
  font-size: 0.85em; color: #334155; }
.kgqa-legend-item i { display: inline-block; width: 12px; height: 12px; margin-right: 4px;
  border: 1px solid #475569; border-radius: 3px; vertical-align: -1px; }
.kgqa-feedback { padding: 6px 10px; background: #fef2f2; border-left: 4px solid #dc2626;
  border-radius: 6px; color: #7f1d1d; }
.kgqa-counter { color: #64748b; font-size: 0.85em; text-align: right; }
.kgqa-counter .kgqa-over { color: #dc2626; font-weight: 600; }
.kgqa-overview h3 { margin-top: 0; }
.kgqa-overview li { margin: 2px 0; }
.kgqa-dot { display: inline-block; width: 10px; height: 10px; margin-right: 6px;
  border: 1px solid #475569; border-radius: 50%; }
"""
