"""Validate the public dev question set `corpus/dev_questions.jsonl` (format: corpus/QUESTIONS.md).

The checks are written once, as `record_problems` (one question against its documents) and
`set_problems` (the whole set), and are run twice: on the shipped file, which must have no problems,
and on small hand-made records, which must each show the problem they were built to show.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
QUESTIONS = CORPUS / "dev_questions.jsonl"

Kind = Literal["choose", "compare", "fact", "multi-hop", "unanswerable", "adversarial"]
KINDS: tuple[str, ...] = ("choose", "compare", "fact", "multi-hop", "unanswerable", "adversarial")

#: Canonical names allowed in `gold_top`, each with the surface forms (lower case) that show, in an
#: evidence quote, that the quote is about it. A name missing here is a typo or needs adding here.
CANONICAL: dict[str, tuple[str, ...]] = {
    "PyTorch": ("pytorch",),
    "JAX": ("jax",),
    "TensorFlow": ("tensorflow", "tf"),
    "Keras": ("keras",),
    "PyTorch Lightning": ("pytorch lightning",),
    "ONNX": ("onnx",),
    "ONNX Runtime": ("onnx runtime",),
    "TensorRT": ("tensorrt",),
    "OpenVINO": ("openvino",),
    "TVM": ("tvm",),
    "vLLM": ("vllm",),
    "TGI": ("tgi",),
    "TFLite": ("tflite", "tensorflow lite"),
    "TorchServe": ("torchserve",),
    "TorchScript": ("torchscript",),
    "XLA": ("xla",),
    "DataParallel": ("dataparallel",),
    "DDP": ("ddp", "distributeddataparallel"),
    "FSDP": ("fsdp", "fullyshardeddataparallel"),
    "Tensor Parallelism": ("张量并行", "tensor parallel"),
    "Pipeline Parallelism": ("流水并行", "pipeline parallel"),
    "transformers": ("transformers",),
    "datasets": ("datasets", "流式加载"),
    "diffusers": ("diffusers", "扩散"),
    "peft": ("peft",),
    "LoRA": ("lora",),
    "torchrun": ("torchrun",),
    "accelerate": ("accelerate",),
    "W&B": ("w&b", "wandb", "weights & biases"),
    "MLflow": ("mlflow",),
    "Neptune": ("neptune",),
    "TensorBoard": ("tensorboard",),
    "Mixed Precision": ("混合精度", "mixed precision"),
    "Gradient Accumulation": ("梯度累积", "gradient accumulation"),
    "PagedAttention": ("pagedattention",),
    "torch.compile": ("torch.compile",),
    "TPU": ("tpu",),
    "NVIDIA GPU": ("nvidia", "英伟达"),
}

_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


class GoldEvidence(BaseModel):
    """A verbatim quote from one document that supports the gold answer."""

    model_config = ConfigDict(extra="forbid", strict=True)

    doc: str = Field(min_length=1)
    quote: str = Field(min_length=1)


class GoldQuestion(BaseModel):
    """One line of a gold question file (documented in corpus/QUESTIONS.md)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str = Field(pattern=r"^[a-z]+(-[a-z0-9]+)+$")
    question: str = Field(min_length=1)
    lang: Literal["zh", "en", "mixed"]
    kind: Kind
    answerable: bool
    gold_top: list[str]
    required_facts: list[list[str]] = Field(max_length=3)
    gold_evidence: list[GoldEvidence]
    conflict: bool
    notes: str | None = None


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space, strip, and lower-case.

    >>> normalise("  A\\n\\tB  c ")
    'a b c'
    """
    return re.sub(r"\s+", " ", text).strip().lower()


def load_documents(corpus: Path) -> dict[str, str]:
    """Every `.txt` document of a corpus folder, keyed by its file name (its document id)."""
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(corpus.iterdir())
        if p.suffix == ".txt"
    }


def load_questions(path: Path) -> list[GoldQuestion]:
    """Parse a gold question file; raises `ValueError` naming the first bad line."""
    questions: list[GoldQuestion] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            questions.append(GoldQuestion.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise ValueError(f"{path.name} line {number}: {exc}") from exc
    return questions


def _language_problem(q: GoldQuestion) -> str | None:
    has_cjk = bool(_CJK.search(q.question))
    has_latin = bool(_LATIN_WORD.search(q.question))
    if q.lang == "zh" and not has_cjk:
        return "lang zh but the question has no Chinese"
    if q.lang == "en" and has_cjk:
        return "lang en but the question has Chinese characters"
    if q.lang == "mixed" and not (has_cjk and has_latin):
        return "lang mixed needs both Chinese and English words"
    return None


def _answerability_problems(q: GoldQuestion) -> list[str]:
    problems: list[str] = []
    if q.kind == "unanswerable" and q.answerable:
        problems.append("kind unanswerable must have answerable false")
    if not q.answerable:
        if q.kind not in {"unanswerable", "adversarial"}:
            problems.append(f"answerable false on kind {q.kind}")
        if q.gold_top or q.required_facts or q.gold_evidence or q.conflict:
            problems.append("an unanswerable question has no gold_top, facts, evidence or conflict")
    elif not q.gold_evidence:
        problems.append("an answerable question needs gold_evidence")
    return problems


def _evidence_problems(q: GoldQuestion, docs: Mapping[str, str]) -> list[str]:
    problems: list[str] = []
    for ev in q.gold_evidence:
        if ev.doc not in docs:
            problems.append(f"unknown document {ev.doc!r}")
        elif normalise(ev.quote) not in normalise(docs[ev.doc]):
            problems.append(f"quote not verbatim in {ev.doc}: {ev.quote!r}")
    if q.conflict and len({ev.doc for ev in q.gold_evidence}) < 2:
        problems.append("a conflict question must cite both disagreeing documents")
    return problems


def _gold_problems(q: GoldQuestion) -> list[str]:
    """Facts and top names must be well formed and grounded in the question's own evidence."""
    problems: list[str] = []
    cited = " ".join(normalise(ev.quote) for ev in q.gold_evidence)
    for fact in q.required_facts:
        if not fact or any(not alt.strip() for alt in fact):
            problems.append(f"a fact needs non-blank alternatives: {fact!r}")
        elif not any(normalise(alt) in cited for alt in fact):
            problems.append(f"fact {fact!r} is not stated in the gold evidence")
    if len(set(q.gold_top)) != len(q.gold_top):
        problems.append("duplicate gold_top names")
    for name in q.gold_top:
        if name not in CANONICAL:
            problems.append(f"gold_top name {name!r} is not canonical")
        elif not any(form in cited for form in CANONICAL[name]):
            problems.append(f"gold_top {name!r} is not named in the gold evidence")
    return problems


