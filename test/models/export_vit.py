#!/usr/bin/python3
"""ViT-style encoder: a 32x32 RGB image cut into 16 patches of 8x8 by a Conv2d with kernel =
stride = 8 (the patch embedding), a class token concatenated in front, a learned position
embedding, 2 pre-LN blocks (nn.MultiheadAttention-free: explicit Q/K/V, exact GELU), final LN.
The output is every token's final hidden state [1, 17, 128].

usage: export_vit.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import math

import torch
from torch import nn

from zoo_export import export, use_size

SIZES = {"test": dict(IMAGE=32, PATCH=8, CHANNELS=3, HIDDEN=128, HEADS=4, FFN=256, LAYERS=2),
         "bench": dict(IMAGE=224, PATCH=16, CHANNELS=3, HIDDEN=768, HEADS=12, FFN=3072, LAYERS=12)}  # ViT-B/16
use_size(globals(), SIZES, "test")  # IMAGE, PATCH, CHANNELS, HIDDEN, HEADS, FFN, LAYERS: the test sizes unless --size says otherwise


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.d = HIDDEN // HEADS
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, HEADS, self.d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        probs = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d)), dim=-1)
        return self.proj(torch.matmul(probs, v).transpose(1, 2).reshape(b, n, HIDDEN))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.attn = Attention()
        self.norm2 = nn.LayerNorm(HIDDEN, eps=1e-6)
        self.fc1 = nn.Linear(HIDDEN, FFN)
        self.fc2 = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


class Vit(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Conv2d(CHANNELS, HIDDEN, kernel_size=PATCH, stride=PATCH)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, HIDDEN))
        tokens = (IMAGE // PATCH) ** 2 + 1
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, tokens, HIDDEN))
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-6)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)  # [1, 16, HIDDEN]
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


if __name__ == "__main__":
    export(Vit, lambda: torch.randn(1, CHANNELS, IMAGE, IMAGE), globals(), SIZES)
