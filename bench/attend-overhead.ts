/**
 * Attend overhead: time of `lobes attend`'s session (the answering row of the chosen layers) and
 * of its word aggregation, ÷ time of a plain extract's session (final.hidden and the MLP inputs,
 * `lobes extract`'s default capture), on the same token batches, same provider, one process.
 * Per batch the variants run back to back in rotated order; ratios are medians over repetitions ×
 * batches of (variant time ÷ extract time on that batch).
 *
 *   npx tsx bench/attend-overhead.ts [--models smollm2-explicit,smollm2-genai,bench] [--texts 16]
 *        [--data builtin:social] [--batch 8] [--reps 3] [--threads N] [--device cpu|cuda|webgpu]
 *
 * Models: smollm2-explicit / smollm2-genai (../shared's SmolLM2-135M-Instruct GGUF converted by
 * lobes into either layout, in the test cache), a generated model name (tiny-llama, bench) or a
 * folder. Writes bench/out/attend-overhead-<device>.json and prints a markdown table.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import { openCaptureEngine } from '../src/runtime/engine.js';
import { openAttentionEngine, parseLayerSelection, realRows } from '../src/runtime/attention-engine.js';
import { padBatch, planBatches } from '../src/runtime/batching.js';
import { loadAttendTokenizer } from '../src/attend/tokenize.js';
import { alignTokens, aggregate, segmentUnits, tokenBytes, topWords } from '../src/attend/words.js';
import { loadDataset } from '../src/data/index.js';
import { resolveModel as resolveGguf } from '../src/convert/cache.js';
import { ensureGeneratedModel } from '../src/models/index.js';
import type { Device } from '../src/runtime/types.js';

const { values } = parseArgs({
  options: {
    device: { type: 'string', default: 'cpu' },
    models: { type: 'string', default: 'smollm2-explicit,smollm2-genai,bench' },
    data: { type: 'string', default: 'builtin:social' },
    texts: { type: 'string', default: '16' },
    batch: { type: 'string', default: '8' },
    reps: { type: 'string', default: '3' },
    threads: { type: 'string', default: '0' },
    layers: { type: 'string', default: 'last:20' },
  },
});
const device = values.device as Device;
const threads = Number(values.threads) || undefined;
const here = import.meta.dirname;
const GGUF = resolve(here, '../../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');

async function modelDir(name: string): Promise<string | null> {
  if (name.startsWith('smollm2-')) {
    if (!existsSync(GGUF)) return null;
    const layout = name === 'smollm2-genai' ? 'genai' : 'explicit';
    return (await resolveGguf(GGUF, { cache: join(tmpdir(), 'lobes-test-gguf-cache'), layout, log: () => undefined }))
      .dir;
  }
  if (name.includes('/')) return existsSync(name) ? name : null;
  return ensureGeneratedModel(name);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const rows: Record<string, unknown>[] = [];
const ds = await loadDataset(values.data!);
const texts = ds.samples.slice(0, Number(values.texts)).map((s) => s.text);
for (const name of values.models!.split(',')) {
  const dir = await modelDir(name);
  if (!dir) {
    console.error(`${name}: skipped (model not available)`);
    continue;
  }
  const tok = await loadAttendTokenizer(dir);
  const ids = texts.map((t) => tok.encode(t, true));
  const plan = planBatches(ids.map((x) => x.length), { batch: Number(values.batch) });
  const batches = plan.map((b) => ({ rows: b, tb: padBatch(b.map((i) => ids[i]!), tok.padId, 'right') }));
  const extract = await openCaptureEngine(dir, { capture: ['final', 'mlp'], device, threads });
  const attend = await openAttentionEngine(dir, { layers: (n) => parseLayerSelection(values.layers!, n), device,
    threads });
  const table = tok.table;
  const variants: Record<string, (k: number) => Promise<number>> = {
    extract: async (k) => {
      const t = performance.now();
      await extract.run(batches[k]!.tb);
      return performance.now() - t;
    },
    attend: async (k) => {
      const t = performance.now();
      await attend.run(batches[k]!.tb);
      return performance.now() - t;
    },
    'attend+words': async (k) => {
      const t = performance.now();
      const b = batches[k]!;
      const res = await attend.run(b.tb);
      const rr = realRows(b.tb, res, attend.layers);
      b.rows.forEach((i, r) => {
        const n = ids[i]!.length;
        const w = new Float64Array(n);
        const row = rr[r]!;
        for (let j = 0; j < row.length; j++) w[j % n]! += row[j]! / (row.length / n);
        const special = ids[i]!.map((id) => table.special(id));
        const { spans } = alignTokens(texts[i]!,
          ids[i]!.map((id, j) => tokenBytes(table.piece(id), table.scheme, special[j]!)), special);
        topWords(aggregate(texts[i]!, spans, special, w, [], segmentUnits(texts[i]!)).words, 30);
      });
      return performance.now() - t;
    },
  };
  const names = Object.keys(variants);
  const times: Record<string, number[]> = Object.fromEntries(names.map((v) => [v, []]));
  const ratios: Record<string, number[]> = Object.fromEntries(names.map((v) => [v, []]));
  for (let k = 0; k < batches.length; k++) await variants.extract!(k); // warm-up
  for (let rep = 0; rep < Number(values.reps); rep++) {
    for (let k = 0; k < batches.length; k++) {
      const order = names.map((_, i) => names[(i + rep + k) % names.length]!);
      const t: Record<string, number> = {};
      for (const v of order) t[v] = await variants[v]!(k);
      for (const v of names) {
        times[v]!.push(t[v]!);
        ratios[v]!.push(t[v]! / t.extract!);
      }
    }
  }
  await extract.close();
  await attend.close();
  const tokens = ids.reduce((s, x) => s + x.length, 0);
  const row = {
    model: name,
    attention: attend.sites[0]!.source,
    layers: `${attend.layers.length} of ${attend.sites.length}`,
    texts: texts.length,
    tokens,
    extractMs: median(times.extract!) * batches.length,
    attendMs: median(times.attend!) * batches.length,
    attendWordsMs: median(times['attend+words']!) * batches.length,
    ratioAttend: median(ratios.attend!),
    ratioAttendWords: median(ratios['attend+words']!),
  };
  rows.push(row);
  console.error(JSON.stringify(row));
}
mkdirSync(join(here, 'out'), { recursive: true });
writeFileSync(join(here, 'out', `attend-overhead-${device}.json`), JSON.stringify(rows, null, 2) + '\n');
const f = (
  x: unknown,
) => (typeof x === 'number' ? (Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 3 : 1)) : String(x));
console.log(
  '| model | attention | layers | texts | tokens | extract ms | attend ms | attend + words ms | attend ÷ extract | (attend + words) ÷ extract |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${
      [r.model, r.attention, r.layers, r.texts, r.tokens, r.extractMs, r.attendMs, r.attendWordsMs, r.ratioAttend,
        r.ratioAttendWords].map(f).join(' | ')
    } |`,
  );
