"""Hugging Face attention goldens for `lobes attend` (App. C.4 of SocialEval: attention from the
answering position). Every golden is the attention of the LAST position over every position,
for every layer and head, from transformers with attn_implementation="eager" and
output_attentions=True: tensor [layers, heads, seq] per input, float32.

Three parts (from the repository root; Python is needed only to remake these files):

  gqa        a tiny seeded Llama (2 layers, hidden 64, 4 heads / 2 KV heads, O(1) weights) saved as
             a Hugging Face checkpoint and exported by onnxruntime-genai's model builder
             (fp32, CPU: GroupQueryAttention with in-op rotary and packed QKV), plus its goldens:
             -> test/attend/fixtures/gqa-tiny/ (model.onnx, model.onnx.data, genai_config.json,
                config.json, goldens.json, goldens.safetensors; the tokenizer files of
                models/tiny-llama, whose vocabulary size it shares)
  reference  goldens for the committed torch.onnx (dynamo) and optimum exports of
             test/goldens/ (rebuilt with test/goldens/make_hf_reference.py's build_model,
             checked against its logit goldens): -> test/attend/fixtures/hf-tiny-llama31{,-optimum}.*
  offsets    token character offsets from Hugging Face's tokenizers library (the oracle for
             lobes' token-to-text alignment) for byte-level BPE (models/tiny-llama, Llama-3.1 from
             node_modules) and SentencePiece (../shared's Llama-2 tokenizer) on English, Chinese
             and mixed strings: -> test/attend/fixtures/offsets.json
  smollm2    SmolLM2-135M-Instruct from ../shared (the GGUF, dequantized by transformers' GGUF
             loader) on three chat-template prompts, English and Chinese:
             -> test/attend/fixtures/smollm2.json, smollm2.safetensors

    /work/venv/bin/python test/attend/make_attention_goldens.py [gqa] [reference] [offsets] [smollm2]
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "test", "attend", "fixtures")
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


def last_rows(model, ids):
    """[layers, heads, seq]: every layer's attention of the last position, eager attention."""
    t = torch.tensor([ids])
    with torch.no_grad():
        out = model(input_ids=t, attention_mask=torch.ones_like(t), output_attentions=True, use_cache=False)
    return torch.stack([a[0, :, -1, :] for a in out.attentions]).float().contiguous()


def write(name, meta, tensors):
    os.makedirs(FIX, exist_ok=True)
    save_file(tensors, os.path.join(FIX, f"{name}.safetensors"))
    with open(os.path.join(FIX, f"{name}.json"), "w") as f:
        json.dump(meta, f, indent=1, ensure_ascii=False)
        f.write("\n")


def versions():
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__}


GQA_IDS = [
    [1, 17, 200, 33, 9, 70, 301, 5, 88],
    [1, 4, 99],
    [1, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112],
]


