/**
 * Inputs checked before work starts, through the command line: the model's context length,
 * label names that collide with object internals, duplicate tensors across weight files,
 * hints that name only flags the command has, and a model whose graph is not what its folder
 * says (RoPE base, scaling, norm epsilon, heads).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureModelFromSpec, GENERATED_MODELS, writeLlamaOnnx, seededLlamaSource } from '../../src/models/index.js';
import { writeGguf } from '../../src/formats/gguf-write.js';
import type { GgufValue } from '../../src/formats/gguf.js';
import { GENAI, TINY, lobes, writeJsonl, writeSt, values } from './helpers.js';

const HAVE = existsSync(path.join(TINY, 'model.onnx'));
const HAVE_GENAI = existsSync(path.join(GENAI, 'model.onnx'));
if (!HAVE_GENAI) console.log(`skipping the onnxruntime-genai checks: ${GENAI} is missing`);

/** Words of the tiny model's vocabulary-friendly corpus: short lowercase words. */
const WORDS = ['help', 'friend', 'team', 'listen', 'calm', 'plan', 'share', 'idea', 'work', 'talk'];
const text = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => WORDS[(i * 7 + seed) % WORDS.length]).join(' ');

describe.skipIf(!HAVE)('inputs are checked before work starts', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-inputs-'));
    process.env.LOBES_HASH_CACHE = path.join(root, 'hash-cache.json');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a text longer than the context (config.json max_position_embeddings) is refused, naming it and --max-tokens; --max-tokens truncates it', async () => {
    const data = path.join(root, 'long.jsonl');
    const rows = Array.from({ length: 8 }, (_, i) => ({ id: `s${i}`, text: text(12, i), label: i % 2 ? 'a' : 'b' }));
    rows.push({ id: 'the-long-one', text: text(3002, 1), label: 'a' });
    writeJsonl(data, rows);
    const spec = `jsonl:${data}?text=text&label=label&id=id`;
    const out = path.join(root, 'run-long');
    const r = await lobes(['extract', '--model', TINY, '--data', spec, '--out', out, '--quiet']);
    expect(r.code).toBe(1);
    const m =
      /1 of 9 texts are longer than the model's context of 2048 tokens \(config\.json max_position_embeddings\); the longest has (\d+) tokens/
        .exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThanOrEqual(3002); // every word is at least one token
    expect(r.stderr).toMatch(/sample the-long-one: .*--max-tokens 2048/);
    expect(existsSync(out)).toBe(false);
    const ok = await lobes(['extract', '--model', TINY, '--data', spec, '--out', out, '--quiet', '--max-tokens', '2048',
      '--batch', '1']);
    expect(ok.code, ok.stderr).toBe(0);
    const long = readFileSync(path.join(out, 'samples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      .find((s) => s.id === 'the-long-one');
    expect(long).toMatchObject({ tokens: 2048, truncated: true });
  });

  it.skipIf(!HAVE_GENAI)(
    'the onnxruntime-genai export: a text past genai_config.json context_length is refused before ONNX Runtime runs',
    async () => {
      const data = path.join(root, 'long-genai.jsonl');
      writeJsonl(data, [{ text: text(10, 2), label: 'a' }, { text: text(3000, 3), label: 'b' }]);
      const r = await lobes(['extract', '--model', GENAI, '--data', `jsonl:${data}?text=text&label=label`, '--out',
        path.join(root, 'run-genai'), '--quiet']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /1 of 2 texts are longer than the model's context of 2048 tokens \(genai_config\.json context_length\)/,
      );
      expect(r.stderr).not.toMatch(/onnxruntime/);
    },
  );

  it('a label field named __proto__ (and values such as "constructor") survives extract, cluster, wanda and report', async () => {
    const data = path.join(root, 'proto.jsonl');
    const groups = ['constructor', '__proto__', 'toString'];
    // An object literal's __proto__ sets the prototype: the lines are built by hand.
    writeFileSync(data,
      Array.from({ length: 30 },
        (_, i) =>
          `{"text":${JSON.stringify(text(6 + (i % 5), i))},"__proto__":${JSON.stringify(groups[i % 3])},"kind":"${
            i % 2 ? 'x' : 'y'
          }"}`).join('\n') + '\n');
    const out = path.join(root, 'run-proto');
    const x = await lobes(['extract', '--model', TINY, '--data', `jsonl:${data}?text=text&label=__proto__,kind`,
      '--out', out, '--quiet']);
    expect(x.code, x.stderr).toBe(0);
    const first = JSON.parse(readFileSync(path.join(out, 'samples.jsonl'), 'utf8').split('\n')[0]!);
    expect(Object.prototype.hasOwnProperty.call(first.labels, '__proto__')).toBe(true);
    expect(first.labels.__proto__).toBe('constructor');
    expect(first.labels.kind).toBe('y');
    expect(JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8')).dataset.axes).toEqual(['__proto__',
      'kind']);
    const c = await lobes(['cluster', out, '--by', '__proto__', '--perplexity', '5', '--iterations', '250',
      '--bootstrap', '20', '--permutations', '10', '--quiet', '--json']);
    expect(c.code, c.stderr).toBe(0);
    expect(JSON.parse(c.stdout).metrics.classes).toEqual([...groups].sort());
    const w = await lobes(['wanda', out, '--by', '__proto__', '--block', '16', '--permutations', '5', '--quiet',
      '--json']);
    expect(w.code, w.stderr).toBe(0);
    const wj = JSON.parse(w.stdout);
    expect(wj.metrics.groups.map((g: { group: string }) => g.group).sort()).toEqual([...groups].sort());
    const regions = JSON.parse(readFileSync(path.join(out, 'wanda/regions.json'), 'utf8'));
    expect(Object.keys(regions.regions).sort()).toEqual([...groups].sort());
    const rep = await lobes(['report', out]);
    expect(rep.code, rep.stderr).toBe(0);
  });

  it('safetensors weights holding the same tensor in two files are refused', async () => {
    const run = path.join(root, 'run-dup');
    expect(
      (await lobes(['extract', '--model', TINY, '--data', 'builtin:social?lang=en', '--out', run, '--quiet'])).code,
    ).toBe(0);
    const w = path.join(root, 'weights-dup');
    mkdirSync(w);
    const t = { shape: [256, 64], data: values(256 * 64, 5) };
    writeSt(path.join(w, 'model-00001-of-00002.safetensors'), { 'model.layers.0.mlp.gate_proj.weight': t });
    writeSt(path.join(w, 'model-00002-of-00002.safetensors'), { 'model.layers.0.mlp.gate_proj.weight': t });
    const r = await lobes(['wanda', run, '--weights', w, '--block', '16', '--permutations', '0', '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /weights-dup: tensor model\.layers\.0\.mlp\.gate_proj\.weight is in two weight files, model-00001-of-00002\.safetensors and model-00002-of-00002\.safetensors/,
    );
  });

  it('invalid input: extract does not suggest --skip-invalid (it has no such flag); data inspect does', async () => {
    const data = path.join(root, 'bad.jsonl');
    writeFileSync(data, '{"text":"hello there","label":"a"}\n{"text":"","label":"b"}\n');
    const spec = `jsonl:${data}?text=text&label=label`;
    const x = await lobes(['extract', '--model', TINY, '--data', spec, '--out', path.join(root, 'run-bad'), '--quiet']);
    expect(x.code).toBe(1);
    expect(x.stderr).toMatch(/field "text" is empty/);
    expect(x.stderr).not.toMatch(/--skip-invalid/);
    const d = await lobes(['data', 'inspect', spec]);
    expect(d.code).toBe(1);
    expect(d.stderr).toMatch(/pass --skip-invalid to leave those items out/);
  });
});

