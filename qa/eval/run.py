"""The batch runner behind `kgqa eval`: read questions, answer them, append results, score.

Results are one JSON object per line (`EvalRecord`: an Answer plus the ranked retrieved chunks),
appended and flushed as each answer arrives, so a killed run loses at most the line it was writing.
A rerun skips ids already in the results file (a torn last line is cut off first). Answers run on a
thread pool: `Assistant` is thread-safe, and concurrent requests let an LLM server batch them; with
an LLM server, as many at once as the server takes (`ChatModel.concurrency`: one for llama.cpp's
Python server, which has no parallel slots).

The LLM is checked before the run (`qa.llm.selfcheck`: a broken engine stops it at once). A server
that stops answering during the run (it crashed: nothing answers there any more) loses the
run: the answers it took down are not written (a rerun asks them again), the questions left are
not asked, and `EvalOutcome.llm_failure` says so, for the top of the summary.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ingest.embed import CachingEmbedder, make_embedder
from kg.errors import KGQAError, LLMError, LLMUnavailable, QuestionError
from kg.lexicon import Lexicon
from kg.store import Store
from qa.api import Assistant
from qa.config import Settings
from qa.decide.reader import ReaderModel
from qa.eval.records import (
    ChunkSpan,
    EvalRecord,
    GoldQuestion,
    LineProblem,
    RunStats,
    llm_fallback,
    read_questions,
    read_results,
)
from qa.eval.report import ReportData, SystemResult, write_report
from qa.eval.score import EvalSummary, Scorer, breakdown
from qa.llm.client import ChatModel
from qa.llm.selfcheck import EngineBroken, check_chat, server_gone
from qa.read.understand import clean_question
from qa.schema import FallbackKind

__all__ = [
    "DEFAULT_K",
    "CachingEmbedder",
    "EvalOptions",
    "EvalOutcome",
    "KgqaAnswerer",
    "LLMServerLost",
    "baseline_path",
    "eval_concurrency",
    "eval_llm",
    "llm_concurrency",
    "load_average",
    "open_assistant",
    "prefetch_queries",
    "run_eval",
    "run_questions",
]

#: Chunks recorded per answer for retrieval recall@k: what `Retriever.retrieve` hands answerers.
DEFAULT_K = 6

_PREFETCH_BATCH = 32

AnswerFn = Callable[[GoldQuestion], EvalRecord]


def load_average() -> float | None:
    """The 1-minute load average (`None` where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _cut_torn_tail(path: Path) -> bool:
    """Drop a last line without its newline (a run killed mid-write); True if one was dropped."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return False
        handle.seek(0)
        data = handle.read()
        handle.truncate(data.rfind(b"\n") + 1)
    return True


def run_questions(
    questions: Sequence[GoldQuestion],
    answer: AnswerFn,
    out: Path,
    *,
    concurrency: int = 1,
    desc: str = "eval",
    progress: bool = True,
) -> RunStats:
    """Answer every question whose id is not yet in `out`, appending one line per answer.

    Lines are written from this thread only, as answers complete, and flushed one by one.
    A question whose answerer raises is counted in `failed` (and retried by the next run).
    """
    from tqdm import tqdm

    stats = RunStats(
        total=len(questions), torn_line_removed=_cut_torn_tail(out), concurrency=concurrency
    )
    start_load = load_average()
    done, _problems = read_results(out)
    todo = [q for q in questions if q.id not in done]
    stats.skipped = len(questions) - len(todo)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    bar = tqdm(total=len(todo), desc=desc, unit="q", file=sys.stderr, disable=not progress)
    with out.open("a", encoding="utf-8") as handle, ThreadPoolExecutor(max(1, concurrency)) as pool:
        futures: dict[Future[EvalRecord], GoldQuestion] = {pool.submit(answer, q): q for q in todo}
        try:
            for future in as_completed(futures):
                question = futures[future]
                try:
                    record = future.result()
                except Exception as err:
                    stats.failed[question.id] = f"{type(err).__name__}: {err}"
                else:
                    handle.write(record.model_dump_json() + "\n")
                    handle.flush()
                    stats.answered += 1
                    stats.count(record)
                bar.update(1)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            bar.close()
    # unrounded: a pass of a few quick answers takes well under a millisecond, and a wall time
    # rounded to 0 read as no throughput at all
    stats.wall_s = time.perf_counter() - started
    stats.load_average = [x for x in (start_load, load_average()) if x is not None]
    return stats


def open_assistant(
    settings: Settings, *, dense: bool = True
) -> tuple[Assistant, CachingEmbedder | None]:
    """An `Assistant` over `settings.store` whose query embeddings are cached, and the cache
    (`None` without `dense`)."""
    opened = Store.open(settings.store)
    spec = opened.manifest.embedder_spec
    cache = (
        CachingEmbedder(make_embedder(spec, cache_dir=settings.cache_dir, spin=settings.ort_spin))
        if dense
        else None
    )
    lexicon = Lexicon.default(tuple(settings.lexicon))
    factory = (lambda: cache) if cache else None
    return Assistant(opened, lexicon, embedder=factory, cache_dir=settings.cache_dir), cache


def prefetch_queries(cache: CachingEmbedder, questions: Iterable[GoldQuestion]) -> int:
    """Embed the questions' (cleaned) texts in batches ahead of answering; return how many.

    Batches cost the e5 model several times less CPU per query than one-by-one calls, but answer
    latencies then no longer include the query embedding.
    """
    texts = []
    for question in questions:
        try:
            texts.append(clean_question(question.question))
        except QuestionError:
            continue
    for i in range(0, len(texts), _PREFETCH_BATCH):
        cache.embed_queries(texts[i : i + _PREFETCH_BATCH])
    return len(texts)


class LLMServerLost(LLMUnavailable):
    """The LLM server stopped answering during an eval run (crashed, or stopped)."""


#: Fallbacks that may mean the server is gone (a crash mid-request cuts the reply: bad response).
_SERVER_GONE_SIGNS = frozenset(
    {FallbackKind.LLM_UNAVAILABLE, FallbackKind.LLM_BAD_RESPONSE, FallbackKind.LLM_TIMEOUT}
)


class KgqaAnswerer:
    """Answers one gold question with an `Assistant` and records the chunks retrieval ranked.

    With ``llm_server`` (the LLM server's base URL): an answer that fell back to the graph while
    nothing answers there any more (`qa.llm.selfcheck.server_gone`) raises `LLMServerLost`
    instead of being recorded, and so does every later question, unasked (``lost`` says what
    happened).
    """

    def __init__(
        self,
        assistant: Assistant,
        *,
        use_llm: bool,
        k: int = DEFAULT_K,
        llm_server: str | None = None,
    ) -> None:
        self.assistant = assistant
        self.use_llm = use_llm
        self.k = k
        self.llm_server = llm_server if use_llm else None
        self.lost: str | None = None
        self._lock = threading.Lock()

    def _check_server(self, detail: str, kind: FallbackKind) -> None:
        """Raise `LLMServerLost` if the server is gone (the first loss is kept in ``lost``)."""
        url = self.llm_server
        if url is None or not server_gone(url):
            return
        with self._lock:
            if self.lost is None:
                self.lost = (
                    f"the LLM server at {url} stopped answering during the run: nothing answers "
                    f"there any more (it crashed or was stopped; {kind.value}: "
                    f"{detail[:300]})"
                )
        raise LLMServerLost(self.lost)

    def __call__(self, question: GoldQuestion) -> EvalRecord:
        """The answer (timed by the assistant) plus the top-k retrieved chunk spans."""
        if self.lost is not None:
            raise LLMServerLost("not asked: the LLM server was lost earlier in the run")
        answer = self.assistant.ask(question.question, qid=question.id, use_llm=self.use_llm)
        kind = llm_fallback(answer)
        if kind in _SERVER_GONE_SIGNS and answer.fallback is not None:
            self._check_server(answer.fallback.detail, kind)
        try:
            parsed = self.assistant.understand(question.question)
        except QuestionError:
            hits = []
        else:
            hits = self.assistant.retriever.chunk_hits(parsed, self.k)
        spans = [ChunkSpan(doc=h.doc, start=h.start, end=h.end) for h in hits]
        return EvalRecord(**answer.model_dump(), retrieved=spans)


def eval_llm(spec: str, assistant: Assistant, settings: Settings) -> tuple[ReaderModel | None, str]:
    """The LLM answerer for `--llm SPEC` (`qa.llm.answerer.make_llm`), and a note.

    When the LLM cannot be had, the note says so and the graph composer answers alone. A server's
    engine is checked first (`qa.llm.selfcheck.check_chat`): one that answers the check question
    wrongly raises `EngineBroken` (its message says what to do); nothing is answered then.
    """
    if spec == "none":
        return None, ""
    from qa.llm.answerer import make_llm
    from qa.llm.embedded import start_embedded

    graph_only = "answering with the graph composer only"
    try:
        llm = make_llm(spec, settings.llm, embedded=lambda: start_embedded(settings))
    except KGQAError as err:
        return None, f"--llm {spec}: {err}; {graph_only}"
    if llm is None:
        from qa.llm.embedded import embedded_available

        why = embedded_available(settings) or "no LLM available"
        return None, f"--llm {spec}: no LLM available ({why}); {graph_only}"
    chat = getattr(llm, "chat", None)
    if isinstance(chat, ChatModel):
        try:
            check_chat(chat.settings, chat.server_kind().value, cache_dir=settings.cache_dir)
        except EngineBroken:
            raise
        except LLMError as err:
            chat.close()
            return None, f"--llm {spec}: the check question got no answer: {err}; {graph_only}"
    return llm, ""


def llm_concurrency(llm: ReaderModel | None, settings: Settings) -> int | None:
    """Requests the LLM takes at once: what its server takes (`ChatModel.concurrency`: one for
    llama-cpp-python's server), else the configured ``llm.max_concurrency``; None without one."""
    if llm is None:
        return None
    chat = getattr(llm, "chat", None)
    if isinstance(chat, ChatModel):
        return chat.concurrency()
    return settings.llm.max_concurrency


class EvalOptions(BaseModel):
    """What `kgqa eval` was asked to do."""

    questions: Path
    out: Path
    llm: str = "none"
    report: Path | None = None
    baseline: str | None = None
    concurrency: int | None = Field(
        None, ge=1, description="questions at once; None: 1, or the LLM's max_concurrency"
    )
    k: int = Field(DEFAULT_K, ge=1)
    dense: bool = True
    batch_embed: bool = False
    progress: bool = True
    graph_too: bool = Field(
        True, description="with a reader, answer with the graph alone too, side by side"
    )


class EvalOutcome(BaseModel):
    """What a run did and how it scored. ``llm_failure``: the LLM server was lost during the run
    (a failed run: the summary says so first, `kgqa eval` exits non-zero)."""

    problems: list[LineProblem]
    llm_failure: str | None = None
    llm_note: str = ""
    run: RunStats
    summary: EvalSummary
    baseline_run: RunStats | None = None
    baseline_summary: EvalSummary | None = None
    graph_run: RunStats | None = None
    graph_summary: EvalSummary | None = Field(
        default=None, description="the graph alone (`--llm none`) on the same questions"
    )
    report: Path | None = None
    summary_md: Path | None = None


def baseline_path(out: Path, name: str) -> Path:
    """Where a baseline's results go, beside the main results.

    >>> baseline_path(Path("runs/dev.jsonl"), "naive").as_posix()
    'runs/dev.naive.jsonl'
    """
    return out.with_name(f"{out.stem}.{name}{out.suffix or '.jsonl'}")


def _system(
    name: str, questions: list[GoldQuestion], out: Path, scorer: Scorer, run: RunStats
) -> SystemResult:
    records, _ = read_results(out)
    scores = [scorer.score(q, records.get(q.id)) for q in questions]
    kept = {q.id: records[q.id] for q in questions if q.id in records}
    return SystemResult(
        name=name, summary=breakdown(scores, scorer.k), scores=scores, records=kept, run=run
    )


def _baseline(
    options: EvalOptions,
    assistant: Assistant,
    questions: list[GoldQuestion],
    llm_on: bool,
) -> tuple[Callable[[GoldQuestion], EvalRecord], Path]:
    from qa.eval.baseline import NaiveRAG

    if options.baseline != "naive":
        raise ValueError(f"unknown baseline {options.baseline!r}")
    spec = assistant.store.manifest.embedder_spec
    embedder = make_embedder(spec, cache_dir=assistant.cache_dir)
    naive = NaiveRAG.open(
        assistant.store,
        embedder,
        assistant.lexicon,
        k=options.k,
        llm=assistant.llm if llm_on else None,
        reader=assistant.understand,
    )
    return naive, baseline_path(options.out, options.baseline)


def eval_concurrency(asked: int | None, llm_slots: int | None) -> int:
    """Questions answered at once: as asked, else one without an LLM (the graph composer keeps
    both cores busy alone) and as many as the LLM takes with one (``llm_slots``,
    `llm_concurrency`: a vLLM server batches concurrent requests, ~4.8x the tokens/s at 8 on CPU,
    bench_llm.py; llama-cpp-python's server runs one at a time, and more would only wait there
    and time out).

    >>> eval_concurrency(None, None), eval_concurrency(None, 1), eval_concurrency(None, 8)
    (1, 1, 8)
    >>> eval_concurrency(4, 1)
    4
    """
    if asked is not None:
        return asked
    return llm_slots or 1


def _llm_failure(answerer: KgqaAnswerer, run: RunStats) -> str | None:
    """What the loss of the LLM server cost the run, or None when it was not lost."""
    if answerer.lost is None:
        return None
    lost = sum(1 for err in run.failed.values() if err.startswith(LLMServerLost.__name__))
    return (
        f"{answerer.lost}. {run.answered} answer(s) of this pass were written before; {lost} "
        "question(s) were not answered and not written: restart the server (`kgqa llm serve`) "
        "and rerun the same command to resume"
    )


def run_eval(
    options: EvalOptions, settings: Settings, *, log: Callable[[str], None] = print
) -> EvalOutcome:
    """Answer (resuming), run the baseline if asked, score both, write the report if asked.

    The store, lexicon and LLM server come from `settings`."""
    qset = read_questions(options.questions)
    for problem in qset.problems:
        log(f"{options.questions}:{problem.line}: skipped: {problem.reason}")
    graph_only, cache = open_assistant(settings, dense=options.dense)
    llm, note = eval_llm(options.llm, graph_only, settings)
    if note:
        log(note)
    assistant = graph_only.with_llm(llm)
    notes = []
    if options.batch_embed and cache is not None:
        done, _ = read_results(options.out)
        count = prefetch_queries(cache, (q for q in qset.questions if q.id not in done))
        notes.append(f"{count} query embeddings batched before answering: latencies exclude them")
    chat = getattr(llm, "chat", None)
    server = chat.settings.base_url if isinstance(chat, ChatModel) else None
    answerer = KgqaAnswerer(assistant, use_llm=llm is not None, k=options.k, llm_server=server)
    slots = llm_concurrency(llm, settings)
    concurrency = eval_concurrency(options.concurrency, slots)
    if llm is not None and options.concurrency is None:
        log(f"{concurrency} question(s) at once: as many as the LLM takes")
    run = run_questions(
        qset.questions,
        answerer,
        options.out,
        concurrency=concurrency,
        desc="kgqa",
        progress=options.progress,
    )
    scorer = Scorer(assistant.lexicon, assistant.graph, assistant.documents, k=options.k)
    systems = [_system("kgqa", qset.questions, options.out, scorer, run)]
    graph_run = None
    if llm is not None and options.graph_too:
        # the graph alone, on the same store and questions (fast: tens of questions a second)
        graph_out = baseline_path(options.out, "graph")
        graph_run = run_questions(
            qset.questions,
            KgqaAnswerer(graph_only, use_llm=False, k=options.k),
            graph_out,
            desc="graph",
            progress=options.progress,
        )
        systems.append(_system("graph-only", qset.questions, graph_out, scorer, graph_run))
    baseline_run = None
    llm_failure = _llm_failure(answerer, run)
    if llm_failure and options.baseline:
        llm_failure += f"; the {options.baseline} baseline was not run"
    elif options.baseline:
        # the plain vector-RAG baseline: its top chunks, no reader (`NaiveRAG` can take one)
        naive, naive_out = _baseline(options, assistant, qset.questions, False)
        baseline_run = run_questions(
            qset.questions,
            naive,
            naive_out,
            concurrency=concurrency,
            desc=options.baseline,
            progress=options.progress,
        )
        systems.append(
            _system(f"{options.baseline}-rag", qset.questions, naive_out, scorer, baseline_run)
        )
    if llm_failure:
        notes.insert(0, f"RUN FAILED: {llm_failure}")
    outcome = EvalOutcome(
        problems=qset.problems,
        llm_failure=llm_failure,
        llm_note=note,
        run=run,
        summary=systems[0].summary,
        baseline_run=baseline_run,
        baseline_summary=next((x.summary for x in systems if x.name.endswith("-rag")), None),
        graph_run=graph_run,
        graph_summary=next((x.summary for x in systems if x.name == "graph-only"), None),
    )
    if options.report is not None:
        data = ReportData(
            questions_file=str(options.questions),
            store=str(settings.store),
            created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            golds=qset.questions,
            systems=systems,
            problems=qset.problems,
            notes=notes,
        )
        outcome.summary_md = write_report(options.report, data)
        outcome.report = options.report
    return outcome
