"""kgqa's on-disk cache of derived files (array copies of dictionaries and vocabularies).

The directory is `Settings.cache_dir` (`$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa`, else
`~/.cache/kgqa`), chosen at the entry point and passed down. Files are named after what they were
derived from (version, size, mtime), written atomically (`kg.store`), and rebuilt when missing:
deleting the directory is always safe.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from kg.store import atomic_write_bytes

__all__ = ["load_array_dir", "save_array_dir", "save_arrays"]


def save_arrays(path: Path, arrays: dict[str, Any]) -> None:
    """`np.savez` to `path` atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


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
