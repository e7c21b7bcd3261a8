/**
 * A run with activations for the ablation tests of regions recomputed from other labels
 * (--shuffled, --fit-split): the generated tiny-llama's MLP capture points, three groups of ten
 * rows, and lobes wanda's own results on it (block 16, top 10% per matrix, the model's weights).
 *
 * Every activation is ±1 (a seeded sign) except on the planted features (the hidden block F at
 * mlp.in, the intermediate block Gi at down_in), which are ±a on the planted rows: the wanda
 * scaler there is √(1 + (a² − 1) · share of the group's rows planted), exactly, so a group's
 * region leans into the planted columns as much as its rows are planted. Which rows are planted
 * is the scenario: A's rows (the labels carry the activations) or rows spread evenly over the
 * groups (the labels carry nothing).
 *
 * The stand-in scorer reads the zeroed blocks back from the weights on disk: every zeroed block
 * costs every item a little, and a zeroed block in a planted column costs A's items 3× that. So
 * the model keeps something A's items need in the planted columns, and a region is A's in as far
 * as it sits there.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { Rng } from '../../src/util/rng.js';
import { runIdentity } from '../../src/store/provenance.js';
import { runWanda } from '../../src/wanda/run.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import { writeRun } from '../wanda/helpers.js';
import { fakeLoglikEngine, tinyMatrices, unitHash, zeroedBlocks } from './fixture.js';

export const BLOCK: [number, number] = [16, 16];
export const MATRICES = tinyMatrices(BLOCK);
export const GROUPS = ['A', 'B', 'C'];
export const N = 30;
/** The planted hidden block (mlp.in features 16..31) and intermediate block (down_in features 80..95). */
export const F = 1;
export const GI = 5;
export const groupOf = (i: number) => GROUPS[i % 3]!;

/** Whether block b of matrix k lies in a planted column. */
export function inPlantedColumn(k: number, b: number): boolean {
  const m = MATRICES[k]!;
  return b % m.colBlocks === (m.proj === 'down_proj' ? GI : F);
}
const PLANTED_COLUMN = new Set(
  MATRICES.flatMap((m, k) =>
    Array.from({ length: m.rowBlocks * m.colBlocks }, (_, b) => b).filter((b) => inPlantedColumn(k, b)).map((b) =>
      `${m.name}#${b}`
    )
  ),
);

/** The activations: ±1, and ±a on the planted features of the rows `planted(i)`; `gaussian`: times |z| of a standard normal z, so that every row has its own scale (regions fitted on other rows then differ). */
export function activations(planted: (i: number) => boolean, a2 = 1.3, seed = 5,
  gaussian = false): Record<string, { dim: number; data: Float32Array }>
{
  const rng = new Rng(seed);
  const a = Math.sqrt(a2);
  const hooks: Record<string, { dim: number; data: Float32Array }> = {};
  for (let l = 0; l < 2; l++) {
    for (const [hook, dim, blk] of [[`layers.${l}.mlp.in`, 64, F], [`layers.${l}.mlp.down_in`, 256, GI]] as const) {
      const data = new Float32Array(N * dim);
      for (let r = 0; r < N; r++) {
        for (let j = 0; j < dim; j++) {
          const mag = planted(r) && j >= blk * 16 && j < (blk + 1) * 16 ? a : 1;
          data[r * dim + j] = (rng.next() < 0.5 ? -mag : mag) * (gaussian ? Math.abs(rng.normal()) : 1);
        }
      }
      hooks[hook] = { dim, data };
    }
  }
  return hooks;
}

/** A run of the rows (ids s0.., labels by `label`, default groupOf; or `rows` of them only) naming the model, and lobes wanda's results on it (from `weights`, default the model; at `resolution`, default block). */
export async function writeRefitRun(dir: string, modelDir: string,
  hooks: Record<string, { dim: number; data: Float32Array }>,
  o: { rows?: number[]; label?: (i: number) => string; weights?: string; resolution?: 'block' | 'weight' } =
    {}): Promise<string>
{
  const keep = o.rows ?? Array.from({ length: N }, (_, i) => i);
  const label = o.label ?? groupOf;
  const sub = Object.fromEntries(
    Object.entries(hooks).map((
      [h, v],
    ) => [h, { dim: v.dim,
      data: Float32Array.from(keep.flatMap((r) => [...v.data.subarray(r * v.dim, (r + 1) * v.dim)])) }]
    ),
  );
  writeRun(dir, keep.map((i) => ({ group: label(i) })), sub, modelDir);
  // the sample ids of the rows kept (s<i> of the whole run)
  const sf = path.join(dir, 'samples.jsonl');
  const lines = readFileSync(sf, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  writeFileSync(sf, lines.map((x, k) => JSON.stringify({ ...x, id: `s${keep[k]}` })).join('\n') + '\n');
  const mf = path.join(dir, 'manifest.json');
  const m = JSON.parse(readFileSync(mf, 'utf8'));
  m.model = { ...m.model, dir: modelDir,
    graphSha256: createHash('sha256').update(readFileSync(path.join(modelDir, 'model.onnx'))).digest('hex') };
  delete m.model.files;
  delete m.samplesSha256;
  delete m.identity;
  m.identity = runIdentity(m);
  writeFileSync(mf, JSON.stringify(m, null, 1) + '\n');
  // wanda warns (under --quiet too) that 6 blocks per matrix are few for its metrics; the ablation does not read them
  const write = process.stderr.write;
  process.stderr.write = ((
    chunk: string | Uint8Array,
  ) => (String(chunk).startsWith('wanda: warning:')
    ? true
    : write.call(process.stderr, chunk))) as typeof process.stderr.write;
  try {
    await runWanda(dir, { weights: o.weights ?? modelDir, resolution: o.resolution ?? 'block', by: 'group',
      block: BLOCK, top: { kind: 'fraction', value: 0.1, scope: 'matrix' }, permutations: 0, quiet: true, threads: 1 });
  } finally {
    process.stderr.write = write;
  }
  return dir;
}

/** The items, one per run row (id s<i>), as a jsonl spec lobes ablate reads. */
export function writeRefitItems(dir: string): string {
  const f = path.join(dir, 'items.jsonl');
  writeFileSync(f,
    Array.from({ length: N },
      (_, i) =>
        JSON.stringify({ id: `s${i}`, group: groupOf(i), context: `item ${i} group ${groupOf(i)}:`,
          continuation: ' yes' })).join('\n') + '\n');
  return `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`;
}

/** The stand-in scorer on the model folder `dir` (see the top of this file). */
export async function refitEngine(dir: string): Promise<LoglikEngine> {
  const zeroed = zeroedBlocks(dir, MATRICES, BLOCK);
  return fakeLoglikEngine((req) => {
    const i = Number(/item (\d+)/.exec(String.fromCharCode(...req.context))![1]);
    const own = groupOf(i) === 'A';
    const hard = 0.5 + unitHash(i, 'hard');
    let cost = 0;
    for (const b of zeroed) cost += 0.05 * hard * (0.8 + 0.4 * unitHash(i, b)) * (own && PLANTED_COLUMN.has(b) ? 3 : 1);
    return [-12 - 4 * unitHash(i, 'base') - cost];
  });
}
