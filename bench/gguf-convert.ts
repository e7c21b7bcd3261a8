/**
 * GGUF → ONNX conversion (src/convert): time and peak memory.
 *
 *   smollm2  the real SmolLM2-135M-Instruct Q4_1 GGUF (../shared) converted with each --weights
 *            (q4, fp16, fp32; explicit layout, fp32 compute), each in its own child process.
 *   big      a Llama-3.1-8B-shaped GGUF written here with lobes' GGUF writer: 32 layers, hidden
 *            4096, intermediate 14336, 32 / 8 heads, vocab 128256 (the Llama-3.1 tokenizer),
 *            llama3 rope_freqs, random blocks in Ollama's Q4_K_M mix (Q4_K everywhere, Q6_K for
 *            output and for attn_v / ffn_down of the first and last eighth of the layers and of
 *            every third layer between), about 4.9 GB. Converted with --weights q4 (the blocks
 *            kept as MatMulNBits: the natural mode for big models) in a child process.
 *
 * Throughput is GGUF bytes / conversion wall seconds. The baselines, measured in the same run
 * on the same file once it is in the page cache: `cat FILE > /dev/null` (reading it) and
 * `cat FILE > COPY && sync COPY` (reading it and writing as many bytes durably, which any
 * converter that writes its output must also do; the conversion fsyncs its output too). The
 * ratio is conversion throughput / baseline throughput = baseline seconds / conversion
 * seconds; the target is ≥ 0.5 against the copy, with peak RSS ≤ 2 GB.
 *
 *   npx tsx bench/gguf-convert.ts [smollm2] [big] [--layers N] [--dir PARENT] [--layout explicit|genai] [--keep] [--gguf FILE] [--reps N]
 *
 * --reps N (big): N pairs of copy + sync and conversion, alternating, each after a global `sync`;
 * the table gives the medians, and each pair's ratio is printed (a single copy's time varies
 * several-fold with the write-back the kernel still has pending).
 *
 * --gguf FILE: the 8B-shaped GGUF is written to FILE (when it does not exist yet) and kept, so
 * that later runs reuse it instead of generating 4.9 GB again; delete it yourself afterwards.
 *
 * Check `df -h` first: big needs about 4.9 GB (GGUF) + 4.9 GB (copy, removed at once) + the
 * converted folder (about 7 GB: fp32 embeddings) free; everything is deleted at the end unless --keep.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, statfsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GgufWriter, type GgufTensorSpec } from '../src/formats/gguf-write.js';
import { GgmlType, ggmlType } from '../src/formats/ggml.js';
import type { GgufValue } from '../src/formats/gguf.js';
import { floatToHalf } from '../src/util/half.js';
import { convertGguf, type WeightsMode } from '../src/convert/convert.js';
import { byteLevelMetadataFromHf, LLAMA3_DIR, SMOL_GGUF } from '../test/convert/gguf-fixtures.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { layers: { type: 'string' }, dir: { type: 'string' }, gguf: { type: 'string' }, layout: { type: 'string' },
    keep: { type: 'boolean' }, child: { type: 'string' }, reps: { type: 'string' } },
});

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');

/** Child: one conversion, then its timings and peak RSS as one JSON line. */
async function child(arg: string): Promise<void> {
  const a = JSON.parse(arg) as { file: string; out: string; weights: WeightsMode; layout: 'explicit' | 'genai' };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  // Wall seconds and bytes per kind of tensor (between consecutive progress calls).
  const phases: Record<string, { s: number; bytes: number }> = {};
  let last = t0;
  let lastDone = 0;
  const kind = (
    name: string,
  ) => (/embed|Gather|embed_tokens/i.test(name)
    ? 'embeddings'
    : /NBits|_Q\d|weight_Q/.test(name)
    ? 'MatMulNBits'
    : /lm_head|MatMul/.test(name)
    ? 'float MatMul (lm_head)'
    : 'other');
  const r = await convertGguf(a.file, a.out, {
    weights: a.weights,
    layout: a.layout,
    onProgress: (done, _total, tensor) => {
      const now = performance.now();
      const k = kind(tensor);
      phases[k] ??= { s: 0, bytes: 0 };
      phases[k].s += (now - last) / 1000;
      phases[k].bytes += done - lastDone;
      last = now;
      lastDone = done;
    },
  });
  const wall = (performance.now() - t0) / 1000;
  phases['graph, config, fsync, rename'] = { s: (performance.now() - last) / 1000, bytes: 0 };
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(
    JSON.stringify({ wall_s: wall, cpu_s: (cpu.user + cpu.system) / 1e6, user_s: cpu.user / 1e6,
      sys_s: cpu.system / 1e6, peak_rss_mb: process.resourceUsage().maxRSS / 1024,
      out_bytes: r.modelBytes + r.dataBytes, storage: r.storage, requantized: r.requantized.length, phases }) + '\n',
  );
}

