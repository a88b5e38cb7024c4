"""The project's own modules a module imports, read from its source: what a fingerprint that
holds the source of a set of modules must hold too."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

PACKAGES = frozenset({"ingest", "kg"})


def package_imports(name: str) -> Iterator[str]:
    """The modules of `PACKAGES` that module `name` imports (`from kg import cues` as kg.cues)."""
    source = Path(importlib.import_module(name).__file__ or "").read_text("utf-8")
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if node.module in PACKAGES:
            imported = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            imported = [node.module]
        yield from (m for m in imported if m.split(".")[0] in PACKAGES)
