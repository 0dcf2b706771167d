#!/usr/bin/python3
"""Exports a small BERT-style encoder (embeddings, 2 post-LN layers, GELU erf) with PyTorch's own
torch.onnx.export, with dynamic batch/seq axes, and saves PyTorch's output for the same inputs.

usage: export_bert.py OUT_DIR OPSET [--layers N --hidden H --heads A --ffn F --seq S --batch B]
                     [--lengths L1,L2,...]   (each row's real length, the rest padding; default: the
                                              last row padded from 3/4 of S)
                     [--full]  (as Hugging Face's BertModel: token_type_ids too (a third
                                embedding), the mask bias at finfo(float32).min, and a pooler:
                                tanh(dense(hidden[:, 0])) as a second output, pooler_output)
writes OUT_DIR/model.onnx, input_ids.npy, attention_mask.npy, [token_type_ids.npy,] expected.npy
[, expected_pooler.npy]; with --time RUNS, times PyTorch eager on the same model and inputs instead
"""
import json
import math
import os

import numpy as np
import torch
from torch import nn

from padded_rows import attention_mask, batch_parser
from zoo_export import time_eager


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d) + mask
        probs = self.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.shape[0], ctx.shape[1], -1)
        return self.norm(self.dropout(self.dense(ctx)) + x)


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask):
        a = self.attn(x, mask)
        return self.norm(self.down(nn.functional.gelu(self.up(a))) + a)


class Bert(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab=100, max_pos=64):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([Layer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.pos(pos))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class FullBert(Bert):
    """Hugging Face BertModel's front and back: token types, the finfo.min mask bias, the pooler."""

    def __init__(self, layers, hidden, heads, ffn, vocab=100, max_pos=64, types=2):
        super().__init__(layers, hidden, heads, ffn, vocab, max_pos)
        self.token_type = nn.Embedding(types, hidden)
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pos = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.token_type(token_type_ids) + self.pos(pos))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


def main():
    ap = batch_parser()
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=128)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--time", type=int, metavar="RUNS",
                    help="instead of exporting, time RUNS eager forwards of the same model and inputs (2 threads, "
                         "after one warm-up) and print one JSON line, as zoo_export.py's --time")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = (FullBert if a.full else Bert)(a.layers, a.hidden, a.heads, a.ffn, max_pos=max(64, a.seq)).eval()
    ids = torch.randint(0, 100, (a.batch, a.seq), dtype=torch.long)
    mask = attention_mask(ap, a.batch, a.seq, a.lengths)
    if not a.lengths:
        mask[-1, a.seq * 3 // 4:] = 0  # padding in the last sequence exercises the mask path
    inputs, names = (ids, mask), ["input_ids", "attention_mask"]
    outputs, axes = ["last_hidden_state"], {"last_hidden_state": {0: "batch", 1: "seq"}}
    if a.full:
        types = torch.zeros(a.batch, a.seq, dtype=torch.long)
        types[:, a.seq // 2:] = 1  # a second segment in each row's second half
        inputs, names = inputs + (types,), names + ["token_type_ids"]
        outputs, axes["pooler_output"] = outputs + ["pooler_output"], {0: "batch"}
    for n in names:
        axes[n] = {0: "batch", 1: "seq"}
    if a.time is not None:
        print(json.dumps(time_eager(model, inputs, a.time)))
        return
    os.makedirs(a.out_dir, exist_ok=True)
    path = os.path.join(a.out_dir, "model.onnx")
    with torch.no_grad():
        result = model(*inputs)
        torch.onnx.export(model, inputs, path, opset_version=a.opset, input_names=names, output_names=outputs,
                          dynamic_axes=axes)
    for n, t in zip(names, inputs):
        np.save(os.path.join(a.out_dir, n + ".npy"), t.numpy())
    if a.full:
        np.save(os.path.join(a.out_dir, "expected.npy"), result[0].numpy().astype(np.float32))
        np.save(os.path.join(a.out_dir, "expected_pooler.npy"), result[1].numpy().astype(np.float32))
    else:
        np.save(os.path.join(a.out_dir, "expected.npy"), result.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