function runChild(
  a: object,
): { wall_s: number; cpu_s: number; user_s: number; sys_s: number; peak_rss_mb: number; out_bytes: number;
  storage: Record<string, number>; requantized: number; phases: Record<string, { s: number; bytes: number }> }
{
  const r = spawnSync(process.execPath, ['--import', 'tsx', SELF, '--child', JSON.stringify(a)], { cwd: ROOT,
    encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`conversion failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

/** Seconds of a shell command (best of `reps`). */
function timeSh(cmd: string, reps = 1): number {
  let best = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const r = spawnSync('sh', ['-c', cmd], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} failed`);
    best = Math.min(best, (performance.now() - t0) / 1000);
  }
  return best;
}

const gb = (b: number) => (b / 1e9).toFixed(2);
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function smollm2(dir: string, layout: 'explicit' | 'genai'): void {
  if (!existsSync(SMOL_GGUF)) {
    console.log(`smollm2: skipped (${SMOL_GGUF} missing)`);
    return;
  }
  const bytes = statSync(SMOL_GGUF).size;
  timeSh(`cat ${sh(SMOL_GGUF)} > /dev/null`);
  const cat = timeSh(`cat ${sh(SMOL_GGUF)} > /dev/null`, 3);
  console.log(`smollm2: ${SMOL_GGUF} (${(bytes / 1e6).toFixed(1)} MB), cat from page cache ${cat.toFixed(3)} s`);
  console.log('| --weights | wall s | CPU s | peak RSS MB | output MB | storage |');
  console.log('|---|---|---|---|---|---|');
  for (const weights of ['q4', 'fp16', 'fp32'] as const) {
    const out = path.join(dir, `smollm2-${weights}`);
    const r = runChild({ file: SMOL_GGUF, out, weights, layout });
    console.log(
      `| ${weights} | ${r.wall_s.toFixed(2)} | ${r.cpu_s.toFixed(2)} | ${r.peak_rss_mb.toFixed(0)} | ${
        (r.out_bytes / 1e6).toFixed(1)
      } | ${Object.entries(r.storage).map(([k, n]) => `${n} ${k}`).join(', ')} |`,
    );
    rmSync(out, { recursive: true, force: true });
  }
}

/** xorshift32 bytes. */
function fillRandom(u32: Uint32Array, state: { x: number }): void {
  let x = state.x;
  for (let i = 0; i < u32.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    u32[i] = x >>> 0;
  }
  state.x = x;
}

function llama3Factors(theta: number, d: number): Float32Array {
  const out = new Float32Array(d / 2);
  for (let i = 0; i < d / 2; i++) {
    const wave = (2 * Math.PI) * theta ** ((2 * i) / d);
    if (wave < 8192 / 4) out[i] = 1;
    else if (wave > 8192) out[i] = 8;
    else {
      const s = (8192 / wave - 1) / 3;
      out[i] = 1 / ((1 - s) / 8 + s);
    }
  }
  return out;
}

