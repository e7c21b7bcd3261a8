/**
 * MatMulNBits with float zero points, made fast on the CPU at session creation.
 *
 * A GGUF block with a minimum (Q4_1, Q5_1, Q4_K, Q5_K: w = d·q + m per block) becomes, in
 * lobes' conversion, a MatMulNBits node whose zero points are floats: w = (q − z)·s with s = d
 * and z = −m/d. That is exact and is what every analysis reads (src/wanda/kernel.ts, ablation's
 * patcher). ONNX Runtime's CPU kernel has no fast path for float zero points, though: it
 * dequantizes the whole matrix on every run. On SmolLM2-135M-Instruct (Q4_1) one decoding step
 * took about 290 ms, and a bench of 20 such 576 × 1536 products took 37.5 ms against 1.8 ms with
 * integer zero points (bench/RESULTS.md, "MatMulNBits with float zero points").
 *
 * So the graph a CPU session runs is rewritten (the files on disk are not): each such node
 *
 *   Y = MatMulNBits(X, B, s, z_float)
 *
 * becomes, with the same codes B and scales s and integer zero points 0,
 *
 *   Y = MatMulNBits(X, B, s, 0) + (X · E) · C,     C[b, n] = −z[n, b] · s[n, b],
 *
 * where E [K, K/bs] sums each quantisation block of X (E[k, b] = 1 when ⌊k / bs⌋ = b) and C
 * [K/bs, N] holds the blocks' minima. Since (q − z)·s = q·s − z·s, this is the same product
 * up to float rounding (the order of the sums differs). C is computed here from the stored
 * scales and zero points (so a block whose scale an ablation set to 0 contributes exactly 0
 * through both terms) and travels inside the session's graph; E is shared by the nodes with
 * the same K and block size. Nodes with a bias, g_idx, K not a multiple of the block size or
 * float16 scales are left as they are, and so is every graph for CUDA and WebGPU.
 */
import { LobesError } from '../util/errors.js';
import { DataType, attrInt, makeNode, makeTensor, tensorBytes, type ModelProto, type NodeProto,
  type TensorProto } from '../onnx/index.js';

/** Above this many bytes of minima (C) the rewrite is skipped: the graph travels as one protobuf (2 GB at most). */
export const MAX_MINIMA_BYTES = 1.2e9;

export interface NbitsRewrite {
  /** The graph to run (the input graph when nothing was rewritten). */
  model: ModelProto;
  /** MatMulNBits nodes rewritten (0 also when the minima would exceed MAX_MINIMA_BYTES). */
  rewritten: number;
  /** Set when candidates were left on the slow path because their minima exceed MAX_MINIMA_BYTES. */
  tooLarge?: { nodes: number; bytes: number };
}

