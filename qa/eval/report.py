"""The evaluation report: one self-contained HTML file (inline SVG, no scripts) and a Markdown
summary.

`write_report(path, data)` writes `path` (HTML) and `path.with_suffix(".md")`. Plots are drawn in
Python (`qa.eval.charts`): grouped bars (accuracy by kind and language, kgqa vs baseline) and a
latency histogram.
"""

from __future__ import annotations

from collections import Counter
from html import escape
from pathlib import Path

from pydantic import BaseModel, Field

from kg.store import atomic_write_text
from qa.eval.charts import bar_chart, histogram, pct
from qa.eval.records import EvalRecord, GoldQuestion, LineProblem, RunStats, llm_fallback
from qa.eval.score import EvalSummary, Metrics, QuestionScore

__all__ = ["ReportData", "SystemResult", "markdown_summary", "render_html", "write_report"]

_HEADLINE = (
    ("accuracy", "accuracy"),
    ("top_accuracy", "top recommendation"),
    ("facts_accuracy", "required facts"),
    ("abstention_precision", "abstention precision"),
    ("abstention_recall", "abstention recall"),
    ("citation_validity", "citation validity"),
    ("citation_support", "citation support"),
    ("gold_quotes_cited", "gold quotes cited"),
    ("retrieval_recall", "retrieval recall@k"),
    ("reader_recall", "gold documents read"),
    ("conflict_handled", "conflicts reported"),
    ("snippet_pass_rate", "snippet pass rate"),
)


class SystemResult(BaseModel):
    """One system's run and scores (kgqa, or the baseline)."""

    name: str
    summary: EvalSummary
    scores: list[QuestionScore]
    records: dict[str, EvalRecord] = Field(default_factory=dict)
    run: RunStats | None = None


class ReportData(BaseModel):
    """Everything the report shows; `systems[0]` is the one whose wrong answers are listed."""

    title: str = "kgqa evaluation"
    questions_file: str
    store: str
    created: str
    golds: list[GoldQuestion]
    systems: list[SystemResult]
    problems: list[LineProblem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="how the run was made")


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} ms"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _overall_rows(systems: list[SystemResult]) -> list[list[str]]:
    rows = [
        [escape(label)] + [pct(getattr(s.summary.overall, key)) for s in systems]
        for key, label in _HEADLINE
    ]
    rows.append(["latency p50"] + [_ms(s.summary.overall.latency_p50_ms) for s in systems])
    rows.append(["latency p95"] + [_ms(s.summary.overall.latency_p95_ms) for s in systems])
    rows.append(
        ["throughput"]
        + [
            f"{s.run.throughput_qps} q/s" if s.run and s.run.throughput_qps else "— (resumed)"
            for s in systems
        ]
    )
    rows.append(["run (concurrency, 1-min load start→end)"] + [_run_conditions(s) for s in systems])
    rows.append(["answered by"] + [escape(_backend_counts(s)) for s in systems])
    rows.append(["LLM fallbacks"] + [escape(_fallback_counts(s)) for s in systems])
    rows.append(
        ["answered / questions"]
        + [f"{s.summary.overall.answered} / {s.summary.overall.questions}" for s in systems]
    )
    return rows


def _run_conditions(system: SystemResult) -> str:
    """Concurrency and load of the pass that produced the throughput figure."""
    run = system.run
    if run is None or not run.answered:
        return "— (resumed)"
    load = "→".join(f"{x:.1f}" for x in run.load_average) or "?"
    return f"{run.concurrency}, load {load}"


def _backend_counts(system: SystemResult) -> str:
    """Answers in the results by backend, e.g. ``llm:qwen 97 · graph 22``."""
    counts = Counter(r.backend for r in system.records.values())
    return " · ".join(f"{name} {n}" for name, n in counts.most_common()) or "—"


def _fallback_counts(system: SystemResult) -> str:
    """LLM fallbacks in the results by kind, e.g. ``2 (llm-timeout 2)``; ``0`` when none."""
    reasons = Counter(
        kind.value for r in system.records.values() if (kind := llm_fallback(r)) is not None
    )
    if not reasons:
        return "0"
    detail = ", ".join(f"{name} {n}" for name, n in reasons.most_common())
    return f"{sum(reasons.values())} ({detail})"


