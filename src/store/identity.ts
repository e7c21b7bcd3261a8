/**
 * What makes two runs (or a run and a rerun, or two shards) the same extraction: every
 * setting that changes which rows exist or what numbers they hold.
 */
import type { RunManifest } from './types.js';

/** Flat `setting -> value` map of everything that must agree. */
export function identity(m: RunManifest, opts: { includeShard: boolean }): Record<string, string> {
  const id: Record<string, string> = {
    'model graph sha256 (model.onnx)': m.model.graphSha256,
    'tokenizer chat template': String(m.tokenizer.chatTemplate),
    'tokenizer adds BOS': String(m.tokenizer.addBos),
    'max tokens (--max-tokens)': String(m.tokenizer.maxTokens),
    'dataset spec': m.dataset.spec,
    'dataset items sha256': m.dataset.itemsSha256,
    'dataset item count': String(m.dataset.count),
    'capture selection (--capture)': m.capture.selection.join(','),
    'capture points': m.capture.points.map((p) => `${p.name}[${p.dim}]`).join(' '),
    'stored dtype (--dtype)': m.dtype,
    'device (--device)': m.provider.device,
    'batch size (--batch)': String(m.settings?.batch ?? null),
    'token budget (--token-budget)': String(m.settings?.tokenBudget ?? null),
    'rows per chunk (--chunk-rows)': String(m.settings?.chunkRows ?? null),
  };
  if (opts.includeShard) id['shard (--shard)'] = m.shard ? `${m.shard.index}/${m.shard.count}` : 'none';
  return id;
}

function short(v: string): string {
  return v.length > 80 ? v.slice(0, 77) + '…' : v;
}

/**
 * Every setting that differs, as `name is A in <aName> but B in <bName>`; empty when the two
 * are the same extraction. When the graph differs the model folders are named too.
 */
export function differences(a: RunManifest, b: RunManifest, aName: string, bName: string, opts: { includeShard: boolean }): string[] {
  const ia = identity(a, opts);
  const ib = identity(b, opts);
  const out: string[] = [];
  for (const k of Object.keys(ia)) {
    if (ia[k] !== ib[k]) {
      let extra = '';
      if (k.startsWith('model graph') && a.model.dir !== b.model.dir) extra = ` (model folder ${a.model.dir} vs ${b.model.dir})`;
      out.push(`${k} is ${JSON.stringify(short(ia[k]))} in ${aName} but ${JSON.stringify(short(ib[k]))} in ${bName}${extra}`);
    }
  }
  return out;
}
