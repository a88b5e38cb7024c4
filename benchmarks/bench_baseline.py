"""kgqa's retrieval vs the naive-RAG baseline (llama-index `VectorStoreIndex`), side by side.

    python benchmarks/bench_baseline.py --store DIR [--questions corpus/dev_questions.jsonl]

Both run in this process over the same chunks and the same stored vectors, with the same e5 query
embedder (queries are embedded live for both: no cache). Per dev question with gold evidence:

- naive RAG (`qa.eval.baseline.NaiveRAG`'s retriever: llama-index top-6 by cosine);
- kgqa retrieval: question understanding + graph walk + lexical/dense chunk fusion
  (`Assistant.understand` + `Retriever.retrieve`), with and without dense retrieval;
- kgqa's full graph-composer `ask` (retrieval + composing + verifying), for its cited edges.

Recall@k of the gold evidence: a gold quote (located in its document up to whitespace) counts as
recalled when one of the first k retrieved chunks contains its span, or, in the "+ cited edges"
rows, when an evidence span of an edge the answer cites contains it. Latency p50/p95 per question.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest.embed import make_embedder  # noqa: E402
from kg.lexicon import Lexicon  # noqa: E402
from kg.store import Store  # noqa: E402
from qa.api import Assistant  # noqa: E402
from qa.config import load_settings  # noqa: E402
from qa.eval.baseline import NaiveRAG  # noqa: E402
from qa.eval.records import GoldQuestion, read_questions  # noqa: E402
from qa.eval.score import Scorer, percentile  # noqa: E402

KS = (3, 6)
Span = tuple[str, int, int]


class System:
    """One retrieval system's spans per question, and its latencies."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.chunks: dict[str, list[Span]] = {}
        self.edges: dict[str, list[Span]] = {}
        self.latencies: list[float] = []

    def timed(
        self, qid: str, run: Callable[[str], tuple[list[Span], list[Span]]], text: str
    ) -> None:
        """Run one question through `run`, keeping its spans and wall time."""
        started = time.perf_counter()
        chunks, edges = run(text)
        self.latencies.append((time.perf_counter() - started) * 1000)
        self.chunks[qid], self.edges[qid] = chunks, edges


def recall(
    system: System, golds: Sequence[GoldQuestion], scorer: Scorer, k: int, *, edges: bool
) -> tuple[int, int]:
    """(recalled, total) gold quotes."""
    hit = total = 0
    for gold in golds:
        spans = system.chunks[gold.id][:k] + (system.edges[gold.id] if edges else [])
        for ev in gold.gold_evidence:
            located = scorer.gold_spans(ev)
            if not located:
                continue
            total += 1
            hit += any(
                doc == ev.doc and s <= gs and ge <= e for gs, ge in located for doc, s, e in spans
            )
    return hit, total


def main() -> None:
    """Print the side-by-side table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=ROOT / "corpus" / "dev_questions.jsonl")
    args = ap.parse_args()
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores")

    settings = load_settings()  # this script is an entry point: KGQA_CACHE_DIR, ...
    store = Store.open(args.store)
    lexicon = Lexicon.default()
    embedder = make_embedder(store.manifest.embedder_spec, cache_dir=settings.cache_dir)
    started = time.perf_counter()
    naive = NaiveRAG.open(store, embedder, lexicon, k=max(KS))
    print(f"llama-index VectorStoreIndex built in {time.perf_counter() - started:.2f} s")
    dense = Assistant(store, lexicon, embedder=lambda: embedder, cache_dir=settings.cache_dir)
    lexical = Assistant(store, lexicon, cache_dir=settings.cache_dir)
    golds = [q for q in read_questions(args.questions).questions if q.gold_evidence]
    scorer = Scorer(lexicon, dense.graph, dense.documents)

    systems = {
        "naive RAG (llama-index)": System("naive"),
        "kgqa retrieval (dense)": System("kgqa"),
        "kgqa retrieval (no dense)": System("kgqa-lex"),
        "kgqa ask (dense)": System("ask"),
    }

    def naive_run(text: str) -> tuple[list[Span], list[Span]]:
        hits = [naive.chunks[cid] for cid, _score in naive.retrieve(text)]
        return [(c.doc, c.start, c.end) for c in hits], []

    def kgqa_run(assistant: Assistant, text: str) -> tuple[list[Span], list[Span]]:
        bundle = assistant.retriever.retrieve(assistant.understand(text), k_chunks=max(KS))
        return [(c.doc, c.start, c.end) for c in bundle.chunks], []

    def dense_run(text: str) -> tuple[list[Span], list[Span]]:
        return kgqa_run(dense, text)

    def lexical_run(text: str) -> tuple[list[Span], list[Span]]:
        return kgqa_run(lexical, text)

    def ask_run(text: str) -> tuple[list[Span], list[Span]]:
        answer = dense.ask(text, use_llm=False)
        bundle = dense.retriever.retrieve(dense.understand(text), k_chunks=max(KS))
        cited = [
            (ev.doc, ev.start, ev.end)
            for c in answer.citations
            for e in c.path
            for ev in e.evidence
        ]
        return [(c.doc, c.start, c.end) for c in bundle.chunks], cited

    # warm-up: model load, llama-index lazy state, lazy graph indexes
    naive_run(golds[0].question)
    kgqa_run(dense, golds[0].question)
    kgqa_run(lexical, golds[0].question)
    runs = [naive_run, dense_run, lexical_run, ask_run]
    for gold in golds:  # interleaved, so load spikes hit every system alike
        for system, run in zip(systems.values(), runs, strict=True):
            system.timed(gold.id, run, gold.question)

    print(f"{len(golds)} dev questions with gold evidence")
    header = f"{'system':<34}" + "".join(f"{'recall@' + str(k):>18}" for k in KS)
    print(header + f"{'p50 ms':>9}{'p95 ms':>9}")
    for label, system in systems.items():
        rows = [(label, False)]
        if system.name == "ask":
            rows = [("kgqa chunks + cited edges (ask)", True)]
        for row_label, with_edges in rows:
            cells = []
            for k in KS:
                hit, total = recall(system, golds, scorer, k, edges=with_edges)
                cells.append(f"{hit / total:.1%} ({hit}/{total})")
            p50 = percentile(system.latencies, 50) or 0.0
            p95 = percentile(system.latencies, 95) or 0.0
            print(f"{row_label:<34}" + "".join(f"{c:>18}" for c in cells) + f"{p50:9.1f}{p95:9.1f}")
    print("(the ask row's latency includes a second retrieval, made to record its chunks)")
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} (1 min) {five:.1f} (5 min)")


if __name__ == "__main__":
    main()
