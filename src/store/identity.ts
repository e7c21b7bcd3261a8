/**
 * What makes two runs (or a run and a rerun, or two shards) the same extraction: every
 * setting that changes which rows exist or what numbers they hold.
 */
import { createHash } from 'node:crypto';
import type { InterventionRecord, RunManifest } from './types.js';

/** Recorded for model files a run made by an older lobes did not list. */
const NOT_RECORDED = 'not recorded (run made by an older lobes)';

/**
 * A dataset spec without its file path: the kind and the options. Which file the items came
 * from does not matter, only what they are (the items sha256), so the same data under
 * another path is the same dataset. Builtin sets keep their name.
 */
export function specOptions(spec: string): string {
  // Specs are stored normalized (src/data/spec.ts formatSpec): KIND:PATH?key=value&... in key order.
  const m = /^([A-Za-z0-9_-]+):([^?]*)(\?.*)?$/.exec(spec.trim());
  if (!m) return spec;
  const kind = m[1]!.toLowerCase();
  return kind === 'builtin' ? spec : `${kind}:${m[3] ?? ''}`;
}

/**
 * Flat `setting -> value` map of everything that must agree: the content hashes of the
 * model's files (graph, external data, tokenizer files; of a model given as a Hugging Face
 * checkpoint, the checkpoint's files as well), the tokenizer settings, the items
 * and the dataset options, the capture points and the batching. Paths are not part of it.
 */
export function identity(m: RunManifest, opts: { includeShard: boolean }): Record<string, string> {
  const id: Record<string, string> = {
    'model graph sha256': m.model?.graphSha256,
    'tokenizer chat template': String(m.tokenizer?.chatTemplate),
    'tokenizer adds BOS': String(m.tokenizer?.addBos),
    'max tokens (--max-tokens)': String(m.tokenizer?.maxTokens),
    'dataset spec (kind and options)': specOptions(m.dataset?.spec ?? ''),
    'dataset items sha256': m.dataset?.itemsSha256,
    'dataset item count': String(m.dataset?.count),
    'capture selection (--capture)': (m.capture?.selection ?? []).join(','),
    'capture points': (m.capture?.points ?? []).map((p) => `${p.name}[${p.dim}]`).join(' '),
    'stored dtype (--dtype)': m.dtype,
    'device (--device)': m.provider?.device,
    'batch size (--batch)': String(m.settings?.batch ?? null),
    'token budget (--token-budget)': String(m.settings?.tokenBudget ?? null),
    'rows per chunk (--chunk-rows)': String(m.settings?.chunkRows ?? null),
  };
  if (m.model?.files) {
    for (const f of m.model.files) {
      if (f.role === 'graph') continue;
      id[`${f.role === 'data' ? 'model data file' : 'tokenizer file'} ${f.name} sha256`] = f.sha256;
    }
  } else {
    id['model and tokenizer files'] = NOT_RECORDED;
  }
  // A model given as a Hugging Face checkpoint: the checkpoint's own files too (GGUF runs keep
  // the identity they always had: their converted files already follow from the one GGUF).
  if (m.model?.source?.format === 'hf-checkpoint') {
    for (const f of m.model.source.files ?? []) id[`checkpoint file ${f.name} sha256`] = f.sha256;
  }
  // Only a run with edits has the key, so that the identity of every run without stays what it was.
  if (m.capture?.interventions?.length) id['interventions (--intervene)'] = interventionsKey(m.capture.interventions);
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
export function differences(a: RunManifest, b: RunManifest, aName: string, bName: string,
  opts: { includeShard: boolean }): string[]
{
  const ia = identity(a, opts);
  const ib = identity(b, opts);
  const out: string[] = [];
  for (const k of [...new Set([...Object.keys(ia), ...Object.keys(ib)])]) {
    if (ia[k] !== ib[k]) {
      let extra = '';
      if ((k.startsWith('model') || k.startsWith('tokenizer file')) && a.model.dir !== b.model.dir)
        extra = ` (model folder ${a.model.dir} vs ${b.model.dir})`;
      const show = (v: string | undefined) => (v === undefined ? 'absent' : JSON.stringify(short(v)));
      out.push(`${k} is ${show(ia[k])} in ${aName} but ${show(ib[k])} in ${bName}${extra}`);
    }
  }
  return out;
}

/**
 * Interventions as one identity value: `hook:op:value[@last]` each, a vector by its length and
 * the sha256 of its float32 bytes (two runs with the same key made the same edits); 'none'.
 */
export function interventionsKey(rs: readonly InterventionRecord[] | undefined): string {
  if (!rs?.length) return 'none';
  return rs
    .map((r) => {
      let v = '';
      if (typeof r.value === 'number') v = `:${r.value}`;
      else if (r.value)
        v = `:vector[${r.value.length}] sha256 ${
          createHash('sha256').update(new Uint8Array(Float32Array.from(r.value).buffer)).digest('hex').slice(0, 16)
        }`;
      return `${r.hook}:${r.op}${v}${r.positions === 'last' ? '@last' : ''}`;
    })
    .join(' ');
}
