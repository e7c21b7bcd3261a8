"""Hugging Face checkpoints of each family lobes converts, with goldens from transformers.

For each family (llama, mistral, qwen2, qwen3) this script makes a tiny random-weight model from a seeded
config with the family's own features switched on, saves it with save_pretrained as a
researcher's checkpoint folder is saved, and records what transformers computes from that
folder (loaded back with from_pretrained, fp32, eager attention):

  llama  hidden 64, 2 layers, 4 heads / 2 KV heads, untied lm_head, rope_theta and a
         legacy-spelled rope_scaling {"type": "linear", "factor": 2} at the top level of
         config.json, BF16 weights in 3 shards with model.safetensors.index.json;
  mistral sliding-window attention with a window of 8 tokens, shorter than every text (10 to
         66 tokens), 4 heads / 1 KV head, F32;
  qwen2  q/k/v biases (not o), tied embeddings, rope_theta 1e6, rope_scaling {"rope_type":
         "llama3", ...}, F32 weights in one model.safetensors;
  qwen3  per-head q_norm / k_norm, head_dim 128 with hidden 64 and 4 heads (not hidden/heads; 128 as the real Qwen3s,
         which transformers' GGUF loader assumes),
         no biases, F16 weights, transformers 5's rope_parameters spelling.

Weights are ~ N(0, 1/fan_in), embeddings N(0, 1), norms 1 + N(0, 0.1^2), biases N(0, 0.5^2)
(large enough that dropping one moves the outputs well beyond the tolerance).

The tokenizer is a byte-level BPE trained here on a fixed English and Chinese text (vocab 384,
deterministic), saved as tokenizer.json + tokenizer_config.json with a chat template, shared by
the three checkpoints.

Goldens (each text alone, no padding; row i = text i at its last token): every layer's attention
weights from the last token (FAMILY.attn.textI, [layers, heads, n], output_attentions); for every layer the
input of gate_proj (layers.L.mlp.in), the input of down_proj (layers.L.mlp.down_in) and the
decoder layer's output (layers.L.resid_out); the last hidden state after the final norm
(final.hidden); the logits. Also the logits of the same texts as one right-padded batch, as a
check that transformers' batch equals the single runs.

For qwen2 and qwen3 the same weights are also written as a GGUF with the `gguf` package
(llama.cpp's tensor names: attn_q.bias, attn_q_norm, ...; architecture qwen2 / qwen3; no q/k
row permutation, as llama.cpp's converter writes these NEOX-rope families; the vocabulary with
tokenizer.ggml.pre "qwen2", whose token ids on TOKENIZER_TEXTS transformers' GGUF tokenizer
loader records), F32, and read back with transformers' GGUF loader: its logits must equal the checkpoint's (checked here, the
maximum relative error is recorded).

Each checkpoint is also exported by onnxruntime-genai's model builder (-p fp32 -e cpu) into
builder-FAMILY/ (model.onnx, model.onnx.data, genai_config.json), so that lobes' capture points
can be checked on the builder's own graphs. The builder does not export qwen2's llama3 rope
scaling: its qwen2 export is of a copy without rope_scaling, whose oracle is the qwen2 GGUF's.

Run from the repository root:
    python3 -m venv /work/venv && /work/venv/bin/pip install torch transformers gguf safetensors accelerate onnxruntime-genai onnx onnx_ir
    /work/venv/bin/python test/goldens/make_hf_checkpoint_goldens.py
Writes test/goldens/hf-checkpoints/{tokenizer,llama,mistral,qwen2,qwen3}/ and goldens.json,
goldens.safetensors (tensors named FAMILY.POINT).
    /work/venv/bin/python test/goldens/make_hf_checkpoint_goldens.py --family phi3
adds phi3/, tiny-phi3.gguf, tiny-phi3-plain.gguf and goldens-phi3.{json,safetensors} (see PHI3 below).
    /work/venv/bin/python test/goldens/make_hf_checkpoint_goldens.py --family gemma2   (or gemma3, gemma)
adds gemma2/ (gemma3/), tiny-gemma2.gguf (tiny-gemma3.gguf) and goldens-gemma2.{json,safetensors} (see GEMMA below).
    /work/venv/bin/python test/goldens/make_hf_checkpoint_goldens.py --gemma-vocab
adds tiny-gemma-vocab.gguf and gemma-vocab.json (Gemma's SentencePiece vocabulary, see gemma_vocab_main).
    /work/venv/bin/python test/goldens/make_hf_checkpoint_goldens.py --builder-gemma [gemma2 gemma gemma3]
adds builder-gemma/ and builder-gemma2/ (onnxruntime-genai's builder on the Gemma checkpoints) and
their builder_export entries, and records why gemma3 is not exported (see builder_gemma_main).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import gguf
import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers, processors
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "goldens", "hf-checkpoints")
VOCAB = 384

CORPUS = [
    "The lighthouse keeper wrote in her notebook every evening before the storm came.",
    "A good friend listens before giving advice, and notices how you feel.",
    "Numbers: 3 trains, 12 stations, 240 passengers! The river runs north to the sea.",
    "他每天早上六点起床，然后去公园散步。我们明天一起去图书馆看书吧。",
    "朋友之间应该互相帮助，互相理解。今天的天气很好，适合出去走走。",
]
TEXTS = [
    "The keeper listens to the sea every evening, and writes what she hears in a small notebook by the window.",
    "他每天早上去公园散步。",
    "A friend helps.",
    "我们明天一起去图书馆看书吧，今天的天气很好，适合出去走走，朋友之间应该互相帮助。",
]
# Texts for the GGUF tokenizers (pre-tokenizer "qwen2", as llama.cpp writes Qwen2 / Qwen3
# files): digits, contractions, newlines, spaces, a decomposed accent (NFC), Chinese.
TOKENIZER_TEXTS = TEXTS + [
    "Numbers: 3 trains, 12 stations, 240 passengers! It's 2024-05-17.",
    "Line one\n\n  Line two   with  spaces\tand a tab. We'll see, you're right.",
    "Cafe\u0301 or café? 東京 2 时 30 分。",
]

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

FAMILIES = {
    "llama": dict(
        seed=11,
        config=dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                    max_position_embeddings=256, tie_word_embeddings=False, hidden_act="silu",
                    attention_bias=False, mlp_bias=False),
        rope=("legacy", 10000.0, {"type": "linear", "factor": 2.0}),
        dtype=torch.bfloat16, shard="60KB",
    ),
    "mistral": dict(
        seed=44,
        config=dict(model_type="mistral", architectures=["MistralForCausalLM"], hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, rms_norm_eps=1e-5,
                    max_position_embeddings=256, tie_word_embeddings=False, hidden_act="silu", sliding_window=8),
        rope=("legacy", 10000.0, None),
        dtype=torch.float32, shard=None,
    ),
    "qwen2": dict(
        seed=22,
        config=dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=64, intermediate_size=96,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                    max_position_embeddings=256, tie_word_embeddings=True, hidden_act="silu",
                    use_sliding_window=False, sliding_window=None),
        rope=("rope_type", 1000000.0, {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 16}),
        dtype=torch.float32, shard=None,
    ),
    "qwen3": dict(
        seed=33,
        config=dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_size=64, intermediate_size=128,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=128,
                    rms_norm_eps=1e-6, max_position_embeddings=256, tie_word_embeddings=False,
                    hidden_act="silu", attention_bias=False, use_sliding_window=False, sliding_window=None),
        rope=("parameters", 1000000.0, None),
        dtype=torch.float16, shard=None,
    ),
}


def make_tokenizer(out):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=1, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def write_config(folder, fam):
    """Rewrite config.json with the family's rope spelling (transformers reads every one back)."""
    path = os.path.join(folder, "config.json")
    cfg = json.load(open(path))
    for k in ("rope_parameters", "rope_scaling", "rope_theta"):
        cfg.pop(k, None)
    spelling, theta, scaling = fam["rope"]
    if spelling == "parameters":
        cfg["rope_parameters"] = dict(scaling or {"rope_type": "default"}, rope_theta=theta)
    else:
        cfg["rope_theta"] = theta
        if scaling:
            cfg["rope_scaling"] = scaling
    json.dump(cfg, open(path, "w"), indent=2)


