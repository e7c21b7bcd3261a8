"""Goldens for lobes' streaming Llama ONNX writer (src/convert/llama-onnx).

For a few small Llama configurations (grouped-query attention; tied embeddings with Llama-3
rope scaling and head_dim != hidden/heads; linear rope scaling with one layer), this script

  * makes the weights with a Python port of lobes' seeded source (seededLlamaSource in
    src/convert/llama-onnx/source.ts: per-row xorshift32, bit-identical to the TypeScript), so
    the tests regenerate the same weights from the committed seed without Python;
  * runs Hugging Face transformers' LlamaForCausalLM (fp32, eager attention) on each token
    sequence alone and records, at the last token: the logits, the final hidden state (input of
    lm_head), and per layer the input of gate_proj (mlp.in), the input of down_proj
    (mlp.down_in) and the decoder layer output (resid_out), from forward hooks;
  * records the same last-token logits with the weights the writer's lossy modes store:
    projection/embedding/lm_head weights rounded to float16 (fp16), and projection weights
    quantized by a port of lobes' 4-bit quantizer (quantizeRows: asymmetric, block 32) and
    dequantized (q4: explicit layout, lm_head float; q4genai: genai layout, untied lm_head
    quantized too);
  * for the 'gqa' configuration, runs onnxruntime-genai's model builder on the same checkpoint
    (-p fp32 and -p int4, -e cpu), records the builder models' last-token logits (run with
    onnxruntime), its op sequences and genai_config.json, and stores the builder's int4 blocks (B and scales per weight, its fused
    qkv_proj split back into q, k, v), so a test can feed them through the writer;
  * for the same configuration, dequantizes those stored int4 blocks in numpy (zero point 8, block
    32: w = (q - 8) * scale) and records transformers' fp32 logits with them
    (gqa.builder.int4.dequant.logits). That is what MatMulNBits computes with accuracy_level 0
    (dequantize, then a float matmul), so it is the same on every CPU; the builder's own int4
    logits (gqa.builder.int4.logits, accuracy_level 4: int8-quantized activations) depend on the
    CPU's instruction set and are kept for the record only.

Run from the repository root:
    /work/venv/bin/python test/goldens/make_llama_writer_goldens.py
or, to add/refresh only gqa.builder.int4.dequant.logits from the int4 blocks already committed
(no builder needed; every other tensor is rewritten unchanged):
    /work/venv/bin/python test/goldens/make_llama_writer_goldens.py --only-builder-dequant
Outputs (committed): test/goldens/llama-writer/goldens.json (specs, seeds, token ids) and
goldens.safetensors (tensors named CONFIG.NAME).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import save_file
from transformers import LlamaConfig, LlamaForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "goldens", "llama-writer")
M32 = 0xFFFFFFFF

CONFIGS = {
    "gqa": dict(
        seed=101, layers=2, hidden=64, intermediate=128, heads=4, kvHeads=2, headDim=16, vocab=512,
        rmsNormEps=1e-5, ropeTheta=10000.0, ropeScaling=None, maxPositions=128, tiedEmbeddings=False,
    ),
    "tied-llama3": dict(
        seed=202, layers=2, hidden=64, intermediate=96, heads=4, kvHeads=1, headDim=32, vocab=160,
        rmsNormEps=1e-6, ropeTheta=10000.0,
        ropeScaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 64},
        maxPositions=128, tiedEmbeddings=True,
    ),
    "linear": dict(
        seed=303, layers=1, hidden=32, intermediate=64, heads=2, kvHeads=2, headDim=16, vocab=96,
        rmsNormEps=1e-5, ropeTheta=500000.0, ropeScaling={"rope_type": "linear", "factor": 4.0},
        maxPositions=128, tiedEmbeddings=False,
    ),
}
LENGTHS = [9, 5, 14, 3]


def weight_shapes(c):
    H, I, hd, V = c["hidden"], c["intermediate"], c["headDim"], c["vocab"]
    out = [("model.embed_tokens.weight", (V, H))]
    for l in range(c["layers"]):
        p = f"model.layers.{l}."
        out += [
            (p + "input_layernorm.weight", (H,)),
            (p + "self_attn.q_proj.weight", (c["heads"] * hd, H)),
            (p + "self_attn.k_proj.weight", (c["kvHeads"] * hd, H)),
            (p + "self_attn.v_proj.weight", (c["kvHeads"] * hd, H)),
            (p + "self_attn.o_proj.weight", (H, c["heads"] * hd)),
            (p + "post_attention_layernorm.weight", (H,)),
            (p + "mlp.gate_proj.weight", (I, H)),
            (p + "mlp.up_proj.weight", (I, H)),
            (p + "mlp.down_proj.weight", (H, I)),
        ]
    out.append(("model.norm.weight", (H,)))
    if not c["tiedEmbeddings"]:
        out.append(("lm_head.weight", (V, H)))
    return out


def hash32(s):
    h = 0x811C9DC5
    for ch in s:
        h = ((h ^ ord(ch)) * 0x01000193) & M32
    return h


def seeded_weight(name, shape, seed):
    """Port of seededLlamaSource's rows(): one xorshift32 stream per row."""
    rows = shape[0]
    cols = 1 if len(shape) == 1 else shape[1]
    base = (hash32(name) ^ ((seed * 0x9E3779B1) & M32)) & M32
    r = np.arange(rows, dtype=np.uint64)
    x = (np.uint64(base) ^ (((r + np.uint64(1)) * np.uint64(0x85EBCA6B)) & np.uint64(M32))) & np.uint64(M32)
    x[x == 0] = 1
    out = np.empty((rows, cols), dtype=np.float64)
    m = np.uint64(M32)
    for c in range(cols):
        x = (x ^ (x << np.uint64(13))) & m
        x = x ^ (x >> np.uint64(17))
        x = (x ^ (x << np.uint64(5))) & m
        out[:, c] = x.astype(np.float64) / 4294967296.0
    if len(shape) == 1:
        return (1 + 0.1 * (2 * out[:, 0] - 1)).astype(np.float32)
    a = np.sqrt(3 / cols)
    return (a * (2 * out - 1)).astype(np.float32)


