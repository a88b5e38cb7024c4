"""GPU check for vLLM: the dev questions through the offline batch API (`LLM.chat`) and through the
OpenAI-compatible server, tokens/s, and the fraction of the memory-bandwidth ceiling reached.

Prepared for a GPU machine with the CUDA ``vllm`` package (one short command, a few minutes):

    python benchmarks/gpu_vllm_check.py --model DIR [--questions corpus/dev_questions.jsonl]
        [--max-tokens 128] [--out gpu_vllm_check.json]

Model hubs are unreachable there too: ``--model`` is a local safetensors directory (e.g. what
``kgqa llm prepare --convert`` writes under ~/.cache/kgqa/models/) or a ``.gguf`` file (converted
first, needs ``gguf`` + ``transformers``). ``--dry-run`` checks everything short of loading the
model (arguments, prompts, parameter count, ceiling). ``--peak-gbps`` gives the bandwidth of a
device not in the table (a CPU: ``--limit 4 --max-tokens 16`` runs on vLLM's CPU build). Both
paths decode exactly ``--max-tokens`` per request (``ignore_eos``), so their tokens/s compare.

The ceiling: decoding one sequence reads every weight once per token, so a single stream can do at
most ``peak bandwidth / weight bytes`` tokens/s; ``fraction = weight bytes x tokens/s / peak``.
Batched decoding shares one read of the weights among the batch, so its "fraction" can pass 1: it is
reported as the effective figure it is.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PEAK_BANDWIDTH_BPS = {  # HBM/GDDR peak, bytes/s, by a substring of torch.cuda.get_device_name()
    "H200": 4.8e12,
    "H100 NVL": 3.9e12,
    "H100 PCIe": 2.0e12,
    "H100": 3.35e12,
    "GH200": 4.0e12,
    "B200": 8.0e12,
    "A100-SXM4-80GB": 2.039e12,
    "A100 80GB PCIe": 1.935e12,
    "A100": 1.555e12,
    "L40S": 0.864e12,
    "L4": 0.3e12,
    "A10": 0.6e12,
    "RTX 4090": 1.008e12,
}
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "I8": 1, "U8": 1, "I32": 4, "I64": 8}
SYSTEM = "You help choose deep-learning frameworks and tools. Answer briefly."


def peak_bandwidth(device_name: str) -> float | None:
    """Peak memory bandwidth of the named GPU, if known (first matching key wins).

    >>> peak_bandwidth("NVIDIA H200")
    4800000000000.0
    """
    for key, bps in PEAK_BANDWIDTH_BPS.items():
        if key in device_name:
            return bps
    return None


def parameter_count(model_dir: Path) -> tuple[int, int]:
    """(all parameters, those read per decoded token) of the safetensors files in ``model_dir``.

    Decoding reads every weight once per token except the input embedding table (one row).
    """
    total = embedding = 0
    for file in sorted(model_dir.glob("*.safetensors")):
        with file.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        for name, info in header.items():
            if name != "__metadata__":
                count = 1
                for dim in info["shape"]:
                    count *= dim
                total += count
                if "embed_tokens" in name:
                    embedding += count
    return total, total - embedding


def load_prompts(path: Path, limit: int) -> list[list[dict[str, str]]]:
    """Chat prompts built from the ``question`` field of a JSON Lines question file."""
    questions = [json.loads(line)["question"] for line in path.read_text().splitlines() if line]
    return [
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]
        for q in questions[:limit]
    ]


def offline(
    model: str, prompts: list[list[dict[str, str]]], args: argparse.Namespace
) -> dict[str, Any]:
    """Tokens/s of vLLM's offline batch API (``LLM.chat``), batched and for one prompt."""
    vllm: Any = importlib.import_module("vllm")
    t0 = time.perf_counter()
    llm = vllm.LLM(model=model, dtype=args.dtype, gpu_memory_utilization=args.gpu_memory,
                   max_model_len=args.max_model_len)  # fmt: skip
    load_s = time.perf_counter() - t0
    params = vllm.SamplingParams(max_tokens=args.max_tokens, temperature=0.0, ignore_eos=True)
    llm.chat(prompts[:2], params, use_tqdm=False)  # warm-up (graph capture, caches)
    figures: dict[str, Any] = {"load_s": load_s}
    for label, batch in (("single", prompts[:1]), ("batch", prompts)):
        t0 = time.perf_counter()
        outputs = llm.chat(batch, params, use_tqdm=False)
        wall = time.perf_counter() - t0
        tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
        figures[label] = {"requests": len(batch), "tokens": tokens, "seconds": wall,
                          "tokens_per_s": tokens / wall}  # fmt: skip
    shutdown = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if shutdown is not None and hasattr(shutdown, "shutdown"):
        shutdown.shutdown()  # free the device before the server starts
    del llm
    gc.collect()
    torch: Any = importlib.import_module("torch")
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return figures


