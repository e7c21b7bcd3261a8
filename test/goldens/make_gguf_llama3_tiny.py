"""A tiny Llama-3.1-shaped GGUF, written the way llama.cpp's converter writes one, with Hugging
Face goldens from the original (un-converted) model.

Why: the real SmolLM2 file exercises Q4_1 weights, tied embeddings and no rope scaling. This
file covers the rest of what lobes' GGUF -> ONNX conversion must undo, against an oracle that
never saw a GGUF: a LlamaForCausalLM with grouped-query attention, llama3 rope scaling
(theta 500000, factor 8, low 1, high 4, original context 8192), untied output, and weights
stored in ten GGML block types.

How the file is made (llama.cpp's convert_hf_to_gguf.py conventions, written with the `gguf`
package):
  * each weight W[d_out, d_in] (HF layout) becomes a tensor with GGUF dims [d_in, d_out];
  * q_proj / k_proj rows are permuted per head for llama.cpp's rotary layout
    (reshape(n_head, 2, D/2, d_in).swapaxes(1, 2); k_proj with the KV heads);
  * the llama3 rope scaling becomes `rope_freqs.weight`, one float32 divisor per rotary
    frequency, computed with llama.cpp's formula; no rope_scaling metadata is written;
  * tensors are quantized: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 with gguf.quants.quantize; the K types
    (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K), which the package cannot quantize, as random blocks (any
    bytes are a valid block) whose fp16 scales are set so the weights have std ~ 1/sqrt(d_in).

The reference model's weights are then exactly the file's: gguf.quants.dequantize of each
tensor, with the Q/K permutation reversed. Its forward pass (float32, eager) on fixed token
sequences gives the goldens: last-token final.hidden (after the final RMSNorm), each layer's
mlp.in and mlp.down_in, and the logits. transformers' own GGUF loader reads the file back as a
check of the writing (same weights after its reverse permutation; it ignores rope_freqs, which
is why the oracle is the original model).

The tokenizer is the first 1022 tokens of the Llama-3.1 vocabulary (node_modules/@lenml/
tokenizer-llama3_1) with the merges among them, plus <|begin_of_text|> and <|eot_id|>
(pre-tokenizer llama-bpe), so that the file converts like a real Llama-3 GGUF.

Run from the repository root (after `npm ci`):
    /work/venv/bin/python test/goldens/make_gguf_llama3_tiny.py
Writes test/goldens/gguf-llama3-tiny/: tiny-llama3.gguf, goldens.json, goldens.bin.
"""
import json
import math
import os
import sys
import tempfile

import gguf
import numpy as np
import torch
import transformers
from gguf import GGMLQuantizationType as T
from gguf import quants
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "goldens", "gguf-llama3-tiny")
TOK = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-llama3_1", "models", "tokenizer.json")
SEED = 7
VOCAB = 1024
HIDDEN, HEADS, KV_HEADS, INTER, LAYERS = 256, 4, 2, 512, 2
HEAD_DIM = HIDDEN // HEADS
THETA = 500000.0
ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}

# GGML type of each tensor: every decoded block type appears at least once.
TYPES = {
    "token_embd": T.Q4_K,
    "output": T.Q6_K,
    0: {"attn_q": T.Q4_0, "attn_k": T.Q8_0, "attn_v": T.Q6_K, "attn_output": T.Q4_1, "ffn_gate": T.Q4_K, "ffn_up": T.Q5_K, "ffn_down": T.Q6_K},
    1: {"attn_q": T.Q3_K, "attn_k": T.Q5_0, "attn_v": T.Q5_1, "attn_output": T.Q2_K, "ffn_gate": T.Q8_0, "ffn_up": T.Q4_K, "ffn_down": T.F16},
}
# Byte offsets of the fp16 scale fields of each K block (d, and dmin where the type has one).
K_SCALES = {T.Q2_K: (80, 82), T.Q3_K: (108, None), T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208, None)}

SEQUENCES_LEN = [1, 3, 8, 17, 33, 64]


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary row order: within each head, interleave the two halves."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_factors() -> np.ndarray:
    """llama.cpp's rope_freqs for llama3 scaling (float64 arithmetic, stored as float32)."""
    freqs = 1.0 / (THETA ** (np.arange(0, HEAD_DIM, 2, dtype=np.float32) / HEAD_DIM))
    L = ROPE["original_max_position_embeddings"]
    lo, hi, factor = ROPE["low_freq_factor"], ROPE["high_freq_factor"], ROPE["factor"]
    out = []
    for f in freqs:
        wl = 2 * math.pi / float(f)
        if wl < L / hi:
            out.append(1.0)
        elif wl > L / lo:
            out.append(factor)
        else:
            s = (L / wl - lo) / (hi - lo)
            out.append(1 / ((1 - s) / factor + s))
    return np.asarray(out, dtype=np.float32)


