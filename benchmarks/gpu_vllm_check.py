"""GPU check for vLLM: the dev questions through the offline batch API (`LLM.chat`) and through the
OpenAI-compatible server, tokens/s, and the fraction of the memory-bandwidth ceiling reached.

Prepared for a GPU machine with the CUDA ``vllm`` package; not runnable on the CPU dev machine.
Model hubs are unreachable there too: pass a local model directory (e.g. the safetensors directory
that ``python -m qa.llm.prepare --convert`` writes under ~/.cache/kgqa/models/).

    python benchmarks/gpu_vllm_check.py --model DIR [--questions corpus/dev_questions.jsonl]
        [--max-tokens 128] [--out gpu_vllm_check.json]

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


def parameter_count(model_dir: Path) -> int:
    """Number of parameters in the safetensors files of ``model_dir`` (read from their headers)."""
    total = 0
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
    return total


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
    llm = vllm.LLM(model=model, dtype=args.dtype, gpu_memory_utilization=args.gpu_memory)
    params = vllm.SamplingParams(max_tokens=args.max_tokens, temperature=0.0, ignore_eos=True)
    llm.chat(prompts[:2], params)  # warm-up (graph capture, caches)
    figures: dict[str, Any] = {}
    for label, batch in (("single", prompts[:1]), ("batch", prompts)):
        t0 = time.perf_counter()
        outputs = llm.chat(batch, params)
        wall = time.perf_counter() - t0
        tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
        figures[label] = {"requests": len(batch), "tokens": tokens, "seconds": wall,
                          "tokens_per_s": tokens / wall}  # fmt: skip
    del llm
    gc.collect()
    torch: Any = importlib.import_module("torch")
    torch.cuda.empty_cache()
    return figures


def server(
    model: str, prompts: list[list[dict[str, str]]], args: argparse.Namespace
) -> dict[str, Any]:
    """Tokens/s through the OpenAI-compatible server, all prompts in flight at once."""
    from qa.llm import ChatModel, LLMKind, LLMSettings, serve

    extra = ["--dtype", args.dtype, "--gpu-memory-utilization", str(args.gpu_memory)]
    with serve("vllm", model, port=0, alias="bench", extra_args=extra) as handle:
        settings = LLMSettings(base_url=handle.base_url, model="bench", kind=LLMKind.VLLM,
                               max_concurrency=len(prompts), timeout_s=600,
                               max_tokens=args.max_tokens)  # fmt: skip
        with ChatModel(settings) as chat:
            chat.chat(prompts[0])  # warm-up
            t0 = time.perf_counter()
            with ThreadPoolExecutor(len(prompts)) as pool:
                results = list(pool.map(chat.chat, prompts))
            wall = time.perf_counter() - t0
        tokens = sum(r.completion_tokens or 0 for r in results)
        return {"startup_s": handle.startup_s, "requests": len(prompts), "tokens": tokens,
                "seconds": wall, "tokens_per_s": tokens / wall}  # fmt: skip


def main() -> None:
    """Run both measurements and print (and save) the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="local model directory (safetensors)")
    parser.add_argument("--questions", type=Path, default=Path("corpus/dev_questions.jsonl"))
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--gpu-memory", type=float, default=0.4)
    parser.add_argument("--out", type=Path, default=Path("gpu_vllm_check.json"))
    args = parser.parse_args()
    torch: Any = importlib.import_module("torch")
    device = torch.cuda.get_device_name(0)
    prompts = load_prompts(args.questions, args.limit)
    params = parameter_count(Path(args.model))
    weight_bytes = params * (4 if args.dtype == "float32" else 2)
    peak = peak_bandwidth(device)
    report: dict[str, Any] = {
        "device": device,
        "peak_bandwidth_Bps": peak,
        "parameters": params,
        "weight_bytes": weight_bytes,
        "max_tokens": args.max_tokens,
    }
    report["offline"] = offline(args.model, prompts, args)
    report["server"] = server(args.model, prompts, args)
    if peak:
        for part in (report["offline"]["single"], report["offline"]["batch"], report["server"]):
            part["bandwidth_fraction"] = weight_bytes * part["tokens_per_s"] / peak
    text = json.dumps(report, indent=2)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