def hooks_run(model, ids_list, final_softcap=None):
    layers = model.config.num_hidden_layers
    cap = {}

    def pre(name):
        def fn(_m, inputs):
            cap[name] = inputs[0][0, -1].detach().clone()
        return fn

    def post(name):
        def fn(_m, _inp, out):
            o = out[0] if isinstance(out, tuple) else out
            cap[name] = o[0, -1].detach().clone()
        return fn

    hs = []
    for i, layer in enumerate(model.model.layers):
        hs.append(layer.mlp.gate_proj.register_forward_pre_hook(pre(f"layers.{i}.mlp.in")))
        hs.append(layer.mlp.down_proj.register_forward_pre_hook(pre(f"layers.{i}.mlp.down_in")))
        hs.append(layer.register_forward_hook(post(f"layers.{i}.resid_out")))
    rows = {}
    with torch.no_grad():
        for ids in ids_list:
            t = torch.tensor([ids])
            out = model(input_ids=t, attention_mask=torch.ones_like(t), output_hidden_states=True, use_cache=False)
            vals = dict(cap)
            vals["final.hidden"] = out.hidden_states[-1][0, -1]
            vals["logits"] = out.logits[0, -1]
            for k, v in vals.items():
                rows.setdefault(k, []).append(v.float())
    for h in hs:
        h.remove()
    # The last hidden state is the lm_head input.
    for h, lg in zip(rows["final.hidden"], rows["logits"]):
        lm = model.lm_head(h)
        if final_softcap is not None:
            lm = torch.tanh(lm / final_softcap) * final_softcap
        assert torch.allclose(lm, lg, atol=1e-4)
    names = [f"layers.{i}.{s}" for i in range(layers) for s in ("mlp.in", "mlp.down_in", "resid_out")] + ["final.hidden", "logits"]
    return {k: torch.stack(rows[k]) for k in names}


def attention_rows(model, ids_list):
    """Each text's attention weights from its last token, [layers, heads, n] (eager, output_attentions)."""
    out = []
    with torch.no_grad():
        for ids in ids_list:
            t = torch.tensor([ids])
            o = model(input_ids=t, attention_mask=torch.ones_like(t), output_attentions=True, use_cache=False)
            out.append(torch.stack([a[0, :, -1, :] for a in o.attentions]).float().contiguous())
    return out


def batch_logits(model, ids_list, pad):
    n = max(len(x) for x in ids_list)
    ids = torch.tensor([x + [pad] * (n - len(x)) for x in ids_list])
    mask = torch.tensor([[1] * len(x) + [0] * (n - len(x)) for x in ids_list])
    with torch.no_grad():
        lg = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    return torch.stack([lg[i, len(x) - 1] for i, x in enumerate(ids_list)])


def rel(a, b):
    return float((a - b).norm() / b.norm())