def make_gqa():
    from transformers import LlamaConfig, LlamaForCausalLM

    seed = 11
    cfg = LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=512, max_position_embeddings=256, rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-5,
        bos_token_id=509, eos_token_id=510, pad_token_id=511,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    # O(1) activations so that attention is far from uniform: projections ~ N(0, 4/fan_in).
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(2 * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
    model.config._attn_implementation = "eager"
    out = os.path.join(FIX, "gqa-tiny")
    with tempfile.TemporaryDirectory() as tmp:
        hf = os.path.join(tmp, "hf")
        model.save_pretrained(hf)
        # The builder saves a tokenizer: lend it the generated tiny model's (same vocabulary size).
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(ROOT, "models", "tiny-llama", f), hf)
        dst = os.path.join(tmp, "onnx")
        cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-m", hf, "-i", hf, "-o", dst, "-p", "fp32", "-e", "cpu", "-c", os.path.join(tmp, "cache")]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        if os.path.exists(out):
            shutil.rmtree(out)
        os.makedirs(out)
        for f in ("model.onnx", "model.onnx.data", "genai_config.json"):
            shutil.copy(os.path.join(dst, f), out)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(ROOT, "models", "tiny-llama", f), out)
        model.config.save_pretrained(out)
    tensors = {f"ids{i}": last_rows(model, ids) for i, ids in enumerate(GQA_IDS)}
    import onnxruntime_genai

    meta = {"seed": seed, "ids": GQA_IDS, "builder": f"onnxruntime_genai {onnxruntime_genai.__version__} models.builder -p fp32 -e cpu", **versions(),
            "note": "tensor ids{i}: [layers, heads, seq], attention of the last position of ids[i]"}
    save_file(tensors, os.path.join(out, "goldens.safetensors"))
    with open(os.path.join(out, "goldens.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")


def make_reference(variant):
    sys.argv = [sys.argv[0], "--variant", variant]
    path = os.path.join(ROOT, "test", "goldens", "make_hf_reference.py")
    spec = importlib.util.spec_from_file_location(f"make_hf_reference_{variant}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.build_model()
    model.config._attn_implementation = "eager"
    ref = os.path.join(mod.OUT)
    meta_in = json.load(open(os.path.join(ref, "goldens.json")))
    logits = load_file(os.path.join(ref, "goldens.safetensors"))["logits"]
    tensors = {}
    for i, ids in enumerate(meta_in["ids"]):
        t = torch.tensor([ids])
        with torch.no_grad():
            lg = model(input_ids=t, attention_mask=torch.ones_like(t), use_cache=False).logits[0, -1]
        # The rebuilt model is the exported one: its logits match the committed goldens.
        assert torch.allclose(lg, logits[i], atol=1e-4), f"{variant}: rebuilt model differs from the reference goldens"
        tensors[f"ids{i}"] = last_rows(model, ids)
    name = os.path.basename(ref)
    write(name, {"variant": variant, "model": f"test/goldens/{name}", "ids": meta_in["ids"], **versions(),
                 "note": "tensor ids{i}: [layers, heads, seq], attention of the last position of ids[i]"}, tensors)
    print(f"wrote {name}")


OFFSET_TEXTS = [
    "Mia forgot her friend's birthday, and feels awful.\nWhat should she say?",
    "A. \"Sorry!\" B. well-being (3.14%)   C. don't",
    "小李的同事在会议上批评了他的方案。他应该怎么做？",
    "答案：A. 认真听取意见 — ok?",
    "emoji 🙂 and 𠀋 outside the BMP",
]
OFFSET_TOKENIZERS = {
    "tiny-llama": os.path.join(ROOT, "models", "tiny-llama", "tokenizer.json"),
    "llama3": os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-llama3_1", "models", "tokenizer.json"),
    "llama2-spm": os.path.join(SHARED, "models", "ort-genai-tiny-llama-fp16", "tokenizer.json"),
}


def make_offsets():
    from tokenizers import Tokenizer
    import tokenizers

    def utf16(text, i):
        return len(text[:i].encode("utf-16-le")) // 2

    out = {"tokenizers": tokenizers.__version__, "texts": OFFSET_TEXTS, "cases": {}}
    for name, path in OFFSET_TOKENIZERS.items():
        tok = Tokenizer.from_file(path)
        cases = []
        for text in OFFSET_TEXTS:
            enc = tok.encode(text, add_special_tokens=True)
            cases.append({"ids": enc.ids, "offsets": [[utf16(text, a), utf16(text, b)] for a, b in enc.offsets], "special": enc.special_tokens_mask})
        out["cases"][name] = {"tokenizer": os.path.relpath(path, ROOT), "encodings": cases}
    os.makedirs(FIX, exist_ok=True)
    with open(os.path.join(FIX, "offsets.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")
    print("wrote offsets.json")


SMOL_PROMPTS = [
    'Read the dialogue and answer with the letter of the best reply.\nContext: Mia forgot her friend\'s birthday and feels awful.\n'
    'Question: What should Mia say?\nA. "Sorry, I forgot. Let me take you to dinner."\nB. "Birthdays are overrated anyway."\nAnswer:',
    "阅读对话并选择最合适的回答。\n背景：小李的同事在会议上批评了他的方案。\n问题：小李应该怎么做？\nA. 认真听取意见并改进\nB. 当场反驳\n答案：",
    "Which word fits? The cat sat on the",
]


def make_smollm2():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d = os.path.join(SHARED, "models", "smollm2-135m-instruct")
    f = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.float32, attn_implementation="eager").eval()
    ids_all, texts, tensors = [], [], {}
    for i, p in enumerate(SMOL_PROMPTS):
        text = tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        texts.append(text)
        ids_all.append(ids)
        tensors[f"ids{i}"] = last_rows(model, ids)
    write("smollm2", {"model": "../shared/models/smollm2-135m-instruct/" + f + " (transformers GGUF loader, dequantized to float32)",
                      "prompts": SMOL_PROMPTS, "texts": texts, "ids": ids_all, **versions(),
                      "note": "tensor ids{i}: [layers, heads, seq], attention of the last position of ids[i] (the chat template's generation prompt)"}, tensors)
    print("wrote smollm2")


if __name__ == "__main__":
    parts = [a for a in sys.argv[1:] if not a.startswith("-")] or ["gqa", "reference", "offsets", "smollm2"]
    for p in parts:
        if p == "gqa":
            make_gqa()
        elif p == "reference":
            make_reference("dynamo")
            make_reference("optimum")
        elif p == "offsets":
            make_offsets()
        elif p == "smollm2":
            make_smollm2()
        else:
            sys.exit(f"unknown part {p} (gqa, reference, offsets, smollm2)")
