"""Settings, built once at the entry point: defaults < config file < environment < flags.

The config file is TOML (`kgqa.toml` in the working directory, or `--config FILE`); the environment
uses the `KGQA_` prefix (`KGQA_STORE=/data/store`). Nothing here reaches the network.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from kg.errors import KGQAError

__all__ = ["Settings", "load_settings"]


class Settings(BaseSettings):
    """Where the store is, what to ingest, which embedder and lexicon to use."""

    model_config = SettingsConfigDict(env_prefix="KGQA_", extra="ignore")

    store: Path = Field(default=Path(".store"), description="store directory")
    corpus: list[Path] = Field(default_factory=lambda: [Path("corpus")])
    embedder: str = Field(
        default="e5-int8", description="e5-int8 | e5 | st:<model dir or hub name>"
    )
    lexicon: list[Path] = Field(default_factory=list, description="extra alias lexicon files")
    max_file_mb: int = Field(default=20, ge=1)


def load_settings(config_file: Path | None = None, **flags: Any) -> Settings:
    """Settings from the config file and environment, overridden by the flags that were given."""
    file_values: dict[str, Any] = {}
    path = config_file or (Path("kgqa.toml") if Path("kgqa.toml").is_file() else None)
    if path is not None:
        try:
            file_values = tomllib.loads(path.read_text("utf-8")).get("kgqa", {})
        except (OSError, tomllib.TOMLDecodeError) as err:
            raise KGQAError(f"config file {path} is unreadable: {err}") from err
    in_env = {n.removeprefix("KGQA_").lower() for n in os.environ if n.startswith("KGQA_")}
    # pydantic-settings ranks init values above the environment: pass the file's values only
    # where the environment is silent, and the flags always.
    init = {k: v for k, v in file_values.items() if k not in in_env}
    init.update({k: v for k, v in flags.items() if v is not None})
    return Settings(**init)
