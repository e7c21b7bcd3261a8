import { describe, it, expect } from 'vitest';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataType, loadModel, makeNode, makeTensor, readInitializerFloat32, writeModel,
  type ModelProto } from '../../src/onnx/index.js';
import { inspectModel, openCaptureEngine } from '../../src/runtime/engine.js';
import { padBatch } from '../../src/runtime/batching.js';
import { relErr } from './helpers.js';
import * as ort from 'onnxruntime-node';

const TINY = resolve(import.meta.dirname, '../../models/tiny-llama');
const BLOCK = 32;

/** Symmetric int4 block quantization of W [K, N] (in_out) in MatMulNBits layout; returns also the dequantized W. */
function quantize(W: Float32Array, K: number, N: number) {
  const kb = Math.ceil(K / BLOCK);
  const blob = (BLOCK * 4) / 8;
  const packed = new Uint8Array(N * kb * blob);
  const scales = new Float32Array(N * kb);
  const deq = new Float32Array(K * N);
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < kb; b++) {
      let amax = 0;
      for (let k = b * BLOCK; k < Math.min(K, (b + 1) * BLOCK); k++) amax = Math.max(amax, Math.abs(W[k * N + n]!));
      const s = amax / 7 || 1;
      scales[n * kb + b] = s;
      for (let j = 0; j < BLOCK; j++) {
        const k = b * BLOCK + j;
        const q = k < K ? Math.max(0, Math.min(15, Math.round(W[k * N + n]! / s) + 8)) : 8;
        if (k < K) deq[k * N + n] = (q - 8) * s;
        const byte = (n * kb + b) * blob + (j >> 1);
        packed[byte] = packed[byte]! | (j & 1 ? q << 4 : q);
      }
    }
  }
  return { packed, scales, deq, kb, blob };
}

