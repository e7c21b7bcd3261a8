/**
 * What makes two attend folders one job: an earlier attempt that a rerun resumes, or shards
 * that `lobes attend merge` joins. Every input hash and setting that shapes an item's record
 * (or the summary) is listed by name; the shard is listed too, and left out when shards are
 * compared with each other.
 */
import type { AttendManifest } from './store.js';

const SHARD_KEY = '--shard';

/** The identity record of an attend job (stored in attend.json as `identity`). */
export function attendIdentity(m: AttendManifest,
  o: { cot: number; layers: string; perLayer: boolean; batch: number | null; tokenBudget: number | null }
): Record<string, string> {
  const { model, tokenizer, input, settings } = m.facts;
  return {
    'model graph sha256': model.graphSha256,
    'model files sha256 (graph, weights, tokenizer)': String(model.filesSha256),
    'model source identity (GGUF)': String(model.source?.identity ?? null),
    'tokenizer scheme': tokenizer.scheme,
    'chat template': String(tokenizer.chatTemplate),
    'input kind': input.kind,
    'input spec': input.spec,
    'input sha256': input.sha256,
    'items (--items, --limit)': input.items,
    '--layers': o.layers,
    '--position': settings.position,
    '--top': String(settings.top),
    '--cjk': settings.cjk,
    '--max-tokens': String(settings.maxTokens),
    // the flag: with --eval, settings.cot records the evaluation's budget, which its records' hash covers
    '--cot': String(o.cot),
    '--per-layer': String(o.perLayer),
    '--batch': String(o.batch),
    '--token-budget': String(o.tokenBudget),
    '--device': settings.device,
    '--chunk-units': String(m.chunkUnits),
    '--bootstrap': String(settings.bootstrap),
    '--seed': String(settings.seed),
    [SHARD_KEY]: m.shard ? `${m.shard.index}/${m.shard.count}` : 'none',
  };
}

/** Every identity entry that differs between two attend jobs (with the shard unless `withShard` is false). */
export function attendDifferences(a: Record<string, string>, b: Record<string, string>, aName: string, bName: string,
  withShard = true): string[]
{
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => withShard || k !== SHARD_KEY);
  const show = (v: string | undefined) => (v === undefined ? 'absent' : JSON.stringify(String(v).slice(0, 80)));
  return keys.filter((k) => a[k] !== b[k]).map((k) =>
    `${k} is ${show(a[k])} in ${aName} but ${show(b[k])} in ${bName}`
  );
}
