"""Hugging Face goldens for `lobes ablate` (src/ablate): the generated model tiny-llama
(models/tiny-llama, loaded into transformers' LlamaForCausalLM exactly as
make_loglik_goldens.py does) with the blocks of a region zeroed in the Hugging Face weights
W [d_out, d_in], and the summed log-likelihood of each item's continuation given its context.

The regions are wanda-style block sets (flat index bi * colBlocks + bj per matrix, block size
48 × 48, so the blocks at the matrices' edges are partial: 256 = 5 · 48 + 16). This script turns
them into Hugging Face rows/cols itself, zeroes those weights, and records the blocks, so the
test can check that lobes' ablation.json lists the same blocks and that lobes' log-likelihoods
after the ablation equal these.

The token split is lm-evaluation-harness's: trailing whitespace of the context moves to the
continuation; whole = encode(context + continuation), the continuation's tokens are whole minus
encode(context) (tokenizers' encode, with the tokenizer's post-processor).

Run from the repository root:
    /work/venv/bin/python test/goldens/make_ablate_goldens.py
Output (committed): test/goldens/ablate/tiny-llama.json.
"""
import json
import math
import os
import sys

import torch
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_loglik_goldens import MODEL, ROOT, load  # noqa: E402

OUT = os.path.join(ROOT, "test", "goldens", "ablate", "tiny-llama.json")
BLOCK = 48
DIMS = {"gate_proj": (256, 64), "up_proj": (256, 64), "down_proj": (64, 256)}
REGIONS = {
    "A": {
        "layers.0.mlp.gate_proj": [11],
        "layers.0.mlp.up_proj": [0, 7],
        "layers.1.mlp.gate_proj": [3],
        "layers.1.mlp.down_proj": [5, 6],
    },
    "B": {
        "layers.0.mlp.up_proj": [7, 8],
        "layers.1.mlp.down_proj": [6],
    },
}
ITEMS = [
    ("a1", "A", "The cat sat on the", " mat and slept."),
    ("a2", "A", "Two plus two is", " four, said the teacher."),
    ("a3", "A", "She opened the door ", "and smiled at them."),
    ("b1", "B", "Rain fell over the", " quiet village all night."),
    ("b2", "B", "He wrote a letter to", " his oldest friend."),
    ("b3", "B", "When the bell rang,", " everyone left the room."),
]


def hf_blocks(region):
    out = []
    for name in sorted(region, key=lambda n: (int(n.split(".")[1]), ["gate_proj", "up_proj", "down_proj"].index(n.split(".")[-1]))):
        d_out, d_in = DIMS[name.split(".")[-1]]
        cb = math.ceil(d_in / BLOCK)
        for i in sorted(region[name]):
            bi, bj = divmod(i, cb)
            out.append({"tensor": f"model.{name}.weight", "rows": [bi * BLOCK, min((bi + 1) * BLOCK, d_out)], "cols": [bj * BLOCK, min((bj + 1) * BLOCK, d_in)]})
    return out


def minus(a, b):
    return {k: [i for i in v if i not in b.get(k, [])] for k, v in a.items() if [i for i in v if i not in b.get(k, [])]}


def split(tok, context, continuation):
    trimmed = context.rstrip()
    cont = context[len(trimmed):] + continuation
    whole = tok.encode(trimmed + cont).ids
    ctx = tok.encode(trimmed).ids
    return ctx, whole[len(ctx):]


def score(model, reqs):
    out = []
    for ctx, cont in reqs:
        ids = (ctx + cont)[:-1]
        with torch.no_grad():
            lsm = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
        out.append(sum(float(lsm[len(ctx) - 1 + j, t]) for j, t in enumerate(cont)))
    return out


def main():
    torch.manual_seed(0)
    tok = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    reqs = [split(tok, c, x) for (_, _, c, x) in ITEMS]
    model = load()
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    before = score(model, reqs)
    regions = {"A": hf_blocks(REGIONS["A"]), "A∖B": hf_blocks(minus(REGIONS["A"], REGIONS["B"]))}
    after = {}
    for key, blocks in regions.items():
        model.load_state_dict(sd)
        with torch.no_grad():
            for b in blocks:
                w = model.get_parameter(b["tensor"])
                w[b["rows"][0]:b["rows"][1], b["cols"][0]:b["cols"][1]] = 0
        after[key] = score(model, reqs)
    out = {
        "model": "tiny-llama",
        "block": [BLOCK, BLOCK],
        "regions": REGIONS,
        "items": [{"id": i, "group": g, "context": c, "continuation": x, "contextIds": r[0], "continuationIds": r[1]} for (i, g, c, x), r in zip(ITEMS, reqs)],
        "blocks": regions,
        "before": before,
        "after": after,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
