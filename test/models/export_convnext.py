#!/usr/bin/python3
"""ConvNeXt-style CNN written by hand: a 4x4/4 patchify stem and 2x2/2 downsampling Convs, each
with a LayerNorm over the channels of the NCHW tensor (written out as ConvNeXt's channels-first
LayerNorm: mean and variance over axis 1); blocks of a 7x7 depthwise Conv, a permute to NHWC,
LayerNorm, Linear (4x expansion), GELU, Linear, a layer scale (per-channel multiply), a permute back
and the residual Add; a global average pool, LayerNorm and a Linear classifier. Layer scales and
norm parameters are random (not ones), so that every one is tested. The output is the logits.

usage: export_convnext.py OUT_DIR OPSET [OPSET...] [--size test|bench] [--batch B]
       (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import torch
from torch import nn

from zoo_export import export, use_size

# DEPTHS and DIMS per stage (bench: ConvNeXt-T).
SIZES = {"test": dict(IMAGE=32, DEPTHS=(1, 1), DIMS=(16, 32), CLASSES=10),
         "bench": dict(IMAGE=224, DEPTHS=(3, 3, 9, 3), DIMS=(96, 192, 384, 768), CLASSES=1000)}
use_size(globals(), SIZES, "test")  # IMAGE, DEPTHS, DIMS, CLASSES: the test sizes unless --size says otherwise


def randomized(norm):
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.2, 0.2)
    return norm


class ChannelsFirstLayerNorm(nn.Module):
    """LayerNorm over axis 1 of [N, C, H, W], as ConvNeXt writes it."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(channels).uniform_(0.5, 1.5))
        self.bias = nn.Parameter(torch.empty(channels).uniform_(-0.2, 0.2))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = randomized(nn.LayerNorm(dim, eps=1e-6))
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.empty(dim).uniform_(0.1, 1.0))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(nn.functional.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], 3
        for i, (depth, dim) in enumerate(zip(DEPTHS, DIMS)):
            if i == 0:
                layers += [nn.Conv2d(cin, dim, 4, 4), ChannelsFirstLayerNorm(dim)]
            else:
                layers += [ChannelsFirstLayerNorm(cin), nn.Conv2d(cin, dim, 2, 2)]
            layers += [Block(dim) for _ in range(depth)]
            cin = dim
        self.features = nn.Sequential(*layers)
        self.norm = randomized(nn.LayerNorm(cin, eps=1e-6))
        self.head = nn.Linear(cin, CLASSES)

    def forward(self, img):
        return self.head(self.norm(self.features(img).mean([-2, -1])))


if __name__ == "__main__":
    export(ConvNeXt, lambda: torch.randn(1, 3, IMAGE, IMAGE), globals(), SIZES)
