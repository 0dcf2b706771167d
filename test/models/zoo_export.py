"""What every model-zoo export script shares: the command line (OUT_DIR OPSET [OPSET...]), the
seed, and writing model.onnx, input.npy (the model's one input) and expected.npy (PyTorch's output
for it) — into OUT_DIR for one opset, into OUT_DIR/opset<N> for each of several (one Python start,
which costs more than an export, for all of them).

Each script's sizes are a dict per size (SIZES): "test", small enough for a 2-core machine (2
layers, hidden 128, seq 32: what zoo_test runs), and "bench", base-model sizes (12 layers,
hidden 768) for bench/zoo_bench.py (`--size bench`). The weights come from a fixed seed, so a run
is reproducible.
"""
import argparse
import json
import os
import time

import numpy as np
import torch


class Layers(torch.nn.Module):
    """`n` layers made by make_layer(), applied in turn; as the ModuleList `layers`, so exported
    node names read /layers.N/..."""

    def __init__(self, make_layer, n):
        super().__init__()
        self.layers = torch.nn.ModuleList([make_layer() for _ in range(n)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def use_size(names, sizes, size):
    """Sets a script's size constants (its module globals `names`) to sizes[size]."""
    if size not in sizes:
        raise SystemExit("unknown size %r (one of %s)" % (size, ", ".join(sorted(sizes))))
    names.update(sizes[size])


def time_eager(model, x, runs):
    """PyTorch eager forward times in ms at 2 threads (the bench's thread count), after a warm-up.
    `x` is the input, or a tuple of inputs (a whole model's input_ids, attention_mask, ...); of a
    tuple of outputs, "sum" is the first's."""
    torch.set_num_threads(2)
    args = x if isinstance(x, tuple) else (x,)
    ms = []
    with torch.no_grad():
        out = model(*args)
        for _ in range(runs):
            t0 = time.perf_counter()
            out = model(*args)
            ms.append((time.perf_counter() - t0) * 1e3)
        # MatMul/Linear/Conv FLOPs as PyTorch's profiler counts them (2 per multiply-add)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True) as prof:
            model(*args)
    gflop = sum(e.flops for e in prof.key_averages() if e.flops) / 1e9
    first = out[0] if isinstance(out, tuple) else out
    return {"ms": ms, "sum": float(first.double().sum()), "gflop": gflop}


def export(make_model, make_input, names, sizes, dynamic_seq_axis=None):
    """make_model() -> nn.Module, make_input() -> torch.Tensor; both called after seeding and
    after the script's globals `names` took the sizes chosen by --size (default "test").

    dynamic_seq_axis: the input axis exported as the symbolic dim "seq" (None: static shapes), so
    the exporter writes its Shape/Slice chains (a causal mask sliced to [:seq, :seq]) and the
    importer must fold them."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("opsets", type=int, nargs="*")
    ap.add_argument("--size", default="test", help="one of the script's SIZES (test, bench)")
    ap.add_argument("--batch", type=int, default=0,
                    help="B inputs (make_input() B times, concatenated on axis 0) and axis 0 of the input "
                         "and output exported as the symbolic dim \"batch\" (default: one input, static batch)")
    ap.add_argument("--time", type=int, metavar="RUNS",
                    help="instead of exporting, time RUNS eager forwards (2 threads, after one warm-up) "
                         "and print one JSON line: {\"ms\": [...], \"sum\": output sum, \"gflop\": MatMul/Conv GFLOP}")
    a = ap.parse_args()
    if a.time is None and (a.out_dir is None or not a.opsets):
        ap.error("OUT_DIR and at least one OPSET are needed (or --time RUNS)")
    use_size(names, sizes, a.size)
    torch.manual_seed(0)
    model = make_model().eval()
    x = torch.cat([make_input() for _ in range(max(1, a.batch))])
    if a.time is not None:
        print(json.dumps(time_eager(model, x, a.time)))
        return
    dynamic = {"input": {}, "output": {}}
    if dynamic_seq_axis is not None:
        dynamic["input"][dynamic_seq_axis] = dynamic["output"][1] = "seq"
    if a.batch:
        dynamic["input"][0] = dynamic["output"][0] = "batch"
    with torch.no_grad():
        expected = model(x).numpy()
    for opset in a.opsets:
        out = a.out_dir if len(a.opsets) == 1 else os.path.join(a.out_dir, "opset%d" % opset)
        os.makedirs(out, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), opset_version=opset,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes=dynamic if dynamic["input"] else None)
        np.save(os.path.join(out, "input.npy"), x.numpy())
        np.save(os.path.join(out, "expected.npy"), expected.astype(np.float32))
