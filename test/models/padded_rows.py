"""Rows of different lengths padded to one sequence length, as users batch sentences: the
attention_mask the whole-model exports (export_bert.py, export_gpt_padded.py) take."""
import argparse

import torch


def batch_parser():
    """The command line the whole-model exports share: OUT_DIR OPSET [--seq S --batch B
    --lengths L1,L2,...]; each script adds its model's sizes."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("opset", type=int)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--lengths", default="", help="each row's real length, the rest padding")
    return ap


def attention_mask(ap, batch, seq, lengths):
    """[batch, seq] int64: 1 for each row's first L tokens, 0 for the padding after them.
    `lengths` is "L1,L2,..." (one per row, each 1..seq) or empty (no padding); a wrong one is
    reported through the ArgumentParser `ap`."""
    mask = torch.ones(batch, seq, dtype=torch.long)
    if lengths:
        rows = [int(x) for x in lengths.split(",")]
        if len(rows) != batch or not all(1 <= n <= seq for n in rows):
            ap.error("--lengths: %d lengths in 1..%d expected" % (batch, seq))
        for r, n in enumerate(rows):
            mask[r, n:] = 0
    return mask
