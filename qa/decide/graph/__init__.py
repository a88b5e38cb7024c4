"""The graph's own answer (`--llm none`, and the reader's prior): whether the sources cover the
question (`answerable`), the candidates its units support (`weigh`, `options`), the graph's
explicit advice (`advice`), and the draft made of them (`evidence`); its weights are named in
`qa.weights`, each with what it does and how it was measured."""

from qa.decide.graph.advice import GraphComposer, find_conflicts
from qa.decide.graph.evidence import EvidenceComposer

__all__ = ["EvidenceComposer", "GraphComposer", "find_conflicts"]
