#!/usr/bin/python3
"""A post-LN encoder whose attention is written with torch.einsum, as many research codebases
write it: one qkv Linear reshaped to [batch, seq, 3, heads, d] and unbound, scores
einsum("bqhd,bkhd->bhqk") times d^-0.5, context einsum("bhqk,bkhd->bqhd") reshaped back to rows;
erf GELU MLP (4x). ONNX has them as Einsum nodes, which gaf rewrites at load into Transpose +
MatMul (fusion/frontend/einsum_rewrite.h). Input: hidden states [1, 32, 128] (no embeddings).

usage: export_einsum_encoder.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import torch
from torch import nn

from zoo_export import Layers, export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, LAYERS=2, SEQ=32),
         "bench": dict(HIDDEN=768, HEADS=12, LAYERS=12, SEQ=128)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, LAYERS, SEQ: the test sizes unless --size says otherwise


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.norm1 = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.fc2 = nn.Linear(4 * HIDDEN, HIDDEN)
        self.norm2 = nn.LayerNorm(HIDDEN)

    def forward(self, x):
        b, s, c = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, HEADS, c // HEADS).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * (c // HEADS) ** -0.5
        context = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(b, s, c)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.fc2(nn.functional.gelu(self.fc1(x))))


if __name__ == "__main__":
    export(lambda: Layers(Layer, LAYERS), lambda: torch.randn(1, SEQ, HIDDEN), globals(), SIZES)
