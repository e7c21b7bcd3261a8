"""Hugging Face goldens for lobes' GGUF -> ONNX conversion on the real SmolLM2-135M-Instruct.

The oracle is transformers' own GGUF load of ../shared/models/smollm2-135m-instruct/
SmolLM2-135M-Instruct.Q4_1.gguf (AutoModelForCausalLM.from_pretrained(dir, gguf_file=NAME),
float32, eager attention): it dequantizes every tensor with the `gguf` package and reverses
llama.cpp's Q/K row permutation itself. For a fixed list of English and Chinese texts of mixed
lengths, each run alone (no padding), forward hooks record at the last token:

  * final.hidden: the output of the final RMSNorm (model.model.norm), in full;
  * layers.{i}.mlp.in: the input of layer i's MLP (gate_proj / up_proj input);
  * layers.{i}.mlp.down_in: the input of layer i's down_proj.

The layer vectors (30 layers x 2 points x 24+ texts) are stored as their exact norm and a
128-dimensional sketch S v, with S[k, j] = sign(k, j) / sqrt(128) and sign a fixed integer hash
(see `sign_matrix`, reimplemented in test/convert/smollm2-goldens.ts), so that the goldens stay
small: for a difference d = a - b, |S d| / |S b| estimates |d| / |b| (within about 6 %, the
Johnson-Lindenstrauss spread at 128 dims), which is what a 1e-4 relative tolerance needs.

Token ids: the texts are tokenized with the vocabulary and merges of the file and the
pre-tokenizer SmolLM2's tokenizer.json declares (Digits(individual_digits) then ByteLevel; see
make_tokenizer_goldens.py, which also shows that transformers' GGUF tokenizer loader lacks the
digit split); the same ids go into the model.

Greedy decoding: five prompts rendered through the file's chat template (one user turn plus the
generation prompt), 12 new tokens each, each the argmax of the last logits of a full forward
pass over the sequence so far (no KV cache), with the smallest top-1 / top-2 logit margin seen
along the way (a margin near zero would make the comparison fragile; the script refuses margins
under 1e-3). model.generate's KV-cache path was not used: on "Name three primary colors." it
picks another token at step 6, where the no-cache logits of the two candidates differ by 0.036.

Weights: sha256 of HF's float32 q_proj / k_proj / v_proj / gate_proj of layers 0 and 29 and of
the embeddings, so a test can check lobes' dequantized, un-permuted rows bit for bit.

Run from the repository root with ../shared present:
    /work/venv/bin/python test/goldens/make_smollm2_goldens.py
Needs: torch, transformers (5.x), gguf, accelerate, tokenizers, numpy.
Writes test/goldens/smollm2/goldens.json and goldens.bin (float32 little-endian).
"""
import hashlib
import json
import os
import sys

import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import pre_tokenizers
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
SMOL_DIR = os.path.join(SHARED, "models", "smollm2-135m-instruct")
SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = os.path.join(ROOT, "test", "goldens", "smollm2")
SKETCH = 128

TEXTS = [
    "Hello.",
    "Kindness is free.",
    "The committee postponed its decision until the next meeting.",
    "She listened carefully, then asked what he needed most right now.",
    "A good teammate shares credit and takes responsibility for mistakes.",
    "When the train was delayed by 45 minutes, the passengers started talking to each other.",
    "He apologised twice, but his friend only smiled and changed the subject.",
    "Rain again. The garden is happy; the cat is not.",
    "In 1969, 3 astronauts flew to the Moon and 2 of them walked on its surface.",
    "Please summarise the following report in two sentences: revenue rose 12% while costs fell.",
    "If you could learn any skill overnight, which one would you choose, and why would it matter to you?",
    "The old fisherman mended his nets every morning, humming songs his grandmother had taught him, "
    "while the gulls circled overhead and the village slowly woke up around the harbour.",
    "Negotiation is easier when both sides can see what the other actually wants.",
    "I forgot my umbrella.",
    "Curiosity, patience and a notebook: that is all a young scientist really needs to begin.",
    "Why do people keep promises even when nobody is watching?",
    "你好。",
    "今天天气很好。",
    "她总是先倾听，再给出建议。",
    "团队合作需要信任、沟通和耐心。",
    "他在会议上提出了一个大胆的想法，大家都很惊讶。",
    "如果明天下雨，我们就把野餐改到周末，你觉得怎么样？",
    "学习一门新的语言需要时间，但每天坚持练习十五分钟，效果会比偶尔学习几个小时更好。",
    "小明第一次离开家去外地上大学，他有些紧张，但也对新的生活充满期待。",
    "朋友之间发生误会时，坦诚地说出自己的感受往往比沉默更有帮助。",
    "The meeting ended early. 会议提前结束了。",
]

PROMPTS = [
    "What is the capital of France?",
    "Name three primary colors.",
    "What is 12 plus 7?",
    "Write one sentence about the sea.",
    "用一句话介绍长城。",
]
NEW_TOKENS = 12


def sign_matrix(k: int, d: int) -> np.ndarray:
    """S[k, j] = +-1 / sqrt(k) from a 32-bit integer hash of (k, j)."""
    kk = np.arange(k, dtype=np.uint64)[:, None]
    jj = np.arange(d, dtype=np.uint64)[None, :]
    m = np.uint64(0xFFFFFFFF)
    h = (jj * np.uint64(2654435761) + kk * np.uint64(40503) + np.uint64(12345)) & m
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x045D9F3B)) & m
    h ^= h >> np.uint64(16)
    s = np.where((h & np.uint64(1)) == 1, -1.0, 1.0)
    return s / np.sqrt(k)


