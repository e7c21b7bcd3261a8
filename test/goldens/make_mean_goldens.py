"""Goldens for the mean-pooled capture points (`final.mean`, `layers.{i}.resid_out.mean`).

Rebuilds the seeded tiny LlamaForCausalLM of make_hf_reference.py (both variants; the weights are
checked against that script's committed last-token goldens, so they are the very models whose ONNX
exports are committed) and computes, for each text, the mean over its real tokens of

  * the final normalized hidden state (output_hidden_states[-1]),
  * the residual stream after each decoder layer (the decoder layer's output, from a forward hook).

The means are computed twice: for each text alone (no padding), and in one batch padded on the
left and one padded on the right, with the attention mask and Hugging Face position ids
(cumulative count of real tokens − 1), masking the padded positions out of the mean. The script
asserts the three agree (to 1e-5), so the goldens are what a padding-independent masked mean
gives, and writes the unpadded values.

  /work/venv/bin/python test/goldens/make_mean_goldens.py
  -> test/goldens/hf-tiny-llama31/mean-goldens.json, test/goldens/hf-tiny-llama31-optimum/mean-goldens.json
"""
import importlib.util
import json
import os
import sys

import torch
from safetensors.torch import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PAD = 128004


def load_reference(variant: str):
    """make_hf_reference.py as a module, configured for one variant."""
    argv = sys.argv
    sys.argv = [argv[0], "--variant", variant]
    try:
        spec = importlib.util.spec_from_file_location(f"make_hf_reference_{variant}", os.path.join(HERE, "make_hf_reference.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.argv = argv
    return mod


def means(model, ids_list, side: str | None):
    """Per text: {hook: mean over real tokens}; side None runs each text alone, else one padded batch."""
    layers = model.config.num_hidden_layers
    outs: dict[int, torch.Tensor] = {}
    handles = [layer.register_forward_hook(lambda _m, _i, o, k=k: outs.__setitem__(k, (o[0] if isinstance(o, tuple) else o).detach().clone())) for k, layer in enumerate(model.model.layers)]
    try:
        if side is None:
            batches = [[ids] for ids in ids_list]
        else:
            batches = [ids_list]
        res = []
        for batch in batches:
            T = max(len(x) for x in batch)
            ids = torch.full((len(batch), T), PAD, dtype=torch.long)
            mask = torch.zeros((len(batch), T), dtype=torch.long)
            for b, x in enumerate(batch):
                sl = slice(T - len(x), T) if side == "left" else slice(0, len(x))
                ids[b, sl] = torch.tensor(x)
                mask[b, sl] = 1
            pos = (mask.cumsum(1) - 1).clamp(min=0)
            with torch.no_grad():
                out = model(input_ids=ids, attention_mask=mask, position_ids=pos, output_hidden_states=True, use_cache=False)
            m = mask.unsqueeze(-1).to(torch.float64)
            pooled = lambda h: ((h.to(torch.float64) * m).sum(1) / m.sum(1))
            for b in range(len(batch)):
                row = {"final.mean": pooled(out.hidden_states[-1])[b]}
                for k in range(layers):
                    row[f"layers.{k}.resid_out.mean"] = pooled(outs[k])[b]
                last = int(mask[b].nonzero().max())
                row["_final.hidden"] = out.hidden_states[-1][b, last]
                res.append(row)
        return res
    finally:
        for h in handles:
            h.remove()


def main() -> None:
    for variant in ("dynamo", "optimum"):
        ref = load_reference(variant)
        out_dir = ref.OUT
        committed = json.load(open(os.path.join(out_dir, "goldens.json")))
        last = load_file(os.path.join(out_dir, "goldens.safetensors"))
        model = ref.build_model()
        ids_list = committed["ids"]
        alone = means(model, ids_list, None)
        for i, row in enumerate(alone):
            # the rebuilt weights are the committed export's: its last-token golden is reproduced
            assert torch.allclose(row["_final.hidden"].float(), last["final.hidden"][i], atol=1e-5), f"{variant}: rebuilt model differs from the committed goldens"
        for side in ("left", "right"):
            padded = means(model, ids_list, side)
            for a, b in zip(alone, padded):
                for k in a:
                    if k.startswith("_"):
                        continue
                    assert torch.allclose(a[k], b[k], atol=1e-5), f"{variant} {side} padding changes {k}"
        hooks = [k for k in alone[0] if not k.startswith("_")]
        doc = {
            "variant": variant,
            "note": "row i: text i of goldens.json; the mean over its real tokens (float64 sums of the float32 states); the same within 1e-5 with left and right padding in one batch",
            "ids": ids_list,
            "tensors": {k: [[float(x) for x in r[k]] for r in alone] for k in hooks},
        }
        with open(os.path.join(out_dir, "mean-goldens.json"), "w") as f:
            json.dump(doc, f)
            f.write("\n")
        print(f"wrote {out_dir}/mean-goldens.json ({', '.join(hooks)})")


if __name__ == "__main__":
    main()
