"""What `kgqa ask` and `kgqa ingest` tell a user: a refused question once, in its language; the
dropped relations with what and why; how to ask the store just built."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.merge import DroppedRelation, merge_extractions
from ingest.pipeline import IngestReport
from kg.lexicon import Lexicon
from kg.schema import Entity, Evidence, Extraction, NodeType, Relation, RelationType
from qa.cli.ingest import _dropped_summary, _next_steps
from qa.config import Settings

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("   ", "Please type a question"),
        ("为什么" * 1000, "问题太长了：3000 个字符，上限是 2000"),
        ("why " * 600, "The question is too long: 2399 characters"),
    ],
)
def test_ask_refuses_once_in_the_questions_language(
    tmp_path: Path, text: str, message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "ask", text, "--store", str(tmp_path / "none")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def _entity(node: str, kind: NodeType, name: str) -> Entity:
    return Entity(id=node, type=kind, name=name)


def test_merge_reports_each_dropped_relation_with_its_evidence_and_why() -> None:
    quote = "Apple GPUs run it."
    ev = Evidence(doc="x.md", quote=quote, start=0, end=len(quote))
    extraction = Extraction(
        doc="x.md",
        doc_hash="h",
        entities=[
            _entity("organization:acme", NodeType.ORGANIZATION, "Acme"),
            _entity("hardware:gpu", NodeType.HARDWARE, "GPU"),
            _entity("framework:jax", NodeType.FRAMEWORK, "JAX"),
        ],
        relations=[
            Relation(
                source="organization:acme",
                relation=RelationType.RUNS_ON,
                target="hardware:gpu",
                evidence=[ev],
            ),
            Relation(
                source="framework:jax",
                relation=RelationType.RUNS_ON,
                target="hardware:gpu",
                evidence=[ev],
            ),
        ],
    )
    graph, dropped = merge_extractions([extraction], Lexicon([]))
    assert graph.edge("framework:jax", "RUNS_ON", "hardware:gpu") is not None
    assert [(d.source, d.relation, d.target) for d in dropped] == [("Acme", "RUNS_ON", "GPU")]
    assert dropped[0].reason == "RUNS_ON does not start at an Organization"
    assert dropped[0].doc == "x.md" and dropped[0].quote == quote


def test_ingest_summary_says_what_was_dropped_why_and_where_to_see_all() -> None:
    dropped = [
        DroppedRelation(
            source=f"Org{i}", relation="RUNS_ON", target="GPU", doc=f"d{i}.md", reason="why"
        )
        for i in range(4)
    ]
    report = IngestReport(store="s", dropped_relations=4, dropped=dropped)
    text = _dropped_summary(report)
    assert text.startswith("relations dropped as schema violations: 4 (claims read from")
    assert "Org0 -RUNS_ON-> GPU: why [d0.md]" in text and "Org3" not in text
    assert "... 1 more" in text and "kgqa ingest --json" in text


def test_ingest_ends_with_how_to_ask_the_store_it_built() -> None:
    mine = argparse.Namespace(store=Path(".store-mine"))
    told = _next_steps(mine, Settings(store=Path(".store-mine")))
    assert "--store .store-mine" in told and "kgqa.toml" in told
    default = _next_steps(argparse.Namespace(store=None), Settings())
    assert "--store" not in default and 'kgqa ask "QUESTION"' in default
    # a server's location as it was written, not as a path makes it ("falkordb:/db:6379/docs")
    server = Path("falkordb://db:6379/docs")
    told = _next_steps(argparse.Namespace(store=server), Settings(store=server))
    assert "--store falkordb://db:6379/docs " in told
