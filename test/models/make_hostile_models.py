#!/usr/bin/python3
"""Writes small ONNX models a hostile user would try into OUT_DIR (hostile_input_test):
  overflow_dims.onnx     y = Identity(x), x float32 [n, 8]: --dim n near 2^62 overflows its size
  huge_initializer.onnx  an initializer declaring [2^28, 2] floats with 8 bytes of raw data
  external_far/model.onnx    external data at offset 2^63 - 8 of a 64-byte file
  external_fifo/model.onnx   external data named 'pipe' (the test makes it a FIFO)
  external_bad_offset/model.onnx  offset 'abc'
  opset99.onnx           y = Relu(x) importing ai.onnx opset 99
  gather_const_oob.onnx  Gather of a constant with constant index 5 on an axis of 3 (folded)
  gather_input_oob.onnx  Gather of a constant by the input 'idx' (int64 [2])
  clashing_outputs.onnx  outputs 'a/b' and 'a:b', both NAME.npy as a file name 'a_b.npy'
  reshape_overflow.onnx  Reshape to [2^47, 2^31, -1]: the known dims' product overflows
  gather_scalar.onnx     Gather of a scalar (rank 0 data)
(the last two found by fuzz/fuzz_onnx_model)
No onnx.checker here: several of these are invalid on purpose.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def model(nodes, name, inputs, outputs, inits=(), opset=14):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def external_model(folder, offset, location="weights.bin", data=b"\0" * 64):
    os.makedirs(folder, exist_ok=True)
    w = TensorProto(name="w", data_type=F, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", str(offset)), ("length", "64")):
        e = w.external_data.add()
        e.key, e.value = k, v
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "ext",
              [helper.make_tensor_value_info("x", F, [4, 4])], [helper.make_tensor_value_info("y", F, [4, 4])], [w])
    onnx.save(m, os.path.join(folder, "model.onnx"))
    if location == "weights.bin":
        with open(os.path.join(folder, "weights.bin"), "wb") as f:
            f.write(data)


def main(out):
    os.makedirs(out, exist_ok=True)
    x = helper.make_tensor_value_info("x", F, ["n", 8])
    onnx.save(model([helper.make_node("Identity", ["x"], ["y"], name="id")], "overflow", [x],
                    [helper.make_tensor_value_info("y", F, ["n", 8])]), os.path.join(out, "overflow_dims.onnx"))

    big = TensorProto(name="w", data_type=F, dims=[1 << 28, 2], raw_data=b"\0" * 8)
    onnx.save(model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "huge",
                    [helper.make_tensor_value_info("x", F, [1, 2])], [helper.make_tensor_value_info("y", F, [1, 2])],
                    [big]), os.path.join(out, "huge_initializer.onnx"))

    external_model(os.path.join(out, "external_far"), (1 << 63) - 8)
    external_model(os.path.join(out, "external_fifo"), 0, location="pipe")
    external_model(os.path.join(out, "external_bad_offset"), "abc")

    onnx.save(model([helper.make_node("Relu", ["x"], ["y"], name="relu")], "new",
                    [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, [2])],
                    opset=99), os.path.join(out, "opset99.onnx"))

    data = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "data")
    idx = numpy_helper.from_array(np.array([0, 5], dtype=np.int64), "cidx")
    onnx.save(model([helper.make_node("Gather", ["data", "cidx"], ["g"], name="gather_const", axis=0),
                     helper.make_node("Add", ["g", "x"], ["y"], name="add")], "gather_const",
                    [helper.make_tensor_value_info("x", F, [2, 2])], [helper.make_tensor_value_info("y", F, [2, 2])],
                    [data, idx]), os.path.join(out, "gather_const_oob.onnx"))
    onnx.save(model([helper.make_node("Gather", ["data", "idx"], ["y"], name="gather_in", axis=0)], "gather_in",
                    [helper.make_tensor_value_info("idx", TensorProto.INT64, [2])],
                    [helper.make_tensor_value_info("y", F, [2, 2])], [data]), os.path.join(out, "gather_input_oob.onnx"))
    np.save(os.path.join(out, "idx_oob.npy"), np.array([1, 3], dtype=np.int64))
    np.save(os.path.join(out, "idx_ok.npy"), np.array([2, -3], dtype=np.int64))

    onnx.save(model([helper.make_node("Relu", ["x"], ["a/b"], name="r1"),
                     helper.make_node("Neg", ["x"], ["a:b"], name="r2")], "clash",
                    [helper.make_tensor_value_info("x", F, [2])],
                    [helper.make_tensor_value_info("a/b", F, [2]), helper.make_tensor_value_info("a:b", F, [2])]),
              os.path.join(out, "clashing_outputs.onnx"))
    shp = numpy_helper.from_array(np.array([1 << 47, 1 << 31, -1], dtype=np.int64), "shp")
    onnx.save(model([helper.make_node("Reshape", ["x", "shp"], ["y"], name="reshape")], "reshape",
                    [helper.make_tensor_value_info("x", F, [2])], [helper.make_tensor_value_info("y", F, None)],
                    [shp]), os.path.join(out, "reshape_overflow.onnx"))
    scalar = numpy_helper.from_array(np.array(1.5, dtype=np.float32), "s")
    onnx.save(model([helper.make_node("Gather", ["s", "i"], ["y"], name="gather_scalar")], "gather_scalar",
                    [helper.make_tensor_value_info("i", TensorProto.INT64, [1])],
                    [helper.make_tensor_value_info("y", F, None)], [scalar]), os.path.join(out, "gather_scalar.onnx"))
    np.save(os.path.join(out, "x_nan.npy"), np.array([np.nan, 1.0], dtype=np.float32))


if __name__ == "__main__":
    main(sys.argv[1])
