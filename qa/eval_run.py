"""The batch runner behind `kgqa eval`: read questions, answer them, append results, score.

Results are one JSON object per line (`EvalRecord`: an Answer plus the ranked retrieved chunks),
appended and flushed as each answer arrives, so a killed run loses at most the line it was writing.
A rerun skips ids already in the results file (a torn last line is cut off first). Answers run on a
thread pool: `Assistant` is thread-safe, and concurrent requests let an LLM server batch them.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from ingest.embed import Embedder, Vectors, make_embedder
from kg.errors import KGQAError, QuestionError
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.store import Store
from qa.api import Assistant, LLMAnswerer
from qa.evaluate import ChunkSpan, EvalRecord, EvalSummary, GoldQuestion, Scorer, breakdown
from qa.schema import Answer
from qa.understand import clean_question

if TYPE_CHECKING:
    from qa.eval_report import SystemResult

__all__ = [
    "DEFAULT_K",
    "CachingEmbedder",
    "EvalOptions",
    "EvalOutcome",
    "KgqaAnswerer",
    "LineProblem",
    "QuestionSet",
    "RunStats",
    "baseline_path",
    "fallback_reason",
    "load_average",
    "open_assistant",
    "prefetch_queries",
    "read_questions",
    "read_results",
    "resolve_llm",
    "run_eval",
    "run_questions",
]

#: Chunks recorded per answer for retrieval recall@k: what `Retriever.retrieve` hands answerers.
DEFAULT_K = 6

_PREFETCH_BATCH = 32

AnswerFn = Callable[[GoldQuestion], EvalRecord]


class LineProblem(BaseModel):
    """A line of a JSONL file that was skipped, and why."""

    line: int
    reason: str


class QuestionSet(BaseModel):
    """The usable questions of a file and the lines that were skipped."""

    path: str
    questions: list[GoldQuestion]
    problems: list[LineProblem] = Field(default_factory=list)


class RunStats(BaseModel):
    """What one pass over the questions did."""

    total: int = 0
    skipped: int = Field(0, description="already answered in the results file")
    answered: int = 0
    failed: dict[str, str] = Field(default_factory=dict, description="question id -> error")
    torn_line_removed: bool = False
    wall_s: float = 0.0
    concurrency: int = 1
    load_average: list[float] = Field(
        default_factory=list, description="1-minute load average at the start and end of the pass"
    )
    backends: dict[str, int] = Field(
        default_factory=dict, description="answers of this pass by backend (graph, llm:<model>)"
    )
    fallbacks: dict[str, int] = Field(
        default_factory=dict, description="LLM fallbacks of this pass by reason (error type)"
    )

    @property
    def throughput_qps(self) -> float | None:
        """Questions answered per second of this pass (`None` when nothing was answered)."""
        return round(self.answered / self.wall_s, 2) if self.answered and self.wall_s > 0 else None

    def count(self, answer: Answer) -> None:
        """Count one answer of this pass by backend, and its LLM fallback reason if any."""
        self.backends[answer.backend] = self.backends.get(answer.backend, 0) + 1
        reason = fallback_reason(answer)
        if reason is not None:
            self.fallbacks[reason] = self.fallbacks.get(reason, 0) + 1


def fallback_reason(answer: Answer) -> str | None:
    """Why the LLM's answer was replaced by the graph answer (the error type), or `None`.

    >>> a = Answer(question="q", answer="a", notes=["LLM unavailable, showing the graph "
    ...     "answer: LLMTimeout: took longer than 120s"])
    >>> fallback_reason(a), fallback_reason(Answer(question="q", answer="a"))
    ('LLMTimeout', None)
    """
    for note in answer.notes:
        marker = "showing the graph answer: "
        if marker in note:
            return note.split(marker, 1)[1].split(":", 1)[0].strip() or "unknown"
    return None


def load_average() -> float | None:
    """The 1-minute load average (`None` where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _validation_reason(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "line"
    return f"{where}: {first['msg']} ({err.error_count()} problem(s))"


def read_questions(path: Path) -> QuestionSet:
    """Parse a question file; malformed lines and repeated ids become `problems`, not errors.

    Raises `QuestionError` only when the file itself cannot be read.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise QuestionError(f"cannot read question file {path}: {err}") from err
    questions: list[GoldQuestion] = []
    problems: list[LineProblem] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            problems.append(
                LineProblem(line=number, reason=f"not JSON: {err.msg} at column {err.colno}")
            )
            continue
        if not isinstance(data, dict):
            problems.append(LineProblem(line=number, reason="not a JSON object"))
            continue
        try:
            question = GoldQuestion.model_validate(data)
        except ValidationError as err:
            problems.append(LineProblem(line=number, reason=_validation_reason(err)))
            continue
        if question.id in first_line:
            reason = f"duplicate id {question.id!r} (first on line {first_line[question.id]})"
            problems.append(LineProblem(line=number, reason=reason))
            continue
        first_line[question.id] = number
        questions.append(question)
    return QuestionSet(path=str(path), questions=questions, problems=problems)


def read_results(path: Path) -> tuple[dict[str, EvalRecord], list[LineProblem]]:
    """Results by question id (a later line wins) and the lines that could not be read."""
    records: dict[str, EvalRecord] = {}
    problems: list[LineProblem] = []
    if not path.exists():
        return records, problems
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = EvalRecord.model_validate_json(line)
            except ValidationError as err:
                problems.append(LineProblem(line=number, reason=_validation_reason(err)))
                continue
            if record.id is None:
                problems.append(LineProblem(line=number, reason="answer without an id"))
                continue
            records[record.id] = record
    return records, problems


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
    stats.wall_s = round(time.perf_counter() - started, 3)
    stats.load_average = [x for x in (start_load, load_average()) if x is not None]
    return stats


class CachingEmbedder:
    """An `Embedder` that remembers query vectors (thread-safe): re-retrieval embeds nothing."""

    def __init__(self, inner: Embedder, max_entries: int = 10_000) -> None:
        self.inner = inner
        self.max_entries = max_entries
        self._queries: dict[str, Vectors] = {}
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        """The wrapped embedder's id (the store checks it)."""
        return self.inner.id

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dim

    def clear(self) -> None:
        """Forget every cached query vector."""
        with self._lock:
            self._queries.clear()

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Passages are not cached."""
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed the queries not seen yet, in one batch; return all rows in order."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._queries]
        if missing:
            fresh = self.inner.embed_queries(missing)
            with self._lock:
                if len(self._queries) + len(missing) > self.max_entries:
                    self._queries.clear()
                self._queries.update(zip(missing, fresh, strict=True))
        with self._lock:
            rows = [self._queries.get(t) for t in texts]
        if any(r is None for r in rows):  # evicted meanwhile: embed directly
            return self.inner.embed_queries(texts)
        return np.stack([r for r in rows if r is not None]).astype(np.float32)


def open_assistant(
    store: Path,
    lexicon_files: Iterable[Path] = (),
    *,
    dense: bool = True,
    llm: LLMAnswerer | None = None,
) -> tuple[Assistant, CachingEmbedder | None]:
    """An `Assistant` whose query embeddings are cached, and the cache (`None` without `dense`)."""
    opened = Store.open(store)
    cache = CachingEmbedder(make_embedder(opened.manifest.embedder_spec)) if dense else None
    lexicon = Lexicon.default(tuple(lexicon_files))
    return Assistant(opened, lexicon, embedder=(lambda: cache) if cache else None, llm=llm), cache


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


class KgqaAnswerer:
    """Answers one gold question with an `Assistant` and records the chunks retrieval ranked."""

    def __init__(self, assistant: Assistant, *, use_llm: bool, k: int = DEFAULT_K) -> None:
        self.assistant = assistant
        self.use_llm = use_llm
        self.k = k

    def __call__(self, question: GoldQuestion) -> EvalRecord:
        """The answer (timed by the assistant) plus the top-k retrieved chunk spans."""
        answer = self.assistant.ask(question.question, qid=question.id, use_llm=self.use_llm)
        try:
            parsed = self.assistant.understand(question.question)
        except QuestionError:
            hits = []
        else:
            hits = self.assistant.retriever.chunk_hits(parsed, self.k)
        spans = [ChunkSpan(doc=h.doc, start=h.start, end=h.end) for h in hits]
        return EvalRecord(**answer.model_dump(), retrieved=spans)


def resolve_llm(spec: str, graph: KnowledgeGraph) -> tuple[LLMAnswerer | None, str]:
    """The LLM answerer for `--llm SPEC` (`qa.llm_answer.make_llm`), and a note.

    `none` gives no LLM; `vllm-offline:MODEL_DIR` runs vLLM's batched `LLM.chat` in this process
    (where vLLM is importable; use a high `--concurrency` so questions batch). When the LLM cannot
    be reached, the note says so and the graph composer answers alone.
    """
    if spec == "none":
        return None, ""
    from qa.llm.offline import open_offline_chat, parse_offline_spec
    from qa.llm_answer import ChatAnswerer, make_llm

    model_dir = parse_offline_spec(spec)
    if model_dir is not None:  # vLLM in this process: concurrent questions batch together
        try:
            return ChatAnswerer(open_offline_chat(model_dir, max_batch=64), graph), ""
        except KGQAError as err:
            return None, f"--llm {spec}: {err}; answering with the graph composer only"
    try:
        llm = make_llm(spec, graph)
    except KGQAError as err:
        return None, f"--llm {spec}: {err}; answering with the graph composer only"
    if llm is None:
        return None, f"--llm {spec}: no LLM available; answering with the graph composer only"
    return cast(LLMAnswerer, llm), ""


class EvalOptions(BaseModel):
    """What `kgqa eval` was asked to do."""

    questions: Path
    out: Path
    store: Path
    lexicon: list[Path] = Field(default_factory=list)
    llm: str = "none"
    report: Path | None = None
    baseline: str | None = None
    concurrency: int = Field(1, ge=1)
    k: int = Field(DEFAULT_K, ge=1)
    dense: bool = True
    batch_embed: bool = False
    progress: bool = True


class EvalOutcome(BaseModel):
    """What a run did and how it scored."""

    problems: list[LineProblem]
    llm_note: str = ""
    run: RunStats
    summary: EvalSummary
    baseline_run: RunStats | None = None
    baseline_summary: EvalSummary | None = None
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
    from qa.eval_report import SystemResult

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
    from ingest.embed import make_embedder
    from qa.eval_baseline import NaiveRAG

    if options.baseline != "naive":
        raise ValueError(f"unknown baseline {options.baseline!r}")
    embedder = make_embedder(assistant.store.manifest.embedder_spec)
    naive = NaiveRAG.open(
        assistant.store,
        embedder,
        assistant.lexicon,
        k=options.k,
        llm=assistant.llm if llm_on else None,
        reader=assistant.understand,
    )
    return naive, baseline_path(options.out, options.baseline)


def run_eval(options: EvalOptions, *, log: Callable[[str], None] = print) -> EvalOutcome:
    """Answer (resuming), run the baseline if asked, score both, write the report if asked."""
    qset = read_questions(options.questions)
    for problem in qset.problems:
        log(f"{options.questions}:{problem.line}: skipped: {problem.reason}")
    assistant, cache = open_assistant(options.store, options.lexicon, dense=options.dense, llm=None)
    llm, note = resolve_llm(options.llm, assistant.graph)
    if note:
        log(note)
    assistant.llm = llm
    notes = []
    if options.batch_embed and cache is not None:
        done, _ = read_results(options.out)
        count = prefetch_queries(cache, (q for q in qset.questions if q.id not in done))
        notes.append(f"{count} query embeddings batched before answering: latencies exclude them")
    answerer = KgqaAnswerer(assistant, use_llm=llm is not None, k=options.k)
    run = run_questions(
        qset.questions,
        answerer,
        options.out,
        concurrency=options.concurrency,
        desc="kgqa",
        progress=options.progress,
    )
    scorer = Scorer(assistant.lexicon, assistant.graph, assistant.documents, k=options.k)
    systems = [_system("kgqa", qset.questions, options.out, scorer, run)]
    baseline_run = None
    if options.baseline:
        naive, naive_out = _baseline(options, assistant, qset.questions, llm is not None)
        baseline_run = run_questions(
            qset.questions,
            naive,
            naive_out,
            concurrency=options.concurrency,
            desc=options.baseline,
            progress=options.progress,
        )
        systems.append(
            _system(f"{options.baseline}-rag", qset.questions, naive_out, scorer, baseline_run)
        )
    outcome = EvalOutcome(
        problems=qset.problems,
        llm_note=note,
        run=run,
        summary=systems[0].summary,
        baseline_run=baseline_run,
        baseline_summary=systems[1].summary if len(systems) > 1 else None,
    )
    if options.report is not None:
        from qa.eval_report import ReportData, write_report

        data = ReportData(
            questions_file=str(options.questions),
            store=str(options.store),
            created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            golds=qset.questions,
            systems=systems,
            problems=qset.problems,
            notes=notes,
        )
        outcome.summary_md = write_report(options.report, data)
        outcome.report = options.report
    return outcome
