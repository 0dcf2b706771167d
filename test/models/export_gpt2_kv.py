#!/usr/bin/python3
"""GPT-2-style decoder with a KV cache, exported the way Hugging Face optimum exports one for
generation: two ONNX files from the same module and weights.

  decoder_model.onnx            input_ids [batch, seq]
                                -> logits [batch, seq, vocab], present.{i}.key/value [batch, heads, seq, head_dim]
  decoder_with_past_model.onnx  input_ids [batch, seq], past_key_values.{i}.key/value [batch, heads, past, head_dim]
                                -> logits, present.{i}.key/value [batch, heads, past + seq, head_dim]

The model: token and learned position embeddings, pre-LN blocks, causal mask (GPT-2's bool buffer
sliced to the query rows [past, past + seq) and key columns [0, past + seq), applied with
torch.where), tanh GELU, final LayerNorm, LM head tied to the token embedding. Position ids are
arange(past, past + seq), computed inside the model from the cache's length.

Also written: input_ids.npy (a seeded prompt, 1 x PROMPT ids) and expected_tokens.npy (int64
[1, N]: PyTorch's greedy generation of N tokens after the prompt with its own KV cache).

Also written: model_config.json, the sizes below as set (bench/torch_generate.py rebuilds the
model from it). The defaults are the test's toy; the decoding bench's real size is
--layers 12 --hidden 768 --heads 12 --vocab 8192 (or 50257, GPT-2 small's vocabulary).

--layout single writes the model as one file instead, model.onnx with past inputs (the layout
transformers.js / onnx-community models ship): the prefill is that file with pasts of length 0.

--layout merged writes optimum's merged decoder instead, decoder_model_merged.onnx: both exports
under one `If` on a bool [1] input use_cache_branch (then: the with-past graph, else: the prefill
graph), their weights stored once at the top level (merge_decoders below does what optimum's
merge_decoders does: equal tensors under one name, the branches' own initializers moved out).
The past inputs are inputs of the merged file in both branches; the prefill feeds them empty.

usage: export_gpt2_kv.py OUT_DIR [--new-tokens N] [--prompt-len P] [--layout two-files|single|merged]
                         [--layers L] [--hidden H] [--heads A] [--vocab V] [--max-pos M]
"""
import argparse
import json
import math
import os

import numpy as np
import torch
from torch import nn

# The model's sizes: the test's toy unless configure() sets others before make_model().
HIDDEN, HEADS, LAYERS, VOCAB, MAX_POS = 128, 4, 2, 512, 256
HEAD_DIM = HIDDEN // HEADS
SIZE_KEYS = ("layers", "hidden", "heads", "vocab", "max_pos")


def configure(layers=2, hidden=128, heads=4, vocab=512, max_pos=256):
    """Sets the sizes every module below reads; returns them as a dict (model_config.json)."""
    global HIDDEN, HEADS, LAYERS, VOCAB, MAX_POS, HEAD_DIM
    if hidden % heads:
        raise ValueError("hidden %d is not a multiple of heads %d" % (hidden, heads))
    HIDDEN, HEADS, LAYERS, VOCAB, MAX_POS, HEAD_DIM = hidden, heads, layers, vocab, max_pos, hidden // heads
    return dict(layers=layers, hidden=hidden, heads=heads, vocab=vocab, max_pos=max_pos)


