/**
 * `lobes wanda` in the report (src/analysis/types.ts ReportModule): RUN/wanda (or the folder of
 * `--by AXIS`, RUN/wanda.by-AXIS) read through its store, and the payload of the Neuron regions
 * and Metrics sections.
 *
 * Neuron regions are stored as bitsets (base64) over one flat block index space per run:
 * projection p, layer slot l, block k (row-major in W[d_out, d_in] blocks) sits at
 *   offset[p] + l * blocks[p] + k,
 * so 80 layers x 3 projections x 3,584 blocks cost 107 KB per set. Where pooled scores exist,
 * each group also carries one byte per block: the block's importance percentile within its
 * matrix (0..255), which colours the heatmaps on a scale that is comparable across models.
 */
import type { ReportModule } from '../analysis/types.js';
import type { WandaPayload } from '../report/types.js';
import type { BlockSet, WandaMatrix } from './types.js';
import { readWanda, wandaDir, wandaDirs, type WandaData } from './store.js';

const PROJ_ORDER = ['gate_proj', 'up_proj', 'down_proj'];

function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

class Bits {
  readonly bytes: Uint8Array;
  count = 0;
  constructor(n: number) {
    this.bytes = new Uint8Array((n + 7) >> 3);
  }
  set(i: number): void {
    const m = 1 << (i & 7);
    if (!(this.bytes[i >> 3]! & m)) {
      this.bytes[i >> 3]! |= m;
      this.count++;
    }
  }
}

/** The Neuron regions section's payload: every region and difference set as a bitset, and the importance percentiles. */
export function wandaPayload(w: WandaData): WandaPayload {
  const mats = w.regions.matrices;
  const projs = [...new Set(mats.map((m) => m.proj))].sort((a, b) => {
    const ia = PROJ_ORDER.indexOf(a);
    const ib = PROJ_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : a > b ? 1 : 0);
  });
  const layers = [...new Set(mats.map((m) => m.layer))].sort((a, b) => a - b);
  const layerIdx = new Map(layers.map((l, i) => [l, i]));
  const grid: WandaPayload['grid'] = [];
  let offset = 0;
  for (const p of projs) {
    const ms = mats.filter((m) => m.proj === p);
    // Display grid of a projection: its largest matrix (all layers share one shape in Llama models).
    let rb = 0;
    let cb = 0;
    for (const m of ms) if (m.rowBlocks * m.colBlocks > rb * cb) [rb, cb] = [m.rowBlocks, m.colBlocks];
    grid.push({ rowBlocks: rb, colBlocks: cb, blocks: rb * cb, offset });
    offset += layers.length * rb * cb;
  }
  const total = offset;
  const place = new Map<string, { base: number; m: WandaMatrix }>();
  const present = new Bits(projs.length * layers.length);
  for (const m of mats) {
    const p = projs.indexOf(m.proj);
    const l = layerIdx.get(m.layer)!;
    place.set(m.name, { base: grid[p]!.offset + l * grid[p]!.blocks, m });
    present.set(p * layers.length + l);
  }
  const toBits = (set: BlockSet | undefined): Bits => {
    const bits = new Bits(total);
    if (!set) return bits;
    for (const [name, idx] of Object.entries(set)) {
      const pl = place.get(name);
      if (!pl) continue;
      for (const k of idx) bits.set(pl.base + k);
    }
    return bits;
  };
  const groups = w.settings.groups;
  const regions: Record<string, string> = {};
  for (const g of groups) regions[g] = b64(toBits(w.regions.regions[g]).bytes);
  let pct: Record<string, string> | null = null;
  if (w.pooled) {
    pct = {};
    for (const g of groups) {
      const bytes = new Uint8Array(total);
      let any = false;
      for (const { base, m } of place.values()) {
        const s = w.pooled(g, m.name);
        if (!s) continue;
        any = true;
        percentileBytes(s, bytes, base);
      }
      if (any) pct[g] = b64(bytes);
    }
    if (!Object.keys(pct).length) pct = null;
  }
  const metricsFor = (a: string, b: string) => w.metrics?.pairs.find((p) => p.a === a && p.b === b) ?? null;
  const pairs = w.regions.differences.map((d) => {
    const ab = toBits(d.aMinusB);
    const ba = toBits(d.bMinusA);
    return { a: d.a, b: d.b, ab: b64(ab.bytes), ba: b64(ba.bytes), nAB: ab.count, nBA: ba.count,
      metrics: metricsFor(d.a, d.b) };
  });
  // the capture points' per-channel families (d members each) stay out of the page: it names them from metrics.channels
  const metrics = w.metrics?.declaredFamilies?.some((f) => f.family.startsWith('channels '))
    ? { ...w.metrics, declaredFamilies: w.metrics.declaredFamilies.filter((f) => !f.family.startsWith('channels ')) }
    : w.metrics;
  return { by: w.settings.by, groups, projs, layers, grid, total, present: b64(present.bytes), pct, regions, pairs,
    metrics, settings: w.settings };
}

/**
 * Write each block's rank percentile within `s` (0 = least important, 255 = most) to out[base + k].
 * Ties share the lowest rank of their run.
 */
export function percentileBytes(s: Float32Array, out: Uint8Array, base: number): void {
  const n = s.length;
  if (n === 1) {
    out[base] = 255;
    return;
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((i, j) => s[i]! - s[j]!);
  let r = 0;
  for (let k = 0; k < n; k++) {
    if (k > 0 && s[order[k]!]! !== s[order[k - 1]!]!) r = k;
    out[base + order[k]!] = Math.round((255 * r) / (n - 1));
  }
}

export const REPORT: ReportModule<WandaData, { wanda: WandaPayload | null }> = {
  load: ({ runDir, manifest, by }) =>
    readWanda(runDir, manifest, by === undefined ? wandaDir(runDir) : wandaDir(runDir, { manifest, axis: by })),
  payload: (w) => ({ wanda: wandaPayload(w) }),
  absent: { wanda: null },
  axes: {
    dirs: wandaDirs,
    read: (dir, { runDir, manifest }) => readWanda(runDir, manifest, dir),
    dir: (w) => w.dir,
    axis: (w) => w.settings.by,
    shown: (w, rel) => `the neuron regions by ${w.settings.by} (${rel(w.dir)}/)`,
  },
};
