"""Where vLLM lives and what its CPU build needs: shared by `prepare` (conversion) and `serve`.

Nothing here reads the process environment: the configured interpreter and the base environment
come from the caller (the settings and the environment the entry point was started with).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["STRUCTURED_OUTPUTS", "find_vllm_python", "vllm_cpu_env", "vllm_is_cpu_build"]

#: vLLM's structured-output settings (server `--structured-outputs-config`, `vllm.LLM`): JSON under
#: a schema without free whitespace, or a small model may fill the room the grammar leaves after
#: '"decline":' with tabs until max_tokens (qwen2.5-coder-0.5b did)
STRUCTURED_OUTPUTS: dict[str, object] = {"backend": "xgrammar", "disable_any_whitespace": True}

_REPO = Path(__file__).resolve().parents[2]


def find_vllm_python(configured: str | None = None) -> str | None:
    """The interpreter that can import vLLM: `configured` (`KGQA_VLLM_PYTHON` in the settings),
    this one, or the repository's `.venv-vllm`; None when there is none."""
    if configured:
        return configured
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    local = _REPO / ".venv-vllm" / "bin" / "python"
    return str(local) if local.exists() else None


def vllm_is_cpu_build(python: str) -> bool:
    """True if ``python``'s vLLM is the CPU build (distribution ``vllm-cpu``)."""
    probe = "import importlib.metadata as m; m.version('vllm-cpu')"
    done = subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False)
    return done.returncode == 0


def vllm_cpu_env(environ: Mapping[str, str], cores: int | None = None) -> dict[str, str]:
    """The variables vLLM's CPU build needs, each kept from `environ` where it is set there.

    No native bf16 on this CPU; binding "all" cores crashes the OpenMP binding (MODELS.md);
    vllm-cpu 0.32 cannot reload its own AOT-compiled model ("'function' object has no attribute
    'finalize_loading'") and recompiles on every start, while the plain compile cache reloads.

    >>> vllm_cpu_env({"VLLM_CPU_KVCACHE_SPACE": "4"}, cores=8)["VLLM_CPU_KVCACHE_SPACE"]
    '4'
    >>> vllm_cpu_env({}, cores=8)["VLLM_CPU_OMP_THREADS_BIND"]
    '0-1'
    """
    bound = min(cores if cores is not None else os.cpu_count() or 1, 2)
    defaults = {
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "VLLM_CPU_OMP_THREADS_BIND": f"0-{bound - 1}",
        "VLLM_USE_AOT_COMPILE": "0",
    }
    return {name: environ.get(name, value) for name, value in defaults.items()}