def write_gguf(model, family, path, tok):
    cfg = model.config
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(path, family)
    w.add_name(f"lobes tiny {family} test model")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    w.add_rope_dimension_count(hd)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    if family == "qwen3":
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    vocab = tok.backend_tokenizer.get_vocab(with_added_tokens=True)
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    added = {a.content for a in tok.backend_tokenizer.get_added_tokens_decoder().values()}
    types = [gguf.TokenType.CONTROL if t in added else gguf.TokenType.NORMAL for t in tokens]
    merges = json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]
    merges = [" ".join(m) if isinstance(m, list) else m for m in merges]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    names = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
             "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
             "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
             "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
             "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
             "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    for l in range(cfg.num_hidden_layers):
        for hf, gg in names.items():
            k = f"model.layers.{l}.{hf}"
            if k in sd:
                w.add_tensor(f"blk.{l}.{gg}", sd[k])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    if not cfg.tie_word_embeddings:
        w.add_tensor("output.weight", sd["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def builder_export(folder, family, out):
    """onnxruntime-genai's model builder on the checkpoint (-p fp32 -e cpu); qwen2's llama3 rope
    scaling, which the builder refuses, is taken out of a copy first (its oracle is then the
    GGUF's: the same weights without rope scaling)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "ckpt")
        shutil.copytree(folder, src)
        note = None
        if family == "qwen2":
            cfg = json.load(open(os.path.join(src, "config.json")))
            cfg.pop("rope_scaling", None)
            json.dump(cfg, open(os.path.join(src, "config.json"), "w"), indent=2)
            note = "rope_scaling removed (the builder does not export llama3 scaling for qwen2); oracle: qwen2-gguf"
        dst = os.path.join(tmp, "out")
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", src, "-i", src, "-o", dst,
                        "-p", "fp32", "-e", "cpu", "-c", os.path.join(tmp, "cache")], check=True, capture_output=True)
        os.makedirs(out)
        for f in ("model.onnx", "model.onnx.data", "genai_config.json"):
            shutil.copy(os.path.join(dst, f), out)
    import onnxruntime_genai
    oracle = {"qwen2": "qwen2-gguf", "llama": "llama-builder", "mistral": "mistral-builder"}.get(family, family)
    return {"builder": f"onnxruntime_genai.models.builder -p fp32 -e cpu, onnxruntime-genai {onnxruntime_genai.__version__}", "note": note,
            "oracle": oracle}


# A YaRN variant of the llama checkpoint: the same folder with this rope_scaling (legacy "type"
# spelling) in config.json; goldens llama-yarn.* from transformers reading that folder. The
# original context (64) is shorter than the longest text (66 tokens) and the ramp spans 3 dims.
YARN = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32, "beta_slow": 1}


def variant_goldens(folder, edit, ids):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "ckpt")
        shutil.copytree(folder, src)
        cfg = json.load(open(os.path.join(src, "config.json")))
        edit(cfg)
        json.dump(cfg, open(os.path.join(src, "config.json"), "w"), indent=2)
        m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
        return hooks_run(m, ids), m.model.rotary_emb.attention_scaling


# What the builder (0.18) writes instead of the checkpoint, found by reading its graphs: it
# leaves out a rope_scaling spelled with the legacy "type" key (cos/sin caches unscaled), and
# Mistral's sliding window (GroupQueryAttention local_window_size -1). The goldens FAMILY-builder
# are transformers on the checkpoint with that setting taken out, the model the builder exported.
BUILDER_DROPS = {"llama": ("rope_scaling", None), "mistral": ("sliding_window", None)}


def builder_oracle(folder, family, ids):
    key, value = BUILDER_DROPS[family]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "ckpt")
        shutil.copytree(folder, src)
        cfg = json.load(open(os.path.join(src, "config.json")))
        cfg[key] = value
        if value is None:
            cfg.pop(key)
        json.dump(cfg, open(os.path.join(src, "config.json"), "w"), indent=2)
        m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
        return hooks_run(m, ids)


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    tok_dir = os.path.join(OUT, "tokenizer")
    tok = make_tokenizer(tok_dir)
    ids = [tok(t, add_special_tokens=True)["input_ids"] for t in TEXTS]
    meta = {"transformers": transformers.__version__, "torch": torch.__version__, "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "?",
            "texts": TEXTS, "ids": ids, "pad": tok.pad_token_id, "families": {}}
    tensors = {}
    for family, fam in FAMILIES.items():
        torch.manual_seed(fam["seed"])
        cfg = transformers.AutoConfig.for_model(**fam["config"], vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                                                pad_token_id=tok.pad_token_id, bos_token_id=None)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
        init_weights(model, fam["seed"])
        folder = os.path.join(OUT, family)
        model.to(fam["dtype"])
        kw = {"max_shard_size": fam["shard"]} if fam["shard"] else {}
        model.save_pretrained(folder, safe_serialization=True, **kw)
        for f in os.listdir(tok_dir):
            shutil.copy(os.path.join(tok_dir, f), folder)
        gen = os.path.join(folder, "generation_config.json")
        if os.path.exists(gen):
            os.remove(gen)
        write_config(folder, fam)
        # The oracle: transformers reading the folder as it is, in float32.
        ref = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
        g = hooks_run(ref, ids)
        b = batch_logits(ref, ids, tok.pad_token_id)
        batch_err = rel(b, g["logits"])
        assert batch_err < 1e-5, batch_err
        for k, v in g.items():
            tensors[f"{family}.{k}"] = v.contiguous()
        for i, a in enumerate(attention_rows(ref, ids)):
            tensors[f"{family}.attn.text{i}"] = a
        info = {"seed": fam["seed"], "dtype": str(fam["dtype"]).replace("torch.", ""), "files": sorted(os.listdir(folder)),
                "rope": fam["rope"][0], "batch_vs_single_logits_rel": batch_err,
                "tensors": {k: list(v.shape) for k, v in g.items()}}
        if family in ("qwen2", "qwen3"):
            gpath = os.path.join(OUT, f"tiny-{family}.gguf")
            write_gguf(ref, family, gpath, tok)
            with tempfile.TemporaryDirectory() as tmp:
                shutil.copy(gpath, tmp)
                hg = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=os.path.basename(gpath), dtype=torch.float32, attn_implementation="eager").eval()
            # The GGUF oracle is transformers reading the GGUF. llama.cpp keeps no rope_scaling for
            # these families, so where the checkpoint has none the two must agree.
            gg = hooks_run(hg, ids)
            info["gguf_vs_checkpoint_logits_rel"] = rel(gg["logits"], g["logits"])
            if fam["rope"][2] is None:
                assert info["gguf_vs_checkpoint_logits_rel"] < 1e-5, info["gguf_vs_checkpoint_logits_rel"]
            for k, v in gg.items():
                tensors[f"{family}-gguf.{k}"] = v.contiguous()
            with tempfile.TemporaryDirectory() as tmp:
                shutil.copy(gpath, tmp)
                gt = transformers.AutoTokenizer.from_pretrained(tmp, gguf_file=os.path.basename(gpath))
            info["gguf_tokenizer"] = {"texts": TOKENIZER_TEXTS, "ids": [gt(t, add_special_tokens=True)["input_ids"] for t in TOKENIZER_TEXTS]}
            info["gguf"] = os.path.basename(gpath)
        info["builder_export"] = builder_export(folder, family, os.path.join(OUT, f"builder-{family}"))
        if family == "llama":
            yg, scaling = variant_goldens(folder, lambda c: c.__setitem__("rope_scaling", YARN), ids)
            info["yarn"] = {"rope_scaling": YARN, "attention_scaling": scaling, "vs_checkpoint_logits_rel": rel(yg["logits"], g["logits"])}
            for k, v in yg.items():
                tensors[f"llama-yarn.{k}"] = v.contiguous()
        if family in BUILDER_DROPS:
            bo = builder_oracle(folder, family, ids)
            info["builder_export"]["drops"] = BUILDER_DROPS[family][0]
            info["builder_export"]["builder_vs_checkpoint_logits_rel"] = rel(bo["logits"], g["logits"])
            for k, v in bo.items():
                tensors[f"{family}-builder.{k}"] = v.contiguous()
        meta["families"][family] = info
        print(family, "ok", info.get("gguf_vs_checkpoint_logits_rel"))
    save_file(tensors, os.path.join(OUT, "goldens.safetensors"))
    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        json.dump(meta, f, indent=1, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------------------------------
# Phi-3 / Phi-4-mini (run with --family phi3; writes phi3/, tiny-phi3*.gguf and
# goldens-phi3.{json,safetensors} next to the others, leaving them as they are).
#
# The checkpoint: hidden 64, 2 layers, 2 heads / 1 KV head of 32 dims, tied embeddings
# (Phi-4-mini), fused qkv_proj and gate_up_proj as transformers' Phi3ForCausalLM holds them,
# partial_rotary_factor 0.5 (16 of the 32 dims rotate), longrope scaling in config.json's
# legacy spelling (rope_scaling {"type": "longrope", short_factor, long_factor} with
# original_max_position_embeddings 32 at the top level, as Phi-3 / Phi-4-mini configs have it:
# texts 0 and 3 (66 and 56 tokens) are longer, texts 1 and 2 (16, 10) shorter; max_position_embeddings
# 256 gives the attention factor sqrt(1 + ln 8 / ln 32)), a sliding window of 24 tokens, F32.
# Goldens phi3.* from transformers reading the folder, each text run alone (so each text picks
# the short or long factors by its own length), with the attention weights from the last token
# (phi3.attn.textI, [layers, heads, n]); phi3-norope.* the same folder without rope_scaling
# (partial rotary and the window kept).
#
# GGUFs, written with the gguf package under llama.cpp's phi3 names (blk.N.attn_qkv,
# blk.N.ffn_up holding gate and up, no ffn_gate; no q/k row permutation):
#   tiny-phi3.gguf        everything llama.cpp's converter writes: phi3.rope.dimension_count 16,
#                         rope_factors_long / rope_factors_short, phi3.rope.scaling.original_context_length,
#                         phi3.rope.scaling.attn_factor, phi3.attention.sliding_window; transformers'
#                         GGUF loader reads none of these, so its oracle is the checkpoint (phi3.*);
#   tiny-phi3-plain.gguf  the same weights with full rotary, no rope factors, no window: its oracle
#                         is transformers' GGUF loader reading it (phi3-gguf.*), checked here to equal
#                         the checkpoint with partial rotary, rope scaling and window taken out;
#   tiny-phi3-q8.gguf     the plain file with every matrix in Q8_0 (the fused attn_qkv / ffn_up
#                         quantized whole, as llama.cpp does): oracle transformers' GGUF loader
#                         dequantizing it (phi3-gguf-q8.*).
PHI3 = dict(
    seed=55,
    config=dict(model_type="phi3", architectures=["Phi3ForCausalLM"], hidden_size=64, intermediate_size=96,
                num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, rms_norm_eps=1e-5,
                max_position_embeddings=256, original_max_position_embeddings=32, tie_word_embeddings=True,
                hidden_act="silu", sliding_window=24),
    partial_rotary_factor=0.5, theta=10000.0,
)


def phi3_factors(seed, n):
    g = np.random.default_rng(seed)
    short = [round(float(x), 4) for x in 1 + 0.5 * g.random(n)]
    long = [round(float(x), 4) for x in np.sort(1 + 7 * g.random(n))]
    return short, long


def write_phi3_gguf(model, path, tok, full, q8=False):
    cfg = model.config
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    hd = cfg.hidden_size // cfg.num_attention_heads
    w = gguf.GGUFWriter(path, "phi3")
    w.add_name("lobes tiny phi3 test model")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(PHI3["theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if q8 else gguf.LlamaFileType.ALL_F32)
    if full:
        rp = cfg.rope_parameters
        rd = int(hd * rp["partial_rotary_factor"])
        w.add_rope_dimension_count(rd)
        orig = rp["original_max_position_embeddings"]
        scale = cfg.max_position_embeddings / orig
        w.add_rope_scaling_attn_factors(1.0 if scale <= 1 else float(np.sqrt(1 + np.log(scale) / np.log(orig))))
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_sliding_window(cfg.sliding_window)
        w.add_tensor("rope_factors_long.weight", np.array(rp["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rp["short_factor"], dtype=np.float32))
    else:
        w.add_rope_dimension_count(hd)
    vocab = tok.backend_tokenizer.get_vocab(with_added_tokens=True)
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    added = {a.content for a in tok.backend_tokenizer.get_added_tokens_decoder().values()}
    merges = json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t in added else gguf.TokenType.NORMAL for t in tokens])
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    names = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
             "self_attn.qkv_proj.weight": "attn_qkv.weight", "self_attn.o_proj.weight": "attn_output.weight",
             "mlp.gate_up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}
    def put(name, x):
        if q8 and x.ndim == 2:
            qt = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(x, qt), raw_shape=gguf.quant_shape_to_byte_shape(x.shape, qt), raw_dtype=qt)
        else:
            w.add_tensor(name, x)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    for l in range(cfg.num_hidden_layers):
        for hf, gg in names.items():
            put(f"blk.{l}.{gg}", sd[f"model.layers.{l}.{hf}"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def hooks_run_batch(model, ids_list, pad):
    """hooks_run's points from one right-padded batch (row i at its last real token): the
    forward onnxruntime-genai's builder graphs compute, longrope chosen once for the batch."""
    cap = {}

    def pre(name):
        def fn(_m, inputs):
            cap[name] = inputs[0].detach().clone()
        return fn

    def post(name):
        def fn(_m, _inp, out):
            cap[name] = (out[0] if isinstance(out, tuple) else out).detach().clone()
        return fn

    hs = []
    for i, layer in enumerate(model.model.layers):
        hs.append(layer.mlp.gate_up_proj.register_forward_pre_hook(pre(f"layers.{i}.mlp.in")))
        hs.append(layer.mlp.down_proj.register_forward_pre_hook(pre(f"layers.{i}.mlp.down_in")))
        hs.append(layer.register_forward_hook(post(f"layers.{i}.resid_out")))
    n = max(len(x) for x in ids_list)
    t = torch.tensor([x + [pad] * (n - len(x)) for x in ids_list])
    mask = torch.tensor([[1] * len(x) + [0] * (n - len(x)) for x in ids_list])
    with torch.no_grad():
        out = model(input_ids=t, attention_mask=mask, output_hidden_states=True, use_cache=False)
    for h in hs:
        h.remove()
    cap["final.hidden"] = out.hidden_states[-1]
    cap["logits"] = out.logits
    last = [len(x) - 1 for x in ids_list]
    return {k: torch.stack([v[r, last[r]].float() for r in range(len(ids_list))]) for k, v in cap.items()}


def phi3_main():
    tok = PreTrainedTokenizerFast.from_pretrained(os.path.join(OUT, "tokenizer"))
    ids = [tok(t, add_special_tokens=True)["input_ids"] for t in TEXTS]
    meta = json.load(open(os.path.join(OUT, "goldens.json")))
    assert ids == meta["ids"], "the tokenizer differs from goldens.json's"
    fam = PHI3
    hd = fam["config"]["hidden_size"] // fam["config"]["num_attention_heads"]
    short, long = phi3_factors(fam["seed"], int(hd * fam["partial_rotary_factor"]) // 2)
    rope_scaling = {"type": "longrope", "short_factor": short, "long_factor": long}
    torch.manual_seed(fam["seed"])
    cfg = transformers.AutoConfig.for_model(**fam["config"], vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                                            pad_token_id=tok.pad_token_id, bos_token_id=None,
                                            rope_scaling=dict(rope_scaling, rope_theta=fam["theta"]),
                                            partial_rotary_factor=fam["partial_rotary_factor"])
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    init_weights(model, fam["seed"])
    folder = os.path.join(OUT, "phi3")
    if os.path.exists(folder):
        shutil.rmtree(folder)
    model.save_pretrained(folder, safe_serialization=True)
    for f in os.listdir(os.path.join(OUT, "tokenizer")):
        shutil.copy(os.path.join(OUT, "tokenizer", f), folder)
    gen = os.path.join(folder, "generation_config.json")
    if os.path.exists(gen):
        os.remove(gen)
    # config.json as Phi-3 / Phi-4-mini checkpoints spell it: rope_theta, rope_scaling, partial_rotary_factor at the top level.
    path = os.path.join(folder, "config.json")
    c = json.load(open(path))
    c.pop("rope_parameters", None)
    c.update(rope_theta=fam["theta"], rope_scaling=rope_scaling, partial_rotary_factor=fam["partial_rotary_factor"],
             original_max_position_embeddings=fam["config"]["original_max_position_embeddings"])
    json.dump(c, open(path, "w"), indent=2)
    ref = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    assert ref.config.rope_parameters["rope_type"] == "longrope", ref.config.rope_parameters
    assert ref.config.rope_parameters["partial_rotary_factor"] == 0.5
    rot = ref.model.rotary_emb
    tensors = {}
    # hooks_run hooks gate_proj / down_proj: Phi3 has gate_up_proj, whose input is mlp.in.
    for layer in ref.model.layers:
        layer.mlp.gate_proj = layer.mlp.gate_up_proj
    g = hooks_run(ref, ids)
    for layer in ref.model.layers:
        del layer.mlp.gate_proj
    for k, v in g.items():
        tensors[f"phi3.{k}"] = v.contiguous()
    for i, a in enumerate(attention_rows(ref, ids)):
        tensors[f"phi3.attn.text{i}"] = a
    # The longrope threshold: text 0 cut to 32 tokens (= original_max_position_embeddings: short
    # factors) and to 33 (long), each run alone; last-token logits phi3-edge.logits [2, V].
    edge = [ids[0][:32], ids[0][:33]]
    with torch.no_grad():
        tensors["phi3-edge.logits"] = torch.stack([ref(input_ids=torch.tensor([e]), use_cache=False).logits[0, -1].float() for e in edge]).contiguous()
    info = {"seed": fam["seed"], "dtype": "float32", "files": sorted(os.listdir(folder)), "rope": "legacy",
            "attention_scaling": rot.attention_scaling, "lengths": [len(x) for x in ids], "edge_ids": edge,
            "tensors": {k: list(v.shape) for k, v in g.items()}}

    def run_variant(edit):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "ckpt")
            shutil.copytree(folder, src)
            cc = json.load(open(os.path.join(src, "config.json")))
            edit(cc)
            json.dump(cc, open(os.path.join(src, "config.json"), "w"), indent=2)
            m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
            for layer in m.model.layers:
                layer.mlp.gate_proj = layer.mlp.gate_up_proj
            return hooks_run(m, ids), attention_rows(m, ids)

    nr, nr_attn = run_variant(lambda cc: cc.pop("rope_scaling"))
    for i, a in enumerate(nr_attn):
        tensors[f"phi3-norope.attn.text{i}"] = a
    info["norope_vs_checkpoint_logits_rel"] = rel(nr["logits"], g["logits"])
    for k, v in nr.items():
        tensors[f"phi3-norope.{k}"] = v.contiguous()
    # Plain: no partial rotary, no rope scaling, no window (what transformers' GGUF loader keeps of a phi3 file).
    plain, _ = run_variant(lambda cc: [cc.pop("rope_scaling"), cc.pop("sliding_window"), cc.__setitem__("partial_rotary_factor", 1.0)])
    for name, full, q8 in (("tiny-phi3.gguf", True, False), ("tiny-phi3-plain.gguf", False, False), ("tiny-phi3-q8.gguf", False, True)):
        gpath = os.path.join(OUT, name)
        write_phi3_gguf(ref, gpath, tok, full, q8)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(gpath, tmp)
            hg = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=name, dtype=torch.float32, attn_implementation="eager").eval()
        for layer in hg.model.layers:
            layer.mlp.gate_proj = layer.mlp.gate_up_proj
        gg = hooks_run(hg, ids)
        key = "gguf_full" if full else "gguf_q8" if q8 else "gguf"
        info[f"{key}_loader_vs_checkpoint_logits_rel"] = rel(gg["logits"], g["logits"])
        info[f"{key}_loader_vs_plain_checkpoint_logits_rel"] = rel(gg["logits"], plain["logits"])
        if not full and not q8:
            assert info["gguf_loader_vs_plain_checkpoint_logits_rel"] < 1e-5, info
            for k, v in gg.items():
                tensors[f"phi3-gguf.{k}"] = v.contiguous()
        if q8:
            for k, v in gg.items():
                tensors[f"phi3-gguf-q8.{k}"] = v.contiguous()
        info[key] = name
    # onnxruntime-genai's builder (-p fp32 -e cpu) on the checkpoint: it leaves out the sliding
    # window (local_window_size -1) and chooses the longrope cache once per batch by its length
    # (an If on the sequence length), so its oracle is transformers' batched forward (right
    # padding, 66 > 32 tokens: the long factors for every text) on the checkpoint without the window.
    out_b = os.path.join(OUT, "builder-phi3")
    if os.path.exists(out_b):
        shutil.rmtree(out_b)
    info["builder_export"] = builder_export(folder, "phi3", out_b)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "ckpt")
        shutil.copytree(folder, src)
        cc = json.load(open(os.path.join(src, "config.json")))
        cc.pop("sliding_window")
        json.dump(cc, open(os.path.join(src, "config.json"), "w"), indent=2)
        m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
        bo = hooks_run_batch(m, ids, tok.pad_token_id)
    info["builder_export"].update(oracle="phi3-builder", drops="sliding_window; longrope chosen per batch",
                                  builder_vs_checkpoint_logits_rel=rel(bo["logits"], g["logits"]))
    for k, v in bo.items():
        tensors[f"phi3-builder.{k}"] = v.contiguous()
    save_file(tensors, os.path.join(OUT, "goldens-phi3.safetensors"))
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "texts": TEXTS, "ids": ids, "pad": tok.pad_token_id,
           "families": {"phi3": info}}
    with open(os.path.join(OUT, "goldens-phi3.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("phi3 ok", json.dumps({k: v for k, v in info.items() if "rel" in k or "scaling" in k}))


# ---------------------------------------------------------------------------------------
# Gemma 2 and Gemma 3 text (run with --family gemma2 / --family gemma3, and --family gemma for
# Gemma 1; each writes FAMILY/ and
# goldens-FAMILY.{json,safetensors}, leaving the other files as they are).
#
# Both: hidden 64, 4 heads of 32 dims (head_dim set on its own: q_proj has 128 outputs), GeGLU
# MLPs (gelu_pytorch_tanh on the gate), four (1 + w) RMSNorms per layer, embeddings times
# sqrt(64), query_pre_attn_scalar unlike head_dim (the attention scale is its inverse square
# root), sliding_window 8 (shorter than every text: 10 to 66 tokens) on the sliding_attention
# layers of layer_types. Norm weights ~ N(0, 0.3^2) (Gemma stores w for a scale of 1 + w).
#   gemma2  3 layers (sliding, full, sliding: Gemma2Config's default alternation), 2 KV heads,
#           attention logit soft-capping 4 and final logit soft-capping 6 (small enough that the
#           tanh changes the outputs well beyond the tolerance), tied embeddings, rope_theta
#           10000, F32;
#   gemma3  gemma3_text, 4 layers (layer_types sliding, sliding, full, sliding), 1 KV head,
#           per-head q_norm / k_norm, no soft-capping, the sliding layers' rope base 10000
#           (rope_local_base_freq) and the full layers' 1e6 with linear scaling factor 4, saved in
#           transformers 5's spelling (rope_parameters per layer type), untied lm_head, BF16.
# Goldens FAMILY.* from transformers reading the folder (fp32, eager attention), each text run
# alone, with the attention weights from the last token (FAMILY.attn.textI, [layers, heads, n];
# Gemma 2's after the soft-cap); the same texts as one right-padded batch must give the same logits. For gemma3 the
# legacy spelling (rope_theta, rope_local_base_freq, rope_scaling at the top level) is checked
# here to give transformers the same logits.
GEMMA = {
    # Gemma 1: (1 + w) norms, sqrt(hidden) embeddings and GeGLU, but Llama's two norms per layer,
    # the attention scale head_dim^-1/2, no windows, no soft-caps; hidden_act "gelu" as the
    # official configs spell it (GemmaConfig reads it as gelu_pytorch_tanh); MQA (1 KV head), F16.
    "gemma": dict(
        seed=88,
        config=dict(model_type="gemma", architectures=["GemmaForCausalLM"], hidden_size=64, intermediate_size=96,
                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                    rms_norm_eps=1e-6, max_position_embeddings=256, tie_word_embeddings=True, hidden_act="gelu",
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        dtype=torch.float16,
    ),
    "gemma2": dict(
        seed=66,
        config=dict(model_type="gemma2", architectures=["Gemma2ForCausalLM"], hidden_size=64, intermediate_size=96,
                    num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                    rms_norm_eps=1e-6, max_position_embeddings=256, tie_word_embeddings=True,
                    hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=8,
                    attn_logit_softcapping=4.0, final_logit_softcapping=6.0,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        dtype=torch.float32,
    ),
    "gemma3": dict(
        seed=77,
        config=dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], hidden_size=64, intermediate_size=96,
                    num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                    rms_norm_eps=1e-6, max_position_embeddings=256, tie_word_embeddings=False,
                    hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=20, sliding_window=8,
                    layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
                    rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
        dtype=torch.bfloat16,
    ),
}


# The GGUFs (tiny-gemma2.gguf F32, tiny-gemma3.gguf F16), written with the gguf package as
# llama.cpp's converter writes these architectures: its tensor names (attn_norm,
# post_attention_norm, ffn_norm for pre_feedforward_layernorm, post_ffw_norm, attn_q_norm,
# attn_k_norm), every norm weight stored as 1 + w, no q/k row permutation, no output.weight
# (tied), key_length / value_length = head_dim, sliding_window, gemma2's soft-caps, gemma3's
# rope_theta of the full layers. llama.cpp itself takes the attention scale as head_dim^-1/2
# (hidden/heads for the 27B models), the sliding layers every other one (gemma2) or five of six
# (gemma3), gemma3's local rope base 10000; transformers' GGUF loader reads none of these nor the
# soft-caps, taking its config classes' defaults (query_pre_attn_scalar 256, soft-caps 50 / 30,
# the same layer patterns and local base). The models written as GGUFs are therefore made where
# both agree: head_dim 256 (1 head, 1 KV head), query_pre_attn_scalar 256, soft-caps 50 / 30,
# gemma2 2 layers, gemma3 6 layers (5 sliding, 1 full) without rope scaling. Oracle FAMILY-gguf.*:
# transformers loading the GGUF, checked here to equal that model's checkpoint.
GEMMA_GGUF = {
    "gemma2": dict(num_hidden_layers=2, num_attention_heads=1, num_key_value_heads=1, head_dim=256, intermediate_size=64,
                   query_pre_attn_scalar=256, attn_logit_softcapping=50.0, final_logit_softcapping=30.0, layer_types=None),
    "gemma3": dict(num_hidden_layers=6, num_attention_heads=1, num_key_value_heads=1, head_dim=256, intermediate_size=64,
                   query_pre_attn_scalar=256, tie_word_embeddings=True, layer_types=None,
                   rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
}


def write_gemma_gguf(model, family, path, tok, ftype):
    cfg = model.config
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(path, family)
    w.add_name(f"lobes tiny {family} test model")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if ftype == "f16" else gguf.LlamaFileType.ALL_F32)
    if family == "gemma2":
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
    else:
        w.add_rope_freq_base(cfg.rope_parameters["full_attention"]["rope_theta"])
    w.add_sliding_window(cfg.sliding_window)
    vocab = tok.backend_tokenizer.get_vocab(with_added_tokens=True)
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    added = {a.content for a in tok.backend_tokenizer.get_added_tokens_decoder().values()}
    merges = json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t in added else gguf.TokenType.NORMAL for t in tokens])
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    names = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
             "pre_feedforward_layernorm.weight": "ffn_norm.weight", "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
             "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
             "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
             "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
             "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}

    def put(name, x, hf):
        if hf.endswith("norm.weight"):
            x = x + np.float32(1)  # llama.cpp's converter stores Gemma's norm weights as 1 + w
            w.add_tensor(name, x.astype(np.float32))
        elif ftype == "f16":
            w.add_tensor(name, x.astype(np.float16))
        else:
            w.add_tensor(name, x)

    put("token_embd.weight", sd["model.embed_tokens.weight"], "model.embed_tokens.weight")
    for l in range(cfg.num_hidden_layers):
        for hf, gg in names.items():
            k = f"model.layers.{l}.{hf}"
            if k in sd:
                put(f"blk.{l}.{gg}", sd[k], k)
    put("output_norm.weight", sd["model.norm.weight"], "model.norm.weight")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gemma_gguf(family, tok, ids, tensors, info):
    fam = GEMMA[family]
    torch.manual_seed(fam["seed"] + 1)
    conf = dict(fam["config"], **GEMMA_GGUF[family])
    conf = {k: v for k, v in conf.items() if v is not None}
    cfg = transformers.AutoConfig.for_model(**conf, vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                                            pad_token_id=tok.pad_token_id, bos_token_id=None)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    gemma_init(model, fam["seed"] + 1)
    if family == "gemma3":
        # F16 storage: the oracle model holds the F16-rounded weights (norms stay F32).
        with torch.no_grad():
            for n, p in model.named_parameters():
                if not n.endswith("norm.weight"):
                    p.copy_(p.half().float())
    cap = model.config.final_logit_softcapping
    ck = hooks_run(model, ids, cap)
    name = f"tiny-{family}.gguf"
    gpath = os.path.join(OUT, name)
    write_gemma_gguf(model, family, gpath, tok, "f16" if family == "gemma3" else "f32")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(gpath, tmp)
        hg = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=name, dtype=torch.float32, attn_implementation="eager").eval()
    assert hg.config.layer_types == model.config.layer_types, (hg.config.layer_types, model.config.layer_types)
    gg = hooks_run(hg, ids, hg.config.final_logit_softcapping)
    info["gguf"] = name
    info["gguf_layer_types"] = hg.config.layer_types
    info["gguf_loader_vs_checkpoint_logits_rel"] = rel(gg["logits"], ck["logits"])
    assert info["gguf_loader_vs_checkpoint_logits_rel"] < 1e-5, info
    for k, v in gg.items():
        tensors[f"{family}-gguf.{k}"] = v.contiguous()