def record_problems(q: GoldQuestion, docs: Mapping[str, str]) -> list[str]:
    """Everything wrong with one question, checked against its documents (empty when valid)."""
    language = _language_problem(q)
    return (
        ([language] if language else [])
        + _answerability_problems(q)
        + _evidence_problems(q, docs)
        + _gold_problems(q)
    )


def coverage_gaps(
    questions: Sequence[GoldQuestion], docs: Mapping[str, str], max_gap: int
) -> list[str]:
    """Stretches of more than `max_gap` characters of a document that no gold quote touches.

    A section with no question shows up as a gap, whatever the document's heading style.
    """
    gaps: list[str] = []
    for name, text in docs.items():
        flat = normalise(text)
        marks = {0, len(flat)}
        for q in questions:
            for ev in q.gold_evidence:
                start = flat.find(normalise(ev.quote)) if ev.doc == name else -1
                if start >= 0:
                    marks.update((start, start + len(normalise(ev.quote))))
        points = sorted(marks)
        for a, b in itertools.pairwise(points):
            if b - a > max_gap:
                gaps.append(f"{name}[{a}:{b}] uncovered: {flat[a : a + 40]!r}...")
    return gaps


def set_problems(questions: Sequence[GoldQuestion]) -> list[str]:
    """Set-level requirements: size, unique ids, both languages, every kind, enough hard cases."""
    problems: list[str] = []
    ids = Counter(q.id for q in questions)
    problems += [f"duplicate id {i}" for i, n in ids.items() if n > 1]
    if len(questions) < 60:
        problems.append(f"only {len(questions)} questions (need at least 60)")
    langs = Counter(q.lang for q in questions)
    kinds: Counter[str] = Counter(q.kind for q in questions)
    total = max(len(questions), 1)
    if langs["zh"] / total < 0.5 or langs["en"] / total < 0.3:
        problems.append(f"language mix off (about 60% zh, 40% en wanted): {dict(langs)}")
    problems += [f"no question of kind {k}" for k in KINDS if kinds[k] == 0]
    for kind in ("unanswerable", "adversarial"):
        if kinds[kind] < 8:
            problems.append(f"only {kinds[kind]} {kind} questions (need at least 8)")
    if not any(q.conflict for q in questions):
        problems.append("no question about a conflict between sources")
    return problems


# ----------------------------------------------------------------------------- the shipped set


@pytest.fixture(scope="module")
def docs() -> dict[str, str]:
    return load_documents(CORPUS)


@pytest.fixture(scope="module")
def questions() -> list[GoldQuestion]:
    return load_questions(QUESTIONS)


def test_every_line_parses_as_a_gold_question(questions: list[GoldQuestion]) -> None:
    raw = QUESTIONS.read_text(encoding="utf-8").splitlines()
    assert len(questions) == len(raw) >= 60


