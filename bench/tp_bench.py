#!/usr/bin/env python3
"""Tensor parallelism on this machine: BERT-base (12 layers, seq 128) as 2 ranks x 1 thread
(`mpirun -np 2 gaf run --tp 2 --threads 1`) against 1 process x 2 threads, and the comm_compute
fusion against the same run with it disabled (AllReduce alone, then bias + residual + LayerNorm
as their own kernel). Interleaved rounds; medians and spread.

Two numbers per configuration and round:
  forward    `gaf run`'s median forward time (rank 0's);
  comm part  from `--profile` (rank 0, each group timed alone, median of --repeat): the
             comm_compute groups (fused), or the AllReduce groups plus the group after each
             (unfused: bias, residual and LayerNorm), summed over the layers.

usage: bench/tp_bench.py [--gaf build/gaf] [--rounds 3] [--repeat 20] [--json FILE]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys

MPIRUN = ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none",
          "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]
GROUP = re.compile(r"^\s+g(\d+)\s+(\S+)\s+(.+?)\s+([\d.]+) ms")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return p.stdout


def forward_ms(out):
    return float(re.search(r"forward \([^)]*\): median ([\d.]+) ms", out).group(1))


def comm_part_ms(out):
    groups = [(int(m.group(1)), m.group(2), m.group(3).strip(), float(m.group(4)))
              for m in map(GROUP.match, out.splitlines()) if m]
    fused = [ms for _, kind, _, ms in groups if kind == "comm_compute"]
    if fused:
        return sum(fused)
    total = 0.0
    for i, (_, _, label, ms) in enumerate(groups):
        if label.startswith("AllReduce") and i + 1 < len(groups):
            total += ms + groups[i + 1][3]
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gaf", default="build/gaf")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    model = [a.gaf, "run", "builtin:bert-base", "--repeat", str(a.repeat)]
    configs = {
        "1 process x 2 threads": model + ["--threads", "2"],
        "2 ranks x 1 thread, comm_compute": MPIRUN + model + ["--tp", "2", "--threads", "1", "--profile"],
        "2 ranks x 1 thread, comm_compute off": MPIRUN + model + ["--tp", "2", "--threads", "1", "--profile",
                                                                 "--disable-kind", "comm_compute"],
    }
    res = {k: {"forward": [], "comm": []} for k in configs}
    for r in range(a.rounds):
        for name, cmd in configs.items():
            out = run(cmd)
            res[name]["forward"].append(forward_ms(out))
            if "--profile" in cmd:
                res[name]["comm"].append(comm_part_ms(out))
            print("round %d %-38s forward %.2f ms" % (r + 1, name, res[name]["forward"][-1]), flush=True)

    def med(v):
        return statistics.median(v) if v else float("nan")

    def spread(v):
        return "%.0f%%" % (100 * (max(v) - min(v)) / med(v)) if len(v) > 1 else "-"

    base = med(res["1 process x 2 threads"]["forward"])
    print("\nBERT-base, seq 128, %d rounds (medians; spread = (max-min)/median)" % a.rounds)
    print("%-38s %12s %8s %10s %16s" % ("configuration", "forward ms", "spread", "vs 1x2", "comm part ms"))
    for name, v in res.items():
        print("%-38s %12.2f %8s %9.2fx %16s" % (name, med(v["forward"]), spread(v["forward"]), med(v["forward"]) / base,
                                               "%.2f" % med(v["comm"]) if v["comm"] else "-"))
    fused = med(res["2 ranks x 1 thread, comm_compute"]["comm"])
    unfused = med(res["2 ranks x 1 thread, comm_compute off"]["comm"])
    print("comm part, unfused / fused: %.2fx (AllReduce + bias/residual/LayerNorm, summed over 24 per forward)" %
          (unfused / fused))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
