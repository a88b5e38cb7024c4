"""The graph-only answer's weights live in `qa.weights`: each is read by the graph path, and the
graph path's modules hold no weight of their own (no fractional literal besides 0 and 1)."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from qa import weights as W

ROOT = Path(__file__).resolve().parents[2]
GRAPH_PATH = [
    "decide/graph/weigh",
    "decide/graph/options",
    "decide/graph/advice",
    "decide/graph/evidence",
    "retrieve/unit_index",
    "decide/graph/answerable",
]


def _sources() -> dict[str, str]:
    return {name: (ROOT / "qa" / f"{name}.py").read_text(encoding="utf-8") for name in GRAPH_PATH}


def test_every_weight_is_read_by_the_graph_path() -> None:
    code = "\n".join(_sources().values())
    names = [n for n in vars(W) if n.isupper()]
    assert names, "qa.weights names no weight"
    assert [n for n in names if f"W.{n}" not in code] == []


def test_every_weight_says_what_the_benchmark_measured() -> None:
    lines = (ROOT / "qa" / "weights.py").read_text(encoding="utf-8").splitlines()
    for at, line in enumerate(lines):
        if ": Final = " in line:
            assert lines[at - 1].startswith("#: measured: "), line


def test_the_graph_path_holds_no_fractional_weight_of_its_own() -> None:
    found = []
    for name, source in _sources().items():
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            fractional = token.type == tokenize.NUMBER and "." in token.string
            if fractional and float(token.string) not in (0.0, 1.0):
                found.append(f"qa/{name}.py:{token.start[0]}: {token.string}")
    assert found == []
