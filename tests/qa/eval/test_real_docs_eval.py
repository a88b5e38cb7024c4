"""End to end on the 26 real READMEs and 106 gold questions in `../shared/real-docs` (read from
there, never copied into the repository): `kgqa ingest` of those files together with generated
hostile Markdown (deep nesting, a giant table, broken HTML, a 1 MB line), then every question
through the graph answerer (no LLM, lexical and graph retrieval), scored by `qa.eval.score`. Every
citation is checked against the graph export and the files as read from disk
(`tests/grounding.py`), every unanswerable question must be declined, and accuracy stays above a
floor. Skipped where the folder is absent (a user's clone), failed under CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from grounding import exported_edges, grounding_problems
from store_fixture import SETTINGS

from kg.lexicon import Lexicon
from qa.api import Assistant
from qa.eval.records import GoldQuestion
from qa.eval.score import Scorer, summarize
from qa.schema import Answer

REAL_DOCS = Path(__file__).resolve().parents[3].parent / "shared" / "real-docs"
#: Measured with `kgqa eval --no-dense --llm none`: 0.547 (58 of 106) after issue 13 (0.141
#: before, when 3 of the 26 documents crashed the ingest); the floor is that minus 3 points.
ACCURACY_FLOOR = 0.517


@pytest.fixture(scope="module")
def real_docs() -> Path:
    if not (REAL_DOCS / "corpus").is_dir():
        message = f"real documents not found at {REAL_DOCS}"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:  # as tests/needs.py
            pytest.fail(message + " (CI must have them)")
        pytest.skip(message)
    return REAL_DOCS


HOSTILE = {
    "hostile-nesting.md": "> " * 2000
    + "deep\n\n"
    + "".join("  " * i + "- item\n" for i in range(300)),
    "hostile-table.md": "| "
    + " | ".join(f"c{i}" for i in range(12))
    + " |\n|"
    + "---|" * 12
    + "\n"
    + "".join("| " + " | ".join(f"r{r}c{i}" for i in range(12)) + " |\n" for r in range(5000)),
    "hostile-html.md": "<div><table><tr><td>" * 2000 + "<p>unclosed <b>bold <a href='x'>link",
    "hostile-line.md": "word [link](http://x) **b** `c` " * 32_000,  # one line of 1 MB
}


@pytest.fixture(scope="module")
def ingested(real_docs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`kgqa ingest` of the real documents plus hostile Markdown: (store, its summary)."""
    root = tmp_path_factory.mktemp("real-docs")
    corpus = root / "corpus"
    shutil.copytree(real_docs / "corpus", corpus)
    for name, text in HOSTILE.items():
        (corpus / name).write_text(text, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "qa.cli",
            "ingest",
            "--corpus",
            str(corpus),
            "--store",
            str(root / "store"),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "store", done.stdout


@pytest.fixture(scope="module")
def store(ingested: tuple[Path, str]) -> Path:
    return ingested[0]


def test_every_document_ingests_hostile_ones_too(ingested: tuple[Path, str]) -> None:
    total = 26 + len(HOSTILE)
    assert f"documents: {total} ({total} processed" in ingested[1], ingested[1]


@pytest.fixture(scope="module")
def questions(real_docs: Path) -> list[GoldQuestion]:
    lines = (real_docs / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [GoldQuestion.model_validate(json.loads(line)) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def assistant(store: Path) -> Assistant:
    return Assistant.open(store, settings=SETTINGS, dense=False)


@pytest.fixture(scope="module")
def answers(assistant: Assistant, questions: list[GoldQuestion]) -> dict[str, Answer]:
    return {q.id: assistant.ask(q.question, qid=q.id, use_llm=False) for q in questions}


def test_every_citation_is_grounded_in_the_export_and_the_files(
    answers: dict[str, Answer], store: Path, real_docs: Path
) -> None:
    edges = exported_edges(store)
    documents = {p.name: p.read_text(encoding="utf-8") for p in (real_docs / "corpus").iterdir()}
    documents |= HOSTILE
    problems = [
        f"{qid}: {problem}"
        for qid, answer in answers.items()
        for problem in grounding_problems(answer, edges, documents)
    ]
    assert problems == []
    assert sum(len(c.path) for a in answers.values() for c in a.citations) > 150


def test_accuracy_stays_above_the_floor_and_nothing_unanswerable_is_answered(
    answers: dict[str, Answer], assistant: Assistant, questions: list[GoldQuestion]
) -> None:
    scorer = Scorer(Lexicon.default(), assistant.graph, assistant.documents)
    scores = [scorer.score(q, answers[q.id]) for q in questions]
    metrics = summarize(scores)
    wrong = [s.id for s in scores if s.correct is False]
    print(f"\nreal-docs accuracy {metrics.accuracy} ({len(wrong)} wrong): {wrong}")
    assert metrics.citation_validity == 1.0
    assert metrics.abstention_recall == 1.0 and metrics.abstention_precision == 1.0
    assert metrics.accuracy is not None and metrics.accuracy >= ACCURACY_FLOOR, wrong
