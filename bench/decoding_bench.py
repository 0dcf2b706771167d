#!/usr/bin/python3
"""Decoding bench: greedy generation on the decoder of test/models/export_gpt2_kv.py (prompt 32,
NEW new tokens) — ours (`gaf generate`, JIT, dynamic dims) vs ONNX Runtime CPU (bench/ort_generate.js,
Node) vs PyTorch eager with its KV cache (bench/torch_generate.py), all at 2 threads, in
interleaved rounds (ours, ORT, torch; ROUNDS times). Each round is one process per peer with one
warm-up generation and REPEAT timed ones; a round's figure is the median over its generations
(time to first token) or tokens (a decode step). Prints a markdown table: the median over rounds
and the spread (min..max of the round figures), and checks every peer's tokens against PyTorch's.

The model's sizes are export_gpt2_kv.py's options (--layers, --hidden, --heads, --vocab; the
issue's real size is --layers 12 --hidden 768 --heads 12 --vocab 8192), the prompt --prompt-len.
--precision bf16 int8 adds a row for ours with bf16 (int8) weights per precision named.

usage: decoding_bench.py --gaf build/gaf --node-path DIR/node_modules [--rounds 5] [--repeat 3]
       [--new-tokens 128] [--prompt-len 32] [--layers 2 --hidden 128 --heads 4 --vocab 512]
       [--precision bf16 int8] [--no-torch] [--work-dir /tmp/gaf_decoding]
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
PY = "/usr/bin/python3"


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("decoding_bench: %s failed (exit %d): %s" % (cmd[0], r.returncode, r.stderr.strip()[-500:]))
    return r.stdout


def ours(a, d, precision="fp32"):
    """(first token ms, step ms, how many leading tokens equal PyTorch's fp32 greedy ones)."""
    out = run([a.gaf, "generate", d, "--precision", precision, "--input-ids", d + "/input_ids.npy",
               "--new-tokens", str(a.new_tokens), "--repeat", str(a.repeat), "--warmup", "1", "--threads", "2", "-v"])
    first = float(re.search(r"time to first token: median ([\d.]+) ms", out).group(1))
    step = float(re.search(r"decode: median ([\d.]+) ms per token", out).group(1))
    got = [int(x) for x in re.search(r"generated: ([\d ]+)", out).group(1).split()]
    expected = np.load(d + "/expected_tokens.npy")[0].tolist()
    agree = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), len(got))
    return first, step, agree


def peer(cmd, d, env=None):
    r = json.loads(run(cmd, env))
    expected = np.load(d + "/expected_tokens.npy")[0].tolist()
    agree = next((i for i, (g, e) in enumerate(zip(r["tokens"], expected)) if g != e), len(r["tokens"]))
    return statistics.median(r["first_token_ms"]), statistics.median(r["step_ms"]), agree


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gaf", required=True)
    ap.add_argument("--node-path", required=True, help="the node_modules folder holding onnxruntime-node")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--precision", nargs="*", choices=["bf16", "int8"], default=[], help="one more row for ours per precision")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch eager out")
    ap.add_argument("--work-dir", default="/tmp/gaf_decoding")
    a = ap.parse_args()
    d = os.path.join(a.work_dir, "gpt2_kv_l%d_h%d_v%d_p%d" % (a.layers, a.hidden, a.vocab, a.prompt_len))
    max_pos = max(256, 1 << (a.prompt_len + a.new_tokens - 1).bit_length())
    if not os.path.exists(os.path.join(d, "expected_tokens.npy")):
        run([PY, os.path.join(HERE, "..", "test", "models", "export_gpt2_kv.py"), d, "--new-tokens", str(a.new_tokens),
             "--prompt-len", str(a.prompt_len), "--layers", str(a.layers), "--hidden", str(a.hidden),
             "--heads", str(a.heads), "--vocab", str(a.vocab), "--max-pos", str(max_pos)])
    # The per-token floor: every weight read once (the LM head is tied to the token embedding).
    h, v, l = a.hidden, a.vocab, a.layers
    weight_bytes = 4 * (l * (12 * h * h + 13 * h) + v * h)
    print("model: %d layers, hidden %d, %d heads, vocab %d; prompt %d, %d new tokens; fp32 weights read per token %.1f MB"
          % (l, h, a.heads, v, a.prompt_len, a.new_tokens, weight_bytes / 1e6))
    env = dict(os.environ, NODE_PATH=a.node_path)
    peers = {
        "ours (gaf generate)": lambda: ours(a, d),
        **{"ours %s (gaf generate --precision %s)" % (p, p): (lambda p=p: ours(a, d, p)) for p in a.precision},
        "ONNX Runtime 1.30 CPU": lambda: peer(["node", os.path.join(HERE, "ort_generate.js"), d, str(a.new_tokens),
                                              str(a.repeat)], d, env),
    }
    if not a.no_torch:
        peers["PyTorch eager"] = lambda: peer([PY, os.path.join(HERE, "torch_generate.py"), d, str(a.new_tokens),
                                              str(a.repeat)], d)
    got = {name: [] for name in peers}
    for r in range(a.rounds):
        for name, fn in peers.items():
            got[name].append(fn())
        print("round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)
    ort = got["ONNX Runtime 1.30 CPU"]
    ort_first = statistics.median(x[0] for x in ort)
    ort_step = statistics.median(x[1] for x in ort)
    print("| peer | time to first token (ms) | spread | decode step (ms) | spread | tokens/s | vs ORT (first / step) | leading tokens = PyTorch's |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in got.items():
        first = [x[0] for x in rows]
        step = [x[1] for x in rows]
        mf, ms = statistics.median(first), statistics.median(step)
        print("| %s | %.3f | %.3f..%.3f | %.3f | %.3f..%.3f | %.0f | %.2fx / %.2fx | %s |" % (
            name, mf, min(first), max(first), ms, min(step), max(step), 1000 / ms, mf / ort_first, ms / ort_step,
            "%d of %d" % (min(x[2] for x in rows), a.new_tokens)))


if __name__ == "__main__":
    main()
