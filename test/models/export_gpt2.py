#!/usr/bin/python3
"""GPT-2-style decoder: token + position embeddings, 2 pre-LN blocks, final LN, tied LM head.
The causal mask is written both ways PyTorch models write it: layer 0 selects with torch.where on
a registered bool buffer sliced to [:seq, :seq] (GPT-2's own spelling), layer 1 adds a triangle of
finfo.min. GELU is the tanh approximation spelled out with torch.pow(x, 3.0).

usage: export_gpt2.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import math

import torch
from torch import nn

from zoo_export import export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, LAYERS=2, SEQ=32, VOCAB=96, MAX_POS=64),
         "bench": dict(HIDDEN=768, HEADS=12, LAYERS=12, SEQ=128, VOCAB=8192, MAX_POS=1024)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, LAYERS, SEQ, VOCAB, MAX_POS: the test sizes unless --size says otherwise


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, where_mask):
        super().__init__()
        self.d = HIDDEN // HEADS
        self.c_attn = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.c_proj = nn.Linear(HIDDEN, HIDDEN)
        self.where_mask = where_mask
        self.register_buffer("bias", torch.tril(torch.ones(MAX_POS, MAX_POS, dtype=torch.bool)))

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, HEADS, self.d).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(HIDDEN, dim=2)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        s = x.shape[1]
        if self.where_mask:
            keep = self.bias[:s, :s]
            scores = torch.where(keep, scores, torch.tensor(torch.finfo(scores.dtype).min))
        else:
            tri = torch.full((s, s), torch.finfo(scores.dtype).min).triu(1)
            scores = scores + tri
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        ctx = ctx.transpose(1, 2).reshape(x.shape)
        return self.c_proj(ctx)


class Block(nn.Module):
    def __init__(self, where_mask):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.attn = Attention(where_mask)
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.c_fc = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.c_proj = nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(gelu_tanh(self.c_fc(self.ln_2(x))))


class Gpt2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(MAX_POS, HIDDEN)
        self.h = nn.ModuleList([Block(where_mask=(i == 0)) for i in range(LAYERS)])
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied LM head


if __name__ == "__main__":
    export(Gpt2, lambda: torch.randint(0, VOCAB, (1, SEQ), dtype=torch.long), globals(), SIZES, dynamic_seq_axis=1)
