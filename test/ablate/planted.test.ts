/**
 * A planted ablation: the model's weight files are real (tiny-llama, so the blocks are really
 * zeroed on disk), the scorer is a stand-in that reads the edited weights back. Every zeroed
 * weight lowers every item's log-likelihood by the same amount, and one planted block P (in
 * layers.0.mlp.up_proj) carries label A's signal: zeroing it lowers A's items by 2 nats more.
 * Region A holds P; B and C hold as many blocks elsewhere. The ablation must find A specific
 * (contrast −2 · its share, p at the floor 1/(K + 1) unless a random region also holds P, which
 * ablation.json says, so the expected p is computed from it) and B and C not.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { storedMatrices } from '../../src/ablate/patch.js';
import type { LoglikEngine } from '../../src/runtime/loglik.js';
import { CHAR_TOKENIZER, fakeLoglikEngine, tinyMatrices, writeAblateRun } from './fixture.js';

const BLOCK: [number, number] = [16, 16];
const P = { tensor: 'model.layers.0.mlp.up_proj.weight', flat: 21 }; // up_proj: 16 × 4 blocks -> (5, 1)
const P_ROWS = [80, 96];
const P_COLS = [16, 32];
const REGIONS = {
  A: { 'layers.0.mlp.up_proj': [P.flat], 'layers.1.mlp.gate_proj': [3], 'layers.1.mlp.down_proj': [40] },
  B: { 'layers.0.mlp.up_proj': [2], 'layers.1.mlp.gate_proj': [7], 'layers.1.mlp.down_proj': [41] },
  C: { 'layers.0.mlp.up_proj': [60], 'layers.1.mlp.gate_proj': [9], 'layers.1.mlp.down_proj': [1] },
};

const tokenizer = CHAR_TOKENIZER;

/** The stand-in scorer: reads the (edited) weights of the folder it is opened on. */
async function plantedEngine(dir: string): Promise<LoglikEngine> {
  const stored = storedMatrices(dir, tinyMatrices(BLOCK));
  let zeros = 0;
  let total = 0;
  let pZero = 0;
  for (const sm of stored) {
    const s = sm.ref.source as { data: { file: string; offset: number; byteLength: number } };
    const buf = readFileSync(s.data.file);
    const f = new Float32Array(
      buf.buffer.slice(buf.byteOffset + s.data.offset, buf.byteOffset + s.data.offset + s.data.byteLength),
    );
    const { dOut } = sm.ref;
    f.forEach((v, e) => {
      total++;
      if (v !== 0) return;
      zeros++;
      // MatMul [d_in, d_out]: element e is W[e % d_out, floor(e / d_out)].
      const r = e % dOut;
      const c = Math.floor(e / dOut);
      if (`model.${sm.ref.name}.weight` === P.tensor && r >= P_ROWS[0]! && r < P_ROWS[1]! && c >= P_COLS[0]! &&
        c < P_COLS[1]!) pZero++;
    });
  }
  const pShare = pZero / ((P_ROWS[1]! - P_ROWS[0]!) * (P_COLS[1]! - P_COLS[0]!));
  const zeroShare = zeros / total;
  return fakeLoglikEngine((r) => {
    const ctx = String.fromCharCode(...r.context);
    const i = Number(/item (\d+)/.exec(ctx)![1]);
    return [-10 - (i % 7) * 0.3 - 5 * zeroShare - (ctx.includes('group A') ? 2 * pShare : 0)];
  });
}

describe('a planted block', () => {
  it('is found: region A specific to A at the floor of its null, B and C not', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-planted-'));
    const run = writeAblateRun(path.join(tmp, 'run'), ensureGeneratedModel('tiny-llama'), REGIONS, BLOCK);
    const f = path.join(tmp, 'items.jsonl');
    const rows = Array.from({ length: 24 },
      (_, i) => ({ id: `i${i}`, group: 'ABC'[i % 3], context: `item ${i} group ${'ABC'[i % 3]}:`,
        continuation: ' yes' }));
    writeFileSync(f, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const K = 10;
    const out = path.join(tmp, 'out');
    const s = await runAblate({ run, region: 'all',
      data: `jsonl:${f}?context=context&continuation=continuation&label=group&id=id`, out, random: K, quiet: true,
      deps: { openLoglik: (m) => plantedEngine(m), loadTokenizer: async () => tokenizer } });
    const abl = JSON.parse(readFileSync(path.join(out, 'ablation.json'), 'utf8'));
    // Every region has the same count per matrix, so they share one null set of K random regions.
    expect(abl.random).toHaveLength(K);
    const hits =
      abl.random.filter((r: any) =>
        r.blocks.some((b: any) => b.tensor === P.tensor && b.rows[0] === P_ROWS[0] && b.cols[0] === P_COLS[0])
      ).length;
    const spec = Object.fromEntries(s.specificity.map((x) => [x.region, x]));
    const share = 1; // P is zeroed whole
    // A's items lose 2 more than the others, who lose nothing beyond the uniform part.
    expect(spec.A!.contrast).toBeCloseTo(-2 * share, 5);
    expect(spec.A!.p).toBeCloseTo((1 + hits) / (K + 1), 12);
    expect(spec.A!.ci[1]).toBeLessThan(0);
    expect(spec.B!.contrast).toBeCloseTo(0, 5);
    expect(spec.C!.contrast).toBeCloseTo(0, 5);
    expect(spec.B!.p).toBeGreaterThan(0.5);
    expect(spec.C!.p).toBeGreaterThan(0.5);
    // Holm over the three regions.
    expect(spec.A!.pHolm).toBeCloseTo(Math.min(1, 3 * spec.A!.p), 12);
    // The cells: A's region lowers A's items beyond every random region (that misses P), nobody else's.
    const cell = (r: string, l: string) => s.cells.find((c) => c.region === r && c.label === l)!;
    expect(cell('A', 'A').p).toBeCloseTo((1 + hits) / (K + 1), 12);
    expect(cell('A', 'B').p).toBeGreaterThan(0.5);
    expect(cell('B', 'A').p).toBeGreaterThan(0.5);
    expect(cell('A', 'A').delta - cell('A', 'B').delta).toBeCloseTo(-2, 5);
    expect(s.pFloor).toBeCloseTo(1 / (K + 1), 12);
  }, 120_000);
});