def configure_from(model_dir):
    """The sizes export_gpt2_kv.py wrote to MODEL_DIR/model_config.json (the toy's if absent)."""
    path = os.path.join(model_dir, "model_config.json")
    return configure(**json.load(open(path))) if os.path.exists(path) else configure()


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.c_proj = nn.Linear(HIDDEN, HIDDEN)
        self.register_buffer("bias", torch.tril(torch.ones(MAX_POS, MAX_POS, dtype=torch.bool)))

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, HEADS, HEAD_DIM).transpose(1, 2)

    def forward(self, x, past):
        q, k, v = self.c_attn(x).split(HIDDEN, dim=2)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HEAD_DIM)
        s, total = q.shape[2], k.shape[2]
        keep = self.bias[total - s:total, :total]
        scores = torch.where(keep, scores, torch.tensor(torch.finfo(scores.dtype).min))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        ctx = ctx.transpose(1, 2).reshape(x.shape)
        return self.c_proj(ctx), (k, v)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN)
        self.attn = Attention()
        self.ln_2 = nn.LayerNorm(HIDDEN)
        self.c_fc = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.c_proj = nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x, past):
        a, present = self.attn(self.ln_1(x), past)
        x = x + a
        return x + self.c_proj(gelu_tanh(self.c_fc(self.ln_2(x)))), present


class Gpt2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(MAX_POS, HIDDEN)
        self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, ids, past=None):
        """past: None or a list of (key, value) per layer. Returns logits and the presents."""
        past_len = 0 if past is None else past[0][0].shape[2]
        pos = torch.arange(past_len, past_len + ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        presents = []
        for i, block in enumerate(self.h):
            x, p = block(x, None if past is None else past[i])
            presents.append(p)
        return torch.matmul(self.ln_f(x), self.wte.weight.t()), presents  # tied LM head


def make_model():
    """The seeded model (bench/torch_generate.py builds the same one); the RNG then draws the prompt."""
    torch.manual_seed(0)
    model = Gpt2().eval()
    with torch.no_grad():
        # nn.Embedding's N(0, 1) makes greedy repeat one token forever, which tests nothing; small
        # token and large position embeddings give ~100 distinct tokens in 128 with the top two
        # logits >= 0.03 apart (logit std ~3.4), far above fp32 noise.
        nn.init.normal_(model.wte.weight, std=0.3)
        nn.init.normal_(model.wpe.weight, std=2.0)
    return model


def flat(logits, presents):
    out = [logits]
    for k, v in presents:
        out += [k, v]
    return tuple(out)


class Prefill(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return flat(*self.m(ids))


class WithPast(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, *past):
        return flat(*self.m(ids, [(past[2 * i], past[2 * i + 1]) for i in range(LAYERS)]))


def present_names():
    return [n for i in range(LAYERS) for n in ("present.%d.key" % i, "present.%d.value" % i)]


def past_names():
    return [n for i in range(LAYERS) for n in ("past_key_values.%d.key" % i, "past_key_values.%d.value" % i)]


def merge_decoders(prefill_path, with_past_path, out_path):
    """optimum's merged layout from the two files (see the module text); removes the two files."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    no_past, past = onnx.load(prefill_path), onnx.load(with_past_path)
    names_by_content, top = {}, []

    def hoist(graph, tag):
        """Moves graph's initializers to the top level, one name per distinct tensor."""
        renamed = {}
        for init in graph.initializer:
            a = numpy_helper.to_array(init)
            key = (a.dtype.str, a.shape, a.tobytes())
            if key not in names_by_content:
                name = init.name if all(t.name != init.name for t in top) else tag + "." + init.name
                names_by_content[key] = name
                t = numpy_helper.from_array(a, name)
                top.append(t)
            renamed[init.name] = names_by_content[key]
        del graph.initializer[:]
        for node in graph.node:
            for i, x in enumerate(node.input):
                if x in renamed:
                    node.input[i] = renamed[x]
        for i, o in enumerate(graph.output):  # an initializer returned as an output stays named as such
            if o.name in renamed:
                graph.node.append(helper.make_node("Identity", [renamed[o.name]], [o.name]))
        del graph.input[:]

    inputs = list(past.graph.input)
    outputs = list(past.graph.output)
    hoist(past.graph, "with_past")
    hoist(no_past.graph, "no_past")
    # Branch outputs keep their names (the If's outputs are named the same, as optimum does).
    cond = helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1])
    if_node = helper.make_node("If", ["use_cache_branch"], [o.name for o in outputs], name="optimum::if",
                               then_branch=past.graph, else_branch=no_past.graph)
    for o in outputs:  # the present length differs per branch: a fresh symbol
        if o.name.startswith("present."):
            o.type.tensor_type.shape.dim[2].dim_param = "present_sequence"
    graph = helper.make_graph([if_node], "merged_decoder", inputs + [cond], outputs, initializer=top)
    model = helper.make_model(graph, opset_imports=list(past.opset_import))
    model.ir_version = past.ir_version
    onnx.save(model, out_path)
    os.remove(prefill_path)
    os.remove(with_past_path)


