#!/usr/bin/python3
"""Whole-model BERT in batches of padded sentences (issue #38): a PyTorch export with input_ids,
attention_mask, token_type_ids, embeddings and pooler — Hugging Face BertModel's spelling
(test/models/export_bert.py --full, seeded weights, opset 17) at BERT-base
size, at each --seq (default 128) and --batch with rows of real lengths seq, 3/4, 1/2 and 21/128 of
it (128, 96, 64, 21 at seq 128; repeated) and the rest padding — ours fused (`gaf run`), ours unfused (`--no-fusion`) and ONNX Runtime 1.30
(bench/ort_run.js) and PyTorch eager (export_bert.py --time), 2 threads each, in interleaved rounds; then the attention groups' time from
one `gaf run --profile` per batch. Prints a Markdown table: medians over rounds, the spread
(min..max of the round medians), unfused / fused, fused / ORT, attention ms per layer and its
GFLOP/s (scores and probs x V over every row, padding included). "unfused / fused" is the fusion speed-up.
--precision bf16 int8: ours fused in those precisions too, in the same rounds, in a second table
with their time against fp32 and ORT and the rel L2 of the last hidden state against PyTorch's.

usage: bert_batch_bench.py --gaf build/gaf --node-path DIR/node_modules [--batch 1 4 16]
       [--seq 128 512] [--rounds 3] [--repeat 5] [--layers 12] [--precision bf16 int8] [--work-dir /tmp/gaf_bert_batch]
"""
import argparse
import json
import tempfile
import os
import re
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
HIDDEN, HEADS, FFN = 768, 12, 3072


