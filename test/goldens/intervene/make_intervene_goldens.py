"""Hugging Face goldens for lobes' interventions (src/runtime/intervene.ts).

The generated model tiny-llama (models/tiny-llama/model.onnx, the weights the log-likelihood
goldens load, see make_loglik_goldens.py) is loaded into transformers' LlamaForCausalLM (float32,
eager attention). Each case edits activations with PyTorch hooks, the way lobes' interventions
edit the graph:

  layers.{i}.resid_out     forward hook on model.layers[i] (its output)
  layers.{i}.mlp.in        forward pre-hook on model.layers[i].mlp (its input)
  layers.{i}.mlp.down_in   forward pre-hook on model.layers[i].mlp.down_proj (its input)
  final.hidden             forward hook on model.norm (its output)

The case `mlp_out_scale` scales the MLP's output (a forward hook on model.layers[i].mlp), which
lobes does as `scale` at mlp.down_in: down_proj has no bias, so down_proj(s·x) = s·down_proj(x).
With `positions: last` the hook edits only the last position of each (unpadded) sequence.

Recorded per case, for every sequence at its last token: every layer's mlp.in, mlp.down_in and
resid_out, final.hidden, the logits; layer 0's and 1's attention weights of the last query row;
and per log-likelihood request (the first two of test/goldens/loglik/tiny-llama.json), every
continuation token's log-probability with the edits in place.

Run from the repository root:
    /work/venv/bin/python test/goldens/intervene/make_intervene_goldens.py
Output (committed): test/goldens/intervene/tiny-llama.json.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from make_loglik_goldens import load  # noqa: E402

OUT = os.path.join(HERE, "tiny-llama.json")
LOGLIK = os.path.join(os.path.dirname(HERE), "loglik", "tiny-llama.json")

SEQS = [
    [509, 17, 40, 301, 99, 7, 250],
    [509, 480, 3, 77],
    [509, 120, 44, 8, 16, 311, 12, 13, 14, 15, 201],
]


def vec(seed, n, scale):
    return (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)


HIDDEN = 64
INTER = 256
STEER = vec(1, HIDDEN, 0.5)
REPL = vec(2, HIDDEN, 1.0)
SCALES = (1 + vec(3, HIDDEN, 0.3)).astype(np.float32)

CASES = {
    "none": [],
    "resid_add": [{"hook": "layers.0.resid_out", "op": "add", "value": STEER}],
    "resid_add_last": [{"hook": "layers.0.resid_out", "op": "add", "value": STEER, "positions": "last"}],
    "mlp_out_scale": [{"hook": "layers.1.mlp.down_in", "op": "scale", "value": 0.5, "hf": ("mlp_out", 1)}],
    "down_in_zero": [{"hook": "layers.0.mlp.down_in", "op": "zero"}],
    "mlp_in_replace": [{"hook": "layers.1.mlp.in", "op": "replace", "value": REPL}],
    "final_add": [{"hook": "final.hidden", "op": "add", "value": STEER}],
    "two_edits": [
        {"hook": "layers.0.resid_out", "op": "scale", "value": SCALES},
        {"hook": "layers.1.resid_out", "op": "add", "value": STEER},
    ],
}


def edit(x, iv):
    """The edited tensor (x [batch, seq, dim])."""
    op = iv["op"]
    v = iv.get("value")
    t = torch.tensor(v) if isinstance(v, np.ndarray) else v
    if op == "add":
        y = x + t
    elif op == "scale":
        y = x * t
    elif op == "replace":
        y = torch.zeros_like(x) + t
    elif op == "zero":
        y = torch.zeros_like(x)
    else:
        raise ValueError(op)
    if iv.get("positions") == "last":
        out = x.clone()
        out[:, -1] = y[:, -1]
        return out
    return y


def module_of(model, iv):
    """(module, 'pre' | 'post') holding the hook's value."""
    if "hf" in iv and iv["hf"][0] == "mlp_out":
        return model.model.layers[iv["hf"][1]].mlp, "post"
    h = iv["hook"]
    if h == "final.hidden":
        return model.model.norm, "post"
    parts = h.split(".")
    layer = model.model.layers[int(parts[1])]
    site = ".".join(parts[2:])
    if site == "resid_out":
        return layer, "post"
    if site == "mlp.in":
        return layer.mlp, "pre"
    if site == "mlp.down_in":
        return layer.mlp.down_proj, "pre"
    raise ValueError(h)


def install(model, ivs):
    handles = []
    for iv in ivs:
        mod, side = module_of(model, iv)
        if side == "pre":
            handles.append(mod.register_forward_pre_hook(lambda m, args, iv=iv: (edit(args[0], iv),) + tuple(args[1:])))
        else:
            handles.append(mod.register_forward_hook(lambda m, args, out, iv=iv: edit(out, iv)))
    return handles


def captures(model):
    """Hooks (registered after the edits, so they see the edited values) recording every site's value."""
    got = {}
    handles = []
    for i, layer in enumerate(model.model.layers):
        handles.append(layer.mlp.register_forward_pre_hook(lambda m, a, i=i: got.__setitem__(f"layers.{i}.mlp.in", a[0].detach().clone())))
        handles.append(layer.mlp.down_proj.register_forward_pre_hook(lambda m, a, i=i: got.__setitem__(f"layers.{i}.mlp.down_in", a[0].detach().clone())))
        handles.append(layer.register_forward_hook(lambda m, a, o, i=i: got.__setitem__(f"layers.{i}.resid_out", o.detach().clone())))
        handles.append(layer.self_attn.register_forward_hook(lambda m, a, o, i=i: got.__setitem__(f"layers.{i}.attn.weights", o[1].detach().clone())))
    handles.append(model.model.norm.register_forward_hook(lambda m, a, o: got.__setitem__("final.hidden", o.detach().clone())))
    return got, handles


def r(xs):
    return [float(f"{x:.8g}") for x in np.asarray(xs, dtype=np.float64).ravel()]


def main():
    torch.manual_seed(0)
    model = load()
    requests = json.load(open(LOGLIK))["requests"][:2]
    out = {"model": "tiny-llama", "seqs": SEQS, "cases": {}}
    for name, ivs in CASES.items():
        edits = install(model, ivs)
        got, caps = captures(model)
        seqs = []
        for ids in SEQS:
            got.clear()
            with torch.no_grad():
                logits = model(torch.tensor([ids])).logits[0]
            rec = {k: r(v[0, -1]) for k, v in got.items() if not k.endswith("attn.weights")}
            rec["attn"] = {k: r(v[0, :, -1, :]) for k, v in got.items() if k.endswith("attn.weights")}
            rec["logits"] = r(logits[-1])
            seqs.append(rec)
        for h in caps:
            h.remove()
        loglik = []
        for q in requests:
            conts = []
            for c in q["continuations"]:
                ids = (q["context"] + c["tokens"])[:-1]
                with torch.no_grad():
                    lsm = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
                n = len(q["context"])
                conts.append({"tokens": c["tokens"], "logprobs": [float(lsm[n - 1 + j, t]) for j, t in enumerate(c["tokens"])]})
            loglik.append({"context": q["context"], "continuations": conts})
        for h in edits:
            h.remove()
        spec = [{k: (r(v) if isinstance(v, np.ndarray) else v) for k, v in iv.items() if k != "hf"} for iv in ivs]
        out["cases"][name] = {"interventions": spec, "seqs": seqs, "loglik": loglik}
    with open(OUT, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
