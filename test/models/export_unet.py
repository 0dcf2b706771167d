#!/usr/bin/python3
"""U-Net-style encoder-decoder written by hand: per level two 3x3 Convs with BatchNorm and ReLU, a
2x2 max pool down; on the way up, the coarser features upsampled (a 2x2/2 ConvTranspose, a
bilinear Resize with align_corners=False, or a nearest Resize, the levels taking them in turn),
concatenated with the encoder's features of that level (the skip connection) and two 3x3 Convs
again; a 1x1 Conv to the classes at full resolution. BatchNorm layers carry random running
statistics (eval mode). The output is the per-pixel logits.

usage: export_unet.py OUT_DIR OPSET [OPSET...] [--size test|bench] [--batch B]
       (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
import torch
from torch import nn

from export_resnet import batch_norm
from zoo_export import export, use_size

# WIDTHS: the channels per level, finest first; the upsampling of each decoder level in turn.
SIZES = {"test": dict(IMAGE=32, WIDTHS=(8, 16, 32, 48), CLASSES=3),
         "bench": dict(IMAGE=224, WIDTHS=(32, 64, 128, 256), CLASSES=8)}
use_size(globals(), SIZES, "test")  # IMAGE, WIDTHS, CLASSES: the test sizes unless --size says otherwise
UPSAMPLING = ("transpose", "bilinear", "nearest")


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), batch_norm(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), batch_norm(cout), nn.ReLU())


class Up(nn.Module):
    def __init__(self, cin, cskip, cout, how):
        super().__init__()
        if how == "transpose":
            self.up = nn.ConvTranspose2d(cin, cin, 2, stride=2)
        elif how == "bilinear":
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        else:
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv = double_conv(cin + cskip, cout)

    def forward(self, x, skip):
        return self.conv(torch.cat([self.up(x), skip], dim=1))


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for w in WIDTHS:
            self.down.append(double_conv(cin, w))
            cin = w
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList()
        for i, w in enumerate(reversed(WIDTHS[:-1])):
            self.up.append(Up(cin, w, w, UPSAMPLING[i % len(UPSAMPLING)]))
            cin = w
        self.head = nn.Conv2d(cin, CLASSES, 1)

    def forward(self, img):
        skips, x = [], img
        for i, level in enumerate(self.down):
            x = level(x if i == 0 else self.pool(x))
            skips.append(x)
        for up, skip in zip(self.up, reversed(skips[:-1])):
            x = up(x, skip)
        return self.head(x)


if __name__ == "__main__":
    export(UNet, lambda: torch.randn(1, 3, IMAGE, IMAGE), globals(), SIZES)
