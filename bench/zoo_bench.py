#!/usr/bin/python3
"""Model-zoo bench: every zoo architecture of test/models at base-model size (`--size bench`: 12
layers, hidden 768, seq 128; ViT-B/16 at 224x224), exported at opset 17 — ours fused (`gaf run`),
ours unfused (`gaf run --no-fusion`), ONNX Runtime 1.30 CPU (bench/ort_run.js, Node) and PyTorch
eager (the export script's `--time`), all at 2 threads, in interleaved rounds. Each round runs
every peer of every model as a process of its own (the order rotates per round) with one warm-up
and REPEAT timed forwards; a round's figure is its median. Prints a markdown table: the median
over rounds, the spread (min..max of the round figures), the ratios the targets name, kernels per
layer and the fused forward's share of this machine's FMA peak (MatMul/Conv FLOPs as PyTorch's
profiler counts them; the peak from `gaf_bench --only peak`). A missing peer is reported and skipped.

usage: zoo_bench.py --gaf build/gaf [--gaf-bench build/bench/gaf_bench] [--node-path DIR/node_modules]
       [--rounds 5] [--repeat 10] [--models gpt2 llama vit encoder_qscale t5 falcon torch_encoder einsum_encoder resnet mobilenet convnext] [--work-dir /tmp/gaf_zoo]
       [--batch B] [--json FILE]

--batch B: the models exported with `--batch B` (B inputs, axis 0 the symbolic dim "batch") into
WORK_DIR/MODEL_bB, ours bound to it (`--dim batch=B`, the kernels compiled for that size), ORT
and PyTorch on the same B inputs.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "test", "models")
PY = "/usr/bin/python3"
OPSET = 17
LAYERS = 12  # every zoo model's "bench" size
PEERS = ["ours fused", "ours unfused", "ONNX Runtime", "PyTorch eager"]


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd[:3]), r.returncode, r.stderr.strip()[-400:]))
    return r.stdout


def export_script(model):
    return os.path.join(MODELS_DIR, "export_%s.py" % model)


def ours(a, d, fusion):
    cmd = [a.gaf, "run", d + "/model.onnx", "--input", "input=" + d + "/input.npy", "--repeat", str(a.repeat),
           "--threads", "2", "-q"]
    if a.batch > 1:
        cmd += ["--dim", "batch=%d" % a.batch]
    if not fusion:
        cmd.append("--no-fusion")
    out = run(cmd)
    ms = float(re.search(r"forward \((?:un)?fused\): median ([\d.]+) ms", out).group(1))
    groups = int(re.search(r"compile: (\d+) groups", out).group(1))  # one kernel launch each
    return ms, groups


def ort(a, d, env):
    r = json.loads(run(["node", os.path.join(HERE, "ort_run.js"), d + "/model.onnx", d + "/input.npy",
                        str(a.repeat)], env))
    return statistics.median(r["ms"]), None


def torch_eager(a, model):
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")  # see torch_bert.py
    batch = ["--batch", str(a.batch)] if a.batch > 1 else []
    r = json.loads(run([PY, export_script(model), "--size", "bench", "--time", str(a.repeat)] + batch, env))
    return statistics.median(r["ms"]), r["gflop"]


def peak_gflops(a):
    if not a.gaf_bench or not os.path.exists(a.gaf_bench):
        return None
    out = run([a.gaf_bench, "--only", "peak"])
    # gaf_bench prints a Markdown table: | peak | case | variant | median | min | GFLOP/s | ...
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 5 and cells[0] == "peak":
            try:
                return float(cells[5])
            except ValueError:
                return None
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gaf", required=True)
    ap.add_argument("--gaf-bench", default=None, help="gaf_bench binary, for the FMA peak")
    ap.add_argument("--node-path", default=None, help="the node_modules folder holding onnxruntime-node")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--models", nargs="+", default=["gpt2", "llama", "vit", "encoder_qscale", "t5", "falcon", "torch_encoder", "einsum_encoder"])
    ap.add_argument("--work-dir", default="/tmp/gaf_zoo")
    ap.add_argument("--json", default=None, help="also write every round's figures to FILE")
    ap.add_argument("--batch", type=int, default=1, help="B inputs per forward (models whose export takes --batch)")
    a = ap.parse_args()

    env = dict(os.environ)
    have_ort = a.node_path is not None and os.path.isdir(os.path.join(a.node_path, "onnxruntime-node"))
    if have_ort:
        env["NODE_PATH"] = a.node_path
    else:
        print("zoo_bench: ONNX Runtime skipped (no onnxruntime-node under --node-path)", file=sys.stderr)

    dirs, gflop = {}, {}
    for model in a.models:
        d = os.path.join(a.work_dir, model if a.batch == 1 else "%s_b%d" % (model, a.batch))
        if not os.path.exists(d + "/model.onnx"):
            print("zoo_bench: exporting %s (bench size, opset %d, batch %d)" % (model, OPSET, a.batch), file=sys.stderr)
            batch = ["--batch", str(a.batch)] if a.batch > 1 else []
            run([PY, export_script(model), d, str(OPSET), "--size", "bench"] + batch)
        dirs[model] = d
    peak = peak_gflops(a)

    peers = {
        "ours fused": lambda m: ours(a, dirs[m], True),
        "ours unfused": lambda m: ours(a, dirs[m], False),
        "ONNX Runtime": (lambda m: ort(a, dirs[m], env)) if have_ort else None,
        "PyTorch eager": lambda m: torch_eager(a, m),
    }
    got = {m: {p: [] for p in PEERS} for m in a.models}
    kernels = {}
    for r in range(a.rounds):
        order = PEERS[r % len(PEERS):] + PEERS[:r % len(PEERS)]
        for model in a.models:
            for p in order:
                if peers[p] is None:
                    continue
                try:
                    ms, k = peers[p](model)
                except RuntimeError as e:
                    print("zoo_bench: %s on %s: %s" % (p, model, e), file=sys.stderr)
                    peers[p] = None
                    continue
                got[model][p].append(ms)
                if p == "PyTorch eager":
                    gflop[model] = k
                elif k is not None:
                    kernels[(model, p)] = k
        print("round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)

    med = lambda xs: statistics.median(xs) if xs else None
    fmt = lambda xs: "%.2f (%.2f..%.2f)" % (med(xs), min(xs), max(xs)) if xs else "skipped"
    ratio = lambda x, y: "%.2fx" % (x / y) if x and y else "-"
    print("| model (12 layers) | ours fused ms | ours unfused ms | ONNX Runtime ms | PyTorch eager ms "
          "| fused / ORT (<= 0.9x) | unfused / fused (>= 1.15x) | kernels per forward (fused / unfused) | MatMul GFLOP "
          "| fused % of FMA peak |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in a.models:
        g = got[model]
        fused, unfused, o = med(g["ours fused"]), med(g["ours unfused"]), med(g["ONNX Runtime"])
        kf, ku = kernels.get((model, "ours fused")), kernels.get((model, "ours unfused"))
        gf = gflop.get(model)
        pct = "%.0f%%" % (100 * gf / (fused / 1e3) / peak) if peak and fused and gf else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s |" % (
            model, fmt(g["ours fused"]), fmt(g["ours unfused"]), fmt(g["ONNX Runtime"]), fmt(g["PyTorch eager"]),
            ratio(fused, o), ratio(unfused, fused), kf, ku, "%.2f" % gf if gf else "-", pct))
    if peak:
        print("\nFMA peak of this machine (gaf_bench --only peak): %.1f GFLOP/s" % peak)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": got, "kernels": {"%s/%s" % k: v for k, v in kernels.items()},
                       "gflop": gflop, "peak_gflops": peak}, f, indent=1)


if __name__ == "__main__":
    main()
