#!/usr/bin/python3
"""MobileNetV2-style CNN written by hand: a 3x3/2 stem, inverted residual blocks (1x1 expansion,
3x3 depthwise Conv (group = channels), 1x1 linear projection, each Conv followed by BatchNorm,
ReLU6 after the first two; a residual Add where stride 1 keeps the shape), a 1x1 head Conv with
ReLU6, a global average pool, Dropout (eval: identity) and a Linear classifier. BatchNorm layers
carry random running statistics (eval mode). The output is the logits.

usage: export_mobilenet.py OUT_DIR OPSET [OPSET...] [--size test|bench] [--batch B]
       (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import torch
from torch import nn

from export_resnet import batch_norm
from zoo_export import export, use_size

# BLOCKS: (expansion t, output channels c, repeats n, first stride s), MobileNetV2's table.
SIZES = {"test": dict(IMAGE=32, STEM=8, BLOCKS=((1, 8, 1, 1), (4, 12, 2, 2)), HEAD=32, CLASSES=10),
         "bench": dict(IMAGE=224, STEM=32, BLOCKS=((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                                   (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)),
                       HEAD=1280, CLASSES=1000)}
use_size(globals(), SIZES, "test")  # IMAGE, STEM, BLOCKS, HEAD, CLASSES: the test sizes unless --size says otherwise


def conv_bn(cin, cout, kernel, stride=1, groups=1, relu6=True):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), batch_norm(cout)]
    return nn.Sequential(*layers, nn.ReLU6()) if relu6 else nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = cin * t
        layers = [] if t == 1 else [conv_bn(cin, hidden, 1)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, relu6=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [conv_bn(3, STEM, 3, 2)], STEM
        for t, c, n, s in BLOCKS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, HEAD, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(HEAD, CLASSES))

    def forward(self, img):
        x = nn.functional.adaptive_avg_pool2d(self.features(img), 1)
        return self.classifier(torch.flatten(x, 1))


if __name__ == "__main__":
    export(MobileNetV2, lambda: torch.randn(1, 3, IMAGE, IMAGE), globals(), SIZES)
