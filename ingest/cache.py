"""kgqa's on-disk cache of derived files (array copies of dictionaries and vocabularies).

`$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa`, else `~/.cache/kgqa`. Files are named after
what they were derived from (version, size, mtime), written atomically, and rebuilt when missing:
deleting the directory is always safe.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["cache_dir", "save_arrays"]


def cache_dir() -> Path:
    """`$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa`, else `~/.cache/kgqa`."""
    explicit = os.environ.get("KGQA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kgqa"


def save_arrays(path: Path, arrays: dict[str, Any]) -> None:
    """`np.savez` to `path` atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
