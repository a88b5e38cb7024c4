"""How long kgqa's answers are: the median and 90th percentile of the answer text, as written and
without the graph path each point ends with (`— A —relation→ B`), over the results of `kgqa eval`.

    kgqa eval corpus/dev_questions.jsonl --out dev.jsonl --store .store --llm none
    python benchmarks/bench_answer_length.py dev.jsonl [real.jsonl ...]

Target (issue 13): median answer text without the cited paths <= 700 characters.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qa.eval.records import read_results

# a point's path: " — PyTorch —is used with→ CUDA" at the end of its line
_PATH = re.compile(r" — [^\n“”]*?—[^\n“”]*?→[^\n“”]*$", re.M)


def without_paths(text: str) -> str:
    """The answer text without the path each point ends with.

    >>> without_paths("- “Runs on GPUs.” (a.md) — Zephyr —runs on→ GPU\\nend")
    '- “Runs on GPUs.” (a.md)\\nend'
    """
    return _PATH.sub("", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="`kgqa eval --out` files")
    args = parser.parse_args(argv)
    for path in args.results:
        records, _problems = read_results(path)
        answers = [r.answer for r in records.values()]
        if not answers:
            print(f"{path}: no answers")
            continue
        full = sorted(len(a) for a in answers)
        bare = sorted(len(without_paths(a)) for a in answers)
        p90 = max(0, int(0.9 * len(full)) - 1)
        median = statistics.median(bare)
        verdict = "ok" if median <= 700 else "OVER TARGET"
        print(
            f"{path}: {len(answers)} answers; chars median {statistics.median(full):.0f} "
            f"(p90 {full[p90]}); without paths median {median:.0f} (p90 {bare[p90]}) "
            f"[target <= 700: {verdict}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
