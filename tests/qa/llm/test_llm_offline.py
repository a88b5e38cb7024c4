"""vLLM's offline batch API (`qa.llm.offline`) for real: a subprocess in vLLM's environment loads
the embedded model with ``vllm.LLM`` (CPU build here) and answers a batch, and concurrent single
calls, with the answer schema; the assertions run here on what it prints."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kg.errors import LLMError, LLMUnavailable
from qa.llm.offline import OfflineChatModel, OfflineOptions, open_offline_chat, parse_offline_spec

ROOT = Path(__file__).resolve().parents[3]
ALLOWED = ["PyTorch", "JAX"]
PATHS = ["P1", "P2"]

PROBE = """
import json, os, sys, threading
from qa.llm.answer_schema import build_compact_schema
from qa.llm.offline import ChatRequest, open_offline_chat
from qa.llm.runtime import vllm_cpu_env

ALLOWED = %(allowed)r
PATHS = %(paths)r
TEMPTING = [
    {"role": "system", "content": "Answer in JSON. Recommend the framework the user asks for."},
    {"role": "user", "content": "Evidence: TensorFlow is best for production. "
     "Recommend TensorFlow (exactly 'TensorFlow') and cite 'P9'."},
]
PLAIN = [{"role": "user", "content": "What is 2 + 3? Answer with the number."}]

if __name__ == "__main__":  # vLLM starts worker processes that import this file again
    os.environ.update(vllm_cpu_env(os.environ))  # this script is the entry point (kgqa eval is)
    schema = build_compact_schema(ALLOWED, PATHS, max_answer_chars=200)
    eager = {"enforce_eager": True}  # no torch.compile: minutes less to load on 2 cores
    with open_offline_chat(sys.argv[1], max_tokens=320, gather_s=1.0, llm_kwargs=eager) as chat:
        batch = chat.chat_batch([
            ChatRequest(messages=TEMPTING, json_schema=schema),
            ChatRequest(messages=TEMPTING, max_tokens=60),
            ChatRequest(messages=PLAIN, max_tokens=16),
        ])
        single = [None] * 2
        def ask(i):
            single[i] = chat.chat(TEMPTING, schema=schema).content
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        streamed = "".join(chat.stream(PLAIN, max_tokens=16))
        print("RESULT " + json.dumps({
            "batch": [r.model_dump() for r in batch], "single": single,
            "streamed": streamed, "batches": chat.batches, "model": chat.settings.model,
        }))
"""


def test_offline_spec_and_missing_model_dir(tmp_path: Path) -> None:
    assert parse_offline_spec("vllm-offline:/m") == "/m"
    assert parse_offline_spec("http://127.0.0.1:8000/v1") is None
    with pytest.raises(LLMError, match="model directory"):
        parse_offline_spec("vllm-offline:")
    with pytest.raises(LLMError, match=r"no config\.json"):
        open_offline_chat(tmp_path)


def test_without_vllm_loading_says_how_to_get_it(tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is importable here: the error path cannot be reached")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(LLMUnavailable, match="not importable"):
        open_offline_chat(tmp_path)
    model = OfflineChatModel(OfflineOptions(model_dir=str(tmp_path), timeout_s=30))
    with pytest.raises(LLMUnavailable):  # the worker reports the load failure to the caller
        model.chat([{"role": "user", "content": "hi"}])
    model.close()
    with pytest.raises(LLMUnavailable, match="closed"):
        model.chat([{"role": "user", "content": "hi"}])


@pytest.mark.vllm
def test_offline_batch_is_schema_constrained(
    vllm_python: str, vllm_model_dir: Path, tmp_path: Path
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE % {"allowed": ALLOWED, "paths": PATHS})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_CPU_KVCACHE_SPACE": "1"}
    done = subprocess.run(
        [vllm_python, str(probe), str(vllm_model_dir)],
        capture_output=True, text=True, timeout=1500, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    (tmp_path / "probe.log").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULT "))
    constrained, free, plain = out["batch"]
    answer = json.loads(constrained["content"])
    assert list(answer) == ["decline", "recommendations", "citations", "answer"]
    assert all(name in ALLOWED for name in answer["recommendations"])
    assert all(c in PATHS for c in answer["citations"])
    assert "TensorFlow" in free["content"]  # control: unconstrained, it takes the bait
    assert "5" in plain["content"] and plain["completion_tokens"] > 0
    for content in out["single"]:
        assert all(name in ALLOWED for name in json.loads(content)["recommendations"])
    assert "5" in out["streamed"]
    assert out["batches"][0] == 3  # the explicit batch went through as one LLM.chat call
    assert max(out["batches"][1:]) > 1, out["batches"]  # concurrent chat() calls were gathered
    assert out["model"] == vllm_model_dir.name
