"""What evaluation reads and writes: gold questions, result records, and how a pass went.

A question file is JSON Lines of `GoldQuestion`s (format in corpus/QUESTIONS.md); a results file
is JSON Lines of `EvalRecord`s (an Answer plus the chunks retrieval ranked). Both readers turn bad
lines into `LineProblem`s instead of errors, so one broken line loses nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kg.errors import QuestionError
from qa.schema import Answer, FallbackKind

__all__ = [
    "ChunkSpan",
    "EvalRecord",
    "GoldEvidence",
    "GoldQuestion",
    "LineProblem",
    "QuestionSet",
    "RunStats",
    "llm_fallback",
    "read_questions",
    "read_results",
]


class GoldEvidence(BaseModel):
    """A passage supporting the gold answer: document id and a verbatim quote."""

    doc: str
    quote: str


class GoldQuestion(BaseModel):
    """One line of a question file: `id` and `question` are required; extra fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str
    lang: str | None = None
    kind: str | None = None
    answerable: bool | None = None
    gold_top: list[str] = Field(default_factory=list)
    required_facts: list[list[str]] = Field(default_factory=list)
    gold_evidence: list[GoldEvidence] = Field(default_factory=list)
    conflict: bool = False
    notes: str = ""


class ChunkSpan(BaseModel):
    """Where a retrieved chunk lies in its document."""

    doc: str
    start: int
    end: int


class EvalRecord(Answer):
    """One line of `kgqa eval --out`: the Answer, plus the chunks retrieval ranked for the question.

    Readers of plain Answers ignore `retrieved` (an extension field).
    """

    retrieved: list[ChunkSpan] = Field(default_factory=list, description="ranked, best first")


class LineProblem(BaseModel):
    """A line of a JSONL file that was skipped, and why."""

    line: int
    reason: str


class QuestionSet(BaseModel):
    """The usable questions of a file and the lines that were skipped."""

    path: str
    questions: list[GoldQuestion]
    problems: list[LineProblem] = Field(default_factory=list)


def llm_fallback(answer: Answer) -> FallbackKind | None:
    """Why the LLM's answer was replaced by the graph answer, or `None` when it was not.

    >>> from qa.schema import Fallback
    >>> a = Answer(question="q", answer="a", fallback=Fallback(kind="llm-timeout", detail="slow"))
    >>> llm_fallback(a), llm_fallback(Answer(question="q", answer="a"))
    (<FallbackKind.LLM_TIMEOUT: 'llm-timeout'>, None)
    """
    if answer.fallback is None or not answer.fallback.kind.is_llm:
        return None
    return answer.fallback.kind


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
        default_factory=dict, description="LLM fallbacks of this pass by kind (llm-timeout, ...)"
    )

    @property
    def throughput_qps(self) -> float | None:
        """Questions answered per second of this pass (`None` when nothing was answered)."""
        return round(self.answered / self.wall_s, 2) if self.answered and self.wall_s > 0 else None

    def count(self, answer: Answer) -> None:
        """Count one answer of this pass by backend, and its LLM fallback kind if any."""
        self.backends[answer.backend] = self.backends.get(answer.backend, 0) + 1
        kind = llm_fallback(answer)
        if kind is not None:
            self.fallbacks[kind.value] = self.fallbacks.get(kind.value, 0) + 1


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
