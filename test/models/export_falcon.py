#!/usr/bin/python3
"""A Falcon-style decoder block stack, spelled as Falcon-7B / BLOOM write it: **parallel
residual** (one LayerNorm read by attention and the MLP side by side, x + attn(ln(x)) + mlp(ln(x))),
**multi-query attention** (12 query heads, one shared key/value head expanded over the heads),
bias-free projections, scaled scores plus an **ALiBi bias** (a constant per-head slope times the
key position, [1, heads, 1, S]) and a causal mask written with torch.where, erf GELU MLP (4x).
Ends with a final LayerNorm. Input: hidden states [1, 32, 128] (no embeddings).

usage: export_falcon.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import math

import torch
from torch import nn

from zoo_export import export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, LAYERS=2, SEQ=32),
         "bench": dict(HIDDEN=768, HEADS=12, LAYERS=12, SEQ=128)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, LAYERS, SEQ: the test sizes unless --size says otherwise


def alibi_slopes(heads):
    """ALiBi's geometric per-head slopes (heads a power of two, or the nearest below, as BLOOM)."""
    closest = 2 ** math.floor(math.log2(heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** (i + 1) for i in range(closest)]
    if closest < heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** (2 * i + 1) for i in range(heads - closest)]
    return torch.tensor(slopes)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.D = HIDDEN // HEADS
        self.query = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.key = nn.Linear(HIDDEN, self.D, bias=False)  # one key head, shared by every query head
        self.value = nn.Linear(HIDDEN, self.D, bias=False)
        self.dense = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)).view(1, 1, SEQ, SEQ))
        self.register_buffer("alibi", (alibi_slopes(HEADS)[:, None] * torch.arange(SEQ)[None, :]).view(1, HEADS, 1, SEQ))

    def forward(self, x):
        b, s, _ = x.shape
        q = self.query(x).view(b, s, HEADS, self.D).transpose(1, 2)
        k = self.key(x).view(b, s, 1, self.D).transpose(1, 2).expand(b, HEADS, s, self.D)
        v = self.value(x).view(b, s, 1, self.D).transpose(1, 2).expand(b, HEADS, s, self.D)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.D) + self.alibi[:, :, :, :s]
        # The fill as a tensor of the scores' dtype: a Python float is exported as a double
        # constant that makes the Where ill-typed (ORT refuses the model, as gaf does).
        fill = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype)
        scores = torch.where(self.causal[:, :, :s, :s], scores, fill)
        probs = torch.softmax(scores, dim=-1)
        return self.dense(torch.matmul(probs, v).transpose(1, 2).reshape(b, s, HIDDEN))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(HIDDEN)
        self.attn = Attention()
        self.fc_in = nn.Linear(HIDDEN, 4 * HIDDEN, bias=False)
        self.fc_out = nn.Linear(4 * HIDDEN, HIDDEN, bias=False)

    def forward(self, x):
        h = self.ln(x)
        return x + self.attn(h) + self.fc_out(nn.functional.gelu(self.fc_in(h)))


class Falcon(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)


if __name__ == "__main__":
    export(Falcon, lambda: torch.randn(1, SEQ, HIDDEN), globals(), SIZES)