describe.skipIf(!HAVE)('a model that is not what its folder says', () => {
  let root: string;
  /** A copy of the tiny model (RoPE base 10000 in its graph) whose config.json is edited by `edit`. */
  const variant = (name: string, edit: (cfg: any) => void): string => {
    const dir = path.join(root, name);
    cpSync(TINY, dir, { recursive: true });
    const f = path.join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(f, 'utf8'));
    edit(cfg);
    writeFileSync(f, JSON.stringify(cfg, null, 2));
    return dir;
  };
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-rope-'));
    process.env.LOBES_HASH_CACHE = path.join(root, 'hash-cache.json');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a graph exported with rope_theta 10000 whose config.json says 100000 in rope_parameters (transformers 5): inspect warns with both, --strict refuses', async () => {
    const dir = variant('rope', (c) => {
      delete c.rope_theta;
      c.rope_parameters = { rope_theta: 100000, rope_type: 'default' };
    });
    const r = await lobes(['inspect', dir]);
    expect(r.code).toBe(0);
    const warning =
      'RoPE base: the graph computes 10000 (from its inv_freq constant), config.json rope_parameters.rope_theta says 100000';
    expect(r.stderr).toContain(warning);
    expect(r.stdout).toContain(`WARNING: ${warning}`);
    const s = await lobes(['inspect', dir, '--strict']);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/the model is not what its folder says \(1 disagreement/);
    const j = JSON.parse((await lobes(['inspect', dir, '--json'])).stdout);
    expect(j.graph.ropeTheta).toBeCloseTo(10000, -1);
    expect(j.problems).toEqual([warning]);
  });

  it('extract warns and records the graph settings; extract --strict refuses before writing anything', async () => {
    const dir = variant('rope-x', (c) => {
      c.rope_theta = 100000;
    });
    const out = path.join(root, 'run');
    const r = await lobes(['extract', '--model', dir, '--data', 'builtin:social?lang=en', '--out', out, '--quiet']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(
      /warning: .*rope-x: RoPE base: the graph computes 10000 \(from its inv_freq constant\), config\.json rope_theta says 100000/,
    );
    const m = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(m.model.graph.ropeTheta).toBeCloseTo(10000, 0);
    const strict = path.join(root, 'run-strict');
    const s = await lobes(['extract', '--model', dir, '--data', 'builtin:social?lang=en', '--out', strict, '--quiet',
      '--strict']);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/the model is not what its folder says: RoPE base/);
    expect(existsSync(strict)).toBe(false);
  });

  it('RoPE scaling, norm epsilon and head counts the graph does not have are named with both values', async () => {
    const dir = variant('many', (c) => {
      c.rope_scaling = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4,
        original_max_position_embeddings: 64 };
      c.rms_norm_eps = 1e-6;
      c.num_key_value_heads = 4;
    });
    const j = JSON.parse((await lobes(['inspect', dir, '--json'])).stdout);
    expect(j.problems).toHaveLength(3);
    expect(j.problems[0]).toMatch(
      /^RoPE scaling: the graph's frequencies are not scaled but config\.json says llama3 scaling \(factor 8\)/,
    );
    expect(j.problems[1]).toBe('RMSNorm epsilon: the graph uses 0.00001, config.json says 0.000001');
    expect(j.problems[2]).toBe('KV heads: the graph has 2, config.json says 4');
  });

  it('a model folder beside the GGUF it came from is compared with the GGUF metadata too', async () => {
    const dir = variant('from-gguf', () => undefined);
    const meta = (base: number): [string, GgufValue][] => [
      ['general.architecture', { type: 'string', value: 'llama' }],
      ['llama.context_length', { type: 'uint32', value: 2048 }],
      ['llama.embedding_length', { type: 'uint32', value: 64 }],
      ['llama.attention.head_count', { type: 'uint32', value: 4 }],
      ['llama.attention.head_count_kv', { type: 'uint32', value: 2 }],
      ['llama.rope.freq_base', { type: 'float32', value: base }],
      ['llama.attention.layer_norm_rms_epsilon', { type: 'float32', value: 1e-5 }],
    ];
    const one = [{ name: 'output_norm.weight', dims: [4], type: 0, data: new Float32Array(4).fill(1) }];
    writeGguf(path.join(dir, 'source.gguf'), meta(10000), one);
    expect(JSON.parse((await lobes(['inspect', dir, '--json'])).stdout).problems).toEqual([]);
    writeGguf(path.join(dir, 'source.gguf'), meta(100000), one);
    const j = JSON.parse((await lobes(['inspect', dir, '--json'])).stdout);
    expect(j.problems).toEqual([
      'RoPE base: the graph computes 10000 (from its inv_freq constant), source.gguf llama.rope.freq_base says 100000',
    ]);
  });

  it('the RoPE base is read back from the graph for a generated model with another base (the generator is the oracle)', async () => {
    const dir = ensureModelFromSpec('tiny-rope5e5', {
      model: { ...GENERATED_MODELS['tiny-llama']!.model, ropeTheta: 500000 },
    });
    const j = JSON.parse((await lobes(['inspect', dir, '--json', '--strict'])).stdout);
    expect(Math.abs(j.graph.ropeTheta - 500000) / 500000).toBeLessThan(1e-4);
    expect(j.problems).toEqual([]);
  });

  it('Llama 3 RoPE scaling written by the Llama writer (explicit inv_freq; genai fp16 cos/sin caches) is read back; a config that drops the scaling or changes the base is named', async () => {
    const spec = {
      layers: 1,
      hidden: 128,
      intermediate: 256,
      heads: 4,
      kvHeads: 2,
      headDim: 32,
      vocab: 256,
      rmsNormEps: 1e-5,
      ropeTheta: 500000,
      ropeScaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4,
        original_max_position_embeddings: 64 },
      maxPositions: 512,
      tiedEmbeddings: false,
    };
    for (const [layout, dtype] of [['explicit', 'fp32'], ['genai', 'fp16']] as const) {
      const dir = path.join(root, `llama3-${layout}`);
      await writeLlamaOnnx(dir, spec, seededLlamaSource(spec, 1), { layout, dtype, weights: dtype });
      const ok = JSON.parse((await lobes(['inspect', dir, '--json', '--strict'])).stdout);
      expect(ok.problems, layout).toEqual([]);
      expect(ok.graph.ropeScaled).toBe(true);
      expect(Math.abs(ok.graph.ropeTheta - 500000) / 500000).toBeLessThan(1e-3);
      const cfgFile = path.join(dir, 'config.json');
      const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
      writeFileSync(cfgFile, JSON.stringify({ ...cfg, rope_scaling: null }));
      const unscaled = JSON.parse((await lobes(['inspect', dir, '--json'])).stdout);
      expect(unscaled.problems).toHaveLength(1);
      expect(unscaled.problems[0]).toMatch(
        /^RoPE scaling: the graph's frequencies are scaled but config\.json says no RoPE scaling \(frequencies differ by up to \d+%\)$/,
      );
      writeFileSync(cfgFile, JSON.stringify({ ...cfg, rope_theta: 10000 }));
      const base = JSON.parse((await lobes(['inspect', dir, '--json'])).stdout);
      expect(base.problems).toEqual([
        `RoPE base: the graph computes 500000 (from its ${
          layout === 'genai' ? 'cos/sin cache' : 'inv_freq constant'
        }), config.json rope_theta says 10000`,
      ]);
    }
  });

  it.skipIf(!HAVE_GENAI)('the onnxruntime-genai export (fused RotaryEmbedding, cos/sin caches) passes cleanly',
    async () => {
      const r = await lobes(['inspect', GENAI, '--strict', '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      const j = JSON.parse(r.stdout);
      expect(j.problems).toEqual([]);
      // The builder's default base (10000) recovered from fp16 caches, and the cache length.
      expect(Math.abs(j.graph.ropeTheta - 10000) / 10000).toBeLessThan(1e-3);
      expect(j.graph).toMatchObject({ ropeSource: 'cos/sin cache', rotaryDim: 16, ropePositions: 2048, heads: 1,
        headDim: 16 });
      expect(j.context).toEqual({ tokens: 2048, source: 'genai_config.json context length' });
    });
});
