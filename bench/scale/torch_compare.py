#!/usr/bin/env python3
"""PyTorch + transformers on the same weights as a lobes run: forward speed and the captures.

    python bench/scale/torch_compare.py --checkpoint HF_DIR --tokenizer MODEL_DIR --items ITEMS.jsonl \
        --run RUN_DIR [--device cuda|cpu] [--dtype bfloat16|float16|float32] [--batch 8] [--out FILE.json]

Loads LlamaForCausalLM from the bf16 safetensors checkpoint that bench/scale-8b.ts wrote (the
same random weights as its ONNX exports), tokenizes the items as lobes does (the tokenizer's
special tokens, no chat template), and
  - times the forward pass over the items in lobes' batching (longest first, --batch rows,
    right padding, one warm-up batch first): real tokens per second;
  - captures, at each item's last real token, what lobes captures: final.hidden (the final
    RMSNorm's output, the input of lm_head), layers.{i}.mlp.in (the input of gate_proj/up_proj)
    and layers.{i}.mlp.down_in (the input of down_proj), and compares them with the run's
    stored captures: cosine similarity and relative L2 error per hook (min / median / max over
    items), with the run's stored dtype (fp16 by default) and the export's weights (int4 for
    the int4 export) as the expected sources of difference.

Prints one JSON line (and writes it to --out). Needs torch, transformers, safetensors, numpy.
"""
import argparse
import json
import os
import time

import numpy as np
import torch
from safetensors import safe_open
from transformers import AutoTokenizer, LlamaForCausalLM


def plan_batches(lengths, batch):
    """lobes' planBatches: longest first (ties by index), at most `batch` rows per batch."""
    idx = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [idx[k:k + batch] for k in range(0, len(idx), batch)]


def read_run(run):
    """The run's samples (in row order) and every hook's captures as float32 [N, dim]."""
    samples = [json.loads(l) for l in open(os.path.join(run, 'samples.jsonl'))]
    index = json.load(open(os.path.join(run, 'activations', 'index.json')))
    caps = {}
    for h in index['hooks']:
        parts = []
        for c in sorted(index['chunks'], key=lambda c: c['start']):
            with safe_open(os.path.join(run, 'activations', h['name'], 'chunk-%06d.safetensors' % c['chunk']), 'np') as f:
                parts.append(f.get_tensor(h['name']).astype(np.float32))
        caps[h['name']] = np.concatenate(parts)
    return samples, caps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--checkpoint', required=True)
    ap.add_argument('--tokenizer', required=True)
    ap.add_argument('--items', required=True)
    ap.add_argument('--run')
    ap.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    ap.add_argument('--dtype', default='bfloat16')
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--out')
    a = ap.parse_args()
    dev = torch.device(a.device)
    dtype = getattr(torch, a.dtype)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == 'cuda' else (lambda: None)

    tok = AutoTokenizer.from_pretrained(a.tokenizer)
    items = [json.loads(l) for l in open(a.items)]
    ids = [tok(x['text'], add_special_tokens=True)['input_ids'] for x in items]
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id if tok.eos_token_id is not None else 0)
    if isinstance(pad, list):
        pad = pad[0]

    t = time.perf_counter()
    model = LlamaForCausalLM.from_pretrained(a.checkpoint, dtype=dtype).to(dev).eval()
    sync()
    load_s = time.perf_counter() - t
    L = model.config.num_hidden_layers

    # hooks: inputs of mlp (= gate/up input) and of down_proj
    captured = {}
    handles = []
    for i, layer in enumerate(model.model.layers):
        handles.append(layer.mlp.register_forward_pre_hook(lambda m, inp, i=i: captured.__setitem__('layers.%d.mlp.in' % i, inp[0])))
        handles.append(layer.mlp.down_proj.register_forward_pre_hook(lambda m, inp, i=i: captured.__setitem__('layers.%d.mlp.down_in' % i, inp[0])))

    def batch_tensors(rows):
        seq = max(len(ids[i]) for i in rows)
        x = torch.full((len(rows), seq), pad, dtype=torch.long)
        m = torch.zeros((len(rows), seq), dtype=torch.long)
        for r, i in enumerate(rows):
            x[r, :len(ids[i])] = torch.tensor(ids[i])
            m[r, :len(ids[i])] = 1
        return x.to(dev), m.to(dev)

    plan = plan_batches([len(x) for x in ids], a.batch)
    out = {h: [None] * len(ids) for h in ['final.hidden'] + ['layers.%d.mlp.in' % i for i in range(L)] + ['layers.%d.mlp.down_in' % i for i in range(L)]}
    with torch.inference_mode():
        x, m = batch_tensors(plan[0])
        model(input_ids=x, attention_mask=m, use_cache=False)  # warm-up
        sync()
        compute = 0.0
        tokens = 0
        for rows in plan:
            x, m = batch_tensors(rows)
            sync()
            t = time.perf_counter()
            o = model(input_ids=x, attention_mask=m, use_cache=False, output_hidden_states=True)
            sync()
            compute += time.perf_counter() - t
            tokens += sum(len(ids[i]) for i in rows)
            last = [len(ids[i]) - 1 for i in rows]
            for r, i in enumerate(rows):
                out['final.hidden'][i] = o.hidden_states[-1][r, last[r]].float().cpu().numpy()
                for k, v in captured.items():
                    out[k][i] = v[r, last[r]].float().cpu().numpy()
    for h in handles:
        h.remove()
    res = {
        'device': str(dev),
        'gpu': torch.cuda.get_device_name(dev) if dev.type == 'cuda' else None,
        'dtype': a.dtype,
        'torch': torch.__version__,
        'items': len(ids),
        'tokens': tokens,
        'loadSeconds': round(load_s, 3),
        'computeSeconds': round(compute, 4),
        'tokensPerSecond': round(tokens / compute, 2),
        'peakGpuMemoryGB': round(torch.cuda.max_memory_allocated(dev) / 2**30, 3) if dev.type == 'cuda' else None,
    }
    if a.run:
        samples, caps = read_run(a.run)
        by_id = {x['id']: k for k, x in enumerate(items)}
        order = [by_id[s['id']] for s in samples]
        cmp = {}
        for h, lob in caps.items():
            ref = np.stack([out[h][k] for k in order])
            cos = np.sum(ref * lob, 1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(lob, axis=1) + 1e-30)
            rel = np.linalg.norm(ref - lob, axis=1) / (np.linalg.norm(ref, axis=1) + 1e-30)
            cmp[h] = {'cosMin': round(float(cos.min()), 6), 'cosMedian': round(float(np.median(cos)), 6), 'relErrMedian': round(float(np.median(rel)), 6), 'relErrMax': round(float(rel.max()), 6)}
        res['captures'] = {
            'hooks': len(cmp),
            'worstCos': min(v['cosMin'] for v in cmp.values()),
            'worstRelErr': max(v['relErrMax'] for v in cmp.values()),
            'perHook': cmp,
        }
    line = json.dumps(res)
    if a.out:
        with open(a.out, 'w') as f:
            f.write(line + '\n')
    print(line)


if __name__ == '__main__':
    main()
