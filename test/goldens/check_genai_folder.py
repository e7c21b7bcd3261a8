"""Check that onnxruntime-genai itself loads a 'genai' folder written by lobes' Llama writer and
generates what Hugging Face transformers generates from the same weights.

The folder is the 'gqa' configuration of make_llama_writer_goldens.py, written by the writer
with the built-in tiny tokenizer, e.g. (from the repository root):

    npx tsx -e "import('./src/convert/llama-onnx/index.ts').then(async (w) => {
      const fs = await import('node:fs');
      const c = JSON.parse(fs.readFileSync('test/goldens/llama-writer/goldens.json', 'utf8')).configs.gqa;
      const spec = { ...c.spec, bosTokenId: 509, eosTokenId: 510, padTokenId: 511 };
      const extraFiles = { 'tokenizer.json': fs.readFileSync('models/tiny-llama/tokenizer.json', 'utf8'),
                           'tokenizer_config.json': fs.readFileSync('models/tiny-llama/tokenizer_config.json', 'utf8') };
      for (const weights of ['fp32', 'q4'])
        await w.writeLlamaOnnx('/tmp/genai-gqa-' + weights, spec, w.seededLlamaSource(spec, c.seed), { layout: 'genai', dtype: 'fp32', weights, extraFiles });
    })"
    /work/venv/bin/python test/goldens/check_genai_folder.py /tmp/genai-gqa-fp32 fp32
    /work/venv/bin/python test/goldens/check_genai_folder.py /tmp/genai-gqa-q4 q4

It prints the 12 greedy tokens of both and exits non-zero when they differ. For q4 the
reference uses the weights the writer stored (quantized and dequantized by the script's port
of the quantizer; lm_head included, as the genai layout quantizes an untied lm_head).
"""
import os
import sys

import onnxruntime_genai as og
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_llama_writer_goldens as G  # noqa: E402

folder, weights_kind = sys.argv[1], sys.argv[2]
c = G.CONFIGS["gqa"]
weights = {n: G.seeded_weight(n, s, c["seed"]) for n, s in G.weight_shapes(c)}
if weights_kind == "q4":
    weights = {n: (G.quantize_dequant(w) if (G.is_proj(n) or n == "lm_head.weight") else w) for n, w in weights.items()}
prompt = [509, 17, 200, 33, 101]
new = 12
with torch.no_grad():
    ref = G.hf_model(c, weights).generate(torch.tensor([prompt]), max_new_tokens=new, do_sample=False, eos_token_id=None, pad_token_id=511)[0].tolist()

model = og.Model(folder)
params = og.GeneratorParams(model)
params.set_search_options(max_length=len(prompt) + new, do_sample=False)
gen = og.Generator(model, params)
gen.append_tokens(prompt)
while not gen.is_done():
    gen.generate_next_token()
out = [int(t) for t in gen.get_sequence(0)]
print("onnxruntime-genai:", out[len(prompt):])
print("transformers:     ", ref[len(prompt):])
og.Tokenizer(model).decode(out)  # the tokenizer files load too
sys.exit(0 if out == ref else 1)
