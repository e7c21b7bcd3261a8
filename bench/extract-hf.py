"""Hugging Face transformers' side of bench/extract-vs-hf.ts: the activations `lobes extract
--capture final,mlp` stores, taken with forward hooks on SmolLM2 (the GGUF dequantized by
transformers, float32), at each text's last real token.

Hooks (the same sites as lobes' capture points, src/hooks.ts):
  final.hidden            output of model.norm
  layers.{i}.mlp.in       input of model.layers[i].mlp   (forward pre-hook)
  layers.{i}.mlp.down_in  input of model.layers[i].mlp.down_proj (forward pre-hook)
Each hook keeps only the rows' last-token vectors (copied out of the [batch, seq, d] tensor in
the hook), which is the cheapest a hook-based extraction can do.

Batching: texts sorted by token length (longest first, ties by index, as lobes plans), --batch
rows a batch, padded on the tokenizer's side; results put back in text order.

It runs as a small server so that the model loads once and the timed passes can interleave with
lobes' in one run: it prints {"ready": ...} after loading, then reads commands on stdin:
  run              one timed pass over the texts (tokenization + forward + hooks); prints
                   {"wall": s, "tokens": n}
  dump PATH        the last pass's activations as float32 .npy files under PATH (one per hook)
  quit

    /work/venv/bin/python bench/extract-hf.py --gguf FILE.gguf --texts TEXTS.json --threads 2 [--batch 8]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--texts", required=True, help="JSON list of strings")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--order", choices=["sorted", "dataset"], default="sorted")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d, name = os.path.dirname(os.path.abspath(a.gguf)), os.path.basename(a.gguf)
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    load_s = time.perf_counter() - t0
    texts = json.load(open(a.texts))

    layers = model.model.layers
    store = {}
    state = {"last": None}

    def keep(name):
        def hook(_mod, args, out=None):
            x = out if out is not None else args[0]
            store.setdefault(name, []).append(x[torch.arange(x.shape[0]), state["last"]].float().clone())

        return hook

    names = ["final.hidden"]
    model.model.norm.register_forward_hook(lambda m, i, o: keep("final.hidden")(m, i, o))
    for i, layer in enumerate(layers):
        names += [f"layers.{i}.mlp.in", f"layers.{i}.mlp.down_in"]
        layer.mlp.register_forward_pre_hook(keep(f"layers.{i}.mlp.in"))
        layer.mlp.down_proj.register_forward_pre_hook(keep(f"layers.{i}.mlp.down_in"))

    result = {}

    def one_pass():
        store.clear()
        ids = tok(texts)["input_ids"]
        lengths = [len(x) for x in ids]
        order = list(range(len(texts)))
        if a.order == "sorted":
            order.sort(key=lambda i: (-lengths[i], i))
        done = []
        tokens = 0
        with torch.inference_mode():
            for s in range(0, len(order), a.batch):
                idx = order[s : s + a.batch]
                enc = tok.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt")
                m = enc["attention_mask"]
                tokens += int(m.sum())
                pos = torch.arange(m.shape[1]).expand_as(m)
                state["last"] = torch.where(m.bool(), pos, -1).max(dim=1).values
                model.model(**enc)  # the decoder alone: lm_head's logits are not needed for the hooks
                done += idx
        inv = np.empty(len(done), dtype=np.int64)
        inv[np.array(done)] = np.arange(len(done))
        result.clear()
        for n in names:
            result[n] = torch.cat(store[n]).numpy()[inv]
        return tokens

    print(json.dumps({"ready": True, "load_s": load_s, "hooks": len(names), "torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        cmd = line.strip().split(" ", 1)
        if cmd[0] == "run":
            t = time.perf_counter()
            tokens = one_pass()
            print(json.dumps({"wall": time.perf_counter() - t, "tokens": tokens}), flush=True)
        elif cmd[0] == "dump":
            os.makedirs(cmd[1], exist_ok=True)
            for n, v in result.items():
                np.save(os.path.join(cmd[1], n + ".npy"), v.astype(np.float32))
            print(json.dumps({"dumped": len(result)}), flush=True)
        elif cmd[0] == "quit":
            break


if __name__ == "__main__":
    main()