def greedy(model, prompt, n):
    """PyTorch's greedy generation with its own KV cache: n token ids after the prompt."""
    logits, past = model(prompt)
    tokens, margins = [], []
    for _ in range(n):
        top = torch.topk(logits[0, -1], 2).values
        margins.append(float(top[0] - top[1]))
        nxt = int(torch.argmax(logits[0, -1]))
        tokens.append(nxt)
        logits, past = model(torch.tensor([[nxt]], dtype=torch.long), past)
    return np.array([tokens], dtype=np.int64), min(margins)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--max-pos", type=int, default=256)
    ap.add_argument("--layout", choices=["two-files", "single", "merged"], default="two-files")
    a = ap.parse_args()
    config = configure(**{k: getattr(a, k) for k in SIZE_KEYS})
    if a.prompt_len + a.new_tokens > MAX_POS:
        ap.error("prompt + new tokens must fit the %d positions" % MAX_POS)
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "model_config.json"), "w") as f:
        json.dump(config, f)
    model = make_model()
    prompt = torch.randint(0, VOCAB, (1, a.prompt_len), dtype=torch.long)
    with torch.no_grad():
        # Example inputs of different lengths, so the exporter cannot take past for seq.
        ids = torch.randint(0, VOCAB, (1, 3), dtype=torch.long)
        past = [t for _ in range(LAYERS) for t in (torch.randn(1, HEADS, 5, HEAD_DIM),) * 2]
        seq_axes = {0: "batch", 1: "seq"}
        kv_in = {0: "batch", 2: "past"}
        with_past = dict(opset_version=14, input_names=["input_ids"] + past_names(),
                         output_names=["logits"] + present_names(),
                         dynamic_axes={"input_ids": seq_axes, "logits": seq_axes,
                                       **{n: kv_in for n in past_names()},
                                       **{n: {0: "batch", 2: "past+seq"} for n in present_names()}})
        if a.layout == "single":
            torch.onnx.export(WithPast(model), (ids, *past), os.path.join(a.out_dir, "model.onnx"), **with_past)
        else:
            torch.onnx.export(Prefill(model), (ids,), os.path.join(a.out_dir, "decoder_model.onnx"), opset_version=14,
                              input_names=["input_ids"], output_names=["logits"] + present_names(),
                              dynamic_axes={"input_ids": seq_axes, "logits": seq_axes,
                                            **{n: {0: "batch", 2: "seq"} for n in present_names()}})
            torch.onnx.export(WithPast(model), (ids, *past), os.path.join(a.out_dir, "decoder_with_past_model.onnx"),
                              **with_past)
            if a.layout == "merged":
                merge_decoders(os.path.join(a.out_dir, "decoder_model.onnx"),
                               os.path.join(a.out_dir, "decoder_with_past_model.onnx"),
                               os.path.join(a.out_dir, "decoder_model_merged.onnx"))
        expected, margin = greedy(model, prompt, a.new_tokens)
    np.save(os.path.join(a.out_dir, "input_ids.npy"), prompt.numpy())
    np.save(os.path.join(a.out_dir, "expected_tokens.npy"), expected)
    print("smallest top-1/top-2 logit gap over the %d tokens: %.4f" % (a.new_tokens, margin))


if __name__ == "__main__":
    main()
