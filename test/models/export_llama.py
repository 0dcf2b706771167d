#!/usr/bin/python3
"""Llama-style decoder: 2 blocks of RMSNorm (x * rsqrt(mean(x^2) + eps) * w), rotary position
embeddings (cos/sin tables, rotate_half by slicing, Neg and Concat), grouped-query attention (4
query heads share 2 K/V heads: layer 0 repeats them with repeat_interleave, layer 1 with
expand + reshape), an additive causal mask, and a SwiGLU MLP (down(silu(gate(x)) * up(x))); no
biases anywhere. Ends with a final RMSNorm.

usage: export_llama.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import math

import torch
from torch import nn

from zoo_export import export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, KV_HEADS=2, FFN=256, LAYERS=2, SEQ=32, VOCAB=96, MAX_POS=64),
         "bench": dict(HIDDEN=768, HEADS=12, KV_HEADS=4, FFN=2048, LAYERS=12, SEQ=128, VOCAB=8192, MAX_POS=1024)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, KV_HEADS, FFN, LAYERS, SEQ, VOCAB, MAX_POS: the test sizes unless --size says otherwise


def head_dim():
    return HIDDEN // HEADS


class RMSNorm(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(HIDDEN))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, interleave):
        super().__init__()
        D = head_dim()
        self.q_proj = nn.Linear(HIDDEN, HEADS * D, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * D, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * D, bias=False)
        self.o_proj = nn.Linear(HEADS * D, HIDDEN, bias=False)
        self.interleave = interleave

    def repeat_kv(self, x):
        rep = HEADS // KV_HEADS
        if self.interleave:
            return torch.repeat_interleave(x, rep, dim=1)
        b, h, s, d = x.shape
        return x[:, :, None, :, :].expand(b, h, rep, s, d).reshape(b, h * rep, s, d)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        D = head_dim()
        q = self.q_proj(x).view(b, s, HEADS, D).transpose(1, 2)
        k = self.k_proj(x).view(b, s, KV_HEADS, D).transpose(1, 2)
        v = self.v_proj(x).view(b, s, KV_HEADS, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(D) + mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.o_proj(ctx.transpose(1, 2).reshape(b, s, HIDDEN))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, interleave):
        super().__init__()
        self.input_layernorm = RMSNorm()
        self.self_attn = Attention(interleave)
        self.post_attention_layernorm = RMSNorm()
        self.mlp = Mlp()

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList([Block(interleave=(i == 0)) for i in range(LAYERS)])
        self.norm = RMSNorm()
        D = head_dim()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
        freqs = torch.outer(torch.arange(MAX_POS).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def forward(self, ids):
        s = ids.shape[1]
        cos, sin = self.cos_cached[:s], self.sin_cached[:s]
        mask = torch.full((s, s), float("-inf")).triu(1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)


if __name__ == "__main__":
    # Static shapes: with a symbolic seq, torch 1.13 exports repeat_interleave as a Loop over
    # SplitToSequence, which the importer does not run.
    export(Llama, lambda: torch.randint(0, VOCAB, (1, SEQ), dtype=torch.long), globals(), SIZES)
