/**
 * lobes ablate judges its inputs by content (src/store/lineage.ts), not by the settings it
 * re-reads: a killed job resumed after the regions were rewritten with the same by/block/top, a
 * finished job whose regions changed since, a `--model` copy whose weight data differ from the
 * run's by 20 KB XOR-ed. Each is refused in one line naming what differs, and the folder's files
 * stay byte-identical.
 */
import { describe, it, expect, beforeAll } from 'vitest';
import { cpSync, mkdtempSync, openSync, readFileSync, readSync, writeSync, closeSync, readdirSync,
  statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureModelFromSpec, GENERATED_MODELS } from '../../src/models/write.js';
import { runAblate } from '../../src/ablate/run.js';
import { GOLD, writeAblateRun, writeGoldenItems } from './fixture.js';
import { writeFileSync } from 'node:fs';

/** Every file under `dir` (relative path → bytes), to compare a folder before and after a refusal. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const n of readdirSync(d).sort()) {
      const p = path.join(d, n);
      if (statSync(p).isDirectory()) walk(p, `${rel}${n}/`);
      else out[rel + n] = readFileSync(p).toString('base64');
    }
  };
  walk(dir, '');
  return out;
}

/** The golden regions with one block fewer in A's largest matrix: what a wanda rerun with --resolution weight (same by, block, top) can give. */
function rewriteRegions(run: string): void {
  const f = path.join(run, 'wanda', 'regions.json');
  const r = JSON.parse(readFileSync(f, 'utf8'));
  const mat = Object.keys(r.regions.A).sort((a, b) => r.regions.A[b].length - r.regions.A[a].length)[0]!;
  expect(r.regions.A[mat].length).toBeGreaterThan(1);
  r.regions.A[mat] = r.regions.A[mat].slice(1);
  writeFileSync(f, JSON.stringify(r) + '\n');
}

/** A killing engine: the n-th scoring call fails (a job killed after some chunks). */
async function failingAt(n: number) {
  let calls = 0;
  const { openLoglikEngine } = await import('../../src/runtime/loglik.js');
  return (async (m: string, o: any) => {
    const e = await openLoglikEngine(m, o);
    return { ...e, info: e.info, usesCache: e.usesCache, stats: e.stats, close: () => e.close(),
      score: (r: any, d: any) => (++calls === n ? Promise.reject(new Error('killed')) : e.score(r, d)) };
  }) as any;
}

describe('lobes ablate inputs by content', () => {
  let tmp: string;
  let spec: string;
  let model: string;
  const fresh = (name: string) =>
    writeAblateRun(path.join(tmp, name), model, { ...GOLD.regions, C: { 'layers.0.mlp.gate_proj': [11] } }, GOLD.block);
  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-ablate-lineage-'));
    // the tiny llama with its weights in model.onnx_data, so a copy can differ in the data alone
    model = ensureModelFromSpec('tiny-llama-extdata', { ...GENERATED_MODELS['tiny-llama']!,
      write: { externalData: true } });
    spec = writeGoldenItems(tmp);
  });

  it(
    'a killed job resumed after the regions were rewritten (same by, block and top) is refused naming regions.json; nothing is mixed',
    async () => {
      const run = fresh('run-resume');
      const out = path.join(tmp, 'killed');
      await expect(
        runAblate({ run, region: 'all', data: spec, out, random: 2, chunkUnits: 2, quiet: true,
          deps: { openLoglik: await failingAt(5) } }),
      ).rejects.toThrow('killed');
      const before = snapshot(out);
      rewriteRegions(run);
      const err = await runAblate({ run, region: 'all', data: spec, out, random: 2, chunkUnits: 2, quiet: true }).then(
        () => null,
        (e) => e,
      );
      expect(err?.message).toMatch(
        /holds an unfinished ablation made from other inputs: wanda\/regions\.json has changed since \(sha256 \w+… then, \w+… now\)/,
      );
      expect(String(err.message)).not.toContain('\n');
      expect(snapshot(out)).toEqual(before);
    },
    180_000,
  );

  it('a finished job is not "already complete" once the regions changed: refused naming regions.json, results kept',
    async () => {
      const run = fresh('run-complete');
      const out = path.join(tmp, 'complete');
      await runAblate({ run, region: 'A', data: spec, out, random: 2, quiet: true });
      const before = snapshot(out);
      const logs: string[] = [];
      await runAblate({ run, region: 'A', data: spec, out, random: 2, log: (l) => logs.push(l) });
      expect(logs.join('\n')).toMatch(/already complete/);
      rewriteRegions(run);
      const err = await runAblate({ run, region: 'A', data: spec, out, random: 2, quiet: true }).then(() => null,
        (e) => e);
      expect(err?.message).toMatch(
        /holds a finished ablation made from other inputs: wanda\/regions\.json has changed since/,
      );
      expect(snapshot(out)).toEqual(before);
    }, 180_000);

  it(
    "--model whose weight data differ from the run's (20 KB XOR-ed, the same graph) is refused naming the data file, before any work",
    async () => {
      // the run records every model file by content, as lobes extract does
      const run = writeAblateRun(path.join(tmp, 'run-model'), model, GOLD.regions, GOLD.block, 'group', true);
      const copy = path.join(tmp, 'model-xor');
      cpSync(model, copy, { recursive: true });
      const data = path.join(copy, 'model.onnx_data');
      const fd = openSync(data, 'r+');
      const buf = Buffer.alloc(20 * 1024);
      readSync(fd, buf, 0, buf.length, 4096);
      for (let i = 0; i < buf.length; i++) buf[i] ^= 0x5a;
      writeSync(fd, buf, 0, buf.length, 4096);
      closeSync(fd);
      const out = path.join(tmp, 'xor-out');
      const err = await runAblate({ run, region: 'A', data: spec, out, random: 2, quiet: true, model: copy }).then(
        () => null,
        (e) => e,
      );
      expect(err?.message).toMatch(
        /: model is not the run's model .*model\.onnx_data has sha256 \w+…; the run was extracted with sha256 \w+…/,
      );
      expect(String(err.message)).not.toContain('\n');
      expect(() => statSync(out)).toThrow();
      // the unchanged copy is the run's model
      const same = path.join(tmp, 'model-same');
      cpSync(model, same, { recursive: true });
      const s = await runAblate({ run, region: 'A', data: spec, out: path.join(tmp, 'same-out'), random: 2, quiet: true,
        model: same });
      expect(s.regions.map((r) => r.name)).toEqual(['A']);
    },
    180_000,
  );
});
