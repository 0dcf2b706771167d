#!/usr/bin/python3
"""PyTorch eager BERT-base encoder, the same architecture as gaf's builtin:bert-base (post-LN,
GELU erf, additive mask (1 - mask) * -10000): the PyTorch peer of gaf_bench.

Weights: --weights DIR loads DIR/<name>.npy for every parameter, named and laid out as
fusion/models/bert.cpp (Linear weights [in, out]); without it they are random (seed 0).
Inputs: --inputs DIR loads hidden_states.npy and attention_mask.npy; else random / all ones.

  torch_bert.py --seq 128 [--runs 10]   warm-up, then median of --runs forwards: one JSON line
  torch_bert.py --seq 128 --serve       JSON "ready" line (no warm-up), then per stdin line:
                                        "run" -> {"ms": ..}
                                        (one timed forward), "save PATH" -> output to PATH (.npy),
                                        "quit"
  torch_bert.py --export-onnx PATH      torch.onnx.export at opset 14, dynamic batch and seq
                                        (traced at --seq; a short one exports faster)
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np

# OpenBLAS (Debian's torch uses the system BLAS) keeps its worker threads spinning for about
# 0.1 s after each call; on 2 cores that spin ran into the variant gaf_bench times next. 2^4
# cycles is its minimum. Set before torch loads the library.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
import torch  # noqa: E402
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)


class Dense(nn.Module):
    def __init__(self, n_in, n_out, norm):
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)
        if norm:
            self.LayerNorm = nn.LayerNorm(n_out, eps=1e-12)


class Attention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.self = SelfAttention(hidden)
        self.output = Dense(hidden, hidden, True)


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.attention = Attention(hidden)
        self.intermediate = Dense(hidden, ffn, False)
        self.output = Dense(ffn, hidden, True)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.d).permute(0, 2, 1, 3)

    def forward(self, x, ext):
        sa = self.attention.self
        q, k, v = self.split(sa.query(x)), self.split(sa.key(x)), self.split(sa.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + ext
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.shape[0], ctx.shape[1], -1)
        ao = self.attention.output
        a = ao.LayerNorm(ao.dense(ctx) + x)
        h = F.gelu(self.intermediate.dense(a))
        return self.output.LayerNorm(self.output.dense(h) + a)


class Encoder(nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.layer = nn.ModuleList([Layer(hidden, heads, ffn) for _ in range(layers)])


class BertEncoder(nn.Module):
    def __init__(self, layers=12, hidden=768, heads=12, ffn=3072):
        super().__init__()
        self.encoder = Encoder(layers, hidden, heads, ffn)

    def forward(self, hidden_states, attention_mask):
        ext = (1.0 - attention_mask[:, None, None, :]) * -10000.0
        x = hidden_states
        for layer in self.encoder.layer:
            x = layer(x, ext)
        return x


def load_weights(model, folder):
    """DIR/<name>.npy per parameter; Linear weights are stored [in, out] (gaf's layout)."""
    state = {}
    for name, p in model.state_dict().items():
        path = os.path.join(folder, name + ".npy")
        if not os.path.exists(path):
            sys.exit(f"torch_bert.py: error: missing weight file {path}")
        a = torch.from_numpy(np.load(path))
        if a.dim() == 2:
            a = a.t().contiguous()
        if a.shape != p.shape:
            sys.exit(f"torch_bert.py: error: {path} has shape {tuple(a.shape)}, expected {tuple(p.shape)}")
        state[name] = a
    model.load_state_dict(state)


def make_inputs(a):
    if a.inputs:
        x = torch.from_numpy(np.load(os.path.join(a.inputs, "hidden_states.npy")))
        m = torch.from_numpy(np.load(os.path.join(a.inputs, "attention_mask.npy")))
        return x, m
    g = torch.Generator().manual_seed(0)
    return torch.randn(a.batch, a.seq, 768, generator=g), torch.ones(a.batch, a.seq)


def timed(model, x, m):
    t0 = time.perf_counter()
    out = model(x, m)
    return (time.perf_counter() - t0) * 1e3, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--weights")
    ap.add_argument("--inputs")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--export-onnx", metavar="PATH")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = BertEncoder(a.layers).eval()
    if a.weights:
        load_weights(model, a.weights)
    x, m = make_inputs(a)
    with torch.no_grad():
        if a.export_onnx:
            torch.onnx.export(model, (x, m), a.export_onnx, opset_version=14,
                              input_names=["hidden_states", "attention_mask"],
                              output_names=["last_hidden_state"],
                              dynamic_axes={"hidden_states": {0: "batch", 1: "seq"},
                                            "attention_mask": {0: "batch", 1: "seq"},
                                            "last_hidden_state": {0: "batch", 1: "seq"}})
            print(json.dumps({"exported": a.export_onnx, "torch": torch.__version__}), flush=True)
            return
        if not a.serve:
            timed(model, x, m)  # warm-up (in --serve the caller's first command is the warm-up)
            ms = [timed(model, x, m)[0] for _ in range(a.runs)]
            print(json.dumps({"seq": a.seq, "batch": a.batch, "median_ms": statistics.median(ms),
                              "runs": a.runs, "threads": a.threads, "torch": torch.__version__}))
            return
        print(json.dumps({"ready": True, "threads": a.threads, "torch": torch.__version__}), flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "quit":
                break
            if cmd[0] == "run":
                print(json.dumps({"ms": timed(model, x, m)[0]}), flush=True)
            elif cmd[0] == "save" and len(cmd) == 2:
                np.save(cmd[1], model(x, m).numpy().astype(np.float32))
                print(json.dumps({"saved": cmd[1]}), flush=True)
            else:
                print(json.dumps({"error": "unknown command: " + line.strip()}), flush=True)


if __name__ == "__main__":
    main()
