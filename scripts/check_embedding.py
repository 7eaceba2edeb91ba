#!/usr/bin/env python3
"""Self-check of the exported all-MiniLM-L6-v2 ONNX model; exits non-zero on any mismatch.

1. The tokenizer files are the ones the check's token ids assume
   ("hello" -> 7592, "world" -> 2088, [CLS] -> 101, [SEP] -> 102).
2. model.onnx, evaluated by `onnx.reference.ReferenceEvaluator` (pure numpy, no
   ONNX Runtime), embeds "Hello world" = [101, 7592, 2088, 102] (mask all 1, token
   types 0); mean pooling over the tokens and L2 normalization give a unit vector
   that begins with the known sentence-transformers values.
3. The same weights run through an independent plain-numpy BERT forward pass in
   float64 give the same last_hidden_state and embedding (max abs diff < 1e-5).
4. ONNX Runtime (the Python binding of the pinned version, all graph optimizations
   on, as the daemon runs it) agrees with the reference evaluator on "Hello world"
   and on a right-padded batch of two, where padding must not change the embedding.
5. With --quantized, the 8-bit copy (scripts/quantize_minilm.py) embeds a few
   sentences, each alone as a question is, within cosine 0.98 of model.onnx.

Usage: check_embedding.py --model-dir DIR --weights model.safetensors [--quantized model_int8.onnx]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx.reference import ReferenceEvaluator
from safetensors.numpy import load_file

HELLO_WORLD_IDS = [101, 7592, 2088, 102]
# First five components of all-MiniLM-L6-v2("Hello world"), mean-pooled and normalized.
EXPECTED_PREFIX = [-0.0345, 0.0310, 0.0067, 0.0261, -0.0394]
PREFIX_TOLERANCE = 5e-4
NORM_TOLERANCE = 1e-5
REFERENCE_TOLERANCE = 1e-5
# ONNX Runtime fuses and reorders float32 arithmetic (FusedMatMul, BiasGelu, ...).
ORT_HIDDEN_TOLERANCE = 1e-4
ORT_EMBEDDING_TOLERANCE = 1e-5
# Sentences made of whole-word tokens (the venv has no tokenizer library), coding
# sessions and conversation alike. On the LoCoMo dev turns the quantized model's
# cosine with float32 was 0.985 at worst.
QUANTIZED_SENTENCES = [
    "hello world",
    "the access token ends after fifteen minutes",
    "we decided to change the secret key every week",
    "the build failed because the cache was full",
    "she went to the support group last night and loved it",
    "deploy the service to production after the tests pass",
]
QUANTIZED_MIN_COSINE = 0.98


def fail(message: str) -> None:
    raise SystemExit(f"check: FAILED: {message}")


def check_tokenizer(model_dir: Path) -> None:
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    expected = {"[CLS]": 101, "hello": 7592, "world": 2088, "[SEP]": 102, "[PAD]": 0}
    for token, token_id in expected.items():
        if vocab.get(token) != token_id:
            fail(f"tokenizer.json maps {token!r} to {vocab.get(token)!r}, expected {token_id}")
    if len(vocab) != 30522:
        fail(f"tokenizer.json has {len(vocab)} tokens, expected 30522")


def mean_pool_normalize(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(hidden.dtype)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)


def numpy_forward(weights: dict[str, np.ndarray], config: dict, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
    """BERT forward pass in float64 written straight from the Hugging Face definition."""
    w = {name: array.astype(np.float64) for name, array in weights.items() if array.dtype == np.float32}
    eps = float(config["layer_norm_eps"])
    num_heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    head_dim = hidden // num_heads
    erf = np.vectorize(math.erf)

    def layer_norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]

    def dense(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    batch, seq = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][np.arange(seq)][None, :, :]
        + w["embeddings.token_type_embeddings.weight"][types]
    )
    x = layer_norm(x, "embeddings.LayerNorm")
    additive = (1.0 - mask.astype(np.float64))[:, None, None, :] * np.finfo(np.float32).min
    for index in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{index}"

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, seq, num_heads, head_dim).transpose(0, 2, 1, 3)

        q = split(dense(x, f"{p}.attention.self.query"))
        k = split(dense(x, f"{p}.attention.self.key"))
        v = split(dense(x, f"{p}.attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + additive
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = layer_norm(dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        h = dense(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        x = layer_norm(dense(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    return x


def session(model_path: Path) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def check_onnxruntime(model_path: Path, evaluator: ReferenceEvaluator, expected_embedding: np.ndarray) -> None:
    runner = session(model_path)
    # "Hello world" and a shorter sequence, right-padded with [PAD] = 0 to one length.
    ids = np.array([HELLO_WORLD_IDS + [0, 0], [101, 7592, 102, 0, 0, 0]], dtype=np.int64)
    mask = (ids != 0).astype(np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    (hidden_ort,) = runner.run(["last_hidden_state"], feeds)
    (hidden_ref,) = evaluator.run(["last_hidden_state"], feeds)
    attended = mask[..., None].astype(bool)
    hidden_diff = float(np.abs(np.where(attended, hidden_ort - hidden_ref, 0.0)).max())
    embeddings_ort = mean_pool_normalize(hidden_ort.astype(np.float64), mask)
    embeddings_ref = mean_pool_normalize(hidden_ref.astype(np.float64), mask)
    embedding_diff = float(np.abs(embeddings_ort - embeddings_ref).max())
    padding_diff = float(np.abs(embeddings_ort[0] - expected_embedding).max())
    print(
        f"check: onnxruntime {onnxruntime.__version__} (all optimizations), padded batch of 2: max abs diff "
        f"last_hidden_state {hidden_diff:.2e}, embeddings {embedding_diff:.2e}, padded vs unpadded {padding_diff:.2e}"
    )
    if hidden_diff > ORT_HIDDEN_TOLERANCE or embedding_diff > ORT_EMBEDDING_TOLERANCE or padding_diff > ORT_EMBEDDING_TOLERANCE:
        fail("onnxruntime and the reference evaluator disagree, or padding changes the embedding")


def check_quantized(model_dir: Path, quantized_path: Path) -> None:
    vocab = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    full, quantized = session(model_dir / "model.onnx"), session(quantized_path)
    cosines = []
    for sentence in QUANTIZED_SENTENCES:
        missing = [word for word in sentence.split() if word not in vocab]
        if missing:
            fail(f"check sentence words {missing} are not whole tokens of tokenizer.json")
        ids = np.array([[101] + [vocab[word] for word in sentence.split()] + [102]], dtype=np.int64)
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden_full,) = full.run(["last_hidden_state"], feeds)
        (hidden_quantized,) = quantized.run(["last_hidden_state"], feeds)
        a = mean_pool_normalize(hidden_full.astype(np.float64), mask)[0]
        b = mean_pool_normalize(hidden_quantized.astype(np.float64), mask)[0]
        cosines.append(float(a @ b))
    worst = min(cosines)
    print(f"check: {quantized_path.name}: cosine with model.onnx over {len(cosines)} sentences: worst {worst:.4f}, mean {sum(cosines) / len(cosines):.4f}")
    if worst < QUANTIZED_MIN_COSINE:
        fail(f"{quantized_path.name} is too far from model.onnx (cosine {worst:.4f} < {QUANTIZED_MIN_COSINE})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True, type=Path, help="directory with model.onnx and the tokenizer files")
    parser.add_argument("--weights", required=True, type=Path, help="the model.safetensors it was exported from")
    parser.add_argument("--quantized", type=Path, help="the 8-bit copy of model.onnx to check against it")
    args = parser.parse_args()

    check_tokenizer(args.model_dir)
    config = json.loads((args.model_dir / "config.json").read_text(encoding="utf-8"))

    ids = np.array([HELLO_WORLD_IDS], dtype=np.int64)
    mask = np.ones_like(ids)
    types = np.zeros_like(ids)

    model = onnx.load(str(args.model_dir / "model.onnx"))
    evaluator = ReferenceEvaluator(model)
    (hidden_onnx,) = evaluator.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
    if hidden_onnx.shape != (1, len(HELLO_WORLD_IDS), 384) or hidden_onnx.dtype != np.float32:
        fail(f"last_hidden_state is {hidden_onnx.dtype}{list(hidden_onnx.shape)}, expected float32[1, 4, 384]")
    embedding = mean_pool_normalize(hidden_onnx.astype(np.float64), mask)[0]

    norm = float(np.linalg.norm(embedding))
    prefix = [round(float(value), 4) for value in embedding[:5]]
    print(f"check: onnx reference evaluator: 'Hello world' -> {prefix} ... (norm {norm:.6f})")
    if abs(norm - 1.0) > NORM_TOLERANCE:
        fail(f"embedding norm {norm} is not 1")
    for position, (actual, expected) in enumerate(zip(embedding[:5], EXPECTED_PREFIX)):
        if abs(actual - expected) > PREFIX_TOLERANCE:
            fail(f"component {position} is {actual:.6f}, expected {expected} +- {PREFIX_TOLERANCE}")

    hidden_numpy = numpy_forward(load_file(str(args.weights)), config, ids, mask, types)
    embedding_numpy = mean_pool_normalize(hidden_numpy, mask)[0]
    hidden_diff = float(np.abs(hidden_onnx.astype(np.float64) - hidden_numpy).max())
    embedding_diff = float(np.abs(embedding - embedding_numpy).max())
    print(f"check: plain numpy float64 forward: max abs diff last_hidden_state {hidden_diff:.2e}, embedding {embedding_diff:.2e}")
    if hidden_diff > REFERENCE_TOLERANCE or embedding_diff > REFERENCE_TOLERANCE:
        fail(f"onnx graph and numpy forward pass differ (hidden {hidden_diff:.2e}, embedding {embedding_diff:.2e}, limit {REFERENCE_TOLERANCE})")

    check_onnxruntime(args.model_dir / "model.onnx", evaluator, embedding)
    if args.quantized is not None:
        check_quantized(args.model_dir, args.quantized)
    print("check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
