"""Decide: the local LLM reads the retrieved evidence and picks (`reader`), from what it is shown
(`reading`: the evidence units and the candidates they name, `candidates`), in the words of
`prompts`."""

from qa.decide.candidates import Candidate, candidate_names
from qa.decide.reader import Reader, Verdict, draft_from_verdict
from qa.decide.reading import Reading, select_evidence

__all__ = [
    "Candidate",
    "Reader",
    "Reading",
    "Verdict",
    "candidate_names",
    "draft_from_verdict",
    "select_evidence",
]
