"""What every model-zoo export script shares: the command line (OUT_DIR OPSET [OPSET...]), the
seed, and writing model.onnx, input.npy (the model's one input) and expected.npy (PyTorch's output
for it) — into OUT_DIR for one opset, into OUT_DIR/opset<N> for each of several (one Python start,
which costs more than an export, for all of them).

The models are small enough for a 2-core machine (2 layers, hidden 128, seq 32) and their
weights come from a fixed seed, so a run is reproducible.
"""
import argparse
import os

import numpy as np
import torch


def export(make_model, make_input, dynamic_seq_axis=None):
    """make_model() -> nn.Module, make_input() -> torch.Tensor; both called after seeding.

    dynamic_seq_axis: the input axis exported as the symbolic dim "seq" (None: static shapes), so
    the exporter writes its Shape/Slice chains (a causal mask sliced to [:seq, :seq]) and the
    importer must fold them."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("opsets", type=int, nargs="+")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = make_model().eval()
    x = make_input()
    dynamic = None
    if dynamic_seq_axis is not None:
        dynamic = {"input": {dynamic_seq_axis: "seq"}, "output": {1: "seq"}}
    with torch.no_grad():
        expected = model(x).numpy()
    for opset in a.opsets:
        out = a.out_dir if len(a.opsets) == 1 else os.path.join(a.out_dir, "opset%d" % opset)
        os.makedirs(out, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), opset_version=opset,
                              input_names=["input"], output_names=["output"], dynamic_axes=dynamic)
        np.save(os.path.join(out, "input.npy"), x.numpy())
        np.save(os.path.join(out, "expected.npy"), expected.astype(np.float32))