def gemma_init(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def gemma_main(family):
    tok = PreTrainedTokenizerFast.from_pretrained(os.path.join(OUT, "tokenizer"))
    ids = [tok(t, add_special_tokens=True)["input_ids"] for t in TEXTS]
    meta = json.load(open(os.path.join(OUT, "goldens.json")))
    assert ids == meta["ids"], "the tokenizer differs from goldens.json's"
    fam = GEMMA[family]
    torch.manual_seed(fam["seed"])
    cfg = transformers.AutoConfig.for_model(**fam["config"], vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                                            pad_token_id=tok.pad_token_id, bos_token_id=None)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    gemma_init(model, fam["seed"])
    model.to(fam["dtype"])
    folder = os.path.join(OUT, family)
    if os.path.exists(folder):
        shutil.rmtree(folder)
    model.save_pretrained(folder, safe_serialization=True)
    for f in os.listdir(os.path.join(OUT, "tokenizer")):
        shutil.copy(os.path.join(OUT, "tokenizer", f), folder)
    gen = os.path.join(folder, "generation_config.json")
    if os.path.exists(gen):
        os.remove(gen)
    if family == "gemma":
        # config.json as the official Gemma 1 checkpoints spell the activation
        path = os.path.join(folder, "config.json")
        c = json.load(open(path))
        c["hidden_act"] = "gelu"
        json.dump(c, open(path, "w"), indent=2)
    ref = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    assert (ref.config.hidden_act if family == "gemma" else ref.config.hidden_activation) == "gelu_pytorch_tanh"
    cap = getattr(ref.config, "final_logit_softcapping", None)
    g = hooks_run(ref, ids, cap)
    b = batch_logits(ref, ids, tok.pad_token_id)
    batch_err = rel(b, g["logits"])
    assert batch_err < 1e-5, batch_err
    tensors = {f"{family}.{k}": v.contiguous() for k, v in g.items()}
    for i, a in enumerate(attention_rows(ref, ids)):
        tensors[f"{family}.attn.text{i}"] = a
    info = {"seed": fam["seed"], "dtype": str(fam["dtype"]).replace("torch.", ""), "files": sorted(os.listdir(folder)),
            "rope": "parameters", "layer_types": getattr(ref.config, "layer_types", None), "batch_vs_single_logits_rel": batch_err,
            "lengths": [len(x) for x in ids], "tensors": {k: list(v.shape) for k, v in g.items()}}
    if family == "gemma3":
        # The legacy spelling of the same rope settings (as Gemma 3 configs on the Hub have it).
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "ckpt")
            shutil.copytree(folder, src)
            cc = json.load(open(os.path.join(src, "config.json")))
            rp = cc.pop("rope_parameters")
            full = dict(rp["full_attention"])
            cc["rope_theta"] = full.pop("rope_theta")
            cc["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"]
            cc["rope_scaling"] = full
            json.dump(cc, open(os.path.join(src, "config.json"), "w"), indent=2)
            m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
            assert m.config.rope_parameters == ref.config.rope_parameters, (m.config.rope_parameters, ref.config.rope_parameters)
            info["legacy_spelling_vs_checkpoint_logits_rel"] = rel(hooks_run(m, ids)["logits"], g["logits"])
            assert info["legacy_spelling_vs_checkpoint_logits_rel"] == 0, info
    if family in GEMMA_GGUF:
        gemma_gguf(family, tok, ids, tensors, info)
    save_file(tensors, os.path.join(OUT, f"goldens-{family}.safetensors"))
    out = {"transformers": transformers.__version__, "torch": torch.__version__, "texts": TEXTS, "ids": ids, "pad": tok.pad_token_id,
           "families": {family: info}}
    with open(os.path.join(OUT, f"goldens-{family}.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(family, "ok", batch_err)


# Gemma's vocabulary as llama.cpp writes it into Gemma GGUFs (run with --gemma-vocab): a
# SentencePiece BPE vocabulary (tokenizer.ggml.model "llama") of architecture gemma2, trained
# here with byte fallback on CORPUS with spaces as "▁" and none prepended, laid out as Gemma's
# files are: <pad> 0, <eos> 1, <bos> 2, <unk> 3, two turn markers (control), the 256 byte tokens,
# then the pieces in merge order, then tokens of spaces only stored as real spaces ("  ", "   ",
# as llama.cpp writes Gemma's "▁▁") and a tab. Written to tiny-gemma-vocab.gguf (metadata
# only); gemma-vocab.json holds transformers' GGUF tokenizer's ids on TOKENIZER_TEXTS and a few
# more (turn markers, runs of spaces) and the merges it recovers from the file.
def gemma_vocab_main():
    from tokenizers import normalizers
    sp = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    sp.normalizer = normalizers.Replace(" ", "\u2581")
    sp.train_from_iterator(CORPUS * 4, trainer=trainers.BpeTrainer(vocab_size=420, min_frequency=1, special_tokens=[], show_progress=False))
    learned = [t for t, _ in sorted(sp.get_vocab().items(), key=lambda kv: kv[1])]
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
    tokens = specials + [f"<0x{b:02X}>" for b in range(256)] + learned + ["  ", "   ", "\t"]
    types = [3, 3, 3, 2, 3, 3] + [6] * 256 + [1] * (len(learned) + 3)
    path = os.path.join(OUT, "tiny-gemma-vocab.gguf")
    w = gguf.GGUFWriter(path, "gemma2")
    w.add_name("lobes tiny gemma vocabulary")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores([float(-i) for i in range(len(tokens))])
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(path, tmp)
        t = transformers.AutoTokenizer.from_pretrained(tmp, gguf_file=os.path.basename(path))
    assert type(t).__name__ == "GemmaTokenizer", type(t)
    texts = TOKENIZER_TEXTS + ["<start_of_turn>user\nhi  there<end_of_turn>", "  leading spaces", "end  ", "a\tb   c"]
    tj = json.loads(t.backend_tokenizer.to_str())
    out = {"transformers": transformers.__version__, "texts": texts, "ids": [t(x, add_special_tokens=True)["input_ids"] for x in texts],
           "merges": [" ".join(m) if isinstance(m, list) else m for m in tj["model"]["merges"]]}
    with open(os.path.join(OUT, "gemma-vocab.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("gemma vocabulary ok", len(tokens), "tokens,", len(out["merges"]), "merges")


# onnxruntime-genai's builder on the committed Gemma checkpoints (run with --builder-gemma, after
# --family gemma / gemma2 / gemma3; writes builder-gemma/ and builder-gemma2/ and adds a
# builder_export entry to goldens-gemma.json and goldens-gemma2.json, leaving every other file as
# it is). The oracle is each checkpoint's own goldens (FAMILY.*: transformers, fp32):
#   gemma2  the checkpoint as it is. The builder's sliding layers are GroupQueryAttention nodes
#           with sliding_window_cache (a KV buffer at least local_window_size long), which lobes
#           feeds as a zero buffer of that length with no past tokens in it;
#   gemma   an F32 copy of the F16 checkpoint (the same values, widened; transformers loads both
#           to the same logits, checked here): the builder adds 1 to a norm weight in the
#           checkpoint's dtype, so from F16 it stores fp16(1 + w) where transformers computes
#           1 + w in float32; from F32 its 1 + w is transformers'. The F16 export is measured here
#           (its norm weights' largest difference from 1 + w, its logits from onnxruntime) and not
#           committed;
#   gemma3  not exported: the builder (0.18) reads config.json through transformers 5's
#           AutoConfig, which gives Gemma 3 per-layer-type rope_parameters in every spelling
#           (transformers 5's, or the older rope_theta + rope_local_base_freq + rope_scaling), and
#           fails on them; the errors of each spelling are recorded in goldens-gemma3.json.
BUILDER_GEMMA_SPELLINGS = {
    "rope_parameters per layer type (transformers 5, the committed config.json)": None,
    "rope_theta + rope_local_base_freq + rope_scaling (transformers 4)": "legacy",
    "flat rope_parameters (the full layers' rope) + rope_local_base_freq": "flat",
}


def gemma3_spelling(cfg, kind):
    rp = cfg.pop("rope_parameters")
    full = dict(rp["full_attention"])
    if kind == "legacy":
        cfg["rope_theta"] = full.pop("rope_theta")
        cfg["rope_scaling"] = full
    else:
        cfg["rope_parameters"] = full
    cfg["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"]


def run_builder(src, dst, tmp):
    r = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", src, "-i", src, "-o", dst,
                        "-p", "fp32", "-e", "cpu", "-c", os.path.join(tmp, "cache")], capture_output=True, text=True)
    lines = [l for l in (r.stderr + r.stdout).splitlines() if l.strip()]
    err = next((l for l in reversed(lines) if "Error" in l), None) if r.returncode else None
    where = None
    if err:
        frames = [l.strip() for l in lines if l.strip().startswith("File ") and "onnxruntime_genai" in l]
        where = frames[-1].split("site-packages/")[-1].replace('"', "") if frames else None
    return r.returncode, err, where


def onnx_logits(folder, ids, pad):
    """Last-token logits of a builder export, each text alone (onnxruntime's Python API)."""
    import onnxruntime as ort_py
    s = ort_py.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
    dec = json.load(open(os.path.join(folder, "genai_config.json")))["model"]["decoder"]
    rows = []
    for x in ids:
        feeds = {"input_ids": np.array([x], dtype=np.int64), "attention_mask": np.ones((1, len(x)), dtype=np.int64)}
        for i in s.get_inputs():
            if i.name.startswith("past_key_values."):
                feeds[i.name] = np.zeros((1, dec["num_key_value_heads"], 0, dec["head_size"]), dtype=np.float32)
        rows.append(torch.from_numpy(s.run(["logits"], feeds)[0][0, -1]))
    return torch.stack(rows)


def builder_gemma_main(families=("gemma2", "gemma", "gemma3")):
    import onnx
    from onnx import numpy_helper
    from safetensors.torch import load_file
    import onnxruntime_genai
    version = f"onnxruntime_genai.models.builder -p fp32 -e cpu, onnxruntime-genai {onnxruntime_genai.__version__}, transformers {transformers.__version__}"
    for family in families:
        jpath = os.path.join(OUT, f"goldens-{family}.json")
        meta = json.load(open(jpath))
        folder = os.path.join(OUT, family)
        info = {"builder": version, "oracle": family}
        with tempfile.TemporaryDirectory() as tmp:
            if family == "gemma3":
                info["oracle"] = None
                info["errors"] = {}
                # What transformers reads from each spelling: its logits against the checkpoint's
                # (0: the same model; the flat spelling loses the full layers' linear scaling).
                info["spelling_vs_checkpoint_logits_rel"] = {}
                ref = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
                gold = hooks_run(ref, meta["ids"])["logits"]
                for label, kind in BUILDER_GEMMA_SPELLINGS.items():
                    src = os.path.join(tmp, f"ckpt-{kind}")
                    shutil.copytree(folder, src)
                    if kind:
                        cfg = json.load(open(os.path.join(src, "config.json")))
                        gemma3_spelling(cfg, kind)
                        json.dump(cfg, open(os.path.join(src, "config.json"), "w"), indent=2)
                    m = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
                    info["spelling_vs_checkpoint_logits_rel"][label] = rel(hooks_run(m, meta["ids"])["logits"], gold)
                    rc, err, where = run_builder(src, os.path.join(tmp, f"out-{kind}"), tmp)
                    assert rc != 0, "the builder exported gemma3: commit it and test it"
                    info["errors"][label] = f"{err} ({where})"
                info["note"] = "not exported: the builder reads config.json through transformers 5's AutoConfig, which holds Gemma 3's rope per layer type in every spelling"
            else:
                src = folder
                if family == "gemma":
                    src = os.path.join(tmp, "ckpt-f32")
                    shutil.copytree(folder, src)
                    st = os.path.join(src, "model.safetensors")
                    save_file({k: v.float().contiguous() for k, v in load_file(st).items()}, st, metadata={"format": "pt"})
                    cfg = json.load(open(os.path.join(src, "config.json")))
                    cfg["dtype"] = "float32"
                    json.dump(cfg, open(os.path.join(src, "config.json"), "w"), indent=2)
                    a = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
                    b = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval()
                    la, lb = hooks_run(a, meta["ids"])["logits"], hooks_run(b, meta["ids"])["logits"]
                    info["f32_copy_vs_checkpoint_logits_rel"] = rel(lb, la)
                    assert info["f32_copy_vs_checkpoint_logits_rel"] == 0, info
                    info["note"] = "an F32 copy of the F16 checkpoint (the same values, widened): the builder adds 1 to a norm weight in the checkpoint's dtype"
                    # The F16 checkpoint itself, measured and not committed.
                    f16 = os.path.join(tmp, "out-f16")
                    rc, err, _ = run_builder(folder, f16, tmp)
                    assert rc == 0, err
                    g = onnx.load(os.path.join(f16, "model.onnx"))
                    norms = {t.name: numpy_helper.to_array(t) for t in g.graph.initializer if "layernorm" in t.name or t.name.endswith("norm.weight")}
                    sd = load_file(os.path.join(folder, "model.safetensors"))
                    worst = 0.0
                    for k, v in sd.items():
                        if k.endswith("norm.weight"):
                            exact = 1 + v.float().numpy()
                            cand = [x for x in norms.values() if x.shape == exact.shape]
                            worst = max(worst, min(float(np.abs(x.astype(np.float64) - exact).max()) for x in cand))
                    info["f16_export_norm_weight_max_abs_diff"] = worst
                    gold = hooks_run(a, meta["ids"])["logits"]
                    info["f16_export_logits_rel"] = rel(onnx_logits(f16, meta["ids"], meta["pad"]), gold)
                else:
                    info["note"] = None
                out = os.path.join(OUT, f"builder-{family}")
                if os.path.exists(out):
                    shutil.rmtree(out)
                dst = os.path.join(tmp, "out")
                rc, err, _ = run_builder(src, dst, tmp)
                assert rc == 0, err
                os.makedirs(out)
                for f in ("model.onnx", "model.onnx.data", "genai_config.json"):
                    shutil.copy(os.path.join(dst, f), out)
        meta["families"][family]["builder_export"] = info
        with open(jpath, "w") as f:
            json.dump(meta, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(family, json.dumps(info))


if __name__ == "__main__":
    if sys.argv[1:] == ["--family", "phi3"]:
        phi3_main()
    elif sys.argv[1:] == ["--gemma-vocab"]:
        gemma_vocab_main()
    elif sys.argv[1:2] == ["--builder-gemma"] and all(f in GEMMA for f in sys.argv[2:]):
        builder_gemma_main(tuple(sys.argv[2:]) or ("gemma2", "gemma", "gemma3"))
    elif len(sys.argv) == 3 and sys.argv[1] == "--family" and sys.argv[2] in GEMMA:
        gemma_main(sys.argv[2])
    else:
        main()
