"""kgqa's on-disk cache of derived files (array copies of dictionaries and vocabularies).

`$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa`, else `~/.cache/kgqa`. Files are named after
what they were derived from (version, size, mtime), written atomically, and rebuilt when missing:
deleting the directory is always safe.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["cache_dir", "load_array_dir", "save_array_dir", "save_arrays", "save_bytes"]


def cache_dir() -> Path:
    """`$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa`, else `~/.cache/kgqa`."""
    explicit = os.environ.get("KGQA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kgqa"


def save_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically (a temporary file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save_arrays(path: Path, arrays: dict[str, Any]) -> None:
    """`np.savez` to `path` atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    save_bytes(path, buffer.getvalue())


def save_array_dir(path: Path, arrays: dict[str, Any]) -> None:
    """One `.npy` file per array in the directory `path`, created whole or not at all (a
    temporary directory renamed into place), so that `load_array_dir` can memory-map them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", array, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_array_dir(path: Path, names: tuple[str, ...]) -> dict[str, Any]:
    """The arrays `save_array_dir` wrote, memory-mapped read-only (OSError/ValueError if absent
    or damaged)."""
    return {
        name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in names
    }
