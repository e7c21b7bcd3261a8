import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planBatches, padBatch } from '../../src/runtime/batching.js';
import { positionIds, openCaptureEngine } from '../../src/runtime/engine.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { listProviders, executionProviders } from '../../src/runtime/providers.js';
import { Rng } from '../../src/util/rng.js';
import { LobesError } from '../../src/util/errors.js';
import type { Device } from '../../src/runtime/types.js';
import { GENAI, hasGenai, expectLobesError, relErr } from './helpers.js';
import { genaiForward, lastTokenHook } from './genai-forward.js';

const CUDA = listProviders().find((p) => p.name === 'cuda')?.available === true;
if (CUDA)
  console.log(
    'test/runtime/batching.test.ts: this build has the CUDA provider; the missing-provider error is not tested here',
  );
else
  console.log('test/runtime/batching.test.ts: no CUDA provider in this build; the CUDA capture comparison is skipped');

/**
 * False only where a WebGPU adapter cannot exist: on Linux, ONNX Runtime's WebGPU (Dawn) needs
 * the Vulkan loader libvulkan.so.1, found neither by ldconfig nor in LD_LIBRARY_PATH.
 */
function webgpuPossible(): boolean {
  if (process.platform !== 'linux') return true;
  const dirs = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  if (dirs.some((d) => existsSync(join(d, 'libvulkan.so.1')))) return true;
  for (const ldconfig of ['/sbin/ldconfig', '/usr/sbin/ldconfig', 'ldconfig']) {
    try {
      return execFileSync(ldconfig, ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes(
        'libvulkan.so.1',
      );
    } catch {
      // try the next location
    }
  }
  return true; // cannot tell
}

/**
 * Open `device`; when a session can be made, its captures must equal the CPU's (within fp16
 * precision, the fixture's compute type); when it cannot, the error must be one line naming
 * the device and the model file (never a silent CPU session). `possible` false: the device
 * cannot exist here, so a session that opens is a CPU fallback and fails the test.
 */
async function gpuAgreesWithCpu(device: Device, error: RegExp, possible = true): Promise<void> {
  const seqs = [[1, 5, 6, 7, 8], [1, 9], [1, 300, 301]];
  let eng;
  try {
    eng = await openCaptureEngine(GENAI, { capture: ['final', 'mlp', 'resid'], device });
    if (!possible) {
      await eng.close();
      throw new Error(`a ${device} session opened where no ${device} device can exist: a silent CPU fallback`);
    }
  } catch (e) {
    if (!(e instanceof LobesError)) throw e;
    const err = await expectLobesError(Promise.reject(e));
    expect(err.message).toMatch(error);
    if (/could not create/.test(err.message)) expect(err.message).toContain('model.onnx');
    console.log(`${device}: no usable device here (${err.message.slice(0, 120)}); the capture comparison is skipped`);
    return;
  }
  const cpu = await openCaptureEngine(GENAI, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
  try {
    const b = padBatch(seqs, 0, 'left');
    const [g, c] = [await eng.run(b), await cpu.run(b)];
    expect([...g.keys()]).toEqual([...c.keys()]);
    for (const h of cpu.hooks) expect(relErr(g.get(h.name)!, c.get(h.name)!), `${device} ${h.name}`).toBeLessThan(1e-2);
  } finally {
    await eng.close();
    await cpu.close();
  }
}

describe('planBatches', () => {
  it('covers every item once, respects rows and token budget, groups similar lengths', () => {
    const rng = new Rng(7);
    const lengths = Array.from({ length: 500 }, () => 1 + rng.int(300));
    const plan = planBatches(lengths, { batch: 8, tokenBudget: 1024 });
    const seen = new Int32Array(lengths.length);
    for (const b of plan) {
      expect(b.length).toBeGreaterThan(0);
      expect(b.length).toBeLessThanOrEqual(8);
      const longest = Math.max(...b.map((i) => lengths[i]!));
      if (b.length > 1) expect(b.length * longest).toBeLessThanOrEqual(1024);
      for (const i of b) seen[i]!++;
    }
    expect(Array.from(seen).every((c) => c === 1)).toBe(true);
    // Sorted by length: padding waste is small compared with dataset order.
    const waste = (bs: number[][]) =>
      bs.reduce(
        (s, b) => s + b.length * Math.max(...b.map((i) => lengths[i]!)) - b.reduce((t, i) => t + lengths[i]!, 0),
        0,
      );
    const naive: number[][] = [];
    for (let i = 0; i < lengths.length; i += 8)
      naive.push(Array.from({ length: Math.min(8, lengths.length - i) }, (_, k) => i + k));
    expect(waste(plan)).toBeLessThan(waste(naive) / 5);
    // Deterministic.
    expect(planBatches(lengths, { batch: 8, tokenBudget: 1024 })).toEqual(plan);
  });

  it('an item longer than the budget gets a batch of its own; empty items are errors', async () => {
    expect(planBatches([5, 100, 5], { batch: 4, tokenBudget: 50 })).toEqual([[1], [0, 2]]);
    const e = await expectLobesError(() => planBatches([3, 0, 2], { batch: 4 }));
    expect(e.message).toMatch(/item 1 has 0 tokens \(empty input\)/);
  });
});

describe('padBatch and position ids', () => {
  it('pads left and right with correct masks and last indices', () => {
    const l = padBatch([[5, 6, 7], [8]], 0, 'left');
    expect(Array.from(l.inputIds, Number)).toEqual([5, 6, 7, 0, 0, 8]);
    expect(Array.from(l.attentionMask, Number)).toEqual([1, 1, 1, 0, 0, 1]);
    expect(Array.from(l.lastIndex)).toEqual([2, 2]);
    const r = padBatch([[5, 6, 7], [8]], 9, 'right');
    expect(Array.from(r.inputIds, Number)).toEqual([5, 6, 7, 8, 9, 9]);
    expect(Array.from(r.lastIndex)).toEqual([2, 0]);
    expect(Array.from(positionIds(l.attentionMask, 2, 3), Number)).toEqual([0, 1, 2, 0, 0, 0]);
    expect(Array.from(positionIds(r.attentionMask, 2, 3), Number)).toEqual([0, 1, 2, 0, 0, 0]);
  });

  it('empty rows are errors', async () => {
    expect((await expectLobesError(() => padBatch([[1], []], 0, 'left'))).message).toMatch(/row 1 has no tokens/);
    await expectLobesError(() => padBatch([], 0, 'left'));
  });
});

describe.skipIf(!hasGenai)('tokenizer from the model folder', () => {
  it('adds BOS as configured and truncates from the start, keeping BOS', async () => {
    const t = await loadTokenizer(GENAI, { maxTokens: null, chatTemplate: false });
    expect(t.addBos).toBe(true);
    const full = t.encode('one two three four five six seven eight nine ten');
    expect(full.ids[0]).toBe(1);
    expect(full.truncated).toBe(false);
    const t5 = await loadTokenizer(GENAI, { maxTokens: 5, chatTemplate: false });
    const cut = t5.encode('one two three four five six seven eight nine ten');
    expect(cut.truncated).toBe(true);
    expect(cut.fullLength).toBe(full.ids.length);
    expect(cut.ids).toEqual([1, ...full.ids.slice(-4)]);
    const chat = await loadTokenizer(GENAI, { maxTokens: null, chatTemplate: true });
    const c = chat.encode('Hello');
    // Llama-2 template: <s>[INST] Hello [/INST]
    expect(c.ids[0]).toBe(1);
    expect(c.ids.length).toBeGreaterThan(t.encode('Hello').ids.length + 3);
    // An empty text is an error, not a lone BOS.
    expect((await expectLobesError(() => t.encode('  \n'))).message).toMatch(/empty text/);
  });

  it('missing tokenizer files name the folder', async () => {
    const d = mkdtempSync(join(tmpdir(), 'lobes-tok-'));
    try {
      const e = await expectLobesError(loadTokenizer(d, { maxTokens: null, chatTemplate: false }));
      expect(e.message).toContain(d);
      expect(e.message).toMatch(/no tokenizer\.json/);
      writeFileSync(join(d, 'tokenizer.json'), '{"not": "a tokenizer"');
      const e2 = await expectLobesError(loadTokenizer(d, { maxTokens: null, chatTemplate: false }));
      expect(e2.message).toContain(d);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!hasGenai)('engine bad input', () => {
  it('an empty row and an empty batch are one-line errors', async () => {
    const eng = await openCaptureEngine(GENAI, { capture: ['final'], device: 'cpu' });
    try {
      const b = padBatch([[1, 2, 3], [4]], 0, 'left');
      b.attentionMask.fill(0n, 3, 6);
      expect((await expectLobesError(eng.run(b))).message).toMatch(/row 1 has no real tokens \(empty input\)/);
      await expectLobesError(
        eng.run({ inputIds: new BigInt64Array(0), attentionMask: new BigInt64Array(0), batch: 0, seq: 0,
          lastIndex: new Int32Array(0) }),
      );
    } finally {
      await eng.close();
    }
  });

  it('device cpu runs on the CPU provider alone and captures the values of an independent forward pass', async () => {
    // whatever GPU providers this build has, --device cpu asks for the CPU provider only
    expect(executionProviders('cpu')).toEqual(['cpu']);
    expect(executionProviders('cpu', 3)).toEqual(['cpu']);
    const seqs = [[1, 5, 6, 7, 8], [1, 9]];
    const eng = await openCaptureEngine(GENAI, { capture: ['final', 'mlp'], device: 'cpu' });
    try {
      const out = await eng.run(padBatch(seqs, 0, 'left'));
      for (const h of eng.hooks) {
        seqs.forEach((s, r) => {
          const got = out.get(h.name)!.subarray(r * h.dim, (r + 1) * h.dim);
          expect(relErr(got, lastTokenHook(genaiForward(GENAI, s), h.name)), `${h.name} row ${r}`).toBeLessThan(3e-3);
        });
      }
    } finally {
      await eng.close();
    }
  });

  it.skipIf(CUDA)('a missing CUDA provider is an actionable error, not a CPU fallback', async () => {
    expect(() => executionProviders('cuda')).toThrow(LobesError);
    const e = await expectLobesError(openCaptureEngine(GENAI, { capture: ['final'], device: 'cuda' }));
    expect(e.message).toMatch(/cuda execution provider is not available/);
    expect(e.message).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js');
  });

  it.skipIf(!CUDA)(
    'with the CUDA provider: captures equal the CPU captures, or the session error is one actionable line',
    async () => {
      expect(executionProviders('cuda', 1)).toEqual([{ name: 'cuda', deviceId: 1 }]);
      await gpuAgreesWithCpu('cuda', /onnxruntime could not create a cuda session/);
      // no machine has a GPU 99: a session that opens there is a silent CPU fallback
      await expectLobesError(openCaptureEngine(GENAI, { capture: ['final'], device: 'cuda', deviceId: 99 }));
    },
  );

  it('webgpu: captures equal the CPU captures on an adapter, and without one the error is one line, not a CPU fallback', async () => {
    await gpuAgreesWithCpu('webgpu', /could not create a webgpu session|webgpu execution provider is not available/,
      webgpuPossible());
  });
  it('capture only a subset of families', async () => {
    const eng = await openCaptureEngine(GENAI, { capture: ['resid'], device: 'cpu' });
    try {
      expect(eng.hooks.map((h) => h.name)).toEqual(['layers.0.resid_out', 'layers.1.resid_out']);
      const out = await eng.run(padBatch([[1, 2, 3]], 0, 'left'));
      expect([...out.keys()]).toEqual(['layers.0.resid_out', 'layers.1.resid_out']);
    } finally {
      await eng.close();
    }
  });
});
