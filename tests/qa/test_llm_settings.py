"""Settings precedence: defaults < config file < environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kg.errors import LLMError
from qa.llm.settings import LLMKind, LLMSettings, load_llm_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("KGQA_LLM_"):
            monkeypatch.delenv(key)


def test_defaults() -> None:
    s = load_llm_settings()
    assert (s.base_url, s.kind, s.max_retries) == ("http://127.0.0.1:8000/v1", LLMKind.AUTO, 2)


def test_file_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "kgqa.toml"
    config.write_text('[llm]\nmodel = "from-file"\ntimeout_s = 5\nkind = "llamacpp"\n')
    assert load_llm_settings(config).model == "from-file"
    monkeypatch.setenv("KGQA_LLM_MODEL", "from-env")
    s = load_llm_settings(config)
    assert (s.model, s.timeout_s, s.kind) == ("from-env", 5.0, LLMKind.LLAMACPP)
    s = load_llm_settings(config, model="from-flag", timeout_s=None)
    assert (s.model, s.timeout_s) == ("from-flag", 5.0)


def test_json_file_at_top_level(tmp_path: Path) -> None:
    config = tmp_path / "llm.json"
    config.write_text('{"base_url": "http://10.0.0.1:9/v1", "api_key": "k"}')
    s = load_llm_settings(config)
    assert s.base_url == "http://10.0.0.1:9/v1"
    assert s.api_key.get_secret_value() == "k"
    assert "k'" not in repr(s)


def test_bad_config_says_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="cannot read"):
        load_llm_settings(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("model = ")
    with pytest.raises(LLMError, match="not valid TOML"):
        load_llm_settings(broken)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("modle = 'typo'\n")
    with pytest.raises(ValidationError, match="modle"):
        load_llm_settings(unknown)


def test_env_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGQA_LLM_KIND", "triton")
    with pytest.raises(ValidationError):
        LLMSettings()
