"""Hugging Face goldens for `lobes attend --cot` (src/attend/cot.ts, src/attend/run.ts).

The generated model tiny-llama (models/tiny-llama, committed; tiny-llama-past has the same weights
with KV-cache inputs) is loaded into transformers' LlamaForCausalLM (float32, eager attention)
from the ONNX initializers (load() of make_loglik_goldens.py). For a few prompts, tokenized with
the model's own tokenizer.json by the `tokenizers` package, it records:

  * greedy generation without any cache: at each step a full forward pass over the prompt and
    the tokens so far, the argmax of the last row, stopping at the EOS id of
    generation_config.json (not kept) or after BUDGET tokens; with the gap between the two
    largest logits at each step (a test can tell a robust argmax from a near tie);
  * then the answer cue '\\n{"choice": "' (its tokens, no special tokens) appended, and the
    attention of the last position (where the letter comes next) over every token, from
    output_attentions: per layer the mean over heads, and the mean over the layers.

Run from the repository root:
    /work/venv/bin/pip install onnx tokenizers
    /work/venv/bin/python test/goldens/make_attend_cot_goldens.py
Output (committed): test/goldens/attend-cot/tiny-llama.json.
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_loglik_goldens import MODEL, ROOT, load  # noqa: E402

OUT = os.path.join(ROOT, "test", "goldens", "attend-cot", "tiny-llama.json")
BUDGET = 12
CUE = '\n{"choice": "'
PROMPTS = [
    "Mia forgot her friend's birthday. What should Mia say?\nA. Sorry, let me make it up to you.\nB. Birthdays are silly.\nExplain, then choose.",
    "小李的同事批评了他的方案。小李应该怎么做？\nA. 认真听取意见\nB. 当场反驳",
    "Tom is late again. Why?",
]


def main():
    torch.manual_seed(0)
    model = load()
    tok = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    eos = json.load(open(os.path.join(MODEL, "generation_config.json")))["eos_token_id"]
    bos = json.load(open(os.path.join(MODEL, "generation_config.json")))["bos_token_id"]
    cue = tok.encode(CUE, add_special_tokens=False).ids
    out = {"model": "tiny-llama", "budget": BUDGET, "eos": eos, "cue": CUE, "cueIds": cue, "items": []}
    for text in PROMPTS:
        ids = [bos] + tok.encode(text, add_special_tokens=False).ids
        gen, gaps, stop = [], [], "budget"
        for _ in range(BUDGET):
            with torch.no_grad():
                logits = model(torch.tensor([ids + gen])).logits[0, -1].double()
            top2 = torch.topk(logits, 2)
            nxt = int(top2.indices[0])
            gaps.append(float(top2.values[0] - top2.values[1]))
            if nxt == eos:
                stop = "eos"
                break
            gen.append(nxt)
        seq = ids + gen + cue
        with torch.no_grad():
            att = model(torch.tensor([seq]), output_attentions=True).attentions
        per_layer = [a[0, :, -1, :].double().mean(dim=0) for a in att]
        mean = torch.stack(per_layer).mean(dim=0)
        out["items"].append({
            "text": text,
            "ids": ids,
            "generated": gen,
            "gaps": gaps,
            "stop": stop,
            "sequence": seq,
            "position": len(seq) - 1,
            "layerWeights": [[float(x) for x in pl] for pl in per_layer],
            "weights": [float(x) for x in mean],
        })
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