def _group_rows(groups: dict[str, Metrics], others: list[dict[str, Metrics]]) -> list[list[str]]:
    rows = []
    for name, m in groups.items():
        row = [
            escape(name),
            str(m.questions),
            pct(m.accuracy),
            pct(m.top_accuracy),
            pct(m.facts_accuracy),
        ]
        row += [
            pct(m.citation_support),
            pct(m.retrieval_recall),
            pct(m.reader_recall),
            _ms(m.latency_p50_ms),
        ]
        row += [pct(o[name].accuracy) if name in o else "—" for o in others]
        rows.append(row)
    return rows


def _wrong_answers(data: ReportData) -> str:
    main = data.systems[0]
    golds = {g.id: g for g in data.golds}
    others = [{s.id: s for s in other.scores} for other in data.systems[1:]]
    items = []
    for score in main.scores:
        if score.correct is not False:
            continue
        gold, record = golds[score.id], main.records.get(score.id)
        given = (
            "not answered"
            if record is None
            else (
                "abstained" if record.abstained else f"top: {escape(score.top_given or '(none)')}"
            )
        )
        answer = escape(record.answer[:600]) if record else ""
        missing = "; ".join(" / ".join(f) for f in score.missing_facts)
        expected = (
            "abstain (not covered)"
            if gold.answerable is False
            else (
                "top: " + escape(" | ".join(gold.gold_top))
                if gold.gold_top
                else "no recommendation needed"
            )
        )
        quotes = "".join(
            f"<li><code>{escape(e.doc)}</code> “{escape(e.quote)}”</li>" for e in gold.gold_evidence
        )
        verdicts = " ".join(
            f"{s.name}: {'right' if o.get(score.id) and o[score.id].correct else 'wrong'}"
            for s, o in zip(data.systems[1:], others, strict=True)
        )
        facts = "; ".join(" / ".join(f) for f in gold.required_facts)
        tags = " · ".join(t for t in (score.kind, score.lang, verdicts) if t)
        items.append(
            f'<div class="wrong"><h4>{escape(score.id)} <small>{escape(tags)}</small></h4>'
            f"<p class=q>{escape(gold.question)}</p>"
            f'<div class="cols"><div><b>{escape(main.name)}</b> — {given}'
            f"{'<br>missing facts: ' + escape(missing) if missing else ''}<pre>{answer}</pre></div>"
            f"<div><b>gold</b> — {expected}"
            f"{'<br>required facts: ' + escape(facts) if facts else ''}"
            f"<ul>{quotes}</ul></div></div></div>"
        )
    return "".join(items) or "<p>None: every scored answer is right.</p>"


_CSS = " ".join(
    [
        'body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;margin:24px;color:#222;',
        "max-width:1200px}",
        "table{border-collapse:collapse;margin:8px 0 20px}",
        "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}",
        "th:first-child,td:first-child{text-align:left}thead{background:#f0f4f8}",
        ".plots{display:flex;flex-wrap:wrap;gap:12px}.plots svg{border:1px solid #e2e8f0}",
        ".wrong{border-top:1px solid #ddd;padding:6px 0}.wrong h4{margin:4px 0}",
        ".q{font-style:italic;margin:2px 0}",
        ".cols{display:grid;grid-template-columns:1fr 1fr;gap:16px}",
        "pre{white-space:pre-wrap;background:#f7f7f7;padding:6px;font-size:12px;",
        "max-height:180px;overflow:auto}small{color:#666;font-weight:normal}.meta{color:#555}",
    ]
)