def test_set_level_requirements(questions: list[GoldQuestion]) -> None:
    assert set_problems(questions) == []


def test_every_question_is_valid_against_the_corpus(
    questions: list[GoldQuestion], docs: dict[str, str]
) -> None:
    problems = {q.id: p for q in questions if (p := record_problems(q, docs))}
    assert problems == {}


def test_quotes_are_exact_substrings(questions: list[GoldQuestion], docs: dict[str, str]) -> None:
    # Stricter than the whitespace-normalised check: citation verifiers may not normalise.
    loose = [
        (q.id, ev.quote)
        for q in questions
        for ev in q.gold_evidence
        if ev.quote not in docs.get(ev.doc, "")
    ]
    assert loose == []


def test_every_part_of_every_document_is_asked_about(
    questions: list[GoldQuestion], docs: dict[str, str]
) -> None:
    assert len(docs) >= 2
    assert coverage_gaps(questions, docs, max_gap=400) == []


def test_conflict_questions_are_in_both_languages(questions: list[GoldQuestion]) -> None:
    assert {"zh", "en"} <= {q.lang for q in questions if q.conflict}


# ----------------------------------------------------------------------------- the checks fail

_DOCS = {
    "a.txt": "PyTorch 是研究首选。\nTensorRT 只在 NVIDIA GPU 上。",
    "b.txt": "JAX 用 XLA 编译。",
}
_GOOD: dict[str, object] = {
    "id": "zh-choose-01",
    "question": "研究用什么框架？",
    "lang": "zh",
    "kind": "choose",
    "answerable": True,
    "gold_top": ["PyTorch"],
    "required_facts": [["研究", "research"]],
    "gold_evidence": [{"doc": "a.txt", "quote": "PyTorch  是研究首选。"}],
    "conflict": False,
}


def _with(**changes: object) -> GoldQuestion:
    return GoldQuestion.model_validate({**_GOOD, **changes})


def test_a_good_hand_made_record_has_no_problems() -> None:
    assert record_problems(_with(), _DOCS) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"gold_evidence": [{"doc": "a.txt", "quote": "PyTorch 是工业首选"}]}, "not verbatim"),
        ({"gold_evidence": [{"doc": "c.txt", "quote": "PyTorch"}]}, "unknown document"),
        ({"gold_evidence": []}, "needs gold_evidence"),
        ({"kind": "unanswerable"}, "must have answerable false"),
        ({"answerable": False}, "answerable false on kind choose"),
        ({"kind": "adversarial", "answerable": False}, "has no gold_top"),
        ({"required_facts": [["", "x"]]}, "non-blank"),
        ({"required_facts": [["工业"]]}, "not stated in the gold evidence"),
        ({"gold_top": ["Pytorch"]}, "not canonical"),
        ({"gold_top": ["JAX"]}, "not named in the gold evidence"),
        ({"gold_top": ["PyTorch", "PyTorch"]}, "duplicate gold_top"),
        ({"conflict": True}, "cite both"),
        ({"lang": "en"}, "lang en"),
        ({"lang": "mixed"}, "lang mixed"),
        ({"question": "Which framework for research?"}, "lang zh"),
    ],
)
def test_record_problems_catch_each_defect(changes: dict[str, object], expected: str) -> None:
    problems = record_problems(_with(**changes), _DOCS)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    "changes",
    [
        {"kind": "how-to"},
        {"lang": "jp"},
        {"answerable": "yes"},
        {"required_facts": [["a"], ["b"], ["c"], ["d"]]},
        {"required_facts": ["研究"]},
        {"gold_evidence": [{"doc": "a.txt"}]},
        {"extra_field": 1},
        {"id": "Bad Id"},
    ],
)
def test_malformed_records_are_rejected(changes: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        _with(**changes)


def test_load_questions_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(_GOOD) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        load_questions(path)


def test_set_problems_catch_a_thin_set() -> None:
    one = _with()
    problems = set_problems([one, one])
    assert "duplicate id zh-choose-01" in problems
    assert any("at least 60" in p for p in problems)
    assert any("language mix" in p for p in problems)
    assert any("kind unanswerable" in p for p in problems)
    assert "no question about a conflict between sources" in problems


def test_coverage_gaps_find_an_unasked_stretch() -> None:
    text = "x" * 50 + "PyTorch 是研究首选。" + "y" * 50
    q = _with(gold_evidence=[{"doc": "a.txt", "quote": "PyTorch 是研究首选。"}])
    assert coverage_gaps([q], {"a.txt": text}, max_gap=60) == []
    assert len(coverage_gaps([q], {"a.txt": text}, max_gap=40)) == 2