/** Float32 of an initializer's bytes (float32 data only; null otherwise). */
function f32(t: TensorProto, dir: string, file: string): Float32Array | null {
  if (t.dataType !== DataType.FLOAT) return null;
  const b = tensorBytes(t, dir, file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/**
 * Rewrite every MatMulNBits node with float32 zero points as above. `dir` is the folder the
 * graph's external data is relative to, `file` the graph's path (for messages).
 */
export function rewriteFloatZeroPoints(model: ModelProto, dir: string, file: string): NbitsRewrite {
  const g = model.graph;
  if (!g) return { model, rewritten: 0 };
  const inits = new Map(g.initializer.map((t) => [t.name ?? '', t]));
  // float32 scales and zero points, no bias or g_idx, whole blocks
  const candidates = g.node.filter((n) => {
    if (n.opType !== 'MatMulNBits' || n.domain !== 'com.microsoft' || !n.input[3] || n.input[4] || n.input[5])
      return false;
    const K = attrInt(n, 'K', 0);
    const bs = attrInt(n, 'block_size', 0);
    const bits = attrInt(n, 'bits', 4);
    return (bits === 4 || bits === 8) && K > 0 && bs > 0 && K % bs === 0 &&
      inits.get(n.input[2]!)?.dataType === DataType.FLOAT && inits.get(n.input[3])?.dataType === DataType.FLOAT;
  });
  if (candidates.length === 0) return { model, rewritten: 0 };
  const bytes = candidates.reduce(
    (a, n) => a + 4 * attrInt(n, 'N', 0) * (attrInt(n, 'K', 0) / attrInt(n, 'block_size', 1)),
    0,
  );
  if (bytes > MAX_MINIMA_BYTES) return { model, rewritten: 0, tooLarge: { nodes: candidates.length, bytes } };

  const added: TensorProto[] = [];
  const sums = new Map<string, string>(); // `${K}x${bs}` → the initializer E
  const taken = new Set([...g.node.flatMap((n) => [...n.input, ...n.output]), ...inits.keys()]);
  const fresh = (base: string) => {
    let name = base;
    for (let i = 1; taken.has(name); i++) name = `${base}_${i}`;
    taken.add(name);
    return name;
  };
  const replace = new Map<NodeProto, NodeProto[]>();
  for (const n of candidates) {
    const K = attrInt(n, 'K', 0);
    const N = attrInt(n, 'N', 0);
    const bs = attrInt(n, 'block_size', 0);
    const bits = attrInt(n, 'bits', 4);
    const nb = K / bs;
    const where = `MatMulNBits ${JSON.stringify(n.name ?? n.output[0])}`;
    const s = f32(inits.get(n.input[2]!)!, dir, file);
    const z = f32(inits.get(n.input[3]!)!, dir, file);
    if (!s || !z || s.length !== N * nb || z.length !== N * nb) {
      throw new LobesError(
        `${where}: scales (${s?.length}) or zero points (${z?.length}) do not hold N × K/block_size = ${N * nb} values`,
        { file },
      );
    }
    // C [nb, N]: C[b, n] = −z[n, b]·s[n, b]
    const C = new Float32Array(nb * N);
    for (let r = 0; r < N; r++) for (let b = 0; b < nb; b++) C[b * N + r] = -z[r * nb + b]! * s[r * nb + b]!;
    const cName = fresh(`${n.input[1]}_lobes_minima`);
    added.push(makeTensor(cName, DataType.FLOAT, [nb, N], C));
    // integer zero points, all 0: bits=4 packs two per byte along the blocks
    const zName = fresh(`${n.input[1]}_lobes_zero`);
    const zBytes = bits === 4 ? N * Math.ceil(nb / 2) : N * nb;
    added.push(makeTensor(zName, DataType.UINT8, [zBytes], new Uint8Array(zBytes)));
    const key = `${K}x${bs}`;
    let eName = sums.get(key);
    if (!eName) {
      eName = fresh(`lobes_block_sums_${key}`);
      const E = new Float32Array(K * nb);
      for (let k = 0; k < K; k++) E[k * nb + Math.floor(k / bs)] = 1;
      added.push(makeTensor(eName, DataType.FLOAT, [K, nb], E));
      sums.set(key, eName);
    }
    const y = n.output[0]!;
    const q = fresh(`${y}_lobes_codes`);
    const xs = fresh(`${y}_lobes_block_sums`);
    const m = fresh(`${y}_lobes_minima`);
    const base = n.name ?? y;
    const nodes = [
      { ...n, input: [n.input[0]!, n.input[1]!, n.input[2]!, zName], output: [q] },
      makeNode('MatMul', [n.input[0]!, eName], [xs], {}, undefined, `${base}/lobes_block_sums`),
      makeNode('MatMul', [xs, cName], [m], {}, undefined, `${base}/lobes_minima`),
      makeNode('Add', [q, m], [y], {}, undefined, `${base}/lobes_add`),
    ];
    replace.set(n, nodes);
  }
  const node = g.node.flatMap((n) => replace.get(n) ?? [n]);
  // Drop the float zero points no node reads any more (the session then never loads them).
  const read = new Set(node.flatMap((n) => n.input));
  const dropped = new Set(candidates.map((n) => n.input[3]!).filter((z) => !read.has(z)));
  const initializer = [...g.initializer.filter((t) => !dropped.has(t.name ?? '')), ...added];
  return { model: { ...model, graph: { ...g, node, initializer } }, rewritten: candidates.length };
}