def main() -> None:
    path = os.path.join(SMOL_DIR, SMOL_GGUF)
    if not os.path.exists(path):
        sys.exit(f"missing {path}")
    torch.manual_seed(0)
    hf_tok = AutoTokenizer.from_pretrained(SMOL_DIR, gguf_file=SMOL_GGUF)
    declared = tokenizers.Tokenizer.from_str(hf_tok.backend_tokenizer.to_str())
    declared.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    model = AutoModelForCausalLM.from_pretrained(SMOL_DIR, gguf_file=SMOL_GGUF, dtype=torch.float32, attn_implementation="eager").eval()
    cfg = model.config
    layers = cfg.num_hidden_layers

    # Weights as HF holds them (float32, Q/K un-permuted by its loader).
    sd = model.state_dict()
    weights = {}
    for name in ["model.embed_tokens.weight"] + [
        f"model.layers.{i}.{p}.weight"
        for i in (0, layers - 1)
        for p in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj")
    ]:
        a = sd[name].detach().to(torch.float32).contiguous().numpy()
        weights[name] = {"shape": list(a.shape), "sha256": hashlib.sha256(a.astype("<f4").tobytes()).hexdigest()}

    captured = {}

    def pre_hook(key):
        def fn(_mod, args, kwargs=None):
            x = args[0] if args else kwargs["hidden_states"]
            captured[key] = x[0, -1].detach().to(torch.float64).numpy().copy()

        return fn

    def post_hook(key):
        def fn(_mod, _args, out):
            captured[key] = out[0, -1].detach().to(torch.float64).numpy().copy()

        return fn

    for i, layer in enumerate(model.model.layers):
        layer.mlp.register_forward_pre_hook(pre_hook(f"layers.{i}.mlp.in"))
        layer.mlp.down_proj.register_forward_pre_hook(pre_hook(f"layers.{i}.mlp.down_in"))
    model.model.norm.register_forward_hook(post_hook("final.hidden"))

    s_in = sign_matrix(SKETCH, cfg.hidden_size)
    s_down = sign_matrix(SKETCH, cfg.intermediate_size)
    ids_all = [declared.encode(t, add_special_tokens=True).ids for t in TEXTS]
    final = []
    norms = []
    sketches = []
    with torch.no_grad():
        for ids in ids_all:
            captured.clear()
            model(torch.tensor([ids]), use_cache=False)
            final.append(captured["final.hidden"])
            for i in range(layers):
                for key, s in ((f"layers.{i}.mlp.in", s_in), (f"layers.{i}.mlp.down_in", s_down)):
                    v = captured[key]
                    norms.append(np.linalg.norm(v))
                    sketches.append(s @ v)

    # Greedy decoding after the chat template: argmax of the full forward pass's last logits,
    # token by token (no KV cache: the computation the converted graph does too).
    greedy = []
    with torch.no_grad():
        for prompt in PROMPTS:
            text = hf_tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False)
            ids = declared.encode(text, add_special_tokens=False).ids
            seq = list(ids)
            margin = float("inf")
            for _ in range(NEW_TOKENS):
                logits = model(torch.tensor([seq]), use_cache=False).logits[0, -1]
                top = torch.topk(logits, 2).values
                margin = min(margin, float(top[0] - top[1]))
                seq.append(int(torch.argmax(logits)))
            if margin < 1e-3:
                sys.exit(f"prompt {prompt!r}: top-2 logit margin {margin} is too small for a stable golden")
            new = seq[len(ids):]
            greedy.append({"prompt": prompt, "text": text, "ids": ids, "new_ids": new, "new_text": declared.decode(new), "min_margin": margin})

    os.makedirs(OUT, exist_ok=True)
    final_a = np.asarray(final, dtype="<f4")
    norms_a = np.asarray(norms, dtype="<f4")
    sketch_a = np.asarray(sketches, dtype="<f4")
    blob = final_a.tobytes() + norms_a.tobytes() + sketch_a.tobytes()
    with open(os.path.join(OUT, "goldens.bin"), "wb") as f:
        f.write(blob)
    meta = {
        "source": f"../shared/models/smollm2-135m-instruct/{SMOL_GGUF}",
        "oracle": f"transformers {transformers.__version__} AutoModelForCausalLM.from_pretrained(gguf_file=...), "
        f"float32, eager attention, torch {torch.__version__}; one text per forward pass",
        "tokenizer": "vocabulary and merges of the file with Digits(individual_digits) + ByteLevel (SmolLM2's tokenizer.json)",
        "config": {
            "layers": layers, "hidden": cfg.hidden_size, "intermediate": cfg.intermediate_size,
            "heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads, "vocab": cfg.vocab_size,
            "rope_theta": float(getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]),
            "rms_norm_eps": float(cfg.rms_norm_eps), "tie_word_embeddings": bool(cfg.tie_word_embeddings),
        },
        "texts": TEXTS,
        "ids": ids_all,
        "sketch_dim": SKETCH,
        "layout": {
            "final": [len(TEXTS), cfg.hidden_size],
            "norms": [len(TEXTS), layers, 2],
            "sketches": [len(TEXTS), layers, 2, SKETCH],
            "order": "float32 LE: final, then norms, then sketches; [.., 2] is (mlp.in, mlp.down_in)",
        },
        "greedy": greedy,
        "weights": weights,
    }
    with open(os.path.join(OUT, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(TEXTS)} texts, {len(blob)} bytes of vectors; greedy:")
    for g in greedy:
        print(f"  {g['prompt']!r} -> {g['new_text']!r} (margin {g['min_margin']:.3f})")


if __name__ == "__main__":
    main()
