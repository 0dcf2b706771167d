#!/usr/bin/python3
"""A T5-style pre-norm encoder, spelled as T5 is: RMS norm written x * rsqrt(mean(pow(x, 2)) + eps)
on x cast to float, bias-free Q/K/V/O projections, **unscaled** attention scores plus a **position
bias computed once** (an Embedding looked up by a constant table of relative-position buckets,
then permuted to [1, heads, S, S]) and added to the scores of every layer, the Softmax taken in
float and cast back (`softmax(scores.float()).type_as(scores)`), and a **gated tanh-GELU MLP**
(gelu_tanh(x W0) * (x W1) -> W2, bias-free). Ends with a final RMS norm.
Input: hidden states [1, 32, 128] (no embeddings).

usage: export_t5.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import math

import torch
from torch import nn

from zoo_export import export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, FFN=256, LAYERS=2, SEQ=32, BUCKETS=32),
         "bench": dict(HIDDEN=768, HEADS=12, FFN=2048, LAYERS=12, SEQ=128, BUCKETS=32)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, FFN, LAYERS, SEQ, BUCKETS: the test sizes unless --size says otherwise


def relative_buckets(seq, buckets, max_distance=128):
    """T5's bidirectional relative-position buckets, as a constant [seq, seq] table."""
    pos = torch.arange(seq)
    rel = pos[None, :] - pos[:, None]
    half = buckets // 2
    out = (rel > 0).long() * half
    rel = rel.abs()
    exact = half // 2
    large = exact + (torch.log(rel.float().clamp(min=1) / exact) / math.log(max_distance / exact) *
                     (half - exact)).long()
    large = torch.minimum(large, torch.full_like(large, half - 1))
    return out + torch.where(rel < exact, rel, large)


class RMSNorm(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(HIDDEN))

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.k = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.v = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.o = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x, position_bias):
        b, s, _ = x.shape
        D = HIDDEN // HEADS
        q = self.q(x).view(b, s, HEADS, D).transpose(1, 2)
        k = self.k(x).view(b, s, HEADS, D).transpose(1, 2)
        v = self.v(x).view(b, s, HEADS, D).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) + position_bias  # no 1/sqrt(d): T5 folds it into W_q
        probs = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        return self.o(torch.matmul(probs, v).transpose(1, 2).reshape(b, s, HIDDEN))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.wi_0 = nn.Linear(HIDDEN, FFN, bias=False)
        self.wi_1 = nn.Linear(HIDDEN, FFN, bias=False)
        self.wo = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        return self.wo(nn.functional.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = RMSNorm()
        self.attn = Attention()
        self.mlp_norm = RMSNorm()
        self.mlp = Mlp()

    def forward(self, x, position_bias):
        x = x + self.attn(self.attn_norm(x), position_bias)
        return x + self.mlp(self.mlp_norm(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.relative_attention_bias = nn.Embedding(BUCKETS, HEADS)
        self.register_buffer("buckets", relative_buckets(SEQ, BUCKETS))
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
        self.final_norm = RMSNorm()

    def forward(self, x):
        # Computed once, read by every layer's scores.
        position_bias = self.relative_attention_bias(self.buckets).permute(2, 0, 1).unsqueeze(0)
        for layer in self.layers:
            x = layer(x, position_bias)
        return self.final_norm(x)


if __name__ == "__main__":
    export(Encoder, lambda: torch.randn(1, SEQ, HIDDEN), globals(), SIZES)
