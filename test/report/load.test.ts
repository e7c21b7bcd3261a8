import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { writeSyntheticRun } from '../../src/report/synthetic.js';
import { loadRun, runPayload, percentileBytes, compareRuns, diffCI, jsonForScript, reportHtml, hoverText,
  BUILTIN_MODEL_DIR } from '../../src/report/index.js';
import { clientScript } from '../../src/report/client-bundle.js';
import { plotlySource } from '../../src/report/html.js';
import { readSafetensorsHeader, readTensorFloat32 } from '../../src/formats/safetensors.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-report-load-'));

function bitsOf(b64: string): Uint8Array {
  return new Uint8Array(Buffer.from(b64, 'base64'));
}
const bit = (u: Uint8Array, i: number) => (u[i >> 3]! >> (i & 7)) & 1;

describe('report loader and payload', () => {
  let run: string;
  beforeAll(() => {
    run = writeSyntheticRun(path.join(tmp, 'run'), { layers: 5,
      grid: { gate_proj: [6, 3], up_proj: [6, 3], down_proj: [3, 6] }, seed: 11 });
  });

  it('encodes every difference set as a bitset that matches regions.json exactly', async () => {
    const model = await loadRun(run);
    const p = runPayload(model).wanda!;
    expect(p.projs).toEqual(['gate_proj', 'up_proj', 'down_proj']);
    expect(p.layers).toEqual([0, 1, 2, 3, 4]);
    expect(p.grid.map((g) => g.blocks)).toEqual([18, 18, 18]);
    expect(p.total).toBe(3 * 5 * 18);
    const regions = JSON.parse(readFileSync(path.join(run, 'wanda', 'regions.json'), 'utf8'));
    expect(p.pairs.length).toBe(10);
    for (const [pi, d] of regions.differences.entries()) {
      for (const [dir, key] of [['aMinusB', 'ab'], ['bMinusA', 'ba']] as const) {
        const bits = bitsOf((p.pairs[pi] as any)[key]);
        // independent decode: every (matrix, block) in the file sets exactly one bit, and no other bit is set
        let expected = 0;
        for (const m of regions.matrices) {
          const proj = p.projs.indexOf(m.proj);
          const base = p.grid[proj]!.offset + p.layers.indexOf(m.layer) * p.grid[proj]!.blocks;
          const set = new Set<number>(d[dir][m.name]);
          for (let k = 0; k < m.rowBlocks * m.colBlocks; k++) expect(bit(bits, base + k)).toBe(set.has(k) ? 1 : 0);
          expected += set.size;
        }
        let count = 0;
        for (let i = 0; i < p.total; i++) count += bit(bits, i);
        expect(count).toBe(expected);
        expect(key === 'ab' ? p.pairs[pi]!.nAB : p.pairs[pi]!.nBA).toBe(expected);
      }
    }
  });

  it('colours blocks by their rank percentile within the matrix, from pooled.safetensors', async () => {
    const model = await loadRun(run);
    const p = runPayload(model).wanda!;
    const h = readSafetensorsHeader(path.join(run, 'wanda', 'pooled.safetensors'));
    const g = p.groups[2]!;
    const pct = bitsOf(p.pct![g]!);
    const name = 'layers.3.mlp.down_proj';
    const s = readTensorFloat32(h, `${g}|${name}`);
    const base = p.grid[2]!.offset + 3 * p.grid[2]!.blocks;
    for (let k = 0; k < s.length; k++) {
      const below = Array.from(s).filter((v) => v < s[k]!).length; // rank = number of smaller scores
      expect(pct[base + k]).toBe(Math.round((255 * below) / (s.length - 1)));
    }
  });

  it('percentileBytes gives ties their lowest rank', () => {
    const out = new Uint8Array(5);
    percentileBytes(new Float32Array([3, 1, 3, 2, 5]), out, 0);
    expect(Array.from(out)).toEqual([128, 0, 128, 64, 255].map((x) => x)); // ranks 2,0,2,1,4 of 4
  });

  it('escapes every user string: JSON block cannot be closed, Plotly text shows as typed', () => {
    const evil = '</script><script>alert(1)</script><!-- \u2028';
    const j = jsonForScript({ s: evil });
    expect(j).not.toMatch(/<|>|&|\u2028/);
    expect(JSON.parse(j).s).toBe(evil);
    expect(hoverText('id<1>', 'a&b', '"><img src=x onerror=alert(1)>')).toBe(
      '<b>a&amp;b</b><br>id&lt;1&gt;<br>"&gt;&lt;img src=x onerror=alert(1)&gt;',
    );
  });

  it('puts no run string into the page outside the JSON block', async () => {
    const evilRun = writeSyntheticRun(path.join(tmp, 'evil'), {
      groups: ['<b>A</b>', '</script><script>window.x=1</script>'],
      layers: 2,
      seed: 3,
      text: () => '<img src=x onerror="window.x=2">',
    });
    const html = reportHtml(await loadRun(evilRun));
    const start = html.indexOf('<script type="application/json" id="lobes-data">');
    const end = html.indexOf('</script>', start);
    expect(start).toBeGreaterThan(0);
    const block = html.slice(start + 48, end);
    expect(block).not.toContain('<');
    expect(html).not.toContain('<script>window.x');
    expect(html).not.toContain('<img src=x');
  });

  it('reads provenance, flags the built-in random model, and shows it in the page', async () => {
    const r = writeSyntheticRun(path.join(tmp, 'demo'), { layers: 2, modelDir: BUILTIN_MODEL_DIR, wanda: false });
    const model = await loadRun(r);
    expect(model.randomModel).toBe(true);
    expect(model.wanda).toBeNull();
    const pay = runPayload(model);
    expect(pay.provenance.find(([k]) => k === 'model')![1]).toBe(BUILTIN_MODEL_DIR);
    expect((await loadRun(run)).randomModel).toBe(false);
  });

  it('reports a broken contract with the file and the place', async () => {
    const bad = writeSyntheticRun(path.join(tmp, 'bad'), { layers: 2, seed: 5 });
    const rf = path.join(bad, 'wanda', 'regions.json');
    const regions = JSON.parse(readFileSync(rf, 'utf8'));
    const m0 = regions.matrices[0].name;
    regions.differences[1].bMinusA[m0] = [0, 9999];
    writeFileSync(rf, JSON.stringify(regions));
    await expect(loadRun(bad)).rejects.toThrow(
      `${rf}: differences[1].bMinusA.${m0}[1]: block index 9999 out of range 0..31`,
    );
    const noRun = path.join(tmp, 'empty');
    mkdirSync(noRun, { recursive: true });
    await expect(loadRun(noRun)).rejects.toThrow(/manifest\.json is missing/);
    const cbad = writeSyntheticRun(path.join(tmp, 'cbad'), { layers: 2, wanda: false });
    const cf = path.join(cbad, 'cluster', 'coords.json');
    const c = JSON.parse(readFileSync(cf, 'utf8'));
    c.xy.pop();
    writeFileSync(cf, JSON.stringify(c));
    await expect(loadRun(cbad)).rejects.toThrow(`${cf}: xy: 199 coordinates for 100 points`);
    expect(existsSync(path.join(cbad, 'report.html'))).toBe(false);
  });
});

