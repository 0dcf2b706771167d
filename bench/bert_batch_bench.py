#!/usr/bin/python3
"""Whole-model BERT in batches of padded sentences (issue #38): a PyTorch export with input_ids,
attention_mask and embeddings (test/models/export_bert.py, seeded weights, opset 17) at BERT-base
size, seq 128, run at each --batch with rows of real lengths 128, 96, 64, 21 (repeated) and the
rest padding — ours fused (`gaf run`), ours unfused (`--no-fusion`) and ONNX Runtime 1.30
(bench/ort_run.js), 2 threads each, in interleaved rounds; then the attention groups' time from
one `gaf run --profile` per batch. Prints a Markdown table: medians over rounds, the spread
(min..max of the round medians), unfused / fused, fused / ORT, attention ms per layer and its
GFLOP/s (scores and probs x V over every row, padding included). "unfused / fused" is the fusion speed-up.

usage: bert_batch_bench.py --gaf build/gaf --node-path DIR/node_modules [--batch 1 4 16]
       [--rounds 3] [--repeat 5] [--layers 12] [--work-dir /tmp/gaf_bert_batch]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
LENGTHS = [128, 96, 64, 21]
SEQ, HIDDEN, HEADS, FFN = 128, 768, 12, 3072


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("bert_batch_bench: %s failed (exit %d): %s" % (" ".join(cmd[:3]), r.returncode, r.stderr.strip()[-500:]))
    return r.stdout


def export(a, batch):
    d = os.path.join(a.work_dir, "bert_l%d_b%d" % (a.layers, batch))
    if not os.path.exists(os.path.join(d, "expected.npy")):
        lengths = ",".join(str(LENGTHS[i % len(LENGTHS)]) for i in range(batch))
        run([PY, os.path.join(HERE, "..", "test", "models", "export_bert.py"), d, "17", "--layers", str(a.layers),
             "--hidden", str(HIDDEN), "--heads", str(HEADS), "--ffn", str(FFN), "--seq", str(SEQ),
             "--batch", str(batch), "--lengths", lengths])
    return d


def gaf_cmd(a, d, batch, *extra):
    return [a.gaf, "run", d + "/model.onnx", "--dim", "batch=%d" % batch, "--dim", "seq=%d" % SEQ,
            "--input", "input_ids=" + d + "/input_ids.npy", "--input", "attention_mask=" + d + "/attention_mask.npy",
            "--threads", "2", *extra]


def ours(a, d, batch, fusion):
    out = run(gaf_cmd(a, d, batch, "--repeat", str(a.repeat), "-q", *([] if fusion else ["--no-fusion"])))
    return float(re.search(r"forward \((?:un)?fused\): median ([\d.]+) ms", out).group(1))


def ort(a, d, env):
    r = json.loads(run(["node", os.path.join(HERE, "ort_run.js"), d + "/model.onnx", "input_ids=" + d + "/input_ids.npy",
                        str(a.repeat), "attention_mask=" + d + "/attention_mask.npy"], env))
    return statistics.median(r["ms"])


def attention_ms(a, d, batch):
    out = run(gaf_cmd(a, d, batch, "--repeat", str(a.repeat), "--profile"))
    ms = [float(m.group(1)) for m in re.finditer(r"\bAttention\s+([\d.]+) ms", out)]
    return statistics.median(ms) if ms else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gaf", required=True)
    ap.add_argument("--node-path", required=True)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--work-dir", default="/tmp/gaf_bert_batch")
    a = ap.parse_args()
    env = dict(os.environ, NODE_PATH=a.node_path)
    rows = []
    for batch in a.batch:
        d = export(a, batch)
        got = {"fused": [], "unfused": [], "ort": []}
        for r in range(a.rounds):
            got["fused"].append(ours(a, d, batch, True))
            got["unfused"].append(ours(a, d, batch, False))
            got["ort"].append(ort(a, d, env))
            print("batch %d: round %d/%d done" % (batch, r + 1, a.rounds), file=sys.stderr)
        att = attention_ms(a, d, batch)
        rows.append((batch, got, att))
    print("| batch | ours fused ms | spread | ours unfused ms | spread | ORT ms | spread | unfused / fused | fused / ORT "
          "| attention ms per layer | attention GFLOP/s |")
    print("|---|---:|---|---:|---|---:|---|---:|---:|---:|---:|")
    for batch, got, att in rows:
        med = {k: statistics.median(v) for k, v in got.items()}
        spread = {k: "%.1f..%.1f" % (min(v), max(v)) for k, v in got.items()}
        flops = 4.0 * batch * HEADS * SEQ * SEQ * (HIDDEN // HEADS)  # Q K^T and probs V
        print("| %d | %.1f | %s | %.1f | %s | %.1f | %s | %.2fx | %.2fx | %s | %s |" % (
            batch, med["fused"], spread["fused"], med["unfused"], spread["unfused"], med["ort"], spread["ort"],
            med["unfused"] / med["fused"], med["fused"] / med["ort"],
            "%.3f" % att if att else "-", "%.0f" % (flops / att / 1e6) if att else "-"))


if __name__ == "__main__":
    main()