describe('an onnxruntime-optimized graph (fused RMSNorm, QuickGelu SiLU)', () => {
  it('is discovered and captures like the original', async () => {
    const d = mkdtempSync(join(tmpdir(), 'lobes-ortopt-'));
    try {
      const s = await ort.InferenceSession.create(join(TINY, 'model.onnx'), {
        graphOptimizationLevel: 'extended',
        optimizedModelFilePath: join(d, 'model.onnx'),
        logSeverityLevel: 3,
      });
      await s.release();
      const opt = loadModel(d);
      const ops = new Set(opt.model.graph!.node.map((n) => n.opType));
      expect(ops.has('SimplifiedLayerNormalization')).toBe(true);
      expect(ops.has('QuickGelu')).toBe(true);
      expect(ops.has('Sigmoid')).toBe(false);
      copyFileSync(join(TINY, 'config.json'), join(d, 'config.json'));
      const a = await inspectModel(TINY);
      const b = await inspectModel(d);
      expect(b.arch).toEqual(a.arch);
      expect(b.points.map((p) => [p.name, p.dim])).toEqual(a.points.map((p) => [p.name, p.dim]));
      const e1 = await openCaptureEngine(d, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
      const e2 = await openCaptureEngine(TINY, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
      try {
        const batch = padBatch([[1, 20, 30, 40, 50, 60], [1, 7, 8]], 0, 'left');
        const x = await e1.run(batch);
        const y = await e2.run(batch);
        for (const h of e1.hooks) expect(relErr(x.get(h.name)!, y.get(h.name)!), h.name).toBeLessThan(1e-4);
      } finally {
        await e1.close();
        await e2.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('Gemm projections (transB=1, 2-D reshapes around them)', () => {
  it('are discovered with layout out_in and capture like the MatMul model', async () => {
    const src = loadModel(TINY);
    const info = await inspectModel(TINY);
    const mlpWeights = new Set(
      info.points.flatMap((p) => (p.name.includes('.mlp.') ? p.projections!.map((r) => r.weight) : [])),
    );
    const model: ModelProto = structuredClone(src.model);
    const g = model.graph!;
    const out: typeof g.node = [];
    let k = 0;
    for (const n of g.node) {
      if (n.opType !== 'MatMul' || !mlpWeights.has(n.input[1]!)) {
        out.push(n);
        continue;
      }
      const w = n.input[1]!;
      const [K, N] = src.initializers.get(w)!.dims as [number, number];
      const W = readInitializerFloat32(src, w);
      const Wt = new Float32Array(K * N);
      for (let i = 0; i < K; i++) for (let j = 0; j < N; j++) Wt[j * K + i] = W[i * N + j]!;
      const p = `gemm${k++}.`;
      g.initializer = g.initializer.filter((x) => x.name !== w);
      g.initializer.push(
        makeTensor(p + 'wt', DataType.FLOAT, [N, K], Wt),
        makeTensor(p + 'flat', DataType.INT64, [2], BigInt64Array.from([-1n, BigInt(K)])),
        makeTensor(p + 'n', DataType.INT64, [1], BigInt64Array.from([BigInt(N)])),
        makeTensor(p + 's0', DataType.INT64, [1], BigInt64Array.from([0n])),
        makeTensor(p + 's2', DataType.INT64, [1], BigInt64Array.from([2n])),
      );
      out.push(
        makeNode('Reshape', [n.input[0]!, p + 'flat'], [p + 'x2']),
        makeNode('Gemm', [p + 'x2', p + 'wt'], [p + 'y2'], { transB: 1 }),
        makeNode('Shape', [n.input[0]!], [p + 'shape']),
        makeNode('Slice', [p + 'shape', p + 's0', p + 's2'], [p + 'bs']),
        makeNode('Concat', [p + 'bs', p + 'n'], [p + 'target'], { axis: 0 }),
        makeNode('Reshape', [p + 'y2', p + 'target'], n.output),
      );
    }
    g.node = out;
    const d = mkdtempSync(join(tmpdir(), 'lobes-gemm-'));
    try {
      writeModel(join(d, 'model.onnx'), model);
      copyFileSync(join(TINY, 'config.json'), join(d, 'config.json'));
      const gi = await inspectModel(d);
      expect(gi.arch).toEqual(info.arch);
      const up = gi.points.find((p) => p.name === 'layers.0.mlp.in')!.projections!.find((r) => r.proj === 'up_proj')!;
      expect(up).toMatchObject({ op: 'Gemm', layout: 'out_in', dIn: info.arch.hidden, dOut: info.arch.intermediate });
      const e1 = await openCaptureEngine(d, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
      const e2 = await openCaptureEngine(TINY, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
      try {
        const b = padBatch([[1, 20, 30, 40, 50, 60], [1, 7, 8]], 0, 'right');
        const a = await e1.run(b);
        const c = await e2.run(b);
        for (const h of e1.hooks) expect(relErr(a.get(h.name)!, c.get(h.name)!), h.name).toBeLessThan(1e-5);
      } finally {
        await e1.close();
        await e2.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('MatMulNBits (int4) projections', () => {
  it('are discovered with their quantization and capture like the dequantized fp32 model', async () => {
    const info = await inspectModel(TINY);
    const src = loadModel(TINY);
    const qModel: ModelProto = structuredClone(src.model);
    const dqModel: ModelProto = structuredClone(src.model);
    const mlpWeights = new Set(
      info.points.flatMap((p) => (p.name.includes('.mlp.') ? p.projections!.map((r) => r.weight) : [])),
    );
    expect(mlpWeights.size).toBe(6);
    const qg = qModel.graph!;
    const dg = dqModel.graph!;
    for (let i = 0; i < qg.node.length; i++) {
      const n = qg.node[i]!;
      if (n.opType !== 'MatMul' || !mlpWeights.has(n.input[1]!)) continue;
      const w = n.input[1]!;
      const t = src.initializers.get(w)!;
      const [K, N] = t.dims as [number, number];
      const q = quantize(readInitializerFloat32(src, w), K, N);
      qg.node[i] = makeNode('MatMulNBits', [n.input[0]!, `${w}.q4`, `${w}.scales`], n.output, { K, N, bits: 4,
        block_size: BLOCK }, 'com.microsoft');
      qg.initializer = qg.initializer.filter((x) => x.name !== w);
      qg.initializer.push(makeTensor(`${w}.q4`, DataType.UINT8, [N, q.kb, q.blob], q.packed),
        makeTensor(`${w}.scales`, DataType.FLOAT, [N * q.kb], q.scales));
      dg.initializer = dg.initializer.map((x) => (x.name === w ? makeTensor(w, DataType.FLOAT, [K, N], q.deq) : x));
    }
    if (!qModel.opsetImport.some((o) => o.domain === 'com.microsoft'))
      qModel.opsetImport.push({ domain: 'com.microsoft', version: 1 });
    const d = mkdtempSync(join(tmpdir(), 'lobes-q4-'));
    const dq = mkdtempSync(join(tmpdir(), 'lobes-dq-'));
    try {
      writeModel(join(d, 'model.onnx'), qModel);
      writeModel(join(dq, 'model.onnx'), dqModel);
      for (const f of ['tokenizer.json', 'tokenizer_config.json', 'config.json'])
        copyFileSync(join(TINY, f), join(d, f));
      const qi = await inspectModel(d);
      expect(qi.arch.quantization).toBe('int4 (MatMulNBits, block 32)');
      expect(qi.arch.layers).toBe(info.arch.layers);
      const down = qi.points.find((p) => p.name === 'layers.1.mlp.down_in')!.projections![0]!;
      expect(down).toMatchObject({ proj: 'down_proj', op: 'MatMulNBits', layout: 'nbits', bits: 4, blockSize: 32,
        dIn: info.arch.intermediate, dOut: info.arch.hidden });
      expect(down.scales).toMatch(/\.scales$/);
      const e1 = await openCaptureEngine(d, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
      const e2 = await openCaptureEngine(dq, { capture: ['final', 'mlp', 'resid'], device: 'cpu' });
      try {
        const b = padBatch([[1, 20, 30, 40, 50, 60], [1, 7, 8], [1, 99, 98, 97]], 0, 'left');
        const a = await e1.run(b);
        const c = await e2.run(b);
        for (const h of e1.hooks) expect(relErr(a.get(h.name)!, c.get(h.name)!), h.name).toBeLessThan(1e-4);
      } finally {
        await e1.close();
        await e2.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
      rmSync(dq, { recursive: true, force: true });
    }
  });
});

describe('transformers.js folder layout (onnx/ subfolder, tokenizer and config at the root)', () => {
  it('finds the graph, the config and the tokenizer', async () => {
    const { mkdirSync } = await import('node:fs');
    const { loadTokenizer } = await import('../../src/runtime/tokenize.js');
    const d = mkdtempSync(join(tmpdir(), 'lobes-tjs-'));
    try {
      mkdirSync(join(d, 'onnx'));
      copyFileSync(join(TINY, 'model.onnx'), join(d, 'onnx', 'model.onnx'));
      for (const f of ['tokenizer.json', 'tokenizer_config.json', 'config.json'])
        copyFileSync(join(TINY, f), join(d, f));
      const want = await inspectModel(TINY);
      expect((await inspectModel(d)).arch).toEqual(want.arch);
      expect((await inspectModel(join(d, 'onnx', 'model.onnx'))).arch).toEqual(want.arch);
      const t1 = await loadTokenizer(join(d, 'onnx', 'model.onnx'), { maxTokens: null, chatTemplate: false });
      const t2 = await loadTokenizer(TINY, { maxTokens: null, chatTemplate: false });
      expect(t1.encode('hello there').ids).toEqual(t2.encode('hello there').ids);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('a graph without an attention_mask input', () => {
  it('gets a selection-only mask; padded rows run one at a time and match the masked model', async () => {
    const src = loadModel(TINY);
    const model: ModelProto = structuredClone(src.model);
    const g = model.graph!;
    const ids = g.input.find((v) => v.name === 'input_ids')!.name!;
    g.input = g.input.filter((v) => v.name !== 'attention_mask');
    // attention_mask becomes ones(shape(input_ids)) inside the graph.
    g.node.unshift(
      makeNode('Shape', [ids], ['nomask.shape']),
      makeNode('ConstantOfShape', ['nomask.shape'], ['attention_mask'], {
        value: makeTensor('one', DataType.INT64, [1], BigInt64Array.from([1n])),
      }),
    );
    const d = mkdtempSync(join(tmpdir(), 'lobes-nomask-'));
    try {
      writeModel(join(d, 'model.onnx'), model);
      const info = await inspectModel(d);
      expect(info.inputs.map((i) => i.name)).not.toContain('attention_mask');
      const e1 = await openCaptureEngine(d, { capture: ['final', 'mlp'], device: 'cpu' });
      const e2 = await openCaptureEngine(TINY, { capture: ['final', 'mlp'], device: 'cpu' });
      try {
        for (const side of ['left', 'right'] as const) {
          const b = padBatch([[1, 20, 30, 40, 50, 60], [1, 7, 8], [1, 9]], 0, side);
          const x = await e1.run(b);
          const y = await e2.run(b);
          for (const h of e1.hooks)
            expect(relErr(x.get(h.name)!, y.get(h.name)!), `${side} ${h.name}`).toBeLessThan(1e-5);
        }
      } finally {
        await e1.close();
        await e2.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('an export that keeps only the last position before lm_head', () => {
  it('captures final.hidden at each row’s last real token anyway', async () => {
    const src = loadModel(TINY);
    const info = await inspectModel(TINY);
    const lmW = info.points.find((p) => p.name === 'final.hidden')!.projections![0]!.weight;
    const model: ModelProto = structuredClone(src.model);
    const g = model.graph!;
    const lm = g.node.find((n) => n.input[1] === lmW)!;
    const x = lm.input[0]!;
    g.initializer.push(
      makeTensor('keep.start', DataType.INT64, [1], BigInt64Array.from([-1n])),
      makeTensor('keep.end', DataType.INT64, [1], BigInt64Array.from([9223372036854775807n])),
      makeTensor('keep.axis', DataType.INT64, [1], BigInt64Array.from([1n])),
    );
    g.node.splice(g.node.indexOf(lm), 0, makeNode('Slice', [x, 'keep.start', 'keep.end', 'keep.axis'], ['keep.last']));
    lm.input[0] = 'keep.last';
    const d = mkdtempSync(join(tmpdir(), 'lobes-keep1-'));
    try {
      writeModel(join(d, 'model.onnx'), model);
      const e1 = await openCaptureEngine(d, { capture: ['final'], device: 'cpu' });
      const e2 = await openCaptureEngine(TINY, { capture: ['final'], device: 'cpu' });
      try {
        const b = padBatch([[1, 20, 30, 40, 50, 60], [1, 7, 8]], 0, 'right');
        expect(relErr((await e1.run(b)).get('final.hidden')!, (await e2.run(b)).get('final.hidden')!)).toBeLessThan(
          1e-6,
        );
      } finally {
        await e1.close();
        await e2.close();
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
