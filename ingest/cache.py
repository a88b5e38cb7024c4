"""kgqa's on-disk cache of derived files (array copies of dictionaries and vocabularies).

The directory is `Settings.cache_dir` (`$KGQA_CACHE_DIR`, else `$XDG_CACHE_HOME/kgqa`, else
`~/.cache/kgqa`), chosen at the entry point and passed down. Files are named after what they were
derived from (version, size, mtime), written atomically (`kg.store`), and rebuilt when missing:
deleting the directory is always safe. A file derived anew prunes its family's older copies
(`prune_stale`): each reinstall of a package names a new copy, and the old ones would pile up.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from kg.store import atomic_write_bytes

__all__ = ["load_array_dir", "prune_stale", "save_array_dir", "save_arrays"]


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


#: a derived file's name: its family (the words and format version before the stamp, and the
#: extension after it) and its stamp, what it was derived from (a version, a size, an mtime in
#: nanoseconds: digits, dots and dashes only)
_STAMPED = re.compile(r"(?P<prefix>.*?-)[0-9.]+(?:-[0-9]+)+(?P<suffix>(?:\.[A-Za-z]\w*)?)")


def _family(name: str) -> tuple[str, str] | None:
    m = _STAMPED.fullmatch(name)
    return (m.group("prefix"), m.group("suffix")) if m else None


def prune_stale(current: Path, keep: int = 2) -> list[Path]:
    """Remove the older copies of a derived file: the entries beside `current` of its family
    (the same name but for the stamp), but for the `keep` most recently modified of them,
    `current` always among those kept (so that another installation using the same cache keeps
    its copy too). Returns what was removed; what cannot be removed is left (deleting a file
    another process has open or mapped is safe: it keeps its copy until it closes it).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for i, name in enumerate(["g-v1-1-10.onnx", "g-v1-2-20.onnx", "g-v1-3-30.onnx",
    ...                           "g-v1-batched-4-40.onnx", "other.txt"]):
    ...     _ = (d / name).write_text("x")
    ...     os.utime(d / name, ns=(i * 10**9, i * 10**9))
    >>> [p.name for p in prune_stale(d / "g-v1-1-10.onnx")]
    ['g-v1-2-20.onnx']
    >>> sorted(p.name for p in d.iterdir())
    ['g-v1-1-10.onnx', 'g-v1-3-30.onnx', 'g-v1-batched-4-40.onnx', 'other.txt']
    >>> _family("jieba-dict-v2-0.42.1-100-200.npz"), _family("e5-vocab-v1-100-200")
    (('jieba-dict-v2-', '.npz'), ('e5-vocab-v1-', ''))
    """
    family: list[tuple[float, Path]] = []
    own = _family(current.name)
    if own is None:
        return []
    with contextlib.suppress(OSError):
        for entry in current.parent.iterdir():
            if entry != current and _family(entry.name) == own:
                with contextlib.suppress(OSError):
                    family.append((entry.stat().st_mtime, entry))
    family.sort(key=lambda pair: pair[0], reverse=True)
    removed: list[Path] = []
    for _mtime, entry in family[max(keep - 1, 0) :]:
        try:
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue
        removed.append(entry)
    return removed
