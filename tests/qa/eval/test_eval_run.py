"""The eval runner: question-file problems, resume, torn lines, concurrency, failures, a real killed
`kgqa eval` subprocess that is resumed, and the report of a tiny end-to-end run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from store_fixture import SETTINGS, article_store

from ingest.embed import Vectors
from qa.cli import main
from qa.config import LLMSettings
from qa.eval.records import EvalRecord, GoldQuestion, read_questions, read_results
from qa.eval.report import ReportData, SystemResult, write_report
from qa.eval.run import CachingEmbedder, eval_llm, open_assistant, run_questions
from qa.eval.score import QuestionScore, breakdown
from qa.schema import Fallback, FallbackKind

ROOT = Path(__file__).resolve().parents[3]

GUIDE = """# 部署选型

## 推理引擎

| 引擎 | 特点 |
|---|---|
| TensorRT | NVIDIA GPU 上延迟最低 |
| OpenVINO | Intel CPU 与边缘设备 |

边缘设备：用 OpenVINO 部署 PyTorch 模型。
GPU 极致性能 → TensorRT
"""


def _write_questions(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _q(
    qid: str, question: str = "在 NVIDIA GPU 上延迟最低的推理引擎是什么？", **gold: object
) -> str:
    return json.dumps({"id": qid, "question": question, **gold}, ensure_ascii=False)


def _echo(question: GoldQuestion) -> EvalRecord:
    return EvalRecord(id=question.id, question=question.question, answer="echo")


# -- question files ---------------------------------------------------------------------------
def test_malformed_lines_are_reported_with_line_numbers_and_skipped(tmp_path: Path) -> None:
    path = _write_questions(
        tmp_path / "q.jsonl",
        [
            _q("a"),
            "{not json",
            "",
            "[1, 2]",
            json.dumps({"id": "b"}),
            _q("a"),
            json.dumps({"id": "c", "question": "?", "answerable": "maybe"}),
            _q("d", lang="en", extra_field=1),
        ],
    )
    qset = read_questions(path)
    assert [q.id for q in qset.questions] == ["a", "d"]
    assert [p.line for p in qset.problems] == [2, 4, 5, 6, 7]
    reasons = [p.reason for p in qset.problems]
    assert reasons[0].startswith("not JSON")
    assert reasons[1] == "not a JSON object"
    assert reasons[2].startswith("question: Field required")
    assert reasons[3] == "duplicate id 'a' (first on line 1)"
    assert reasons[4].startswith("answerable:")


def test_unreadable_question_file_is_a_question_error(tmp_path: Path) -> None:
    from kg.errors import QuestionError

    with pytest.raises(QuestionError, match="cannot read question file"):
        read_questions(tmp_path / "missing.jsonl")


# -- running ----------------------------------------------------------------------------------
def test_resume_skips_answered_ids_and_cuts_a_torn_line(tmp_path: Path) -> None:
    questions = [GoldQuestion(id=f"q{i}", question=f"question {i}") for i in range(5)]
    out = tmp_path / "out.jsonl"
    done = [_echo(q).model_dump_json() for q in questions[:2]]
    out.write_text("\n".join(done) + '\n{"id": "q2", "question": "que', encoding="utf-8")
    asked: list[str] = []

    def answer(question: GoldQuestion) -> EvalRecord:
        asked.append(question.id)
        return _echo(question)

    stats = run_questions(questions, answer, out, progress=False)
    assert sorted(asked) == ["q2", "q3", "q4"]
    assert (stats.skipped, stats.answered, stats.torn_line_removed) == (2, 3, True)
    lines = out.read_text("utf-8").splitlines()
    assert lines[:2] == done
    assert sorted(json.loads(line)["id"] for line in lines) == [q.id for q in questions]
    again = run_questions(questions, answer, out, progress=False)
    assert (again.skipped, again.answered, again.throughput_qps) == (5, 0, None)
    assert len(asked) == 3


def test_answers_run_concurrently(tmp_path: Path) -> None:
    barrier = threading.Barrier(4, timeout=20)

    def answer(question: GoldQuestion) -> EvalRecord:
        barrier.wait()  # raises BrokenBarrierError unless four answers are in flight at once
        return _echo(question)

    questions = [GoldQuestion(id=f"q{i}", question="?") for i in range(8)]
    stats = run_questions(questions, answer, tmp_path / "out.jsonl", concurrency=4, progress=False)
    assert stats.failed == {} and stats.answered == 8
    records, problems = read_results(tmp_path / "out.jsonl")
    assert sorted(records) == sorted(q.id for q in questions) and problems == []


def test_a_failing_question_is_reported_and_retried_next_run(tmp_path: Path) -> None:
    broken = {"q1"}

    def answer(question: GoldQuestion) -> EvalRecord:
        if question.id in broken:
            raise RuntimeError("server said no")
        return _echo(question)

    questions = [GoldQuestion(id=f"q{i}", question="?") for i in range(3)]
    out = tmp_path / "out.jsonl"
    stats = run_questions(questions, answer, out, concurrency=2, progress=False)
    assert stats.failed == {"q1": "RuntimeError: server said no"} and stats.answered == 2
    broken.clear()
    again = run_questions(questions, answer, out, progress=False)
    assert (again.skipped, again.answered) == (2, 1)


def test_read_results_keeps_the_last_line_per_id_and_reports_bad_lines(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first = EvalRecord(id="a", question="?", answer="one").model_dump_json()
    second = EvalRecord(id="a", question="?", answer="two").model_dump_json()
    no_id = EvalRecord(question="?", answer="x").model_dump_json()
    out.write_text("\n".join([first, "garbage", second, no_id]) + "\n", encoding="utf-8")
    records, problems = read_results(out)
    assert records["a"].answer == "two"
    assert [(p.line, p.reason) for p in problems][1] == (4, "answer without an id")
    assert problems[0].line == 2


class _CountingEmbedder:
    """A deterministic stand-in for the e5 model (the cache, not the model, is under test)."""

    id = "counting:4"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed_passages(self, texts: list[str]) -> Vectors:
        return self.embed_queries(texts)

    def embed_queries(self, texts: list[str]) -> Vectors:
        self.calls.append(list(texts))
        return np.array([[len(t), 1, 0, 0] for t in texts], dtype=np.float32)


def test_caching_embedder_embeds_each_query_once() -> None:
    inner = _CountingEmbedder()
    cache = CachingEmbedder(inner)
    first = cache.embed_queries(["ab", "c", "ab"])
    second = cache.embed_queries(["c", "ab"])
    assert inner.calls == [["ab", "c"]]
    assert first[:, 0].tolist() == [2.0, 1.0, 2.0] and second[:, 0].tolist() == [1.0, 2.0]


# -- end to end on a tiny store -----------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, {"guide.md": GUIDE})


def test_llm_none_uses_the_graph_composer(store: Path) -> None:
    settings = SETTINGS.model_copy(update={"store": store})
    assistant, cache = open_assistant(settings, dense=False)
    assert cache is None and assistant.llm is None
    assert eval_llm("none", assistant, settings) == (None, "")


def test_unreachable_llm_falls_back_with_a_message(store: Path) -> None:
    # nothing listens on port 9 of this machine: the explicit URL fails; `auto` finds no server
    # and (the model named is no embedded one) no embedded model to start
    nowhere = LLMSettings(base_url="http://127.0.0.1:9/v1", model="no-such-model")
    settings = SETTINGS.model_copy(update={"store": store, "llm": nowhere})
    assistant, _cache = open_assistant(settings, dense=False)
    llm, note = eval_llm("http://127.0.0.1:9/v1", assistant, settings)
    assert llm is None and "127.0.0.1:9" in note and "graph composer" in note
    llm, note = eval_llm("auto", assistant, settings)
    assert llm is None and "no LLM available" in note and "no-such-model" in note


def _gold_lines(n: int) -> list[str]:
    evidence = [{"doc": "guide.md", "quote": "GPU 极致性能 → TensorRT"}]
    gold: dict[str, Any] = {
        "lang": "zh",
        "kind": "choose",
        "answerable": True,
        "gold_top": ["TensorRT"],
    }
    lines = [_q(f"q{i:03d}", gold_evidence=evidence, **gold) for i in range(n)]
    lines.append(
        _q("u1", "阿里云上租一张 A100 每小时多少钱？", kind="unanswerable", answerable=False)
    )
    return lines


def test_killed_eval_subprocess_resumes_without_redoing_answers(
    tmp_path: Path, store: Path
) -> None:
    questions = _write_questions(tmp_path / "q.jsonl", _gold_lines(150))
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "qa.cli", "eval", str(questions), "--out", str(out)]
    cmd += ["--store", str(store), "--no-dense", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= 5:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = out.read_bytes()
    kept = before[: before.rfind(b"\n") + 1].decode("utf-8").splitlines()
    assert proc.returncode == -signal.SIGKILL, "the first run ended before it could be killed"
    assert 5 <= len(kept) < 151

    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{151 - len(kept)} answered, {len(kept)} already in the results" in done.stdout
    lines = out.read_text("utf-8").splitlines()
    assert lines[: len(kept)] == kept
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids)) == 151


def test_report_and_baseline_end_to_end(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = _write_questions(tmp_path / "q.jsonl", [*_gold_lines(3), "oops"])
    out, report = tmp_path / "res.jsonl", tmp_path / "report.html"
    argv = ["eval", str(questions), "--out", str(out), "--store", str(store), "--no-progress"]
    code = main([*argv, "--report", str(report), "--baseline", "naive", "--concurrency", "2"])
    assert code == 0
    captured = capsys.readouterr()
    assert "q.jsonl:5: skipped: not JSON" in captured.err
    html = report.read_text("utf-8")
    assert html.count("<svg") == 4 and "<script" not in html
    assert "src=" not in html and "href=" not in html  # self-contained: nothing to fetch
    assert "naive-rag" in html and "Wrong answers" in html
    summary = report.with_suffix(".md").read_text("utf-8")
    assert summary.startswith("# kgqa evaluation") and "| kgqa | naive-rag |" in summary
    baseline, _ = read_results(tmp_path / "res.naive.jsonl")
    assert sorted(baseline) == ["q000", "q001", "q002", "u1"]
    assert all(r.backend == "naive-rag" and len(r.retrieved) >= 1 for r in baseline.values())
    assert baseline["q000"].recommendations[0].name in GUIDE


# -- what a pass records: backends, LLM fallbacks, concurrency and load --------------------------
def _llm_or_fallback(question: GoldQuestion) -> EvalRecord:
    if question.id.endswith("1"):
        fallback = Fallback(kind=FallbackKind.LLM_TIMEOUT, detail="took longer than 1s")
        # the note is for people: the counts come from `fallback`, never from parsing notes
        note = "LLM unavailable, showing the graph answer (any words)"
        return EvalRecord(
            id=question.id, question=question.question, answer="g", notes=[note], fallback=fallback
        )
    if question.id.endswith("2"):  # a declined question is no LLM fallback
        fallback = Fallback(kind=FallbackKind.NOT_COVERED, detail="no prices")
        return EvalRecord(
            id=question.id, question=question.question, answer="-", backend="llm:m",
            fallback=fallback,
        )  # fmt: skip
    return EvalRecord(id=question.id, question=question.question, answer="l", backend="llm:m")


def test_a_pass_counts_backends_fallbacks_concurrency_and_load(tmp_path: Path) -> None:
    questions = [GoldQuestion(id=f"q{i}", question="?") for i in range(4)]
    out = tmp_path / "out.jsonl"
    stats = run_questions(questions, _llm_or_fallback, out, concurrency=3, progress=False)
    assert stats.backends == {"llm:m": 3, "graph": 1}
    assert stats.fallbacks == {"llm-timeout": 1}
    assert stats.concurrency == 3 and len(stats.load_average) == 2
    assert stats.throughput_qps is not None and stats.throughput_qps > 0
    again = run_questions(questions, _llm_or_fallback, out, progress=False)
    assert again.backends == {} and again.fallbacks == {} and again.throughput_qps is None


def test_the_report_shows_throughput_conditions_backends_and_fallbacks(tmp_path: Path) -> None:
    questions = [GoldQuestion(id=f"q{i}", question="?") for i in range(4)]
    out = tmp_path / "out.jsonl"
    stats = run_questions(questions, _llm_or_fallback, out, concurrency=2, progress=False)
    records, _ = read_results(out)
    scores = [QuestionScore(id=q.id, kind="fact", lang="en", answered=True) for q in questions]
    system = SystemResult(
        name="kgqa", summary=breakdown(scores, 6), scores=scores, records=records, run=stats
    )
    data = ReportData(
        questions_file="q.jsonl", store="s", created="now", golds=questions, systems=[system]
    )
    summary = write_report(tmp_path / "r.html", data).read_text("utf-8")
    html = (tmp_path / "r.html").read_text("utf-8")
    for text in (summary, html):
        assert f"{stats.throughput_qps} q/s" in text
        assert "llm:m 3 · graph 1" in text and "1 (llm-timeout 1)" in text
        assert "2, load " in text