describe('comparison table', () => {
  it("CI of a difference combines the runs' CIs as independent normal errors", () => {
    // se1 = 0.1, se2 = 0.2 -> se = sqrt(0.05); diff = 0.3
    const z = 1.959963984540054;
    const [lo, hi] = diffCI(0.5, [0.5 - z * 0.1, 0.5 + z * 0.1], 0.8, [0.8 - z * 0.2, 0.8 + z * 0.2]);
    expect(lo).toBeCloseTo(0.3 - z * Math.sqrt(0.05), 12);
    expect(hi).toBeCloseTo(0.3 + z * Math.sqrt(0.05), 12);
  });

  it('lists every metric of both runs with the difference and the run ahead', async () => {
    const a = await loadRun(writeSyntheticRun(path.join(tmp, 'ca'), { layers: 3, seed: 21 }), { name: '8B' });
    const b = await loadRun(writeSyntheticRun(path.join(tmp, 'cb'), { layers: 4, seed: 22 }), { name: '70B' });
    const c = compareRuns(a, b);
    const sil = c.rows.find((r) => r.section === 'separation (original-cosine)' && r.metric === 'silhouette')!;
    const sa = a.cluster!.metrics!.spaces[0]!.silhouette;
    const sb = b.cluster!.metrics!.spaces[0]!.silhouette;
    expect(sil.a).toBe(sa.value);
    expect(sil.b).toBe(sb.value);
    expect(sil.diff).toBeCloseTo(sb.value - sa.value, 12);
    expect(sil.ci).toEqual(diffCI(sa.value, sa.ci95!, sb.value, sb.ci95!));
    // the runs are A and B in the order given, named once in the first line
    expect(c.runs).toEqual(['8B', '70B']);
    expect(c.summary![0]).toBe('A is 8B, B is 70B. Every difference is B − A.');
    expect(sil.ahead.startsWith(sb.value > sa.value ? 'B' : 'A')).toBe(true);
    const db = c.rows.find((r) => r.section === 'separation (embedding)' && r.metric === 'Davies–Bouldin')!;
    expect(db.ahead.startsWith(db.b! < db.a! ? 'B' : 'A')).toBe(true);
    // every wanda pair metric but isolation (the same test as Jaccard), sizes as shares of all blocks
    const pairs = a.wanda!.metrics!.pairs;
    expect(c.rows.filter((r) => r.section.startsWith('pair ')).length).toBe(pairs.length * 7);
    expect(c.rows.some((r) => /isolation/.test(r.metric))).toBe(false);
    const p0 = pairs[0]!;
    const share = c.rows.find((r) => r.section === `pair ${p0.a} vs ${p0.b}` && r.metric === 'share of blocks in A∖B')!;
    expect(share.a).toBeCloseTo(p0.sizeAminusB / (3 * 3 * 32), 12);
    expect(share.ci).toBeNull();
  });

  it('inlines a Plotly bundle that registers every trace type the pages draw', () => {
    // trace types in the page script as the page runs it (the bundle); 'data' is error bars' type,
    // 'line' the type of layout shapes (chance lines), 'category' an axis type (the ablation
    // heatmap's axes), which are not traces
    const used = new Set(
      [...clientScript().matchAll(/\btype: ["']([a-z0-9]+)["']/g)].map((m) => m[1]!).filter((t) =>
        t !== 'data' && t !== 'line' && t !== 'category'
      ),
    );
    expect([...used].sort()).toEqual(['bar', 'heatmap', 'scatter']);
    const src = plotlySource();
    const registered = new Set([...src.matchAll(/moduleType:"trace",name:"([a-z0-9]+)"/g)].map((m) => m[1]!));
    for (const t of used) expect(registered.has(t)).toBe(true);
    expect(src).toContain('plotly.js (cartesian');
    // the minified partial bundle, not the 10 MB full one
    expect(src.length).toBeLessThan(3e6);
    expect(src).not.toMatch(/<\/script|<!--/i);
  });
});
