#!/usr/bin/python3
"""PyTorch's own transformer encoder, as people build it without writing attention by hand:
nn.TransformerEncoder over nn.TransformerEncoderLayer (batch_first, post-LN, ReLU, dropout 0).
Its nn.MultiheadAttention is spelled unlike any hand-written block: the input is transposed to
[seq, batch, hidden] before one in_proj MatMul (Q|K|V), the heads are [seq, batch * heads, d]
reshaped and transposed per Q, K and V, Q is scaled before the scores, and out_proj is a Gemm on
[seq * batch, hidden] whose rows are reshaped and transposed back before the residual Add.
Input: hidden states [1, 32, 128] (no embeddings).

usage: export_torch_encoder.py OUT_DIR OPSET [OPSET...]   (writes model.onnx, input.npy, expected.npy; see zoo_export.py)
"""
from torch import nn
import torch

from zoo_export import export, use_size

SIZES = {"test": dict(HIDDEN=128, HEADS=4, FFN=256, LAYERS=2, SEQ=32),
         "bench": dict(HIDDEN=768, HEADS=12, FFN=3072, LAYERS=12, SEQ=128)}
use_size(globals(), SIZES, "test")  # HIDDEN, HEADS, FFN, LAYERS, SEQ: the test sizes unless --size says otherwise


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)

    def forward(self, x):
        # Exported with grad enabled: under no_grad the layer and its attention take their fused
        # fast paths (_transformer_encoder_layer_fwd, _native_multi_head_attention), which torch
        # 1.13 cannot export (detach() is not in the exported graph). Run eagerly (the expected
        # output, the bench's timing) they take them, as a user's model does.
        if torch.onnx.is_in_onnx_export():
            with torch.enable_grad():
                return self.encoder(x).detach()
        return self.encoder(x)


if __name__ == "__main__":
    export(Encoder, lambda: torch.randn(1, SEQ, HIDDEN), globals(), SIZES)
