"""`kgqa eval QUESTIONS.jsonl --out RESULTS.jsonl [--report FILE.html] [--baseline naive] ...`.

The work is `qa.eval.run.run_eval`, imported when the verb runs so that `kgqa --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qa.config import Settings
    from qa.eval.run import EvalOutcome

__all__ = ["cmd_eval", "register"]

#: Chunks recorded per answer for retrieval recall@k (mirrors `qa.eval.run.DEFAULT_K`).
_DEFAULT_K = 6


def _pct(value: float | None) -> str:
    return "   —  " if value is None else f"{100 * value:5.1f}%"


def _print_outcome(outcome: EvalOutcome) -> None:
    run = outcome.run
    if outcome.llm_failure:
        print(f"RUN FAILED: {outcome.llm_failure}")
    if outcome.llm_note:
        print(f"LLM: {outcome.llm_note}")
    unanswered = run.fallbacks.get("llm-unavailable", 0)
    if unanswered:
        print(
            f"warning: {unanswered} of {run.answered} answers are the graph's: the LLM server did "
            "not answer them (llm-unavailable)"
        )
    print(
        f"kgqa: {run.answered} answered, {run.skipped} already in the results, "
        f"{len(run.failed)} failed; {run.throughput_qps or '—'} q/s"
    )
    if run.answered:
        load = "→".join(f"{x:.2f}" for x in run.load_average) or "?"
        by = ", ".join(f"{name} {n}" for name, n in sorted(run.backends.items()))
        falls = ", ".join(f"{name} {n}" for name, n in sorted(run.fallbacks.items())) or "none"
        print(
            f"  this pass: {run.answered} in {run.wall_s:.1f} s at concurrency {run.concurrency}"
            f" (1-min load {load}); answered by {by}; LLM fallbacks: {falls}"
        )
    unasked = [qid for qid, err in run.failed.items() if ": not asked: " in err]
    for qid, err in run.failed.items():
        if qid not in unasked:
            print(f"  failed {qid}: {err}", file=sys.stderr)
    if unasked:
        print(f"  not asked, the LLM server being lost: {', '.join(unasked)}", file=sys.stderr)
    others = [x for x in (outcome.graph_summary, outcome.baseline_summary) if x is not None]
    rows = [("overall", outcome.summary.overall, [x.overall for x in others])]
    for attr in ("by_kind", "by_lang"):
        mine = getattr(outcome.summary, attr)
        rows += [
            (name, m, [getattr(x, attr).get(name) for x in others]) for name, m in mine.items()
        ]
    heads = (["graph acc"] if outcome.graph_summary else []) + (
        ["baseline acc"] if outcome.baseline_summary else []
    )
    print(
        f"{'group':<14}{'n':>4} {'acc':>7} {'top':>7} {'facts':>7} {'support':>7} "
        f"{'recall':>7} {'read':>7} {'p50 ms':>8}" + "".join(f"  {h:>12}" for h in heads)
    )
    for name, m, theirs in rows:
        p50 = f"{m.latency_p50_ms:8.1f}" if m.latency_p50_ms is not None else "       —"
        print(
            f"{name:<14}{m.questions:>4} {_pct(m.accuracy):>7} {_pct(m.top_accuracy):>7} "
            f"{_pct(m.facts_accuracy):>7} {_pct(m.citation_support):>7} "
            f"{_pct(m.retrieval_recall):>7} {_pct(m.reader_recall):>7} {p50}"
            + "".join(f"  {_pct(t.accuracy) if t else '':>12}" for t in theirs)
        )
    o = outcome.summary.overall
    print(
        f"abstention precision {_pct(o.abstention_precision)} recall {_pct(o.abstention_recall)}; "
        f"citation validity {_pct(o.citation_validity)}; conflicts {_pct(o.conflict_handled)}; "
        f"snippets passed {_pct(o.snippet_pass_rate)}; latency p95 {o.latency_p95_ms} ms"
    )
    if outcome.report:
        print(f"report: {outcome.report} (summary: {outcome.summary_md})")


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    """Run `kgqa eval`; exit 1 when some question failed to get an answer (the LLM server lost
    during the run among them: the summary says so first), 3 when the LLM's engine fails its
    check before the run (`qa.llm.selfcheck`: nothing is answered)."""
    from qa.cli import offline_vllm_environment
    from qa.eval.run import EvalOptions, run_eval
    from qa.llm.selfcheck import EngineBroken

    spec = args.llm or settings.reader
    offline_vllm_environment(spec)
    options = EvalOptions(
        questions=args.questions,
        out=args.out,
        llm=spec,
        report=args.report,
        baseline=args.baseline,
        concurrency=args.concurrency,
        k=args.k,
        dense=not args.no_dense,
        batch_embed=args.batch_embed,
        progress=not args.no_progress,
        graph_too=not args.no_graph,
    )
    try:
        outcome = run_eval(options, settings, log=lambda line: print(line, file=sys.stderr))
    except EngineBroken as err:
        print(f"RUN FAILED before answering: {err}", file=sys.stderr)
        return 3
    _print_outcome(outcome)
    failed = outcome.run.failed or (outcome.baseline_run.failed if outcome.baseline_run else {})
    return 1 if failed or outcome.llm_failure else 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], with_store: Callable[..., None]
) -> None:
    """Add the `eval` verb."""
    p = sub.add_parser("eval", help="answer a question file, score it against its gold, report")
    with_store(p)
    p.add_argument("questions", type=Path, help="question file (JSONL, see corpus/QUESTIONS.md)")
    p.add_argument(
        "--out", type=Path, required=True, help="results JSONL (appended; a rerun resumes)"
    )
    p.add_argument(
        "--llm",
        default=None,
        help="who reads and decides: auto (default: a configured server, else the embedded "
        "model) | none (the graph alone) | URL | vllm-offline:MODEL_DIR",
    )
    p.add_argument("--report", type=Path, default=None, help="write an HTML report (+ .md summary)")
    p.add_argument(
        "--no-graph",
        action="store_true",
        help="with a reader, do not also answer with the graph alone (it does by default)",
    )
    p.add_argument(
        "--baseline",
        choices=["naive"],
        default=None,
        help="also run naive vector RAG (its top chunks, no reader), side by side",
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="questions answered at once (threads; default 1, with an LLM as many as its server "
        "takes: 1 for llama.cpp's, llm.max_concurrency (8) for vLLM)",
    )
    p.add_argument("-k", "--k", type=int, default=_DEFAULT_K, help="retrieval recall@k cut-off")
    p.add_argument(
        "--no-dense", action="store_true", help="skip the embedding model (lexical + graph)"
    )
    p.add_argument(
        "--batch-embed",
        action="store_true",
        help="embed all questions in batches first (faster; latencies then exclude embedding)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--lexicon", type=Path, action="append", help="extra alias lexicon file")
    p.set_defaults(func=cmd_eval)
