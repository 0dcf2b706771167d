#!/usr/bin/python3
"""ResNet-style CNN written by hand (torchvision is not installed here): a 7x7/2 stem with
BatchNorm and ReLU, a 3x3/2 max pool, bottleneck blocks (1x1 -> 3x3 -> 1x1, BatchNorm after each,
a 1x1 strided downsample with BatchNorm where the shape changes, residual Add then ReLU), a global
average pool and a Linear classifier. BatchNorm layers carry random running statistics and affine
parameters (eval mode), so that folding them is tested, not a no-op. The output is the logits.

usage: export_resnet.py OUT_DIR OPSET [OPSET...] [--size test|bench] [--batch B]
       (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import torch
from torch import nn

from zoo_export import export, use_size

# STAGES: (blocks, bottleneck width) per stage; the block's output is 4 x its width.
SIZES = {"test": dict(IMAGE=32, STEM=16, STAGES=((1, 8), (1, 16)), CLASSES=10),
         "bench": dict(IMAGE=224, STEM=64, STAGES=((3, 64), (4, 128), (6, 256), (3, 512)), CLASSES=1000)}  # ResNet-50
use_size(globals(), SIZES, "test")  # IMAGE, STEM, STAGES, CLASSES: the test sizes unless --size says otherwise


def batch_norm(channels):
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
    return bn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), batch_norm(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), batch_norm(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), batch_norm(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), batch_norm(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, STEM, 7, 2, 3, bias=False), batch_norm(STEM), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], STEM
        for i, (count, width) in enumerate(STAGES):
            for j in range(count):
                blocks.append(Bottleneck(cin, width, 2 if (i > 0 and j == 0) else 1))
                cin = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, CLASSES)

    def forward(self, img):
        x = self.blocks(self.stem(img))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


if __name__ == "__main__":
    export(ResNet, lambda: torch.randn(1, 3, IMAGE, IMAGE), globals(), SIZES)