def js_round(x):
    return np.floor(x + 0.5)


def quantize_dequant(w, block=32, bits=4):
    """Port of quantizeRows (asymmetric, zero points) returning the dequantized weight."""
    levels = (1 << bits) - 1
    dOut, dIn = w.shape
    b = w.astype(np.float64).reshape(dOut, dIn // block, block)
    lo = np.minimum(b.min(-1), 0.0)
    hi = np.maximum(b.max(-1), 0.0)
    scale = (hi - lo) / levels
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32).astype(np.float64)
    zp = np.clip(js_round(-lo / scale), 0, levels)
    q = np.clip(js_round(b / scale[..., None]) + zp[..., None], 0, levels)
    return ((q - zp[..., None]) * scale[..., None]).astype(np.float32).reshape(dOut, dIn)


def hf_config(c):
    rope = {"rope_type": "default", "rope_theta": c["ropeTheta"]}
    if c["ropeScaling"]:
        rope = dict(c["ropeScaling"], rope_theta=c["ropeTheta"])
    return LlamaConfig(
        vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["intermediate"],
        num_hidden_layers=c["layers"], num_attention_heads=c["heads"], num_key_value_heads=c["kvHeads"],
        head_dim=c["headDim"], max_position_embeddings=c["maxPositions"], rms_norm_eps=c["rmsNormEps"],
        tie_word_embeddings=c["tiedEmbeddings"], rope_parameters=rope, bos_token_id=None, eos_token_id=None,
        attn_implementation="eager",
    )


def hf_model(c, weights):
    model = LlamaForCausalLM(hf_config(c)).eval()
    sd = {k: torch.from_numpy(v.copy()) for k, v in weights.items()}
    if c["tiedEmbeddings"]:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(sd, strict=False)
    missing = [k for k in missing if "rotary_emb" not in k]
    assert not missing and not unexpected, (missing, unexpected)
    if c["tiedEmbeddings"]:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr() or torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    return model


