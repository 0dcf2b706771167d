#!/usr/bin/python3
"""Writes OUT_DIR/tiny_mlp.onnx and its input OUT_DIR/in/x.npy, for aot_test's out-of-tree build of
examples/aot_onnx: x float32 [2,8,16] -> MatMul [16,32] + bias -> Relu -> MatMul [32,16] + bias
-> + x (residual) -> Softmax(axis -1) -> y.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out):
    os.makedirs(os.path.join(out, "in"), exist_ok=True)
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32) * 0.25, "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 16)).astype(np.float32) * 0.25, "w2")
    b2 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
        helper.make_node("Add", ["h3", "b2"], ["h4"], name="bias2"),
        helper.make_node("Add", ["h4", "x"], ["h5"], name="residual"),
        helper.make_node("Softmax", ["h5"], ["y"], name="softmax", axis=-1),
    ]
    f = TensorProto.FLOAT
    g = helper.make_graph(nodes, "tiny_mlp", [helper.make_tensor_value_info("x", f, [2, 8, 16])],
                          [helper.make_tensor_value_info("y", f, [2, 8, 16])], [w1, b1, w2, b2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "tiny_mlp.onnx"))
    np.save(os.path.join(out, "in", "x.npy"), rng.standard_normal((2, 8, 16)).astype(np.float32))


if __name__ == "__main__":
    main(sys.argv[1])
