"""Hugging Face goldens for `lobes lens` on the real SmolLM2-135M-Instruct GGUF.

The oracle is transformers' own GGUF load of ../shared/models/smollm2-135m-instruct/
SmolLM2-135M-Instruct.Q4_1.gguf (AutoModelForCausalLM.from_pretrained(dir, gguf_file=NAME),
float32, eager attention). For each prompt, run alone (no padding), with output_hidden_states:
the residual stream after layer i at the last token is hidden_states[i + 1] for every layer but
the last, and the output of model.model.layers[L - 1] (a forward hook) for the last layer, whose
entry in hidden_states is after the final norm. Each is read through model.model.norm and
model.lm_head, and the goldens hold per prompt and layer:

  * the top-5 token ids and their log-probabilities;
  * the entropy (nats) of the distribution;
  * KL(final || layer) (nats), the final layer's distribution against the layer's;
  * the log-probability of each of the letter tokens "A", "B", "C", "D" (`letter_ids`, each one
    token of the vocabulary), where the options' letters are read in a multiple-choice prompt.

Token ids: the prompts are tokenized with the vocabulary and merges of the file and the
pre-tokenizer SmolLM2's tokenizer.json declares (Digits(individual_digits) then ByteLevel), as
make_smollm2_goldens.py does; the TS test checks lobes gives the same ids.

Run from the repository root with ../shared present:
    /work/venv/bin/python test/goldens/lens/make_lens_goldens.py
Writes test/goldens/lens/lens-goldens.json.
"""
import json
import os
import sys

import numpy as np
import tokenizers
import torch
from tokenizers import pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
SMOL_DIR = os.path.join(SHARED, "models", "smollm2-135m-instruct")
SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = os.path.join(ROOT, "test", "goldens", "lens", "lens-goldens.json")
TOP = 5

PROMPTS = [
    "The capital of France is",
    "Kindness is free, and a smile",
    "Question: Which of these is a fruit?\nA. stone\nB. apple\nC. chair\nD. cloud\nAnswer:",
    "Question: What do people usually drink in the morning?\nA. coffee\nB. sand\nC. paint\nD. oil\nAnswer:",
]
LETTERS = ["A", "B", "C", "D"]


def main() -> None:
    path = os.path.join(SMOL_DIR, SMOL_GGUF)
    if not os.path.exists(path):
        sys.exit(f"missing {path}")
    hf_tok = AutoTokenizer.from_pretrained(SMOL_DIR, gguf_file=SMOL_GGUF)
    declared = tokenizers.Tokenizer.from_str(hf_tok.backend_tokenizer.to_str())
    declared.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    model = AutoModelForCausalLM.from_pretrained(SMOL_DIR, gguf_file=SMOL_GGUF, dtype=torch.float32, attn_implementation="eager").eval()
    layers = model.config.num_hidden_layers
    letter_ids = []
    for letter in LETTERS:
        ids = declared.encode(letter, add_special_tokens=False).ids
        if len(ids) != 1:
            sys.exit(f"letter {letter} is {len(ids)} tokens")
        letter_ids.append(ids[0])

    last = {}
    model.model.layers[layers - 1].register_forward_hook(lambda _m, _a, out: last.__setitem__("x", (out[0] if isinstance(out, tuple) else out)[0, -1].detach().clone()))

    items = []
    with torch.no_grad():
        for text in PROMPTS:
            ids = declared.encode(text, add_special_tokens=True).ids
            out = model(torch.tensor([ids]), use_cache=False, output_hidden_states=True)
            hs = out.hidden_states
            resid = [hs[i + 1][0, -1] for i in range(layers - 1)] + [last["x"]]
            logps = [torch.log_softmax(model.lm_head(model.model.norm(x[None, :]))[0].to(torch.float64), dim=-1) for x in resid]
            # the final layer read through the lens is the model's own output
            model_logp = torch.log_softmax(out.logits[0, -1].to(torch.float64), dim=-1)
            gap = float((logps[-1] - model_logp).abs().max())
            if gap > 1e-4:
                sys.exit(f"{text!r}: the last layer through norm and lm_head differs from the logits by {gap}")
            fin = logps[-1]
            per_layer = []
            for lp in logps:
                top = torch.topk(lp, TOP)
                p = lp.exp()
                per_layer.append({
                    "top_ids": [int(i) for i in top.indices],
                    "top_logp": [float(v) for v in top.values],
                    "entropy": float(-(p * lp).sum()),
                    "kl": float((fin.exp() * (fin - lp)).sum()),
                    "letter_logp": [float(lp[i]) for i in letter_ids],
                })
            items.append({"text": text, "ids": ids, "layers": per_layer})
    with open(OUT, "w") as f:
        json.dump({"model": SMOL_GGUF, "top": TOP, "letters": LETTERS, "letter_ids": letter_ids, "layers": layers, "items": items}, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(items)} prompts x {layers} layers")


if __name__ == "__main__":
    main()
