#!/usr/bin/env python3
"""Quantizes the exported all-MiniLM-L6-v2 ONNX model to 8-bit weights.

ONNX Runtime's dynamic quantization (`onnxruntime.quantization.quantize_dynamic`)
stores the weights of the matrix products and the embedding tables as uint8, one scale
per output channel, and quantizes activations on the fly. Why the daemon embeds with it
by default: a search embeds its question on the critical path, and on two AVX2 cores
a short question takes about 60 % of the float32 model's time (4.8 against 7.9–8.6 ms on
one thread); the file is a quarter of the size.

Per-channel uint8 was the most faithful variant tried. On the 788 turns of the LoCoMo
dev slice its embeddings have cosine 0.994 on average (0.985 at worst) with float32;
per-tensor int8 had 0.962 (0.925). Retrieval on the dev slice stayed within noise
(docs/benchmarks.md). `scripts/check_embedding.py --quantized` checks the output.

The output is byte-identical across runs, so `scripts/setup.sh` pins its sha256.

Usage: quantize_minilm.py --model model.onnx --out model_int8.onnx
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from onnxruntime.quantization import QuantType, quantize_dynamic


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, type=Path, help="the float32 model.onnx")
    parser.add_argument("--out", required=True, type=Path, help="where to write the quantized model")
    args = parser.parse_args()
    # The quantizer suggests a shape-inference pre-pass; on this graph it changed
    # neither speed nor accuracy measurably, and it needs sympy.
    logging.getLogger().setLevel(logging.ERROR)
    quantize_dynamic(args.model, args.out, weight_type=QuantType.QUInt8, per_channel=True)
    print(f"quantize: {args.out.name}: {args.out.stat().st_size} bytes (uint8 weights, per channel)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