def forward_last(model, ids_list, c):
    """Last-token logits, final hidden, and per-layer hook values for each sequence run alone."""
    acts = {}
    hooks = []
    for l, layer in enumerate(model.model.layers):
        hooks.append(layer.mlp.gate_proj.register_forward_hook(lambda m, i, o, l=l: acts.__setitem__(f"layers.{l}.mlp.in", i[0])))
        hooks.append(layer.mlp.down_proj.register_forward_hook(lambda m, i, o, l=l: acts.__setitem__(f"layers.{l}.mlp.down_in", i[0])))
        hooks.append(layer.register_forward_hook(lambda m, i, o, l=l: acts.__setitem__(f"layers.{l}.resid_out", o[0] if isinstance(o, tuple) else o)))
    res = {}
    with torch.no_grad():
        for ids in ids_list:
            out = model(torch.tensor([ids]), output_hidden_states=True)
            vals = {"logits": out.logits[0, -1], "final.hidden": out.hidden_states[-1][0, -1]}
            for k, v in acts.items():
                vals[k] = v[0, -1]
            for k, v in vals.items():
                res.setdefault(k, []).append(v.float().numpy())
    for h in hooks:
        h.remove()
    return {k: np.stack(v).astype(np.float32) for k, v in res.items()}


PROJ = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def is_proj(name):
    return any(f".{p}.weight" in name for p in PROJ)


def run_builder(c, weights, ids_list, tensors, key, meta):
    tok_src = os.path.join(ROOT, "models", "tiny-llama")
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = os.path.join(tmp, "hf")
        model = hf_model(c, weights)
        model.save_pretrained(hf_dir)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(tok_src, f), hf_dir)
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper
        for prec in ("fp32", "int4"):
            out = os.path.join(tmp, prec)
            subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", hf_dir, "-o", out, "-p", prec,
                            "-e", "cpu", "-c", os.path.join(tmp, "cache")], check=True, capture_output=True)
            graph = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False).graph
            meta[f"builder_{prec}_ops"] = [(n.domain + "." if n.domain else "") + n.op_type for n in graph.node if n.op_type != "Constant"]
            if prec == "fp32":
                with open(os.path.join(out, "genai_config.json")) as f:
                    meta["builder_genai_config"] = json.load(f)
            sess = ort.InferenceSession(os.path.join(out, "model.onnx"), providers=["CPUExecutionProvider"])
            last = []
            for ids in ids_list:
                feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)}
                for i in sess.get_inputs():
                    if i.name.startswith("past_key_values"):
                        feeds[i.name] = np.zeros((1, c["kvHeads"], 0, c["headDim"]), np.float32)
                logits = sess.run(["logits"], feeds)[0]
                last.append(logits[0, -1])
            tensors[f"{key}.builder.{prec}.logits"] = np.stack(last).astype(np.float32)
            if prec == "int4":
                m = onnx.load(os.path.join(out, "model.onnx"))
                inits = {t.name: numpy_helper.to_array(t, base_dir=out) for t in m.graph.initializer}
                for n in m.graph.node:
                    if n.op_type != "MatMulNBits":
                        continue
                    attrs = {a.name: a.i for a in n.attribute}
                    assert attrs["bits"] == 4 and attrs["block_size"] == 32 and len([x for x in n.input if x]) == 3, n
                    B = inits[n.input[1]].reshape(attrs["N"], -1)
                    S = inits[n.input[2]].reshape(attrs["N"], -1).astype(np.float32)
                    w = n.input[1]
                    if w.startswith("lm_head"):
                        parts = [("lm_head.weight", attrs["N"])]
                    else:
                        layer = w.split(".")[2]
                        sub = w.split(".")[3] + "." + w.split(".")[4]
                        p = f"model.layers.{layer}."
                        if sub == "attn.qkv_proj":
                            hd, q, kv = c["headDim"], c["heads"], c["kvHeads"]
                            parts = [(p + "self_attn.q_proj.weight", q * hd), (p + "self_attn.k_proj.weight", kv * hd), (p + "self_attn.v_proj.weight", kv * hd)]
                        elif sub == "attn.o_proj":
                            parts = [(p + "self_attn.o_proj.weight", attrs["N"])]
                        else:
                            parts = [(p + sub + ".weight", attrs["N"])]
                    r = 0
                    for name, rows in parts:
                        tensors[f"{key}.builder.int4.{name}.B"] = np.ascontiguousarray(B[r:r + rows]).astype(np.uint8)
                        tensors[f"{key}.builder.int4.{name}.scales"] = np.ascontiguousarray(S[r:r + rows])
                        r += rows
                    assert r == attrs["N"]