def _post_chat(
    client: Any, model: str, messages: list[dict[str, str]], max_tokens: int
) -> tuple[int, float]:
    """(completion tokens, seconds to the whole reply) of one request; ``ignore_eos`` is vLLM's."""
    t0 = time.perf_counter()
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0.0,
            "ignore_eos": True}  # fmt: skip
    response = client.post("/chat/completions", json=body)
    response.raise_for_status()
    return int(response.json()["usage"]["completion_tokens"]), time.perf_counter() - t0


def server(
    model: str, prompts: list[list[dict[str, str]]], args: argparse.Namespace
) -> dict[str, Any]:
    """Tokens/s through the OpenAI-compatible server: one request, then all prompts in flight."""
    httpx: Any = importlib.import_module("httpx")
    from qa.config import load_settings
    from qa.llm import serve

    extra = ["--max-model-len", str(args.max_model_len)]
    if not args.cpu:
        extra += ["--dtype", args.dtype, "--gpu-memory-utilization", str(args.gpu_memory)]
    with serve(
        "vllm",
        model,
        port=0,
        settings=load_settings(),  # this script is an entry point: KGQA_VLLM_PYTHON, ...
        environ=os.environ,
        alias="bench",
        extra_args=extra,
    ) as handle:
        figures: dict[str, Any] = {"startup_s": handle.startup_s}
        with httpx.Client(base_url=handle.base_url, timeout=900) as client:
            _post_chat(client, "bench", prompts[0], 8)  # warm-up
            for label, batch in (("single", prompts[:1]), ("batch", prompts)):
                t0 = time.perf_counter()
                with ThreadPoolExecutor(len(batch)) as pool:
                    runs = list(pool.map(
                        lambda p: _post_chat(client, "bench", p, args.max_tokens), batch
                    ))  # fmt: skip
                wall = time.perf_counter() - t0
                tokens = sum(r[0] for r in runs)
                figures[label] = {"requests": len(batch), "tokens": tokens, "seconds": wall,
                                  "tokens_per_s": tokens / wall}  # fmt: skip
        return figures


def device_name(torch: Any) -> tuple[str, bool]:
    """(the device's name, whether it is a CPU)."""
    if torch.cuda.is_available():
        return str(torch.cuda.get_device_name(0)), False
    import platform

    return f"cpu ({platform.processor() or platform.machine()})", True


def weight_bytes_per_param(dtype: str) -> int:
    """Bytes per weight when served as ``dtype``.

    >>> weight_bytes_per_param("float32"), weight_bytes_per_param("bfloat16")
    (4, 2)
    """
    return 4 if dtype in {"float32", "float"} else 2


def resolve_model(model: str) -> str:
    """A safetensors directory for ``model`` (a directory, or a ``.gguf`` converted once)."""
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        from qa.llm.prepare import convert_for_vllm

        return str(convert_for_vllm(path))
    if not (path / "config.json").exists():
        raise SystemExit(f"{path}: not a model directory (no config.json) nor a .gguf file")
    return str(path)


def main() -> None:
    """Run both measurements and print (and save) the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="local model directory or .gguf")
    parser.add_argument("--questions", type=Path, default=Path("corpus/dev_questions.jsonl"))
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--dtype", default=None, help="default: bfloat16 (GPU), float32 (CPU)")
    parser.add_argument("--gpu-memory", type=float, default=0.4)
    parser.add_argument("--peak-gbps", type=float, default=None, help="peak bandwidth, GB/s")
    parser.add_argument("--skip", choices=["offline", "server"], action="append", default=[])
    parser.add_argument("--dry-run", action="store_true", help="all but loading the model")
    parser.add_argument("--out", type=Path, default=Path("gpu_vllm_check.json"))
    args = parser.parse_args()
    torch: Any = importlib.import_module("torch")
    device, args.cpu = device_name(torch)
    args.dtype = args.dtype or ("float32" if args.cpu else "bfloat16")
    model = resolve_model(args.model)
    prompts = load_prompts(args.questions, args.limit)
    params, per_token = parameter_count(Path(model))
    weight_bytes = per_token * weight_bytes_per_param(args.dtype)  # read per decoded token
    peak = args.peak_gbps * 1e9 if args.peak_gbps else peak_bandwidth(device)
    report: dict[str, Any] = {
        "device": device,
        "vllm": importlib.import_module("vllm").__version__,
        "model": model,
        "dtype": args.dtype,
        "peak_bandwidth_Bps": peak,
        "parameters": params,
        "weight_bytes": weight_bytes,
        "prompts": len(prompts),
        "max_tokens": args.max_tokens,
        "single_stream_ceiling_tokens_per_s": peak / weight_bytes if peak else None,
    }
    if not args.dry_run:
        if "offline" not in args.skip:
            report["offline"] = offline(model, prompts, args)
        if "server" not in args.skip:
            report["server"] = server(model, prompts, args)
    if peak:
        for path in ("offline", "server"):
            for label in ("single", "batch"):
                part = report.get(path, {}).get(label)
                if part:
                    part["bandwidth_fraction"] = weight_bytes * part["tokens_per_s"] / peak
    text = json.dumps(report, indent=2)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
