#!/usr/bin/python3
"""Writes small ONNX models for the CLI and importer tests into OUT_DIR, with onnx.helper:
  two_unsupported.onnx   Relu -> Acos -> Cosh: two unsupported ops in one model
  external_ok/model.onnx       MatMul whose weight lives in external data beside the model
  external_escape/model.onnx   the same, but the data location points outside the model folder
  add.onnx               y = a + b, float32 [2,3]
plus .npy inputs: a.npy, b.npy (float32 [2,3]), a_f64.npy (float64), a_i64.npy (int64),
a_wrong_shape.npy (float32 [3,2]), a_truncated.npy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main(out):
    os.makedirs(out, exist_ok=True)
    f = TensorProto.FLOAT
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
         helper.make_node("Acos", ["r"], ["c"], name="acos0"),
         helper.make_node("Cosh", ["c"], ["y"], name="cosh0")],
        "two_unsupported", [helper.make_tensor_value_info("x", f, [4])],
        [helper.make_tensor_value_info("y", f, [4])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), os.path.join(out, "two_unsupported.onnx"))

    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add0")], "add",
                          [helper.make_tensor_value_info("a", f, [2, 3]),
                           helper.make_tensor_value_info("b", f, [2, 3])],
                          [helper.make_tensor_value_info("y", f, [2, 3])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), os.path.join(out, "add.onnx"))

    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    for name, location in [("external_ok", "weights.bin"), ("external_escape", "../stolen.bin")]:
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        t = numpy_helper.from_array(w, "w")
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in [("location", location), ("offset", "0"), ("length", str(w.nbytes))]:
            e = t.external_data.add()
            e.key, e.value = k, v
        w.tofile(os.path.join(d, "weights.bin"))
        w.tofile(os.path.join(out, "stolen.bin"))
        g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm0")], name,
                              [helper.make_tensor_value_info("x", f, [2, 3])],
                              [helper.make_tensor_value_info("y", f, [2, 4])], initializer=[t])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), os.path.join(d, "model.onnx"))

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(os.path.join(out, "a.npy"), a)
    np.save(os.path.join(out, "b.npy"), a * 10)
    np.save(os.path.join(out, "x.npy"), a)
    np.save(os.path.join(out, "a_f64.npy"), a.astype(np.float64))
    np.save(os.path.join(out, "a_i64.npy"), a.astype(np.int64))
    np.save(os.path.join(out, "a_wrong_shape.npy"), a.reshape(3, 2))
    with open(os.path.join(out, "a.npy"), "rb") as src:
        data = src.read()
    with open(os.path.join(out, "a_truncated.npy"), "wb") as dst:
        dst.write(data[:-7])


if __name__ == "__main__":
    main(sys.argv[1])
