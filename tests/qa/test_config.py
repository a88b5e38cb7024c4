"""The one settings object: defaults < config file < environment < flags, for the store and for
the LLM alike; nothing below the entry point reads the environment."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError
from store_fixture import ROOT

from kg.errors import KGQAError
from qa.config import LLMKind, LLMSettings, Settings, load_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("KGQA_") or key == "XDG_CACHE_HOME":
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no kgqa.toml of the repository's


def test_defaults() -> None:
    s = load_settings()
    assert (s.store, s.embedder, s.ort_spin, s.ui_auth) == (Path(".store"), "e5-int8", False, None)
    assert s.cache_dir == Path.home() / ".cache" / "kgqa"
    assert (s.llm.base_url, s.llm.kind, s.llm.max_retries) == (
        "http://127.0.0.1:8000/v1",
        LLMKind.AUTO,
        2,
    )


def test_file_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "kgqa.toml"
    config.write_text(
        '[kgqa]\nstore = "from-file"\nembedder = "e5"\n'
        '[llm]\nmodel = "from-file"\ntimeout_s = 5\nkind = "llamacpp"\n'
    )
    s = load_settings()  # kgqa.toml of the working directory
    assert (s.store, s.llm.model) == (Path("from-file"), "from-file")
    monkeypatch.setenv("KGQA_STORE", "from-env")
    monkeypatch.setenv("KGQA_LLM_MODEL", "from-env")
    s = load_settings(config)
    assert (s.store, s.embedder) == (Path("from-env"), "e5")
    assert (s.llm.model, s.llm.timeout_s, s.llm.kind) == ("from-env", 5.0, LLMKind.LLAMACPP)
    s = load_settings(config, store=Path("from-flag"), embedder=None)
    assert (s.store, s.embedder, s.llm.model) == (Path("from-flag"), "e5", "from-env")


def test_what_used_to_be_read_deep_in_the_code_comes_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert load_settings().cache_dir == tmp_path / "xdg" / "kgqa"
    monkeypatch.setenv("KGQA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KGQA_ORT_SPIN", "1")
    monkeypatch.setenv("KGQA_UI_AUTH", "ada:s3cret")
    monkeypatch.setenv("KGQA_VLLM_PYTHON", "/opt/vllm/bin/python")
    monkeypatch.setenv("KGQA_LLM_THREADS", "1")
    monkeypatch.setenv("KGQA_LLM_NOT_A_SETTING", "x")  # a stray variable is ignored
    s = load_settings()
    assert s.cache_dir == tmp_path / "cache" and s.ort_spin
    assert s.ui_auth is not None and s.ui_auth.get_secret_value() == "ada:s3cret"
    assert "s3cret" not in repr(s)
    assert (s.vllm_python, s.llm.threads) == ("/opt/vllm/bin/python", 1)


def test_a_settings_object_reads_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGQA_STORE", "from-env")
    monkeypatch.setenv("KGQA_LLM_MODEL", "from-env")
    assert Settings().store == Path(".store")
    assert LLMSettings().model == "qwen2.5-coder-0.5b"


def test_json_config_file(tmp_path: Path) -> None:
    config = tmp_path / "kgqa.json"
    config.write_text('{"llm": {"base_url": "http://10.0.0.1:9/v1", "api_key": "k"}}')
    s = load_settings(config)
    assert s.llm.base_url == "http://10.0.0.1:9/v1"
    assert s.llm.api_key.get_secret_value() == "k"
    assert "k'" not in repr(s)


def test_bad_config_says_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(KGQAError, match="unreadable"):
        load_settings(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("model = ")
    with pytest.raises(KGQAError, match="not valid TOML"):
        load_settings(broken)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[llm]\nmodle = 'typo'\n")
    with pytest.raises(ValidationError, match="modle"):
        load_settings(unknown)
    table = tmp_path / "table.toml"
    table.write_text("llm = 3\n")
    with pytest.raises(KGQAError, match=r"\[llm\] must be a table"):
        load_settings(table)


def test_env_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGQA_LLM_KIND", "triton")
    with pytest.raises(ValidationError):
        load_settings()


def test_no_module_below_the_edge_touches_the_environment() -> None:
    # the edges: the settings loader, the CLI's `main` and verbs (`kgqa ui` sets Gradio's queue
    # defaults, `kgqa serve-api` hands its workers their inputs), and the entry of a worker
    # process kgqa starts on a Ray cluster (its actor's own threads)
    edges = {
        "qa/config.py",
        "qa/cli/__init__.py",
        "qa/cli/llm.py",
        "qa/cli/ui.py",
        "qa/cli/serve_api.py",
        "ingest/ray_ingest.py",
    }
    pattern = r"os\.environ|os\.getenv|putenv"
    found = subprocess.run(
        ["git", "grep", "--untracked", "-n", "-E", pattern, "--", "kg", "ingest", "qa", "ui"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    below = [line for line in found if line.split(":", 1)[0] not in edges]
    # the sandbox builds its children's environment from scratch, and the snippet fixtures are
    # code that runs inside it: neither reads this process's environment
    below = [line for line in below if not line.startswith("qa/snippets/fixtures.py")]
    assert below == [], below
