"""Convert a GGUF chat model to a safetensors directory that vLLM can load (MODELS.md recipe).

Standalone on purpose: it runs in the vLLM environment (transformers, torch, gguf), which does not
have kgqa's own dependencies. Usage: ``python qa/llm/convert_gguf.py MODEL.gguf OUT_DIR``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any


def convert(gguf: Path, out_dir: Path) -> None:
    """Dequantise ``gguf`` with transformers and save model + tokenizer under ``out_dir``."""
    # Imported by name: keeps the type checker out of torch/transformers (huge, slow to analyse).
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # The weights are plain tensors now; a leftover quantizer would make save/load expect GGUF.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    if out_dir.exists():
        import shutil

        shutil.rmtree(out_dir)
    tmp.rename(out_dir)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: convert_gguf.py MODEL.gguf OUT_DIR")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