/** Write the 8B-shaped Q4_K_M GGUF; returns its size. */
function writeBig(file: string, layers: number): number {
  const H = 4096, I = 14336, heads = 32, kv = 8, hd = 128, V = 128256;
  const more = (i: number) => i < layers / 8 || i >= (7 * layers) / 8 || (i - Math.floor(layers / 8)) % 3 === 2;
  const tensors: GgufTensorSpec[] = [{ name: 'token_embd.weight', dims: [H, V], type: GgmlType.Q4_K }];
  for (let i = 0; i < layers; i++) {
    const b = `blk.${i}`;
    tensors.push(
      { name: `${b}.attn_norm.weight`, dims: [H], type: GgmlType.F32 },
      { name: `${b}.attn_q.weight`, dims: [H, heads * hd], type: GgmlType.Q4_K },
      { name: `${b}.attn_k.weight`, dims: [H, kv * hd], type: GgmlType.Q4_K },
      { name: `${b}.attn_v.weight`, dims: [H, kv * hd], type: more(i) ? GgmlType.Q6_K : GgmlType.Q4_K },
      { name: `${b}.attn_output.weight`, dims: [heads * hd, H], type: GgmlType.Q4_K },
      { name: `${b}.ffn_norm.weight`, dims: [H], type: GgmlType.F32 },
      { name: `${b}.ffn_gate.weight`, dims: [H, I], type: GgmlType.Q4_K },
      { name: `${b}.ffn_up.weight`, dims: [H, I], type: GgmlType.Q4_K },
      { name: `${b}.ffn_down.weight`, dims: [I, H], type: more(i) ? GgmlType.Q6_K : GgmlType.Q4_K },
    );
  }
  tensors.push({ name: 'output_norm.weight', dims: [H], type: GgmlType.F32 }, { name: 'output.weight', dims: [H, V],
    type: GgmlType.Q6_K }, { name: 'rope_freqs.weight', dims: [hd / 2], type: GgmlType.F32 });

  const meta: [string, GgufValue][] = [];
  const u32 = (k: string, v: number) => meta.push([k, { type: 'uint32', value: v }]);
  meta.push(['general.architecture', { type: 'string', value: 'llama' }], ['general.name', { type: 'string',
    value: 'lobes bench 8B-shaped Q4_K_M (random blocks)' }]);
  u32('llama.block_count', layers);
  u32('llama.context_length', 131072);
  u32('llama.embedding_length', H);
  u32('llama.feed_forward_length', I);
  u32('llama.attention.head_count', heads);
  u32('llama.attention.head_count_kv', kv);
  u32('llama.rope.dimension_count', hd);
  u32('llama.vocab_size', V);
  u32('general.file_type', 15);
  meta.push(['llama.rope.freq_base', { type: 'float32', value: 500000 }], ['llama.attention.layer_norm_rms_epsilon', {
    type: 'float32',
    value: 1e-5,
  }]);
  for (const [k, v] of byteLevelMetadataFromHf(LLAMA3_DIR, 'llama-bpe', 131072)) {
    if (!k.startsWith('tokenizer.')) continue;
    if (typeof v === 'string') meta.push([k, { type: 'string', value: v }]);
    else if (typeof v === 'boolean') meta.push([k, { type: 'bool', value: v }]);
    else if (typeof v === 'number') meta.push([k, { type: 'uint32', value: v }]);
    else if (Array.isArray(v)) meta.push([k, { type: 'array', value: { itemType: 'string', items: v as string[] } }]);
    else if (v instanceof Int32Array) meta.push([k, { type: 'array', value: { itemType: 'int32', items: v } }]);
  }

  const w = GgufWriter.create(file, meta, tensors);
  const state = { x: 0x9e3779b9 };
  const h = (v: number) => floatToHalf(v);
  try {
    for (const t of tensors) {
      const ty = ggmlType(t.type)!;
      const total = (t.dims.reduce((a, b) => a * b, 1) / ty.blockSize) * ty.typeSize;
      if (t.type === GgmlType.F32) {
        w.write(t.name,
          t.name === 'rope_freqs.weight' ? llama3Factors(500000, 128) : new Float32Array(t.dims[0]!).fill(1));
        continue;
      }
      const chunkBlocks = Math.floor((16 << 20) / ty.typeSize);
      for (let done = 0; done < total;) {
        const n = Math.min(chunkBlocks * ty.typeSize, total - done);
        const buf = new Uint8Array(Math.ceil(n / 4) * 4);
        fillRandom(new Uint32Array(buf.buffer), state);
        const v = new DataView(buf.buffer);
        for (let o = 0; o < n; o += ty.typeSize) {
          // Sane fp16 scales (random bytes could be NaN or Inf).
          if (t.type === GgmlType.Q6_K) v.setUint16(o + 208, h(0.0004), true);
          else {
            v.setUint16(o, h(0.0003), true);
            v.setUint16(o + 2, h(0.0002), true);
          }
        }
        w.write(t.name, buf.subarray(0, n));
        done += n;
      }
    }
    w.finish();
  } catch (e) {
    w.abort();
    throw e;
  }
  return statSync(file).size;
}

