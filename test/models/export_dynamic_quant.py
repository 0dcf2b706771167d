#!/usr/bin/python3
"""A two-layer MLP written the way onnxruntime.quantization.quantize_dynamic writes MatMuls
(QOperator format): DynamicQuantizeLinear(x) -> MatMulInteger(xq, Wq, xzp, Wzp) -> Cast(float)
-> Mul(., Mul(x_scale, W_scale)), then the bias Add; layer 1 with int8 weights and one scale and
zero point per tensor, layer 2 with uint8 weights and a scale and zero point per column; Relu
between. Seeded random weights.

Writes OUT_DIR/model.onnx, x.npy (float32 [1, ROWS, 256]), expected.npy (the model's own
semantics in numpy: per-tensor uint8 activations, exact int32 sums) and expected_fp32.npy (the
same layers on the dequantized weights in float32, no activation rounding).

usage: export_dynamic_quant.py OUT_DIR [--rows 64]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

K1, N1, N2 = 256, 512, 128


def dynamic_quantize(x):
    """DynamicQuantizeLinear: uint8, the range made to include 0."""
    hi, lo = max(float(x.max()), 0.0), min(float(x.min()), 0.0)
    scale = np.float32((hi - lo) / 255.0)
    zp = np.uint8(np.clip(np.round(-lo / scale), 0, 255))
    q = np.clip(np.round(x / scale) + zp, 0, 255).astype(np.uint8)
    return q, scale, zp


def layer_nodes(i, x, wq, wzp, ws, bias):
    """The nodes and initializers of one quantized MatMul + bias, output 'y{i}'."""
    p = "l%d_" % i
    inits = [numpy_helper.from_array(wq, p + "Wq"), numpy_helper.from_array(wzp, p + "Wzp"),
             numpy_helper.from_array(ws, p + "Ws"), numpy_helper.from_array(bias, p + "b")]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", [x], [p + "xq", p + "xs", p + "xzp"], name=p + "quant"),
        helper.make_node("MatMulInteger", [p + "xq", p + "Wq", p + "xzp", p + "Wzp"], [p + "acc"], name=p + "matmul"),
        helper.make_node("Cast", [p + "acc"], [p + "accf"], to=TensorProto.FLOAT, name=p + "cast"),
        helper.make_node("Mul", [p + "xs", p + "Ws"], [p + "scale"], name=p + "scales"),
        helper.make_node("Mul", [p + "accf", p + "scale"], [p + "mm"], name=p + "dequant"),
        helper.make_node("Add", [p + "mm", p + "b"], ["y%d" % i], name=p + "bias"),
    ]
    return nodes, inits


def reference(x, wq, wzp, ws, bias):
    q, s, zp = dynamic_quantize(x)
    acc = (q.astype(np.int32) - np.int32(zp)) @ (wq.astype(np.int32) - wzp.astype(np.int32))
    return (acc.astype(np.float32) * (s * ws)).astype(np.float32) + bias


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--rows", type=int, default=64)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    w1q = rng.integers(-127, 128, (K1, N1)).astype(np.int8)
    w1zp, w1s = np.array(0, np.int8), np.array(0.002, np.float32)
    w2q = rng.integers(0, 256, (N1, N2)).astype(np.uint8)
    w2zp = rng.integers(120, 137, (N2,)).astype(np.uint8)
    w2s = rng.uniform(0.001, 0.003, (N2,)).astype(np.float32)
    b1 = rng.normal(0, 0.1, (N1,)).astype(np.float32)
    b2 = rng.normal(0, 0.1, (N2,)).astype(np.float32)
    n1, i1 = layer_nodes(1, "x", w1q, w1zp, w1s, b1)
    n2, i2 = layer_nodes(2, "h", w2q, w2zp, w2s, b2)
    relu = helper.make_node("Relu", ["y1"], ["h"], name="relu")
    graph = helper.make_graph(n1 + [relu] + n2, "dynamic_quant_mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, a.rows, K1])],
                              [helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, a.rows, N2])], i1 + i2)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(a.out_dir, exist_ok=True)
    onnx.save(model, os.path.join(a.out_dir, "model.onnx"))
    x = rng.normal(0, 1, (1, a.rows, K1)).astype(np.float32)
    h = np.maximum(reference(x, w1q, w1zp, w1s, b1), 0)
    np.save(os.path.join(a.out_dir, "x.npy"), x)
    np.save(os.path.join(a.out_dir, "expected.npy"), reference(h, w2q, w2zp, w2s, b2))
    deq = lambda wq, wzp, ws: (wq.astype(np.float32) - wzp.astype(np.float32)) * ws
    hf = np.maximum(x @ deq(w1q, w1zp, w1s) + b1, 0)
    np.save(os.path.join(a.out_dir, "expected_fp32.npy"), (hf @ deq(w2q, w2zp, w2s) + b2).astype(np.float32))


if __name__ == "__main__":
    main()