def dequant_int4_blocks(B, scales, zero_point=8, block=32):
    """MatMulNBits' 4-bit dequantization: B [N, K/2] bytes (element 2i in the low nibble, 2i+1 in
    the high one), scales [N, K/block], one zero point for all blocks (the builder's default 8)."""
    N = B.shape[0]
    q = np.empty((N, B.shape[1] * 2), dtype=np.float32)
    q[:, 0::2] = B & 0x0F
    q[:, 1::2] = B >> 4
    K = q.shape[1]
    q = q.reshape(N, K // block, block) - np.float32(zero_point)
    return (q * scales.astype(np.float32)[..., None]).astype(np.float32).reshape(N, K)


def builder_int4_dequant(c, weights, ids_list, tensors, key):
    """fp32 logits with every weight the builder stored as int4 blocks replaced by its dequantized value."""
    prefix = f"{key}.builder.int4."
    wd = dict(weights)
    done = 0
    for name in weights:
        if prefix + name + ".B" not in tensors:
            continue
        w = dequant_int4_blocks(tensors[prefix + name + ".B"], tensors[prefix + name + ".scales"])
        assert w.shape == weights[name].shape, (name, w.shape, weights[name].shape)
        # the builder's blocks are a quantization of these very weights (within one scale step)
        step = np.abs(np.repeat(tensors[prefix + name + ".scales"], 32, axis=1))  # the builder's scales may be negative
        assert np.all(np.abs(w - weights[name]) <= step * 1.001), name
        wd[name] = w
        done += 1
    assert done == 7 * c["layers"] + (0 if c["tiedEmbeddings"] else 1), done
    tensors[f"{key}.builder.int4.dequant.logits"] = forward_last(hf_model(c, wd), ids_list, c)["logits"]


def only_builder_dequant():
    from safetensors.numpy import load_file
    path = os.path.join(OUT, "goldens.safetensors")
    tensors = load_file(path)
    with open(os.path.join(OUT, "goldens.json")) as f:
        meta = json.load(f)
    torch.manual_seed(0)
    key = "gqa"
    c = CONFIGS[key]
    weights = {n: seeded_weight(n, s, c["seed"]) for n, s in weight_shapes(c)}
    builder_int4_dequant(c, weights, meta["configs"][key]["ids"], tensors, key)
    save_file({k: np.ascontiguousarray(v) for k, v in sorted(tensors.items())}, path)
    print(f"wrote {len(tensors)} tensors to {path}")


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    meta = {"script": "test/goldens/make_llama_writer_goldens.py", "configs": {}}
    tensors = {}
    for key, c in CONFIGS.items():
        weights = {n: seeded_weight(n, s, c["seed"]) for n, s in weight_shapes(c)}
        ids_list = [[int(t) for t in rng.integers(0, c["vocab"], size=n)] for n in LENGTHS]
        spec = {k: v for k, v in c.items() if k != "seed"}
        meta["configs"][key] = {"seed": c["seed"], "spec": spec, "ids": ids_list}
        for k, v in forward_last(hf_model(c, weights), ids_list, c).items():
            tensors[f"{key}.{k}"] = v
        # fp16: projection, embedding and lm_head weights rounded to float16 (norms stay float32).
        w16 = {n: (w.astype(np.float16).astype(np.float32) if w.ndim == 2 else w) for n, w in weights.items()}
        tensors[f"{key}.fp16.logits"] = forward_last(hf_model(c, w16), ids_list, c)["logits"]
        # q4: projections quantized/dequantized (explicit: lm_head float; genai: untied lm_head too).
        wq = {n: (quantize_dequant(w) if is_proj(n) else w) for n, w in weights.items()}
        tensors[f"{key}.q4.logits"] = forward_last(hf_model(c, wq), ids_list, c)["logits"]
        if not c["tiedEmbeddings"]:
            wq["lm_head.weight"] = quantize_dequant(weights["lm_head.weight"])
        tensors[f"{key}.q4genai.logits"] = forward_last(hf_model(c, wq), ids_list, c)["logits"]
        if key == "gqa":
            run_builder(c, weights, ids_list, tensors, key, meta["configs"][key])
            builder_int4_dequant(c, weights, ids_list, tensors, key)
        # A spot check that the Python port of the seeded source is the one the tests use.
        meta["configs"][key]["check"] = {n: [float(x) for x in w.reshape(-1)[:3]] for n, w in list(weights.items())[:2]}
    save_file({k: np.ascontiguousarray(v) for k, v in sorted(tensors.items())}, os.path.join(OUT, "goldens.safetensors"))
    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"wrote {len(tensors)} tensors for {len(CONFIGS)} configurations to {OUT}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--only-builder-dequant"]:
        only_builder_dequant()
    else:
        main()
