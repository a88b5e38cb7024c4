"""Time the snippet validator: static levels per snippet, and the sandbox start-up overhead.

    python benchmarks/bench_snippets.py [--data tests/qa/data] [--repeat 5]

Snippets are the corpus code cut by hand into the test data (`*.txt`; the language is detected).
Static levels are measured three ways: host-only levels (repair, parse, imports, names, network),
the API level with a cold signature worker (it imports torch/transformers once), and the API level
with the worker warm (cache cleared: no cache hit). For shell snippets the 'api' columns are the
command check (`PROGRAM --help`, cached per program).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qa.snippets.probe import SignatureProbe
from qa.snippets.sandbox import run_sandboxed
from qa.snippets.validate import check_code

HOST_LEVELS = ("language", "repair", "parse", "imports", "names", "network")


def _static(code: str, probe: SignatureProbe) -> tuple[float, float, float]:
    """(host-only ms, api ms, total ms) for one static check."""
    start = time.perf_counter()
    check = check_code(code, None, execute=False, probe=probe)
    total = (time.perf_counter() - start) * 1000
    host = sum(v for k, v in check.timings_ms.items() if k in HOST_LEVELS)
    api = check.timings_ms.get("apis", check.timings_ms.get("command", 0.0))
    return host, api, total


def main() -> None:
    """Print the figures as a small table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=Path("tests/qa/data"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    snippets = {p.stem: p.read_text(encoding="utf-8") for p in sorted(args.data.glob("*.txt"))}

    print(
        f"{'snippet':<14}{'host ms':>9}{'api cold ms':>13}{'api warm ms':>13}{'total warm ms':>15}"
    )
    for name, code in snippets.items():
        cold = SignatureProbe()  # a fresh worker: pays for importing torch / transformers
        _, cold_api, _ = _static(code, cold)
        runs = []
        for _ in range(args.repeat):
            cold.clear_cache()  # warm worker, no cached answers
            runs.append(_static(code, cold))
        cold.close()
        host = statistics.median(r[0] for r in runs)
        warm_api = statistics.median(r[1] for r in runs)
        total = statistics.median(r[2] for r in runs)
        print(f"{name:<14}{host:>9.1f}{cold_api:>13.0f}{warm_api:>13.1f}{total:>15.1f}")

    sandboxed = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        result = run_sandboxed("print(1)", timeout_s=10)
        sandboxed.append((time.perf_counter() - t) * 1000)
        assert result.ok, result
    plain = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "print(1)"], check=True, capture_output=True)
        plain.append((time.perf_counter() - t) * 1000)
    print(
        f"\nsandbox print(1): median {statistics.median(sandboxed):.0f} ms "
        f"(plain subprocess {statistics.median(plain):.0f} ms; isolation {result.isolation})"
    )


if __name__ == "__main__":
    main()
