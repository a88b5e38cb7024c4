"""Settings of the LLM client, built once at the entry point.

Precedence, lowest first: defaults < config file (TOML or JSON) < environment (``KGQA_LLM_*``) <
flags. The config file may hold the keys at its top level or under an ``[llm]`` table::

    [llm]
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-coder-0.5b"
    kind = "llamacpp"
"""

from __future__ import annotations

import json
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from kg.errors import LLMError

__all__ = ["LLMKind", "LLMSettings", "load_llm_settings"]


class LLMKind(StrEnum):
    """Which server speaks at ``base_url``: structured output is expressed differently by each."""

    VLLM = "vllm"
    LLAMACPP = "llamacpp"
    OPENAI = "openai"
    AUTO = "auto"


class LLMSettings(BaseSettings):
    """Where the OpenAI-compatible chat server is and how to talk to it."""

    model_config = SettingsConfigDict(env_prefix="KGQA_LLM_", extra="forbid")

    base_url: str = Field(
        default="http://127.0.0.1:8000/v1",
        description="OpenAI-compatible API root, including /v1",
    )
    model: str = Field(default="qwen2.5-coder-0.5b", description="served model name")
    api_key: SecretStr = Field(default=SecretStr(""), description="bearer token, if any")
    kind: LLMKind = Field(default=LLMKind.AUTO, description="server kind; auto asks /v1/models")
    timeout_s: float = Field(default=120.0, gt=0, description="the most one request may take")
    connect_timeout_s: float = Field(default=3.0, gt=0)
    max_retries: int = Field(default=2, ge=0, description="retries on connect errors and 5xx")
    backoff_s: float = Field(default=0.5, ge=0, description="first retry delay; doubles")
    max_concurrency: int = Field(default=4, ge=1, description="requests in flight at once")
    max_tokens: int = Field(default=512, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)


def _read_config_file(path: Path) -> dict[str, Any]:
    """Read the ``llm`` settings from a TOML or JSON file (top level or an ``llm`` table)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise LLMError(f"cannot read LLM config file {path}: {exc}; check the path") from exc
    try:
        data: Any = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as exc:
        raise LLMError(f"LLM config file {path} is not valid TOML/JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise LLMError(f"LLM config file {path} must hold a table of settings")
    section = data.get("llm", data)
    if not isinstance(section, dict):
        raise LLMError(f"LLM config file {path}: [llm] must be a table")
    return dict(section)


def load_llm_settings(config_file: Path | None = None, **flag_overrides: Any) -> LLMSettings:
    """Build the settings: defaults < ``config_file`` < ``KGQA_LLM_*`` env < ``flag_overrides``.

    Flags whose value is ``None`` (argparse's "not given") are ignored.

    >>> load_llm_settings(model="m", timeout_s=None).model
    'm'
    """
    from_file = _read_config_file(config_file) if config_file is not None else {}
    from_env_only = LLMSettings()  # defaults + env; fields_set names what env provided
    from_env = {name: getattr(from_env_only, name) for name in from_env_only.model_fields_set}
    flags = {k: v for k, v in flag_overrides.items() if v is not None}
    return LLMSettings(**{**from_file, **from_env, **flags})
