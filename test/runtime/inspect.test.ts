import { describe, it, expect } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GENAI, hasGenai, cli } from './helpers.js';
import { DataType, loadModel, makeGraph, makeModel, makeNode, makeTensor, makeValueInfo, writeModel,
  type ModelProto } from '../../src/onnx/index.js';

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'lobes-inspect-'));
}

/** Rename every node and every intermediate value (not graph inputs/outputs/initializers) to opaque names. */
function renameAll(model: ModelProto): ModelProto {
  const m = structuredClone(model);
  const g = m.graph!;
  const keep = new Set<string>([...g.input, ...g.output].map((v) => v.name!).concat(g.initializer.map((t) => t.name!)));
  const map = new Map<string, string>();
  let k = 0;
  const ren = (v: string) => {
    if (!v || keep.has(v)) return v;
    let n = map.get(v);
    if (!n) map.set(v, n = `v${(k++ * 7919) % 100003}_${k}`);
    return n;
  };
  g.node.forEach((n, i) => {
    n.name = `node_${(i * 31) % 997}_${i}`;
    n.input = n.input.map(ren);
    n.output = n.output.map(ren);
  });
  g.valueInfo = g.valueInfo.map((v) => ({ ...v, name: ren(v.name!) }));
  return m;
}

describe.skipIf(!hasGenai)('lobes inspect on the genai fixture', () => {
  it('prints architecture, capture points and providers', async () => {
    const r = await cli(['inspect', GENAI]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/layers\s+2/);
    expect(r.out).toMatch(/hidden\s+16/);
    expect(r.out).toMatch(/intermed\.\s+64/);
    expect(r.out).toMatch(/vocab\s+32000/);
    expect(r.out).toMatch(/dtype\s+fp16/);
    expect(r.out).toMatch(/layers\.1\.mlp\.down_in +\[batch, 64\]/);
    expect(r.out).toMatch(/layers\.1\.resid_out\.mean +\[batch, 16\]/);
    expect(r.out).toMatch(/cpu\s+available/);
    const j = JSON.parse((await cli(['inspect', GENAI, '--json'])).out);
    expect(j.arch).toEqual({ family: 'llama', layers: 2, hidden: 16, intermediate: 64, heads: 1, kvHeads: 1,
      vocab: 32000, dtype: 'fp16', quantization: null });
    expect(j.points.map((p: any) => p.name)).toEqual([
      'final.hidden',
      'final.mean',
      'layers.0.mlp.in',
      'layers.0.mlp.down_in',
      'layers.0.resid_out',
      'layers.0.resid_out.mean',
      'layers.1.mlp.in',
      'layers.1.mlp.down_in',
      'layers.1.resid_out',
      'layers.1.resid_out.mean',
    ]);
    const down1 = j.points[7].projections[0];
    expect(down1).toMatchObject({ proj: 'down_proj', op: 'MatMul', layout: 'in_out', dIn: 64, dOut: 16 });
    // The weight named is the one the exporter stored for layer 1's down projection.
    const m = loadModel(GENAI);
    expect(m.initializers.get(down1.weight)!.dims).toEqual([64, 16]);
    expect(down1.weight).toContain('layers.1.mlp.down_proj');
  });

  it('renaming every node and intermediate value leaves inspect --json unchanged', async () => {
    const d = tmp();
    try {
      const m = loadModel(GENAI);
      const renamed = renameAll(m.model);
      writeModel(join(d, 'model.onnx'), renamed);
      symlinkSync(join(GENAI, 'model.onnx.data'), join(d, 'model.onnx.data'));
      copyFileSync(join(GENAI, 'genai_config.json'), join(d, 'genai_config.json'));
      // The renamed graph really is different, and names differ.
      const bytesA = readFileSync(join(GENAI, 'model.onnx'));
      const bytesB = readFileSync(join(d, 'model.onnx'));
      expect(Buffer.compare(bytesA, bytesB)).not.toBe(0);
      expect(bytesB.includes(Buffer.from('/model/layers.0/mlp/Mul/output_0'))).toBe(false);
      const a = await cli(['inspect', GENAI, '--json']);
      const b = await cli(['inspect', d, '--json']);
      expect(b.code).toBe(0);
      expect(b.out).toBe(a.out);
      // Without the config file, the architecture comes from the graph alone: same result.
      rmSync(join(d, 'genai_config.json'));
      const c = JSON.parse((await cli(['inspect', d, '--json'])).out);
      expect({ ...c.arch, family: 'llama' }).toEqual(JSON.parse(a.out).arch);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a graph with a missing part of the pattern says which part', async () => {
    const d = tmp();
    try {
      const m = loadModel(GENAI);
      const model = structuredClone(m.model);
      // Replace every Sigmoid by Tanh: no SiLU gate any more.
      for (const n of model.graph!.node) if (n.opType === 'Sigmoid') n.opType = 'Tanh';
      writeModel(join(d, 'model.onnx'), model);
      symlinkSync(join(GENAI, 'model.onnx.data'), join(d, 'model.onnx.data'));
      const r = await cli(['inspect', d]);
      expect(r.code).not.toBe(0);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toContain(join(d, 'model.onnx'));
      expect(r.err).toMatch(/no gated MLP found/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('external data pointing outside the folder is refused by inspect', async () => {
    const d = tmp();
    try {
      const model = structuredClone(loadModel(GENAI).model);
      for (const t of model.graph!.initializer)
        for (const e of t.externalData ?? []) if (e.key === 'location') e.value = '../../etc/model.onnx.data';
      writeModel(join(d, 'model.onnx'), model);
      const r = await cli(['inspect', d]);
      expect(r.code).toBe(1);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toMatch(/path traversal/);
      expect(r.err).toContain(join(d, 'model.onnx'));
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a truncated .onnx file is a one-line error naming the file', async () => {
    const d = tmp();
    try {
      writeFileSync(join(d, 'model.onnx'), readFileSync(join(GENAI, 'model.onnx')).subarray(0, 20000));
      const r = await cli(['inspect', d]);
      expect(r.code).toBe(1);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toMatch(/lobes inspect: .*model\.onnx: not a valid ONNX model: .*truncated|runs past the end/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('lobes inspect on graphs that are not Llama-class', () => {
  it('a tiny Add graph: one-line error naming the file and the missing part', async () => {
    const d = tmp();
    try {
      const g = makeGraph('add', [makeNode('Add', ['a', 'b'], ['c'])], [makeValueInfo('a', DataType.FLOAT, [2]),
        makeValueInfo('b', DataType.FLOAT, [2])], [makeValueInfo('c', DataType.FLOAT, [2])]);
      writeModel(join(d, 'model.onnx'), makeModel(g));
      const r = await cli(['inspect', d]);
      expect(r.code).toBe(1);
      expect(r.out).toBe('');
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).toContain(join(d, 'model.onnx'));
      expect(r.err).toMatch(/unsupported graph: no projections/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a MatMul-only graph names the missing MLP', async () => {
    const d = tmp();
    try {
      const g = makeGraph(
        'mm',
        [makeNode('MatMul', ['x', 'W'], ['y'])],
        [makeValueInfo('x', DataType.FLOAT, ['b', 4])],
        [makeValueInfo('y', DataType.FLOAT, ['b', 3])],
        [makeTensor('W', DataType.FLOAT, [4, 3], new Float32Array(12))],
      );
      writeModel(join(d, 'model.onnx'), makeModel(g));
      const r = await cli(['inspect', join(d, 'model.onnx')]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/no gated MLP found/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a folder without a model is named', async () => {
    const d = tmp();
    try {
      const r = await cli(['inspect', d]);
      expect(r.code).toBe(1);
      expect(r.err).toContain(d);
      expect(r.err).toMatch(/no \.onnx file/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
