#!/usr/bin/python3
"""A GPT-style decoder as users export the whole model for batched scoring (issue #38): int64
input_ids and attention_mask of shape [batch, seq] (both axes symbolic), rows padded on the right,
token + position embeddings, pre-LN blocks with tanh GELU, final LN and a tied LM head. The mask is
spelled as Hugging Face's GPT-2 does: the causal triangle selects with torch.where on a bool
buffer sliced to [:seq, :seq], and the padding becomes an additive bias
(1 - mask[:, None, None, :]) * finfo(float32).min on the scores.

usage: export_gpt_padded.py OUT_DIR OPSET [--layers N --hidden H --heads A --vocab V --seq S
                            --batch B --lengths L1,L2,...]   (each row's real length, the rest padding)
writes OUT_DIR/model.onnx, input_ids.npy, attention_mask.npy, expected.npy (the logits)
"""
import math
import os

import numpy as np
import torch
from torch import nn

from export_gpt2 import gelu_tanh  # the zoo GPT-2's, spelled with torch.pow(x, 3.0)
from padded_rows import attention_mask, batch_parser


class Attention(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool)))

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.d).transpose(1, 2)

    def forward(self, x, padding_bias):
        q, k, v = self.c_attn(x).split(x.shape[2], dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        s = x.shape[1]
        scores = torch.where(self.bias[:s, :s], scores, torch.tensor(torch.finfo(scores.dtype).min))
        probs = torch.softmax(scores + padding_bias, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(x.shape)
        return self.c_proj(ctx)


class Block(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, max_pos)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x, padding_bias):
        x = x + self.attn(self.ln_1(x), padding_bias)
        return x + self.c_proj(gelu_tanh(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, max_pos):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.h = nn.ModuleList([Block(hidden, heads, max_pos) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        padding_bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        for block in self.h:
            x = block(x, padding_bias)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied LM head


def main():
    ap = batch_parser()
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=96)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = Gpt(a.layers, a.hidden, a.heads, a.vocab, max(64, a.seq)).eval()
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), dtype=torch.long)
    mask = attention_mask(ap, a.batch, a.seq, a.lengths)
    os.makedirs(a.out_dir, exist_ok=True)
    with torch.no_grad():
        expected = model(ids, mask).numpy()
        torch.onnx.export(model, (ids, mask), os.path.join(a.out_dir, "model.onnx"), opset_version=a.opset,
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                        "logits": {0: "batch", 1: "seq"}})
    np.save(os.path.join(a.out_dir, "input_ids.npy"), ids.numpy())
    np.save(os.path.join(a.out_dir, "attention_mask.npy"), mask.numpy())
    np.save(os.path.join(a.out_dir, "expected.npy"), expected.astype(np.float32))


if __name__ == "__main__":
    main()
