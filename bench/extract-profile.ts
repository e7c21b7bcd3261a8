/**
 * Profile of CPU extraction's compute: the capture graph of `lobes extract --capture final,mlp`
 * on SmolLM2-135M-Instruct under different ONNX Runtime session options (and against the plain
 * model), on the same token batches of SocialEval English items, in one process. Per batch the
 * variants run back to back in rotated order, so that changes in machine load hit all alike;
 * a variant's figure is the median over repetitions × batches of its time ÷ the baseline's on
 * the same batch. Also checks that every variant returns the baseline's values bit for bit.
 *
 *   npx tsx bench/extract-profile.ts [--items 32] [--reps 3] [--threads 2] [--batch 8]
 *        [--weights auto|fp32] [--variants base,nospin,nomempat,noarena,extended,plain]
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { loadDataset } from '../src/data/index.js';
import { resolveModel } from '../src/convert/cache.js';
import { analyseModel, batchFeeds, planInputs } from '../src/runtime/engine.js';
import { buildCaptureModel } from '../src/runtime/surgery.js';
import { encodeModel } from '../src/onnx/index.js';
import { loadTokenizer } from '../src/runtime/tokenize.js';
import { padBatch, planBatches } from '../src/runtime/batching.js';
import { siteFamily } from '../src/hooks.js';
import type { WeightsMode } from '../src/convert/convert.js';
import type { TokenBatch } from '../src/runtime/types.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const GGUF = path.resolve(ROOT, '../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf');
const DATA = path.resolve(ROOT, '../shared/socialeval/worldtree_data');
const { values: o } = parseArgs({
  options: {
    items: { type: 'string', default: '32' },
    reps: { type: 'string', default: '3' },
    threads: { type: 'string', default: '2' },
    batch: { type: 'string', default: '8' },
    weights: { type: 'string', default: 'auto' },
    variants: { type: 'string', default: 'base,nospin,nomempat,noarena,extended,plain' },
    cache: { type: 'string' },
  },
});
const threads = Number(o.threads);

const resolved = await resolveModel(GGUF, { layout: 'explicit', weights: o.weights as WeightsMode,
  ...(o.cache ? { cache: o.cache } : {}), log: () => undefined });
const dir = resolved.dir;
const ds = await loadDataset(`socialeval:${DATA}?lang=en`);
const tok = await loadTokenizer(dir, { maxTokens: null, chatTemplate: false });
const seqs = ds.samples.slice(0, Number(o.items)).map((s) => tok.encode(s.text).ids);
const batches: TokenBatch[] = planBatches(seqs.map((s) => s.length), { batch: Number(o.batch) }).map((idx) =>
  padBatch(idx.map((i) => seqs[i]!), tok.padId, tok.paddingSide)
);

const a = analyseModel(dir);
const { plans, mask, inGraphPast } = planInputs(a);
const hooks = a.disc.points.filter((p) => ['final', 'mlp'].includes(siteFamily(p.site)));
const surg = buildCaptureModel(a.loaded.model, hooks, mask, inGraphPast);
const capBytes = encodeModel(surg.model);
const outs = [...surg.outputs.values()];

const base: ort.InferenceSession.SessionOptions = {
  executionProviders: ['cpu'],
  graphOptimizationLevel: 'all',
  logSeverityLevel: 3,
  intraOpNumThreads: threads,
  extra: { session: { model_external_initializers_file_folder_path: a.loaded.dir } },
} as ort.InferenceSession.SessionOptions;
const withSession = (kv: Record<string, string>) =>
  ({ ...base, extra: { session: { ...(base as any).extra.session, ...kv } } }) as ort.InferenceSession.SessionOptions;
const VARIANTS: Record<string, () => Promise<{ run: (b: TokenBatch) => Promise<Float32Array | null> }>> = {};
const capture = (so: ort.InferenceSession.SessionOptions) => async () => {
  const s = await ort.InferenceSession.create(capBytes, so);
  return {
    run: async (b: TokenBatch) =>
      (await s.run(batchFeeds(s, plans, b, surg.maskAdded ? surg.maskInput : null), outs))[outs[0]!]!
        .data as Float32Array,
  };
};
VARIANTS.base = capture(base);
VARIANTS.nospin = capture(withSession({ 'session.intra_op.allow_spinning': '0' }));
VARIANTS.nomempat = capture({ ...base, enableMemPattern: false });
VARIANTS.noarena = capture({ ...base, enableCpuMemArena: false });
VARIANTS.extended = capture({ ...base, graphOptimizationLevel: 'extended' });
VARIANTS.parallel = capture({ ...base, executionMode: 'parallel', interOpNumThreads: threads });
VARIANTS.threads1 = capture({ ...base, intraOpNumThreads: 1 });
VARIANTS.plain = async () => {
  const s = await ort.InferenceSession.create(a.loaded.file, { executionProviders: ['cpu'],
    graphOptimizationLevel: 'all', logSeverityLevel: 3, intraOpNumThreads: threads });
  const ps = planInputs(a).plans;
  return {
    run: async (b: TokenBatch) => {
      await s.run(batchFeeds(s, ps, b, null));
      return null;
    },
  };
};

const names = String(o.variants).split(',');
const runners = [];
for (const n of names) runners.push(await VARIANTS[n]!());
const ref: (Float32Array | null)[] = [];
for (const b of batches) ref.push(await runners[0]!.run(b));
const per = names.map(() => [] as number[]);
const same = names.map(() => true);
for (const r of runners) for (const b of batches) await r.run(b); // warm-up
for (let rep = 0; rep < Number(o.reps); rep++) {
  for (const [bi, b] of batches.entries()) {
    for (let k = 0; k < runners.length; k++) {
      const j = (k + rep + bi) % runners.length;
      const t = performance.now();
      const v = await runners[j]!.run(b);
      per[j]!.push(performance.now() - t);
      if (v && ref[bi] && (v.length !== ref[bi]!.length || v.some((x, i) => x !== ref[bi]![i]))) same[j] = false;
    }
  }
}
const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const tokens = seqs.reduce((s, x) => s + x.length, 0);
console.log(
  `items ${seqs.length}, tokens ${tokens}, ${batches.length} batches of ≤${o.batch}, threads ${threads}, weights ${o.weights}, reps ${o.reps}, load ${
    os.loadavg().map((x) => x.toFixed(1)).join(' ')
  }`,
);
console.log('| variant | total ms (median batch times summed) | time ÷ base (median per batch) | same values |');
console.log('|---|---:|---:|---|');
for (const [j, n] of names.entries()) {
  const nb = batches.length;
  let total = 0;
  for (let bi = 0; bi < nb; bi++) total += med(per[j]!.filter((_, i) => i % nb === bi));
  const ratio = med(per[j]!.map((x, i) => x / per[0]![i]!));
  console.log(`| ${n} | ${total.toFixed(0)} | ${ratio.toFixed(3)} | ${n === 'plain' ? '—' : same[j] ? 'yes' : 'NO'} |`);
}
