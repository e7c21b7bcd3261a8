/**
 * Hugging Face checkpoint folders → lobes, against transformers itself
 * (test/goldens/make_hf_checkpoint_goldens.py: tiny random-weight llama, qwen2 and qwen3
 * checkpoints saved by save_pretrained, goldens from transformers reading them back):
 *  - every capture point and the logits of the converted model equal transformers' within 1e-4
 *    relative, on English and Chinese texts of mixed lengths run as one padded batch;
 *  - the tokenizer carried over gives transformers' token ids and keeps the chat template;
 *  - --model DIR resolves into the conversion cache once, recording the checkpoint's files and
 *    their sha256 as its identity;
 *  - a sharded checkpoint whose index disagrees with its files, and families or settings lobes
 *    cannot express, are refused in one line before anything is written.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfCheckpoint } from '../../src/convert/convert.js';
import { resolveModel } from '../../src/convert/cache.js';
import { isHfCheckpoint, openHfCheckpoint } from '../../src/convert/hf-checkpoint.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { loadModel } from '../../src/onnx/index.js';
import { modelFilesDigest } from '../../src/store/lineage.js';
import { identity } from '../../src/store/identity.js';
import { runIdentity } from '../../src/store/provenance.js';
import { CKPTS, META, expectGoldens } from './hf-families.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-hf-ckpt-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const FAMILIES = ['llama', 'mistral', 'qwen2', 'qwen3'] as const;
const converted: Record<string, string> = {};

describe.each(FAMILIES)('%s checkpoint', (family) => {
  const src = path.join(CKPTS, family);
  it('converts to the explicit layout and every capture point and the logits equal transformers (left and right padding)', async () => {
    expect(isHfCheckpoint(src)).toBe(true);
    const out = path.join(tmp, `conv-${family}`);
    const r = await convertHfCheckpoint(src, out, {});
    converted[family] = out;
    expect(r.checkpoint?.family).toBe(family);
    // F32 weights are kept exactly as fp32, F16 as fp16, BF16 as bf16 (cast to fp32 in the graph).
    const dt = META.families[family]!.dtype;
    expect(r.options.weights).toBe(dt === 'float16' ? 'fp16' : dt === 'bfloat16' ? 'bf16' : 'fp32');
    const left = await expectGoldens(out, family, 'left');
    const right = await expectGoldens(out, family, 'right');
    console.log(`${family}: max relative error vs transformers ${Math.max(left, right).toExponential(2)}`);
  });

  it('converts to the genai layout (GroupQueryAttention; biases as Adds, q/k norms as SimplifiedLayerNormalization) with the same captures and logits (right padding)', async () => {
    const out = path.join(tmp, `genai-${family}`);
    await convertHfCheckpoint(src, out, { layout: 'genai' });
    const ops = new Set(loadModel(out).model.graph!.node!.map((n) => n.opType));
    expect(ops.has('GroupQueryAttention')).toBe(true);
    if (family === 'qwen3')
      expect([...loadModel(out).model.graph!.node!].filter((n) => n.opType === 'SimplifiedLayerNormalization').length)
        .toBe(2 * 2 + 1);
    // GroupQueryAttention reads each row's length from the mask and expects right padding.
    const worst = await expectGoldens(out, family, 'right');
    console.log(`${family} genai: max relative error vs transformers ${worst.toExponential(2)}`);
  });

  it("carries the tokenizer: transformers' token ids, the chat template", async () => {
    const tok = await loadTokenizer(converted[family]!, { maxTokens: null, chatTemplate: false });
    for (let i = 0; i < META.texts.length; i++) expect(tok.encode(META.texts[i]!).ids).toEqual(META.ids[i]);
    const chat = await loadTokenizer(converted[family]!, { maxTokens: null, chatTemplate: true });
    expect(chat.encode('hello').ids.length).toBeGreaterThan(tok.encode('hello').ids.length);
  });
});

describe('YaRN rope scaling (legacy "type" spelling)', () => {
  it('the llama weights with a yarn rope_scaling equal transformers, explicit and genai layouts', async () => {
    const yarn = (META.families.llama as any).yarn;
    const d = mkdtempSync(path.join(tmp, 'yarn-'));
    cpSync(path.join(CKPTS, 'llama'), d, { recursive: true });
    const cfgFile = path.join(d, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.rope_scaling = yarn.rope_scaling;
    writeFileSync(cfgFile, JSON.stringify(cfg));
    // The variant differs from the checkpoint's own numbers (so a yarn read as default fails).
    expect(yarn.vs_checkpoint_logits_rel).toBeGreaterThan(0.05);
    const ex = path.join(tmp, 'yarn-explicit');
    const r = await convertHfCheckpoint(d, ex);
    expect(r.spec.ropeScaling).toMatchObject({ rope_type: 'yarn', factor: 4, original_max_position_embeddings: 64 });
    const worstEx = Math.max(await expectGoldens(ex, 'llama-yarn', 'left'),
      await expectGoldens(ex, 'llama-yarn', 'right'));
    const ge = path.join(tmp, 'yarn-genai');
    await convertHfCheckpoint(d, ge, { layout: 'genai' });
    const worstGe = await expectGoldens(ge, 'llama-yarn', 'right');
    console.log(
      `yarn: max relative error vs transformers ${worstEx.toExponential(2)} explicit, ${
        worstGe.toExponential(2)
      } genai (attention factor ${yarn.attention_scaling})`,
    );
  });
});

describe('--model DIR through the conversion cache', () => {
  it("converts once, and records the checkpoint's files with their sha256 as the model's identity", async () => {
    const cache = path.join(tmp, 'cache');
    const src = path.join(CKPTS, 'llama');
    const a = await resolveModel(src, { cache, log: () => {} });
    expect(a.converted).not.toBeNull();
    const b = await resolveModel(src, { cache, log: () => {} });
    expect(b.converted).toBeNull();
    expect(b.dir).toBe(a.dir);
    const s = b.source!;
    expect(s.format).toBe('hf-checkpoint');
    const names = s.files!.map((f) => f.name).sort();
    expect(names).toEqual(readdirSync(src).sort());
    for (const f of s.files!)
      expect(f.sha256).toBe(createHash('sha256').update(readFileSync(path.join(src, f.name))).digest('hex'));
    expect(s.sha256).toBe(modelFilesDigest(s.files!));
    expect(s.identity).toBe(a.source!.identity);
    // Another dtype is another model.
    const c = await resolveModel(src, { cache, dtype: 'fp16', log: () => {} });
    expect(c.source!.identity).not.toBe(s.identity);
  });
});

describe('refusals, in one line, before anything is written', () => {
  const copy = (family: string) => {
    const d = mkdtempSync(path.join(tmp, `${family}-`));
    cpSync(path.join(CKPTS, family), d, { recursive: true });
    return d;
  };
  const editJson = (file: string, f: (j: any) => void) => {
    const j = JSON.parse(readFileSync(file, 'utf8'));
    f(j);
    writeFileSync(file, JSON.stringify(j));
  };
  const refused = async (dir: string, re: RegExp) => {
    const out = path.join(tmp, `out-${Math.random().toString(36).slice(2)}`);
    const e = await convertHfCheckpoint(dir, out).catch((x: Error) => x);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).message).toMatch(re);
    expect((e as Error).message).not.toMatch(/\n/);
    expect(existsSync(out)).toBe(false);
  };

  it('an index placing a tensor in a shard that does not hold it', async () => {
    const d = copy('llama');
    const idx = path.join(d, 'model.safetensors.index.json');
    editJson(idx, (j) => {
      const shards = [...new Set(Object.values(j.weight_map))].sort() as string[];
      const name = Object.keys(j.weight_map).find((k) => j.weight_map[k] === shards[0])!;
      j.weight_map[name] = shards[1];
    });
    await refused(d,
      /model\.safetensors\.index\.json: places \S+ in model-0000\d-of-0000\d\.safetensors, which does not hold it/);
  });

  it('a shard holding a tensor the index does not list', async () => {
    const d = copy('llama');
    editJson(path.join(d, 'model.safetensors.index.json'),
      (j) => delete j.weight_map['model.layers.1.mlp.up_proj.weight']);
    await refused(d, /holds model\.layers\.1\.mlp\.up_proj\.weight, which the index does not list/);
  });

  it('a shard the index names that is missing, and a wrong total_size', async () => {
    const d = copy('llama');
    const shard = readdirSync(d).find((f) => /^model-00002/.test(f))!;
    rmSync(path.join(d, shard));
    await refused(d, new RegExp(`names the shard ${shard.replace(/\./g, '\\.')}`));
    const e = copy('llama');
    editJson(path.join(e, 'model.safetensors.index.json'), (j) => (j.metadata.total_size += 2));
    await refused(e, /metadata\.total_size is \d+ but the shards it names hold \d+ bytes/);
  });

  it('families lobes cannot express, by name with what they lack', async () => {
    for (const [type, re] of [
      ['mixtral', /model_type "mixtral" is not converted: .*mixture-of-experts/],
      ['cohere', /model_type "cohere" is not converted: .*LayerNorm with attention parallel to the MLP/],
      ['gpt_oss', /attention sinks/],
      ['phi', /model_type "phi" is not converted: .*LayerNorm with a bias/],
      ['mamba', /model_type "mamba" is not one lobes converts/],
    ] as const) {
      const d = copy('llama');
      editJson(path.join(d, 'config.json'), (j) => (j.model_type = type));
      await refused(d, re);
    }
  });

  it('settings of a known family that the graph would not reproduce', async () => {
    const cases: [string, (j: any) => void, RegExp][] = [
      ['llama', (j) => (j.hidden_act = 'gelu'), /activation "gelu" is not SiLU/],
      ['llama', (j) => (j.attention_bias = true), /attention_bias puts a bias on o_proj/],
      ['llama', (j) => (j.rope_scaling = { type: 'longrope', factor: 4 }),
        /rope_scaling: longrope needs original_max_position_embeddings/],
      ['llama', (j) => (j.rope_scaling = { rope_type: 'dynamic', factor: 2 }),
        /rope scaling "dynamic" is not converted/],
      ['llama', (j) => (j.rope_scaling = { rope_type: 'longrope', factor: 2, original_max_position_embeddings: 64 }),
        /rope_scaling\.short_factor: longrope needs short_factor as a list of numbers/],
      ['llama', (j) => (j.partial_rotary_factor = 0.5),
        /partial_rotary_factor: partial rotary embeddings \(factor 0\.5\) are expressed for phi3 only/],
      ['mistral', (j) => (j.layer_types = ['sliding_attention', 'full_attention']),
        /layer_types: mixes sliding-window and full-attention layers/],
      ['llama', (j) => (j.layer_types = ['sliding_attention', 'sliding_attention']),
        /layer_types: has sliding-window layers/],
      ['qwen2', (j) => (j.use_sliding_window = true, j.sliding_window = 8),
        /use_sliding_window: sliding-window attention from layer max_window_layers on/],
      ['llama', (j) => (j.num_hidden_layers = 3), /weight model\.layers\.2\.\S+ is missing/],
    ];
    for (const [family, edit, re] of cases) {
      const d = copy(family);
      editJson(path.join(d, 'config.json'), edit);
      await refused(d, re);
    }
  });

  it('a tensor the family does not have (an o_proj bias in a Qwen2 checkpoint)', async () => {
    const d = copy('llama');
    // Llama has no q_proj bias: rename a norm weight into one, keeping the shard valid.
    const idx = path.join(d, 'model.safetensors.index.json');
    const j = JSON.parse(readFileSync(idx, 'utf8'));
    const shard = j.weight_map['model.layers.0.input_layernorm.weight'];
    const file = path.join(d, shard);
    const buf = readFileSync(file);
    const n = Number(buf.readBigUInt64LE(0));
    const head = buf.subarray(8, 8 + n).toString('utf8').replace('"model.layers.0.input_layernorm.weight"',
      '"model.layers.0.self_attn.o_proj.bias"   ');
    buf.write(head, 8, 'utf8');
    writeFileSync(file, buf);
    j.weight_map['model.layers.0.self_attn.o_proj.bias'] = shard;
    delete j.weight_map['model.layers.0.input_layernorm.weight'];
    writeFileSync(idx, JSON.stringify(j));
    expect(() => openHfCheckpoint(d)).toThrow(
      /tensor "model\.layers\.0\.self_attn\.o_proj\.bias": is a bias llama does not have/,
    );
  });
});

describe('the command line', () => {
  const BIN = path.join(CKPTS, '..', '..', '..', 'src', 'cli', 'bin.ts');
  const lobes = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: path.join(CKPTS, '..', '..', '..'),
      encoding: 'utf8' });

  it('inspect --model CHECKPOINT_DIR converts into the cache and finds every capture point by structure; convert writes the folder', () => {
    const cache = path.join(tmp, 'cli-cache');
    const r = lobes(['inspect', '--model', path.join(CKPTS, 'qwen3'), '--cache', cache, '--json', '--strict']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.source.format).toBe('hf-checkpoint');
    const points: string[] = (j.points ?? j.capturePoints ?? []).map((p: any) => p.name);
    for (const l of [0, 1])
      for (const s of ['mlp.in', 'mlp.down_in', 'resid_out']) expect(points).toContain(`layers.${l}.${s}`);
    expect(points).toContain('final.hidden');
    const out = path.join(tmp, 'cli-out');
    const c = lobes(['convert', '--model', path.join(CKPTS, 'qwen2'), '--out', out, '--quiet']);
    expect(c.status, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/wrote .*cli-out/);
    expect(JSON.parse(readFileSync(path.join(out, 'lobes-convert.json'), 'utf8')).source.format).toBe('hf-checkpoint');
    expect(JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')).architectures).toEqual(['Qwen2ForCausalLM']);
  });
});

describe('a run extracted from a checkpoint', () => {
  it("records the checkpoint's files and their sha256 in model.source and in the run identity", async () => {
    const run = path.join(tmp, 'run');
    const BIN = path.join(CKPTS, '..', '..', '..', 'src', 'cli', 'bin.ts');
    const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, 'extract', '--model', path.join(CKPTS, 'qwen2'),
      '--data', 'builtin:social', '--out', run, '--cache', path.join(tmp, 'run-cache'), '--limit', '8', '--quiet'], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const m = JSON.parse(readFileSync(path.join(run, 'manifest.json'), 'utf8'));
    expect(m.model.source.format).toBe('hf-checkpoint');
    expect(m.model.source.path).toBe(path.join(CKPTS, 'qwen2'));
    const id = identity(m, { includeShard: false });
    for (const f of m.model.source.files) expect(id[`checkpoint file ${f.name} sha256`]).toBe(f.sha256);
    const before = runIdentity(m);
    m.model.source.files[1].sha256 = '0'.repeat(64);
    expect(runIdentity(m)).not.toBe(before);
  });
});
