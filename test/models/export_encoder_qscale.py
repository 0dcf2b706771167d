#!/usr/bin/python3
"""A post-LN encoder whose attention is spelled unlike BERT's: the 1/sqrt(d) scale is applied to
Q before the scores MatMul (no Mul/Div between the MatMul and Softmax), K^T is produced once by
transposing K's projection weight and the projection itself (k = x @ W_k^T computed as
(W_k @ x^T) — the Transpose sits on the other side of the MatMul), and there is no mask.
Input: hidden states [1, 32, 128] (no embeddings).

usage: export_encoder_qscale.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import math

import torch
from torch import nn

from zoo_export import Layers, export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, FFN=256, LAYERS=2, SEQ=32),
         "bench": dict(HIDDEN=768, HEADS=12, FFN=3072, LAYERS=12, SEQ=128)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, FFN, LAYERS, SEQ: the test sizes unless --size says otherwise


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k_weight = nn.Parameter(torch.randn(HIDDEN, HIDDEN) / math.sqrt(HIDDEN))
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, x):
        b, s, _ = x.shape
        D = HIDDEN // HEADS
        q = (self.q(x) * (1.0 / math.sqrt(D))).view(b, s, HEADS, D).transpose(1, 2)
        # K^T directly: [b, heads, D, s] from W_k [H, H] times x^T [b, H, s].
        kt = torch.matmul(self.k_weight, x.transpose(-1, -2)).view(b, HEADS, D, s)
        v = self.v(x).view(b, s, HEADS, D).transpose(1, 2)
        probs = torch.softmax(torch.matmul(q, kt), dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, HIDDEN)
        return self.norm(self.out(ctx) + x)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.fc1 = nn.Linear(HIDDEN, FFN)
        self.fc2 = nn.Linear(FFN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, x):
        a = self.attn(x)
        return self.norm(self.fc2(torch.relu(self.fc1(a))) + a)


if __name__ == "__main__":
    export(lambda: Layers(Layer, LAYERS), lambda: torch.randn(1, SEQ, HIDDEN), globals(), SIZES)
