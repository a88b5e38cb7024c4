"""Offline evaluation (`kgqa eval`): gold questions and result records (`records`), scoring
(`score`), the batch runner (`run`), the naive-RAG baseline (`baseline`), and the HTML/Markdown
report (`report`, with its plots in `charts`)."""

from qa.eval.records import EvalRecord, GoldQuestion, read_questions, read_results
from qa.eval.score import Scorer, breakdown, summarize

__all__ = [
    "EvalRecord",
    "GoldQuestion",
    "Scorer",
    "breakdown",
    "read_questions",
    "read_results",
    "summarize",
]
