"""Time to first token and tokens/s of the local LLM servers, one request and N concurrent.

Starts each engine itself on a free port (llama.cpp; vLLM's CPU build where installed), sends the
same chat through `qa.llm.ChatModel.stream`, and prints one line per engine and concurrency.
Tokens are counted as streamed content pieces (one per token on both servers). Each figure line
carries the load average (``os.getloadavg``): on a shared machine other work skews the figures.

    python benchmarks/bench_llm.py [--engines llamacpp vllm] [--concurrency 8] [--max-tokens 64]

The gain of N requests at once over one is what `kgqa eval --llm ...` relies on: it answers as
many questions at once as the server takes (`qa.eval.run.eval_concurrency`): `llm.max_concurrency`
(8) with vLLM, one with llama-cpp-python's server, which runs one request at a time (the others
wait their turn there). Raw prefill and generation tokens/s: `bench_llm_speed.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from qa.config import LLMKind, LLMSettings, load_settings
from qa.llm import ChatModel, find_vllm_python, serve
from qa.llm.prepare import DEFAULT_MODEL

PROMPT = [
    {"role": "system", "content": "You are a concise assistant for choosing ML frameworks."},
    {"role": "user", "content": "Compare PyTorch and JAX for research in about 60 words."},
]


def one_request(chat: ChatModel, max_tokens: int) -> tuple[float, int, float]:
    """(seconds to first token, tokens, total seconds) of one streamed request."""
    t0 = time.monotonic()
    first = 0.0
    tokens = 0
    for _piece in chat.stream(PROMPT, max_tokens=max_tokens):
        if tokens == 0:
            first = time.monotonic() - t0
        tokens += 1
    return first, tokens, time.monotonic() - t0


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def bench(chat: ChatModel, concurrency: int, max_tokens: int) -> tuple[str, float]:
    """Run ``concurrency`` requests at once; a summary line and the total tokens/s."""
    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        runs = list(pool.map(lambda _: one_request(chat, max_tokens), range(concurrency)))
    wall = time.monotonic() - t0
    ttft = statistics.median(r[0] for r in runs)
    per_request = statistics.median(r[1] / max(r[2] - r[0], 1e-9) for r in runs)
    total = sum(r[1] for r in runs) / wall
    line = (
        f"concurrency {concurrency}: TTFT median {ttft:.2f}s, {per_request:.1f} tok/s per request, "
        f"{total:.1f} tok/s total ({sum(r[1] for r in runs)} tokens in {wall:.1f}s)"
    )
    return line, total


def main() -> None:
    """Benchmark each requested engine."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engines", nargs="+", default=["llamacpp", "vllm"])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    configured = load_settings()  # this script is an entry point, as `kgqa llm serve` is
    for engine in args.engines:
        if engine == "vllm" and find_vllm_python(configured.vllm_python) is None:
            print("vllm: not installed (scripts/setup_vllm_env.sh); skipped")
            continue
        with serve(engine, args.model, port=0, settings=configured, environ=os.environ) as handle:
            up = f"{engine}: {handle.model} up in {handle.startup_s:.1f}s [{load_average()}]"
            print(up, flush=True)
            settings = LLMSettings(
                base_url=handle.base_url,
                model=handle.model,
                kind=LLMKind(engine),
                max_concurrency=args.concurrency,
                timeout_s=600,
            )
            with ChatModel(settings) as chat:
                one_request(chat, 8)  # warm-up
                totals = []
                for n in (1, args.concurrency):
                    line, total = bench(chat, n, args.max_tokens)
                    totals.append(total)
                    print(f"{engine}: {line} [{load_average()}]", flush=True)
                print(
                    f"{engine}: gain at concurrency {args.concurrency}: "
                    f"{totals[1] / max(totals[0], 1e-9):.2f}x the tokens/s of one request "
                    f"(the server takes {chat.concurrency()} at once: kgqa eval sends as many)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