def lengths(seq):
    """The real lengths of the rows, repeated over the batch: the first row is never padded."""
    return [seq, seq * 3 // 4, seq // 2, max(1, seq * 21 // 128)]


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("bert_batch_bench: %s failed (exit %d): %s" % (" ".join(cmd[:3]), r.returncode, r.stderr.strip()[-500:]))
    return r.stdout


def export_cmd(a, d, batch, seq):
    real = lengths(seq)
    rows = ",".join(str(real[i % len(real)]) for i in range(batch))
    return [PY, os.path.join(HERE, "..", "test", "models", "export_bert.py"), d, "17", "--layers", str(a.layers),
            "--hidden", str(HIDDEN), "--heads", str(HEADS), "--ffn", str(FFN), "--seq", str(seq),
            "--batch", str(batch), "--lengths", rows, "--full"]


def export(a, batch, seq):
    d = os.path.join(a.work_dir, "bert_full_l%d_b%d%s" % (a.layers, batch, "" if seq == 128 else "_s%d" % seq))
    if not os.path.exists(os.path.join(d, "expected.npy")):
        run(export_cmd(a, d, batch, seq))
    return d


def torch_eager(a, d, batch, seq):
    """PyTorch eager on the same seeded model and inputs (export_bert.py --time), 2 threads."""
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")  # see torch_bert.py
    return statistics.median(json.loads(run(export_cmd(a, d, batch, seq) + ["--time", str(a.repeat)], env))["ms"])


INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def gaf_cmd(a, d, batch, seq, *extra):
    return [a.gaf, "run", d + "/model.onnx", "--dim", "batch=%d" % batch, "--dim", "seq=%d" % seq,
            *[x for n in INPUTS for x in ("--input", "%s=%s/%s.npy" % (n, d, n))], "--threads", "2", *extra]


def ours(a, d, batch, seq, fusion, precision="fp32"):
    out = run(gaf_cmd(a, d, batch, seq, "--repeat", str(a.repeat), "-q", "--precision", precision,
                      *([] if fusion else ["--no-fusion"])))
    return float(re.search(r"forward \((?:un)?fused(?:, \w+)?\): median ([\d.]+) ms", out).group(1))


def rel_l2_vs_torch(a, d, batch, seq, precision):
    """rel L2 of our last hidden state in `precision` against PyTorch's (expected.npy)."""
    with tempfile.TemporaryDirectory() as out:
        run(gaf_cmd(a, d, batch, seq, "-q", "--precision", precision, "--output-dir", out))
        got = np.load(os.path.join(out, "last_hidden_state.npy"))
    want = np.load(os.path.join(d, "expected.npy"))
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def ort(a, d, env):
    named = ["%s=%s/%s.npy" % (n, d, n) for n in INPUTS]
    r = json.loads(run(["node", os.path.join(HERE, "ort_run.js"), d + "/model.onnx", named[0], str(a.repeat), *named[1:]],
                       env))
    return statistics.median(r["ms"])


def attention_ms(a, d, batch, seq):
    out = run(gaf_cmd(a, d, batch, seq, "--repeat", str(a.repeat), "--profile"))
    ms = [float(m.group(1)) for m in re.finditer(r"\bAttention\s+([\d.]+) ms", out)]
    return statistics.median(ms) if ms else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gaf", required=True)
    ap.add_argument("--node-path", required=True)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--seq", type=int, nargs="+", default=[128], help="each with every --batch")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--precision", nargs="*", default=[], choices=["bf16", "int8"])
    ap.add_argument("--work-dir", default="/tmp/gaf_bert_batch")
    a = ap.parse_args()
    env = dict(os.environ, NODE_PATH=a.node_path)
    rows = []
    for seq, batch in [(s, b) for s in a.seq for b in a.batch]:
        d = export(a, batch, seq)
        got = {"fused": [], "unfused": [], "ort": [], "torch": [], **{p: [] for p in a.precision}}
        for r in range(a.rounds):
            got["fused"].append(ours(a, d, batch, seq, True))
            got["unfused"].append(ours(a, d, batch, seq, False))
            got["ort"].append(ort(a, d, env))
            got["torch"].append(torch_eager(a, d, batch, seq))
            for p in a.precision:
                got[p].append(ours(a, d, batch, seq, True, p))
            print("seq %d batch %d: round %d/%d done" % (seq, batch, r + 1, a.rounds), file=sys.stderr)
        att = attention_ms(a, d, batch, seq)
        errors = {p: rel_l2_vs_torch(a, d, batch, seq, p) for p in ["fp32"] + a.precision}
        rows.append((seq, batch, got, att, errors))
    print("| seq | batch | ours fused ms | spread | ours unfused ms | spread | ORT ms | spread | PyTorch eager ms | spread "
          "| unfused / fused | fused / ORT | attention ms per layer | attention GFLOP/s |")
    print("|---:|---|---:|---|---:|---|---:|---|---:|---|---:|---:|---:|---:|")
    for seq, batch, got, att, _ in rows:
        med = {k: statistics.median(v) for k, v in got.items()}
        spread = {k: "%.1f..%.1f" % (min(v), max(v)) for k, v in got.items()}
        flops = 4.0 * batch * HEADS * seq * seq * (HIDDEN // HEADS)  # Q K^T and probs V
        print("| %d | %d | %.1f | %s | %.1f | %s | %.1f | %s | %.1f | %s | %.2fx | %.2fx | %s | %s |" % (
            seq, batch, med["fused"], spread["fused"], med["unfused"], spread["unfused"], med["ort"], spread["ort"],
            med["torch"], spread["torch"], med["unfused"] / med["fused"], med["fused"] / med["ort"],
            "%.3f" % att if att else "-", "%.0f" % (flops / att / 1e6) if att else "-"))

    if not a.precision:
        return
    print()
    print("| seq | batch | precision | ours fused ms | spread | / ours fp32 | / ORT | rel L2 vs PyTorch |")
    print("|---:|---|---|---:|---|---:|---:|---:|")
    for seq, batch, got, _, errors in rows:
        for p in ["fp32"] + a.precision:
            v = got["fused" if p == "fp32" else p]
            m = statistics.median(v)
            print("| %d | %d | %s | %.1f | %.1f..%.1f | %.2fx | %.2fx | %.1e |" % (
                seq, batch, p, m, min(v), max(v), m / statistics.median(got["fused"]), m / statistics.median(got["ort"]),
                errors[p]))


if __name__ == "__main__":
    main()
