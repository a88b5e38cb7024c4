"""The one settings object, built once at the edge and passed down.

The edges are the `kgqa` command (`qa.cli.main`), the UI (`kgqa ui`) and `Assistant.open` for
Python callers; everything below them takes what it needs as arguments and never reads or writes
the process environment. Precedence, lowest first: defaults < config file < environment < flags.

The config file is TOML (`kgqa.toml` in the working directory, or `--config FILE`; a `.json` file
holds the same tables as a JSON object)::

    [kgqa]
    store = "/data/store"
    embedder = "e5-int8"
    examples = ["Which inference engine runs on AMD GPUs?"]

    [llm]
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-coder-0.5b"
    kind = "llamacpp"

The environment uses the `KGQA_` prefix for the `[kgqa]` keys (`KGQA_STORE`, `KGQA_CACHE_DIR`,
`KGQA_ORT_SPIN`, `KGQA_UI_AUTH`, `KGQA_VLLM_PYTHON`, ...) and `KGQA_LLM_` for the `[llm]` ones
(`KGQA_LLM_BASE_URL`, `KGQA_LLM_MODEL`, `KGQA_LLM_THREADS`, ...). Nothing here reaches the
network.
"""

from __future__ import annotations

import json
import os
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from kg.errors import KGQAError

__all__ = ["LLMKind", "LLMSettings", "Settings", "default_cache_dir", "load_settings"]


class LLMKind(StrEnum):
    """Which server speaks at ``base_url``: structured output is expressed differently by each."""

    VLLM = "vllm"
    LLAMACPP = "llamacpp"
    OPENAI = "openai"
    AUTO = "auto"


class LLMSettings(BaseModel):
    """Where the OpenAI-compatible chat server is, how to talk to it, and how to serve one."""

    model_config = ConfigDict(extra="forbid")

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
    max_concurrency: int = Field(
        default=8,
        ge=1,
        description="requests in flight at once; also kgqa eval's concurrency with an LLM",
    )
    max_tokens: int = Field(default=512, ge=1)
    reader_mode: Literal["pick", "cited", "full", "line"] = Field(
        default="line",
        description="what the reader is asked (`qa.decide.prompts.MODES`)",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    threads: int | None = Field(
        default=None,
        ge=1,
        description="threads of a llama.cpp server `kgqa llm serve` starts (default: 2 at most)",
    )


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/kgqa`, else `~/.cache/kgqa` (`KGQA_CACHE_DIR` overrides it)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kgqa"


class Settings(BaseSettings):
    """Everything kgqa is configured with; build it with `load_settings` at the edge.

    `Settings(...)` itself reads no environment (its values are the defaults and what it is
    given): `load_settings` adds the config file and the `KGQA_*` variables.
    """

    model_config = SettingsConfigDict(
        env_prefix="KGQA_", env_nested_delimiter="_", env_nested_max_split=1, extra="ignore"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values given: `load_settings` layers file and environment explicitly."""
        return (init_settings,)

    store: Path = Field(default=Path(".store"), description="store directory")
    corpus: list[Path] = Field(default_factory=lambda: [Path("corpus")])
    embedder: str = Field(
        default="e5-int8", description="e5-int8 | e5 | st:<model dir or hub name>"
    )
    lexicon: list[Path] = Field(default_factory=list, description="extra alias lexicon files")
    max_file_mb: int = Field(default=20, ge=1)
    workers: int | None = Field(
        default=None,
        ge=0,
        description="processes that parse documents during ingest (default: cores - 1, <= 4)",
    )
    cache_dir: Path = Field(
        default_factory=default_cache_dir,
        description="derived files (jieba and e5 arrays, ONNX graphs), models, server logs",
    )
    ort_spin: bool = Field(
        default=False, description="let onnxruntime's threads spin between operators"
    )
    ui_auth: SecretStr | None = Field(default=None, description="USER:PASSWORD for `kgqa ui`")
    examples: list[str] = Field(
        default_factory=list,
        description="example questions `kgqa ui` offers (default: drawn from the store)",
    )
    vllm_python: str | None = Field(
        default=None, description="the interpreter of vLLM's environment (default: found)"
    )
    llm: LLMSettings = Field(default_factory=LLMSettings)
    reader: str = Field(
        default="auto",
        description="who reads the evidence and decides: auto (the server at llm.base_url if "
        "one answers, else the embedded model if installed, else the graph alone) | none (the "
        "graph alone) | URL of an OpenAI-compatible server | vllm-offline:MODEL_DIR",
    )


def _read_config_file(path: Path) -> dict[str, Any]:
    """The settings of a TOML (or JSON) file: its `[kgqa]` table, and its `[llm]` table as `llm`.

    Raises `KGQAError` when the file cannot be read or is not TOML/JSON of tables.
    """
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise KGQAError(f"config file {path} is unreadable: {err}; check the path") from err
    try:
        data: Any = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as err:
        raise KGQAError(f"config file {path} is not valid TOML/JSON: {err}") from err
    if not isinstance(data, dict):
        raise KGQAError(f"config file {path} must hold tables of settings")
    values: dict[str, Any] = {}
    for table, into in (("kgqa", values), ("llm", values.setdefault("llm", {}))):
        section = data.get(table, {})
        if not isinstance(section, dict):
            raise KGQAError(f"config file {path}: [{table}] must be a table")
        into.update(section)
    return values


def _merge(*layers: dict[str, Any]) -> dict[str, Any]:
    """Later layers win, key by key, one table deep.

    >>> _merge({"a": 1, "llm": {"x": 1, "y": 1}}, {"llm": {"y": 2}}, {"a": 3})
    {'a': 3, 'llm': {'x': 1, 'y': 2}}
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
    return merged


def load_settings(config_file: Path | None = None, **flags: Any) -> Settings:
    """Settings from the defaults, the config file, the environment, and the flags given.

    `config_file` defaults to `kgqa.toml` in the working directory when there is one. Flags whose
    value is None (argparse's "not given") are ignored; `llm={...}` overrides `[llm]` keys.
    Raises `KGQAError` for an unreadable config file and `pydantic.ValidationError` for values
    of the wrong type.

    >>> load_settings(store=Path("s"), embedder=None).store
    PosixPath('s')
    """
    path = config_file or (Path("kgqa.toml") if Path("kgqa.toml").is_file() else None)
    from_file = _read_config_file(path) if path is not None else {}
    from_env = EnvSettingsSource(Settings)()
    if isinstance(from_env.get("llm"), dict):  # a stray KGQA_LLM_* variable is not an error
        known = LLMSettings.model_fields
        from_env["llm"] = {k: v for k, v in from_env["llm"].items() if k in known}
    given = {k: v for k, v in flags.items() if v is not None}
    return Settings(**_merge(from_file, from_env, given))
