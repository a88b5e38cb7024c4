"""What each weight of the graph-only answer (`qa.weights`) does to its accuracy on question sets.

    kgqa ingest --corpus corpus --store /tmp/w-dev
    kgqa ingest --corpus ../shared/real-docs/corpus --store /tmp/w-docs
    kgqa ingest --corpus ../shared/real-articles/corpus --store /tmp/w-arts
    python benchmarks/bench_graph_weights.py \\
        --set dev=corpus/dev_questions.jsonl:/tmp/w-dev \\
        --set docs=../shared/real-docs/questions.jsonl:/tmp/w-docs \\
        --set arts=../shared/real-articles/questions.jsonl:/tmp/w-arts [--only NAME ...]

Every set is answered by the graph alone (`--llm none`) with all weights as they are, then again
with one weight at a time set to half, one and a half times, and (for a factor, a bonus or a
threshold) its neutral value: 1 for a factor, 0 for a bonus or a threshold. Printed per weight:
its value, and per variant the answers it turns wrong and right on each set (`dev -1+0`: one
right answer turned wrong, none turned right; `=` where none changes), the same scoring as
`kgqa eval`; then the weights whose neutral value changes no answer. Retrieval does not read
these weights: each question's retrieval is done once and reused, so a pass costs the composing
alone (~300 questions in a few seconds on 2 cores).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qa import weights as W
from qa.config import load_settings
from qa.eval.records import GoldQuestion, read_questions
from qa.eval.run import open_assistant
from qa.eval.score import Scorer

#: the value at which a weight does nothing: 1 for a factor, 0 for a bonus or a threshold
NEUTRAL: dict[str, float] = {
    **dict.fromkeys(
        [
            "EVIDENCE_DECAY",
            "FIT_WANTED",
            "OPTION_UNRANKED",
            "WANTED_TYPE_GAIN",
            "RUNS_ON_GAIN",
            "STATES_ASKED_GAIN",
            "FRAGMENT_WEIGHT",
            "OWN_UNITS_SHARE",
        ],
        1.0,
    ),
    **dict.fromkeys(
        [
            "CONSTRAINT_GAIN",
            "TABLE_SECTION_WEIGHT",
            "RANK_DECAY",
            "NOT_RECOMMENDED_PENALTY",
            "TITLE_WEIGHT",
            "HINT_GAIN",
            "CLAUSE_GAIN",
            "OWN_ROW_BONUS",
            "CLOSE_SHARE",
            "OPTION_CLOSE",
            "GRAPH_CLOSE",
            "SITUATION_FLOOR",
        ],
        0.0,
    ),
}


class QuestionSet:
    """One set's questions, its assistant (retrieval done once per question) and its scorer."""

    def __init__(self, name: str, questions: Path, store: Path) -> None:
        self.name = name
        self.questions: list[GoldQuestion] = read_questions(questions).questions
        self.assistant, _cache = open_assistant(load_settings(store=store))
        self.scorer = Scorer(self.assistant.lexicon, self.assistant.graph, self.assistant.documents)
        _remember(self.assistant, "understand", lambda q: q)
        _remember(self.assistant, "_ranked", lambda q: q.text)
        _remember(self.assistant.retriever, "retrieve", lambda q: q.text)

    def right(self) -> frozenset[str]:
        """The ids of the questions the graph alone answers right."""
        return frozenset(
            q.id
            for q in self.questions
            if self.scorer.score(q, self.assistant.ask(q.question, use_llm=False)).correct
        )


def _remember(owner: Any, name: str, key: Callable[[Any], Any]) -> None:
    """Make `owner.name(x)` compute once per `key(x)` (retrieval does not read the weights)."""
    method = getattr(owner, name)
    seen: dict[Any, Any] = {}

    def remembered(arg: Any) -> Any:
        k = key(arg)
        if k not in seen:
            seen[k] = method(arg)
        return seen[k]

    setattr(owner, name, remembered)


def variants(name: str, value: float) -> list[tuple[str, float]]:
    """The values a weight is tried at: half, one and a half times, neutral where it has one.

    >>> variants("TITLE_WEIGHT", 0.5)
    [('x0.5', 0.25), ('x1.5', 0.75), ('neutral', 0.0)]
    >>> variants("CANDIDATE_UNITS", 30)
    [('x0.5', 15), ('x1.5', 45)]
    """
    scale: Callable[[float], float] = (lambda x: round(x)) if isinstance(value, int) else float
    out = [("x0.5", scale(value * 0.5)), ("x1.5", scale(value * 1.5))]
    if name in NEUTRAL and NEUTRAL[name] != value:
        out.append(("neutral", NEUTRAL[name]))
    return out


def main() -> None:
    """Print the baseline, then one line per weight and variant."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", action="append", required=True, help="NAME=QUESTIONS:STORE")
    ap.add_argument("--only", nargs="*", default=[], help="these weights only")
    args = ap.parse_args()
    sets = []
    for spec in args.set:
        name, rest = spec.split("=", 1)
        questions, store = rest.rsplit(":", 1)
        sets.append(QuestionSet(name, Path(questions), Path(store)))
    started = time.perf_counter()
    base = {s.name: s.right() for s in sets}
    print(
        "baseline: "
        + ", ".join(f"{s.name} {len(base[s.name])}/{len(s.questions)}" for s in sets)
        + f" ({time.perf_counter() - started:.0f} s a pass, retrieval included)"
    )
    idle: list[str] = []
    names = [n for n in W.__dict__ if n.isupper() and (not args.only or n in args.only)]
    for name in names:
        value = getattr(W, name)
        changes = []
        for label, tried in variants(name, value):
            setattr(W, name, tried)
            try:
                now = {s.name: s.right() for s in sets}
            finally:
                setattr(W, name, value)
            moved = {k: (len(base[k] - now[k]), len(now[k] - base[k])) for k in now}
            if label == "neutral" and not any(lost or won for lost, won in moved.values()):
                idle.append(name)
            said = " ".join(
                f"{k} -{lost}+{won}" if lost or won else f"{k} ="
                for k, (lost, won) in moved.items()
            )
            changes.append(f"{label} {said}")
        print(f"{name} = {value}: " + " | ".join(changes), flush=True)
    print("neutral changes no answer: " + (", ".join(idle) or "none"))


if __name__ == "__main__":
    main()