def quantized(w: np.ndarray, qtype, rng) -> tuple[np.ndarray, np.ndarray]:
    """(raw block bytes, their float32 dequantization) for a weight of GGUF row order."""
    rows, cols = w.shape
    if qtype == T.F16:
        raw = w.astype(np.float16)
        return raw, raw.astype(np.float32)
    if qtype in K_SCALES:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
        d_at, m_at = K_SCALES[qtype]

        def set_scale(x: float):
            h = np.frombuffer(np.float16(x).tobytes(), dtype=np.uint8)
            raw[:, :, d_at:d_at + 2] = h
            if m_at is not None:
                raw[:, :, m_at:m_at + 2] = h

        set_scale(1.0)
        probe = quants.dequantize(raw.reshape(rows, -1), qtype)
        set_scale(float(np.float16(1.0 / math.sqrt(cols) / probe.std())))
        raw = raw.reshape(rows, -1)
        return raw, quants.dequantize(raw, qtype).astype(np.float32)
    raw = quants.quantize(w, qtype)
    return raw, quants.dequantize(raw, qtype).astype(np.float32)


def small_vocab():
    tj = json.load(open(TOK, encoding="utf-8"))
    vocab = tj["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items() if i < VOCAB - 2}
    tokens = [by_id[i] for i in range(VOCAB - 2)] + ["<|begin_of_text|>", "<|eot_id|>"]
    known = set(tokens[: VOCAB - 2])
    merges = []
    for m in tj["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a in known and b in known and a + b in known:
            merges.append(f"{a} {b}")
    types = [1] * (VOCAB - 2) + [3, 3]
    return tokens, types, merges


CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ '<|start|>' + m['role'] + '\\n' + m['content'] + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start|>assistant\\n' }}{% endif %}"
)


def main() -> None:
    rng = np.random.default_rng(SEED)
    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTER, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, hidden_act="silu",
        max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=THETA, rope_scaling=dict(ROPE),
        tie_word_embeddings=False, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1, attention_bias=False,
        mlp_bias=False, use_cache=False,
    )
    model = LlamaForCausalLM(config).eval()
    sd = {}
    tensors = []  # (gguf name, raw, type)

    def add(hf_name, gguf_name, w_hf, qtype, n_head=None):
        w = permute(w_hf, n_head) if n_head else w_hf
        raw, deq = quantized(np.ascontiguousarray(w, dtype=np.float32), qtype, rng)
        sd[hf_name] = unpermute(deq, n_head) if n_head else deq
        tensors.append((gguf_name, raw, qtype))

    def rnd(rows, cols):
        return rng.standard_normal((rows, cols)).astype(np.float32) / math.sqrt(cols)

    add("model.embed_tokens.weight", "token_embd.weight", rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32), TYPES["token_embd"])
    for i in range(LAYERS):
        ty = TYPES[i]
        m = f"model.layers.{i}"
        b = f"blk.{i}"
        norm1 = (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
        sd[f"{m}.input_layernorm.weight"] = norm1
        tensors.append((f"{b}.attn_norm.weight", norm1, T.F32))
        add(f"{m}.self_attn.q_proj.weight", f"{b}.attn_q.weight", rnd(HIDDEN, HIDDEN), ty["attn_q"], HEADS)
        add(f"{m}.self_attn.k_proj.weight", f"{b}.attn_k.weight", rnd(KV_HEADS * HEAD_DIM, HIDDEN), ty["attn_k"], KV_HEADS)
        add(f"{m}.self_attn.v_proj.weight", f"{b}.attn_v.weight", rnd(KV_HEADS * HEAD_DIM, HIDDEN), ty["attn_v"])
        add(f"{m}.self_attn.o_proj.weight", f"{b}.attn_output.weight", rnd(HIDDEN, HIDDEN), ty["attn_output"])
        norm2 = (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
        sd[f"{m}.post_attention_layernorm.weight"] = norm2
        tensors.append((f"{b}.ffn_norm.weight", norm2, T.F32))
        add(f"{m}.mlp.gate_proj.weight", f"{b}.ffn_gate.weight", rnd(INTER, HIDDEN), ty["ffn_gate"])
        add(f"{m}.mlp.up_proj.weight", f"{b}.ffn_up.weight", rnd(INTER, HIDDEN), ty["ffn_up"])
        add(f"{m}.mlp.down_proj.weight", f"{b}.ffn_down.weight", rnd(HIDDEN, INTER), ty["ffn_down"])
    normf = (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32)
    sd["model.norm.weight"] = normf
    tensors.append(("output_norm.weight", normf, T.F32))
    add("lm_head.weight", "output.weight", rnd(VOCAB, HIDDEN), TYPES["output"])
    factors = rope_factors()
    tensors.append(("rope_freqs.weight", factors, T.F32))

    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}, strict=False)
    if unexpected or [k for k in missing if "rotary" not in k]:
        sys.exit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")

    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "tiny-llama3.gguf")
    tokens, types, merges = small_vocab()
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("lobes tiny Llama-3.1-shaped test model")
    w.add_context_length(131072)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(INTER)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(THETA)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(VOCAB - 2)
    w.add_eos_token_id(VOCAB - 1)
    w.add_add_bos_token(True)
    w.add_chat_template(CHAT_TEMPLATE)
    for name, raw, qtype in tensors:
        if qtype in (T.F32, T.F16):
            w.add_tensor(name, raw)
        else:
            w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # Check the writing with transformers' own GGUF loader (weights only: it drops rope_freqs).
    with tempfile.TemporaryDirectory():
        back = AutoModelForCausalLM.from_pretrained(OUT, gguf_file="tiny-llama3.gguf", dtype=torch.float32).state_dict()
    for k, v in sd.items():
        if not np.array_equal(back[k].numpy(), v):
            sys.exit(f"transformers' GGUF loader reads {k} differently")

    # Goldens: last-token hooks of the original model on fixed token sequences.
    captured = {}

    def pre(key):
        def fn(_m, args):
            captured[key] = args[0][0, -1].detach().numpy().astype(np.float32)
        return fn

    def post(key):
        def fn(_m, _a, out):
            captured[key] = out[0, -1].detach().numpy().astype(np.float32)
        return fn

    for i, layer in enumerate(model.model.layers):
        layer.mlp.register_forward_pre_hook(pre(f"layers.{i}.mlp.in"))
        layer.mlp.down_proj.register_forward_pre_hook(pre(f"layers.{i}.mlp.down_in"))
    model.model.norm.register_forward_hook(post("final.hidden"))
    seqs = [[VOCAB - 2] + rng.integers(0, VOCAB - 2, size=n - 1).tolist() for n in SEQUENCES_LEN]
    blob = []
    with torch.no_grad():
        model.config._attn_implementation = "eager"
        for ids in seqs:
            captured.clear()
            logits = model(torch.tensor([ids])).logits[0, -1].numpy().astype(np.float32)
            parts = [captured["final.hidden"]]
            for i in range(LAYERS):
                parts += [captured[f"layers.{i}.mlp.in"], captured[f"layers.{i}.mlp.down_in"]]
            parts.append(logits)
            blob.append(np.concatenate(parts))
    data = np.stack(blob).astype("<f4")
    data.tofile(os.path.join(OUT, "goldens.bin"))
    hooks = ["final.hidden"] + [f"layers.{i}.{p}" for i in range(LAYERS) for p in ("mlp.in", "mlp.down_in")] + ["logits"]
    dims = [HIDDEN] + [HIDDEN, INTER] * LAYERS + [VOCAB]
    meta = {
        "oracle": f"LlamaForCausalLM (transformers {transformers.__version__}, torch {torch.__version__}), float32, eager, "
        "weights = gguf.quants.dequantize of the file with the Q/K permutation reversed",
        "config": {"layers": LAYERS, "hidden": HIDDEN, "intermediate": INTER, "heads": HEADS, "kv_heads": KV_HEADS,
                   "head_dim": HEAD_DIM, "vocab": VOCAB, "rope_theta": THETA, "rope_scaling": ROPE, "tied": False},
        "types": {name: T(q).name for name, _, q in tensors},
        "rope_freqs": factors.tolist(),
        "sequences": seqs,
        "hooks": hooks,
        "dims": dims,
        "layout": "goldens.bin: float32 LE [sequences, sum(dims)], hooks concatenated in order",
    }
    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes) and goldens for {len(seqs)} sequences")


if __name__ == "__main__":
    main()
