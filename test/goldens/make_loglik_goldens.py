"""Hugging Face goldens for lobes' continuation log-likelihood engine (src/runtime/loglik.ts).

The generated model tiny-llama (models/tiny-llama/model.onnx, committed; every other generated
layout, tiny-llama-past / -opaque / -fp16 / -q4, has the same weights) is loaded into
transformers' LlamaForCausalLM (float32, eager attention) from the ONNX initializers, mapped by
the optimum-style node names (/model/layers.{i}/self_attn/q_proj/MatMul, ...; ONNX stores
W^T). For a few (context, continuations) token-id requests it records, for every continuation
token, log_softmax(logits)[token] at the position before it (the model reads
(context + continuation)[:-1]) and the argmax there, with the gap between the two largest
logits (so a test can tell a robust greedy flag from a near tie).

Run from the repository root:
    /work/venv/bin/pip install onnx
    /work/venv/bin/python test/goldens/make_loglik_goldens.py
Output (committed): test/goldens/loglik/tiny-llama.json.
"""
import json
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import LlamaConfig, LlamaForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "tiny-llama")
OUT = os.path.join(ROOT, "test", "goldens", "loglik", "tiny-llama.json")

REQUESTS = [
    {"context": [509, 17, 40, 301, 99], "continuations": [[7, 250, 12], [5], [300, 301, 302], [44, 45, 46], [80, 81]]},
    {"context": [509], "continuations": [[120, 121, 122, 123], [7], [8, 9]]},
    {"context": [509, 480, 3, 77, 200, 64, 9, 33, 120, 44, 8, 16, 311, 12, 13, 14, 15], "continuations": [[2, 3], [4, 5], [6, 7, 8, 9, 10, 11], [500]]},
    {"context": [17, 40], "continuations": [[41], [42, 43]]},
]


def load():
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    config = LlamaConfig(**{k: v for k, v in cfg.items() if k != "lobes_generator"})
    config._attn_implementation = "eager"
    m = onnx.load(os.path.join(MODEL, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    sd = {}
    for n in m.graph.node:
        for x in n.input:
            if x not in inits:
                continue
            w = inits[x]
            name = n.name
            if n.op_type == "Gather" and name == "/model/embed_tokens/Gather":
                sd["model.embed_tokens.weight"] = w
            elif n.op_type == "MatMul" and w.ndim == 2:
                if name == "/lm_head/MatMul":
                    sd["lm_head.weight"] = w.T
                elif "_proj/MatMul" in name:
                    # /model/layers.{i}/{self_attn|mlp}/{proj}/MatMul
                    parts = name.strip("/").split("/")
                    sd[f"model.{parts[1]}.{parts[2]}.{parts[3]}.weight"] = w.T
            elif n.op_type == "Mul" and w.ndim == 1 and w.shape[0] == config.hidden_size and x.endswith("weight"):
                sd[x] = w
    model = LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict({k: torch.tensor(np.ascontiguousarray(v)) for k, v in sd.items()}, strict=False)
    missing = [k for k in missing if "rotary" not in k]
    assert not missing and not unexpected, (missing, unexpected)
    return model.eval()


def main():
    torch.manual_seed(0)
    model = load()
    out = {"model": "tiny-llama", "requests": []}
    for r in REQUESTS:
        conts = []
        for c in r["continuations"]:
            ids = (r["context"] + c)[:-1]
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0].double()
            lsm = torch.log_softmax(logits, dim=-1)
            n = len(r["context"])
            rows = []
            for j, t in enumerate(c):
                p = n - 1 + j
                top2 = torch.topk(logits[p], 2).values
                rows.append({"logprob": float(lsm[p, t]), "argmax": int(torch.argmax(logits[p])), "gap": float(top2[0] - top2[1])})
            conts.append({"tokens": c, "rows": rows, "logprob": sum(x["logprob"] for x in rows)})
        out["requests"].append({"context": r["context"], "continuations": conts})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
