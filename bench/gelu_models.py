# MatMul + bias + GELU at [1,128,768] x [768,3072] (GPT-2 / BERT FFN1), exported at opset 14 with
# the GELU decomposed into primitive ops, for timing the fused group with `gaf run --profile`:
#   gelu_tanh.onnx  torch.nn.functional.gelu(approximate='tanh')  (x*x*x as Mul, then Tanh)
#   gelu_pow.onnx   GPT-2's NewGELU: 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 pow(y, 3))))
#   gelu_erf.onnx   torch.nn.functional.gelu()  (Div, Erf)
# usage: /usr/bin/python3 bench/gelu_models.py OUT_DIR
import math
import sys

import torch


class FFN1(torch.nn.Module):
    def __init__(self, form):
        super().__init__()
        self.lin = torch.nn.Linear(768, 3072)
        self.form = form

    def forward(self, x):
        y = self.lin(x)
        if self.form == "pow":
            return 0.5 * y * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * torch.pow(y, 3.0))))
        return torch.nn.functional.gelu(y, approximate="tanh" if self.form == "tanh" else "none")


out = sys.argv[1] if len(sys.argv) > 1 else "."
for form in ["tanh", "pow", "erf"]:
    torch.manual_seed(0)
    torch.onnx.export(FFN1(form).eval(), torch.randn(1, 128, 768), f"{out}/gelu_{form}.onnx",
                      opset_version=14, input_names=["x"], output_names=["y"])