def render_html(data: ReportData) -> str:
    """The whole report as one HTML string (no external resources)."""
    systems = data.systems
    names = [s.name for s in systems]
    kinds = list(systems[0].summary.by_kind)
    langs = list(systems[0].summary.by_lang)

    def by(attr: str, keys: list[str]) -> dict[str, list[float | None]]:
        return {
            s.name: [
                getattr(s.summary, attr)[k].accuracy if k in getattr(s.summary, attr) else None
                for k in keys
            ]
            for s in systems
        }

    headline = [
        "accuracy",
        "top_accuracy",
        "facts_accuracy",
        "citation_support",
        "retrieval_recall",
        "abstention_recall",
    ]
    plots = [
        bar_chart("Accuracy by question kind", kinds, by("by_kind", kinds)),
        bar_chart("Accuracy by language", langs, by("by_lang", langs)),
        bar_chart(
            f"{' vs '.join(names)}",
            [h.replace("_", " ").replace("accuracy", "acc") for h in headline],
            {s.name: [getattr(s.summary.overall, h) for h in headline] for s in systems},
            width=760,
        ),
        histogram(
            "Latency distribution (per answer)",
            {s.name: [x.latency_ms for x in s.scores if x.latency_ms is not None] for s in systems},
        ),
    ]
    group_header = [
        "group",
        "n",
        "accuracy",
        "top",
        "facts",
        "cit. support",
        f"recall@{systems[0].summary.k}",
        "read",
        "p50",
    ]
    group_header += [f"{n} accuracy" for n in names[1:]]
    problems = [
        f"<li>{escape(data.questions_file)} line {p.line}: {escape(p.reason)}</li>"
        for p in data.problems
    ]
    for s in systems:
        if s.run:
            problems += [
                f"<li>{escape(s.name)} failed on {escape(q)}: {escape(e)}</li>"
                for q, e in s.run.failed.items()
            ]
    unlocated = sorted({q for x in systems[0].scores for q in x.unlocated_quotes})
    problems += [f"<li>gold quote not found in the store: {escape(q)}</li>" for q in unlocated]
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(data.title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(data.title)}</h1><p class=meta>questions: "
        f"<code>{escape(data.questions_file)}</code> ({len(data.golds)}) · store: "
        f"<code>{escape(data.store)}</code> · {escape(data.created)} · "
        f"recall@k with k={systems[0].summary.k}</p>"
        + "".join(f"<p class=meta>{escape(n)}</p>" for n in data.notes)
        + "<h2>Overall</h2>"
        + _table(["metric", *names], _overall_rows(systems))
        + '<h2>Plots</h2><div class="plots">'
        + "".join(plots)
        + "</div>"
        + f"<h2>By kind ({escape(names[0])})</h2>"
        + _table(
            group_header,
            _group_rows(systems[0].summary.by_kind, [s.summary.by_kind for s in systems[1:]]),
        )
        + f"<h2>By language ({escape(names[0])})</h2>"
        + _table(
            group_header,
            _group_rows(systems[0].summary.by_lang, [s.summary.by_lang for s in systems[1:]]),
        )
        + f"<h2>Wrong answers ({escape(names[0])}, "
        + f"{sum(x.correct is False for x in systems[0].scores)})</h2>"
        + _wrong_answers(data)
        + ("<h2>Problems</h2><ul>" + "".join(problems) + "</ul>" if problems else "")
        + "</body></html>\n"
    )


def markdown_summary(data: ReportData, html_name: str) -> str:
    """A short Markdown summary: overall metrics per system, accuracy by kind and by language."""
    names = [s.name for s in data.systems]
    lines = [
        f"# {data.title}",
        "",
        f"{len(data.golds)} questions from `{data.questions_file}`, "
        f"store `{data.store}`, {data.created}. Full report: [{html_name}]({html_name}).",
        *(f"Note: {n}." for n in data.notes),
        "",
    ]
    lines += ["| metric | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in _overall_rows(data.systems)]
    for title, attr in (("kind", "by_kind"), ("language", "by_lang")):
        groups: dict[str, Metrics] = getattr(data.systems[0].summary, attr)
        lines += ["", f"Accuracy by {title}:", "", f"| {title} | n | " + " | ".join(names) + " |"]
        lines.append("|---" * (len(names) + 2) + "|")
        for key, m in groups.items():
            accs = [
                pct(getattr(s.summary, attr)[key].accuracy)
                if key in getattr(s.summary, attr)
                else "—"
                for s in data.systems
            ]
            lines.append(f"| {key} | {m.questions} | " + " | ".join(accs) + " |")
    wrong = sum(x.correct is False for x in data.systems[0].scores)
    lines += ["", f"{wrong} wrong answer(s) from {names[0]} are listed in the HTML report.", ""]
    return "\n".join(lines)


def write_report(path: Path, data: ReportData) -> Path:
    """Write the HTML report to `path` and the Markdown summary beside it; return the latter."""
    summary = path.with_suffix(".md")
    atomic_write_text(path, render_html(data))
    atomic_write_text(summary, markdown_summary(data, path.name))
    return summary
