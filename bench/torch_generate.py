#!/usr/bin/python3
"""Greedy decoding in PyTorch eager with its own KV cache, on the model of
test/models/export_gpt2_kv.py (same seed, same weights, the sizes of MODEL_DIR/model_config.json) and the prompt MODEL_DIR/input_ids.npy:
the loop of engine/generator.cpp (prefill + argmax, then one step per token). Two threads.
Prints one JSON line: per round the time to first token and the step times (ms), and the last
round's tokens.

usage: torch_generate.py MODEL_DIR NEW_TOKENS ROUNDS
"""
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "models"))
from export_gpt2_kv import configure_from, make_model  # noqa: E402


def main():
    model_dir, new_tokens, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(2)
    configure_from(model_dir)
    model = make_model()
    prompt = torch.from_numpy(np.load(os.path.join(model_dir, "input_ids.npy")))
    result = {"first_token_ms": [], "step_ms": [], "tokens": []}
    with torch.inference_mode():
        for r in range(rounds + 1):  # round 0 warms up and is not reported
            t0 = time.perf_counter()
            logits, past = model(prompt)
            nxt = int(torch.argmax(logits[0, -1]))
            first = (time.perf_counter() - t0) * 1e3
            tokens, steps = [nxt], []
            for _ in range(1, new_tokens):
                t0 = time.perf_counter()
                logits, past = model(torch.tensor([[nxt]], dtype=torch.long), past)
                nxt = int(torch.argmax(logits[0, -1]))
                steps.append((time.perf_counter() - t0) * 1e3)
                tokens.append(nxt)
            if r > 0:
                result["first_token_ms"].append(first)
                result["step_ms"] += steps
                result["tokens"] = tokens
    print(json.dumps(result))


if __name__ == "__main__":
    main()
