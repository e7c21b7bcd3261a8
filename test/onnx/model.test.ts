import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, rmSync, mkdirSync, openSync, readSync,
  closeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import * as ort from 'onnxruntime-node';
import {
  DataType,
  decodeModel,
  encodeModel,
  loadModel,
  makeGraph,
  makeModel,
  makeNode,
  makeTensor,
  makeValueInfo,
  readInitializerBytes,
  readInitializerFloat32,
  writeModel,
  attrFloat,
  type ModelProto,
} from '../../src/onnx/index.js';
import { LobesError } from '../../src/util/errors.js';
import { halfArrayToFloat } from '../../src/util/half.js';

const GENAI = resolve(import.meta.dirname, '../../../shared/models/ort-genai-tiny-llama-fp16');
const hasGenai = existsSync(join(GENAI, 'model.onnx'));
if (!hasGenai) console.log(`skipping genai fixture tests: ${GENAI} is absent`);

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'lobes-onnx-'));
}

function oneLine(fn: () => unknown): LobesError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(LobesError);
    expect((e as Error).message).not.toMatch(/\n/);
    return e as LobesError;
  }
  throw new Error('expected a LobesError');
}

describe.skipIf(!hasGenai)('genai fixture graph', () => {
  it('decode → encode is byte-identical', () => {
    const bytes = readFileSync(join(GENAI, 'model.onnx'));
    const m = decodeModel(bytes);
    const out = encodeModel(m);
    expect(out.length).toBe(bytes.length);
    expect(Buffer.compare(Buffer.from(out), bytes)).toBe(0);
  });

  it('raw data is a view into the input and external data is parsed', () => {
    const m = loadModel(GENAI);
    expect(m.external.size).toBeGreaterThan(0);
    for (const [name, ref] of m.external) {
      expect(ref.location).toBe('model.onnx.data');
      // Independent read of the same range.
      const fd = openSync(join(GENAI, 'model.onnx.data'), 'r');
      const want = Buffer.alloc(ref.length);
      readSync(fd, want, 0, ref.length, ref.offset);
      closeSync(fd);
      const got = readInitializerBytes(m, name);
      expect(Buffer.compare(Buffer.from(got), want)).toBe(0);
    }
    const inline = m.model.graph!.node.flatMap((n) => n.attribute).find((a) => a.t?.rawData && a.t.rawData.length > 0);
    expect(inline).toBeDefined();
    expect(inline!.t!.rawData!.buffer).toBe(m.bytes.buffer);
  });

  it('an edit round-trips and keeps unknown fields', () => {
    const m = loadModel(GENAI);
    const edited: ModelProto = { ...m.model, graph: { ...m.model.graph!, output: m.model.graph!.output.slice(0, 1) } };
    const back = decodeModel(encodeModel(edited));
    expect(back.graph!.output.map((o) => o.name)).toEqual([m.model.graph!.output[0]!.name]);
    expect(back.graph!.node.length).toBe(m.model.graph!.node.length);
    expect(encodeModel(back)).toEqual(encodeModel(edited));
  });

  it('truncated and corrupt files give one-line errors naming the file', () => {
    const bytes = readFileSync(join(GENAI, 'model.onnx'));
    const d = tmp();
    try {
      const f = join(d, 'model.onnx');
      writeFileSync(f, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
      const e = oneLine(() => loadModel(f));
      expect(e.message).toContain(f);
      expect(e.message).toMatch(/truncated|runs past the end/);
      const bad = Buffer.from(bytes);
      bad.fill(0xff, 100, 140);
      writeFileSync(f, bad);
      expect(oneLine(() => loadModel(f)).message).toContain(f);
      writeFileSync(f, 'this is not an onnx model at all\n');
      expect(oneLine(() => loadModel(f)).message).toContain(f);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('rejects external data locations outside the model folder', () => {
    const m = loadModel(GENAI);
    for (const loc of ['../secret.bin', '/etc/passwd', 'sub/../../x.data']) {
      const d = tmp();
      try {
        const model = structuredClone(m.model);
        const t = model.graph!.initializer.find((x) => x.dataLocation === 1)!;
        for (const e of t.externalData!) if (e.key === 'location') e.value = loc;
        writeModel(join(d, 'model.onnx'), model);
        const err = oneLine(() => loadModel(d));
        expect(err.message).toContain(join(d, 'model.onnx'));
        expect(err.message).toContain(`initializer ${t.name}`);
        expect(err.message).toContain('path traversal');
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    }
  });

  it('a missing or short external data file is named', () => {
    const d = tmp();
    try {
      writeFileSync(join(d, 'model.onnx'), readFileSync(join(GENAI, 'model.onnx')));
      expect(oneLine(() => loadModel(d)).message).toMatch(/model\.onnx\.data is missing/);
      writeFileSync(join(d, 'model.onnx.data'), readFileSync(join(GENAI, 'model.onnx.data')).subarray(0, 1000));
      expect(oneLine(() => loadModel(d)).message).toMatch(/runs past the end of model\.onnx\.data/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('reads fp16 initializers as float32', () => {
    const m = loadModel(GENAI);
    const [name, ref] = [...m.external].sort((a, b) => a[1].length - b[1].length)[0]!;
    const raw = readInitializerBytes(m, name);
    const want = halfArrayToFloat(new Uint16Array(raw.slice().buffer));
    expect(ref.length).toBe(raw.length);
    expect(readInitializerFloat32(m, name)).toEqual(want);
  });
});

describe('builders', () => {
  it('writes a model that onnxruntime runs, with exact results', async () => {
    const W = new Float32Array(12).map((_, i) => i - 5.5);
    const graph = makeGraph(
      'g',
      [
        makeNode('MatMul', ['x', 'W'], ['y']),
        makeNode('LeakyRelu', ['y'], ['z'], { alpha: attrFloat(0.5) }),
        makeNode('ReduceSum', ['z', 'axes'], ['s'], { keepdims: 0 }),
      ],
      [makeValueInfo('x', DataType.FLOAT, ['batch', 4])],
      [makeValueInfo('s', DataType.FLOAT, ['batch'])],
      [makeTensor('W', DataType.FLOAT, [4, 3], W), makeTensor('axes', DataType.INT64, [1], new BigInt64Array([1n]))],
    );
    const d = tmp();
    try {
      const f = join(d, 'model.onnx');
      writeModel(f, makeModel(graph, { opsets: { '': 17 } }));
      const again = loadModel(f);
      expect(Array.from(readInitializerFloat32(again, 'W'))).toEqual(Array.from(W));
      const sess = await ort.InferenceSession.create(f);
      const x = new Float32Array([1, 2, 3, 4, -1, 0, 0.5, 2]);
      const out = await sess.run({ x: new ort.Tensor('float32', x, [2, 4]) });
      const s = out.s!.data as Float32Array;
      for (let b = 0; b < 2; b++) {
        let want = 0;
        for (let j = 0; j < 3; j++) {
          let y = 0;
          for (let k = 0; k < 4; k++) y += x[b * 4 + k]! * W[k * 3 + j]!;
          want += y > 0 ? y : 0.5 * y;
        }
        expect(s[b]).toBeCloseTo(want, 4);
      }
      await sess.release();
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('int64 attributes beyond 2^53 and negative values round-trip exactly', () => {
    const n = makeNode('Foo', ['a'], ['b'], { big: 9223372036854775807n, neg: -3,
      list: [-1, 2, 9223372036854775807n] as any }, 'x.y');
    const g = makeGraph('g', [n], [makeValueInfo('a', DataType.FLOAT, [null, 'n', 3])], [
      makeValueInfo('b', DataType.FLOAT, null),
    ]);
    const m = makeModel(g, { opsets: { '': 17, 'x.y': 1 } });
    const back = decodeModel(encodeModel(m));
    const a = back.graph!.node[0]!.attribute;
    expect(a[0]!.i).toBe(9223372036854775807n);
    expect(a[1]!.i).toBe(-3);
    expect(a[2]!.ints).toEqual([-1, 2, 9223372036854775807n]);
    expect(back.graph!.node[0]!.domain).toBe('x.y');
    expect(back.graph!.input[0]!.type!.tensorType!.shape!.dim).toEqual([{}, { dimParam: 'n' }, { dimValue: 3 }]);
    expect(encodeModel(back)).toEqual(encodeModel(m));
  });

  it('fields lobes does not model are kept verbatim and in field order', () => {
    const g = makeGraph('g', [makeNode('Relu', ['a'], ['b'])], [makeValueInfo('a', DataType.FLOAT, [1])], [
      makeValueInfo('b', DataType.FLOAT, [1]),
    ]);
    const m = makeModel(g);
    // NodeProto field 8 (overload, a string) and ModelProto field 20 (training_info, a message) are not modelled.
    m.graph!.node[0]!.unknown = [{ field: 8, raw: Uint8Array.from([0x42, 3, 0x61, 0x62, 0x63]) }];
    m.unknown = [{ field: 20, raw: Uint8Array.from([0xa2, 0x01, 0]) }];
    const bytes = encodeModel(m);
    const back = decodeModel(bytes);
    expect(back.graph!.node[0]!.unknown).toEqual([{ field: 8, raw: Uint8Array.from([0x42, 3, 0x61, 0x62, 0x63]) }]);
    expect(back.unknown!.map((u) => u.field)).toEqual([20]);
    expect(Buffer.compare(Buffer.from(encodeModel(back)), Buffer.from(bytes))).toBe(0);
    // Field 8 of a node sits after domain (7) and before nothing else: order by field number.
    const node = encodeModel({ ...m, graph: { ...m.graph!, node: [{ ...m.graph!.node[0]!, domain: 'x' }] } });
    const i7 = Buffer.from(node).indexOf(Buffer.from([0x3a, 1, 0x78]));
    const i8 = Buffer.from(node).indexOf(Buffer.from([0x42, 3, 0x61]));
    expect(i7).toBeGreaterThan(0);
    expect(i8).toBe(i7 + 3);
  });

  it('loadModel on a folder without a graph names the folder', () => {
    const d = tmp();
    try {
      mkdirSync(join(d, 'x'));
      expect(oneLine(() => loadModel(d)).message).toContain(d);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