function big(dir: string, layers: number, layout: 'explicit' | 'genai'): void {
  const free = Number(statfsSync(dir).bavail) * Number(statfsSync(dir).bsize);
  const need = (layers / 32) * 17e9;
  if (free < need) throw new Error(`big: ${gb(free)} GB free in ${dir}, about ${gb(need)} GB needed`);
  const reuse = values.gguf ? path.resolve(values.gguf) : null;
  const file = reuse ?? path.join(dir, 'llama-8b-shaped-Q4_K_M.gguf');
  const t0 = performance.now();
  let bytes: number;
  if (reuse && existsSync(reuse)) {
    bytes = statSync(reuse).size;
    console.log(`big: reusing ${file} (${gb(bytes)} GB)`);
  } else {
    bytes = writeBig(file, layers);
    console.log(
      `big: wrote ${file} (${gb(bytes)} GB, ${layers} layers) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
  try {
    timeSh(`cat ${sh(file)} > /dev/null`);
    const catRead = timeSh(`cat ${sh(file)} > /dev/null`, 2);
    const copy = path.join(dir, 'copy.gguf');
    const out = path.join(dir, 'converted');
    const reps = Math.max(1, Number(values.reps ?? 1));
    // copy and conversion alternate, each after a global sync (no write-back left over from the
    // step before) and with the GGUF back in the page cache; each pair gives one ratio
    const pairs: { copy: number; conv: number; r: ReturnType<typeof runChild> }[] = [];
    for (let rep = 0; rep < reps; rep++) {
      timeSh('sync');
      const catCopy = timeSh(`cat ${sh(file)} > ${sh(copy)} && sync ${sh(copy)}`);
      rmSync(copy, { force: true });
      timeSh(`cat ${sh(file)} > /dev/null`); // back into the page cache
      timeSh('sync');
      rmSync(out, { recursive: true, force: true });
      const r = runChild({ file, out, weights: 'q4', layout });
      pairs.push({ copy: catCopy, conv: r.wall_s, r });
      if (reps > 1)
        console.log(
          `big: pair ${rep + 1}: copy + sync ${catCopy.toFixed(2)} s, conversion ${r.wall_s.toFixed(2)} s (CPU ${
            r.cpu_s.toFixed(1)
          } s), conversion ÷ copy ${(r.wall_s / catCopy).toFixed(2)}×`,
        );
    }
    const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)]!;
    const conv = med(pairs.map((p) => p.conv));
    const catCopy = med(pairs.map((p) => p.copy));
    const r = pairs.find((p) => p.conv === conv)!.r;
    const row = (name: string, s: number) =>
      `| ${name} | ${s.toFixed(2)} | ${gb(bytes / s)} | ${(s / conv).toFixed(2)} |`;
    console.log(
      `big: converted to ${out} (${gb(r.out_bytes)} GB; ${
        Object.entries(r.storage).map(([k, n]) => `${n} ${k}`).join(', ')
      }; ${r.requantized} re-quantized)`,
    );
    if (reps > 1)
      console.log(
        `big: medians of ${reps} pairs; median of the pairs' ratios ${
          med(pairs.map((p) => p.conv / p.copy)).toFixed(2)
        }×`,
      );
    console.log('| step | seconds | GB/s of GGUF | conversion ratio (baseline s / conversion s) |');
    console.log('|---|---|---|---|');
    console.log(row('cat FILE > /dev/null (page cache)', catRead));
    console.log(row('cat FILE > COPY && sync COPY', catCopy));
    console.log(`| lobes convert --weights q4 --layout ${layout} | ${conv.toFixed(2)} | ${gb(bytes / conv)} | 1 |`);
    console.log(
      `big: conversion CPU ${r.cpu_s.toFixed(1)} s (user ${r.user_s.toFixed(1)}, sys ${r.sys_s.toFixed(1)}), peak RSS ${
        r.peak_rss_mb.toFixed(0)
      } MB; ratio vs copy ${(catCopy / conv).toFixed(2)}, vs read ${(catRead / conv).toFixed(2)}`,
    );
    console.log(
      `big: wall time by what was being written: ${
        Object.entries(r.phases).map(([k, v]) => `${k} ${v.s.toFixed(1)} s${v.bytes ? ` (${gb(v.bytes)} GB)` : ''}`)
          .join('; ')
      }`,
    );
    if (!values.keep) rmSync(out, { recursive: true, force: true });
  } finally {
    if (!values.keep && !reuse) rmSync(file, { force: true });
  }
}

async function main(): Promise<void> {
  if (values.child) return child(values.child);
  const layout = (values.layout ?? 'explicit') as 'explicit' | 'genai';
  const parent = values.dir ?? os.tmpdir();
  const dir = mkdtempSync(path.join(parent, 'lobes-bench-gguf-'));
  const what = positionals.length ? positionals : ['smollm2', 'big'];
  console.log(
    `machine: ${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}, ${
      gb(os.totalmem())
    } GB memory (${gb(os.freemem())} free)`,
  );
  try {
    if (what.includes('smollm2')) smollm2(dir, layout);
    if (what.includes('big')) big(dir, Number(values.layers ?? 32), layout);
  } finally {
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
