/**
 * `lobes eval --control random [--control-seed N]` on the tiny Llama-3.1-shaped GGUF: eval reads
 * the GGUF's genai conversion (KV cache), and its control holds the very weights `lobes extract
 * --control random` draws for the same GGUF and seed (the explicit layout's tensors, laid out
 * again: fused q/k/v, transposed projections), computes the same log-likelihoods as the explicit
 * control within float rounding, differs from the trained model, and is reproducible. eval.json
 * records model.control (kind, seed, version), which is part of the evaluation's identity: a
 * resume with another control, or with none, is refused. A control is another model than the
 * trained one to every command that compares models (sameModel): attend --eval refuses it, and a
 * command given the control folder itself (ablate --model) reads its control from the folder.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cli } from '../runtime/helpers.js';
import { TINY_GGUF } from '../convert/tiny-llama3.js';
import { GraphIndex, loadModel, readInitializerFloat32, type LoadedModel } from '../../src/onnx/index.js';
import { controlOfFolder, storedWeight } from '../../src/runtime/control.js';
import { openLoglikEngine } from '../../src/runtime/loglik.js';
import { controlKey, sameModel } from '../../src/store/provenance.js';
import { ensureGeneratedModel } from '../../src/models/write.js';
import { scopedEnv } from '../env.js';

let root: string;
let cache: string;
let items: string;
let texts: string;
const env = scopedEnv();
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'lobes-eval-control-'));
  cache = path.join(root, 'cache');
  env.set({ LOBES_HASH_CACHE: path.join(root, 'file-sha256.json') });
  items = path.join(root, 'items.jsonl');
  const qs = [
    { id: 'a', q: 'What is the capital of France?', o: ['Berlin', 'Paris', 'Rome', 'Madrid'], a: 1 },
    { id: 'b', q: 'Which number is even?', o: ['3', '7', '8', '5'], a: 2 },
    { id: 'c', q: 'Which is a colour?', o: ['red', 'dog', 'run', 'six'], a: 0 },
  ];
  writeFileSync(items, qs.map((x) => JSON.stringify(x)).join('\n') + '\n');
  texts = path.join(root, 'texts.jsonl');
  writeFileSync(texts,
    ['The cat sat on the mat.', 'Paris is in France.', 'Two and two make four.', 'She opened the door.'].map((t, i) =>
      JSON.stringify({ id: `t${i}`, text: t, label: i % 2 ? 'a' : 'b' })
    ).join('\n') + '\n');
});
afterAll(() => {
  env.restore();
  rmSync(root, { recursive: true, force: true });
});

const json = (f: string) => JSON.parse(readFileSync(f, 'utf8'));
const evalArgs = (out: string,
  extra: string[]) => ['eval', TINY_GGUF, '--data', `jsonl:${items}?id=id&question=q&options=o&answer=a`, '--out', out,
  '--cache', cache, '--scoring', 'cloze', '--bootstrap', '0', '--quiet', ...extra];

/** The explicit layout's projection weights by Hugging Face name, as stored ([d_in, d_out]). */
function explicitStored(m: LoadedModel): Map<string, Float32Array> {
  const g = new GraphIndex(m.model.graph!);
  const out = new Map<string, Float32Array>();
  for (const n of m.model.graph!.node) {
    if (n.opType !== 'MatMul' || !n.name?.endsWith('/MatMul')) continue;
    const w = storedWeight(g, m.initializers, n.input[1]);
    if (w) out.set(n.name.slice(1, -7).split('/').join('.') + '.weight', readInitializerFloat32(m, w));
  }
  for (const [name] of m.initializers)
    if (/^model\.(embed_tokens|norm|layers\.\d+\.(input|post_attention)_layernorm)\.weight$/.test(name))
      out.set(name, readInitializerFloat32(m, name));
  return out;
}

/** The genai tensor `[d_in, Σ d_out]` of parts stored [d_in, d_out] side by side. */
function sideBySide(parts: Float32Array[], dIn: number): Float32Array {
  const cols = parts.map((p) => p.length / dIn);
  const total = cols.reduce((a, b) => a + b, 0);
  const out = new Float32Array(dIn * total);
  for (let i = 0; i < dIn; i++) {
    let at = 0;
    parts.forEach((p, k) => {
      out.set(p.subarray(i * cols[k]!, (i + 1) * cols[k]!), i * total + at);
      at += cols[k]!;
    });
  }
  return out;
}

const same = (a: Float32Array, b: Float32Array) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

describe('lobes eval --control random on a GGUF', { timeout: 600_000 }, () => {
  let extractCtl: string;
  let evalCtl: string;
  const ev = (name: string) => path.join(root, name);

  it("eval's genai control holds the weights extract draws for the same GGUF and seed, tensor for tensor", async () => {
    const run = ev('run-ctl');
    const x = await cli(['extract', TINY_GGUF, '--data', `jsonl:${texts}?text=text&label=label&id=id`, '--out', run,
      '--capture', 'final', '--dtype', 'fp32', '--control', 'random', '--control-seed', '3', '--cache', cache,
      '--quiet']);
    expect(x.code, x.err).toBe(0);
    const e = await cli(evalArgs(ev('ctl3'), ['--control', 'random', '--control-seed', '3']));
    expect(e.code, e.err).toBe(0);
    const rm = json(path.join(run, 'manifest.json'));
    const em = json(path.join(ev('ctl3'), 'eval.json'));
    extractCtl = rm.model.dir;
    evalCtl = em.model.dir;
    expect(em.model.control.layout).toEqual({ name: 'genai', drawn: extractCtl });
    const X = explicitStored(loadModel(extractCtl));
    const G = loadModel(evalCtl);
    expect(G.model.graph!.node.some((n) => n.opType === 'GroupQueryAttention')).toBe(true);
    const gi = (n: string) => readInitializerFloat32(G, n);
    const H = 256;
    let compared = 0;
    for (let l = 0; l < 2; l++) {
      const p = `model.layers.${l}`;
      const qkv = sideBySide(['q', 'k', 'v'].map((k) => X.get(`${p}.self_attn.${k}_proj.weight`)!), H);
      expect(same(gi(`${p}.attn.qkv_proj.MatMul.weight`), qkv), `${p} qkv`).toBe(true);
      expect(same(gi(`${p}.attn.o_proj.MatMul.weight`), X.get(`${p}.self_attn.o_proj.weight`)!), `${p} o`).toBe(true);
      for (const m of ['gate', 'up', 'down'])
        expect(same(gi(`${p}.mlp.${m}_proj.MatMul.weight`), X.get(`${p}.mlp.${m}_proj.weight`)!), `${p} ${m}`).toBe(
          true,
        );
      for (const nm of ['input_layernorm', 'post_attention_layernorm'])
        expect(same(gi(`${p}.${nm}.weight`), X.get(`${p}.${nm}.weight`)!), `${p} ${nm}`).toBe(true);
      compared += 9;
    }
    expect(same(gi('lm_head.MatMul.weight'), X.get('lm_head.weight')!)).toBe(true);
    expect(same(gi('model.embed_tokens.weight'), X.get('model.embed_tokens.weight')!)).toBe(true);
    expect(same(gi('model.layers.2.final_norm_layernorm.weight'), X.get('model.norm.weight')!)).toBe(true);
    expect(compared).toBe(18);
    // They are drawn, not the trained weights: the trained genai conversion's differ.
    const trained = loadModel(em.model.source.converted);
    expect(
      same(readInitializerFloat32(trained, 'model.layers.0.attn.o_proj.MatMul.weight'),
        gi('model.layers.0.attn.o_proj.MatMul.weight')),
    ).toBe(false);
  });

  it('both layouts of the control compute the same log-likelihoods (explicit in batches, genai through the KV cache)', async () => {
    const req = [{
      context: [1, 17, 230, 5, 99, 310, 42, 7, 8, 600, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
        28, 29, 30, 31, 32, 33, 34],
      continuations: [[40, 41, 42], [500, 3], [77, 78, 79, 80]],
    }];
    const a = await openLoglikEngine(extractCtl, { device: 'cpu', cache: 'off' });
    const b = await openLoglikEngine(evalCtl, { device: 'cpu' });
    try {
      expect(b.usesCache).toBe(true);
      const [ra, rb] = [(await a.score(req))[0]!, (await b.score(req))[0]!];
      ra.forEach((s, j) =>
        expect(Math.abs(s.logprob - rb[j]!.logprob), `option ${j}: ${s.logprob} vs ${rb[j]!.logprob}`).toBeLessThan(
          2e-3,
        )
      );
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('records the control, differs from the trained model, and is reproducible', async () => {
    const t = await cli(evalArgs(ev('trained'), []));
    expect(t.code, t.err).toBe(0);
    const again = await cli(evalArgs(ev('ctl3-again'), ['--control', 'random', '--control-seed', '3']));
    expect(again.code, again.err).toBe(0);
    const c4 = await cli(evalArgs(ev('ctl4'), ['--control', 'random', '--control-seed', '4']));
    expect(c4.code, c4.err).toBe(0);
    const rec = (n: string) => readFileSync(path.join(ev(n), 'records.jsonl'), 'utf8');
    expect(rec('ctl3-again')).toBe(rec('ctl3'));
    expect(rec('ctl3')).not.toBe(rec('trained'));
    expect(rec('ctl4')).not.toBe(rec('ctl3'));
    const lp = (n: string) =>
      rec(n).trim().split('\n').flatMap((l) => JSON.parse(l).cloze.options.map((o: { logprob: number }) => o.logprob));
    expect(lp('ctl3').every((v, i) => v !== lp('trained')[i])).toBe(true);
    const [m3, mt] = [json(path.join(ev('ctl3'), 'eval.json')), json(path.join(ev('trained'), 'eval.json'))];
    expect(m3.model.control).toMatchObject({ kind: 'random', seed: 3, version: 1 });
    expect(mt.model.control).toBeUndefined();
    // The control's source record is the trained GGUF's: same conversion identity, another graph.
    expect(m3.model.source.identity).toBe(mt.model.source.identity);
    expect(m3.model.graphSha256).not.toBe(mt.model.graphSha256);
    expect(json(path.join(ev('ctl4'), 'eval.json')).model.control.seed).toBe(4);
  });

  it('a resume with another control, or none, is refused in one line naming the control; the same one finds it complete', async () => {
    for (const [dir, extra, want] of [
      ['ctl3', ['--control', 'random', '--control-seed', '4'],
        /model control \(--control, --control-seed\) is "random seed 3 v1" in .* but "random seed 4 v1" in this command/],
      ['ctl3', [],
        /model control \(--control, --control-seed\) is "random seed 3 v1" in .* but "none" in this command/],
      ['trained', ['--control', 'random'],
        /model control \(--control, --control-seed\) is "none" in .* but "random seed 0 v1" in this command/],
    ] as const) {
      const before = readFileSync(path.join(ev(dir), 'records.jsonl'), 'utf8');
      const r = await cli(evalArgs(ev(dir), [...extra]));
      expect(r.code, r.err).toBe(1);
      const lines = r.err.trim().split('\n').filter((l) => !l.startsWith('eval: random-weights control'));
      expect(lines.at(-1)).toMatch(want);
      expect(readFileSync(path.join(ev(dir), 'records.jsonl'), 'utf8')).toBe(before);
    }
    const ok = await cli(
      [...evalArgs(ev('ctl3'), ['--control', 'random', '--control-seed', '3'])].filter((a) => a !== '--quiet'),
    );
    expect(ok.code, ok.err).toBe(0);
    expect(ok.err).toMatch(/already complete/);
  });

  it('attend --eval of a control evaluation with the trained GGUF is refused in one line', async () => {
    const letter = ev('ctl3-letter');
    const e = await cli(['eval', TINY_GGUF, '--data', `jsonl:${items}?id=id&question=q&options=o&answer=a`, '--out',
      letter, '--cache', cache, '--bootstrap', '0', '--quiet', '--control', 'random', '--control-seed', '3']);
    expect(e.code, e.err).toBe(0);
    const a = await cli(['attend', TINY_GGUF, '--eval', letter, '--items', 'all', '--out', ev('attend'), '--cache',
      cache, '--quiet']);
    expect(a.code).toBe(1);
    const lines = a.err.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /eval\.json.*the evaluation scored a random-weights control of the model \(random seed 3 v1, eval --control\), not the trained model lobes attend reads/,
    );
  });

  it('an ONNX folder (with a KV cache): eval reads the very control folder extract makes from it', async () => {
    const model = ensureGeneratedModel('tiny-llama-past');
    const x = await cli(['extract', model, '--data', `jsonl:${texts}?text=text&label=label&id=id`, '--out',
      ev('run-onnx-ctl'), '--capture', 'final', '--dtype', 'fp32', '--control', 'random', '--control-seed', '1',
      '--cache', cache, '--quiet']);
    expect(x.code, x.err).toBe(0);
    const e = await cli(['eval', model, '--data', `jsonl:${items}?id=id&question=q&options=o&answer=a`, '--out',
      ev('onnx-ctl'), '--cache', cache, '--scoring', 'cloze', '--chat-template', 'off', '--bootstrap', '0', '--quiet',
      '--control', 'random', '--control-seed', '1']);
    expect(e.code, e.err).toBe(0);
    const [rm, em] = [json(path.join(ev('run-onnx-ctl'), 'manifest.json')),
      json(path.join(ev('onnx-ctl'), 'eval.json'))];
    expect(em.model.dir).toBe(rm.model.dir);
    expect(em.model.control).toMatchObject({ kind: 'random', seed: 1, version: 1, source: path.resolve(model) });
    expect(em.model.control.layout).toBeUndefined();
    expect(em.sharedPrefix).toBe(true);
    expect(sameModel(em.model, rm.model)).toBe(true);
  });

  it('sameModel: a control is the same model only as a control of the same kind, seed and version', () => {
    const rm = json(path.join(ev('run-ctl'), 'manifest.json'));
    const [m3, m4, mt] = ['ctl3', 'ctl4', 'trained'].map((n) => json(path.join(ev(n), 'eval.json')));
    // extract's explicit control and eval's genai control: two graphs, one model
    expect(rm.model.graphSha256).not.toBe(m3.model.graphSha256);
    expect(sameModel(m3.model, rm.model)).toBe(true);
    expect(sameModel(mt.model, rm.model)).toBe(false);
    expect(sameModel(m4.model, rm.model)).toBe(false);
    expect(sameModel(m3.model, mt.model)).toBe(false);
    expect(sameModel(mt.model, mt.model)).toBe(true);
    // an older record without a version is version 1
    const { version: _v, ...old } = rm.model.control;
    expect(sameModel(m3.model, { ...rm.model, control: old })).toBe(true);
    expect(sameModel(m3.model, { ...rm.model, control: { ...old, version: 2 } })).toBe(false);
    expect(controlKey(null)).toBe('none');
    // A command given the control folder itself (ablate --model, attend) reads its control from the folder.
    expect(controlOfFolder(rm.model.dir)).toEqual({ kind: 'random', seed: 3, version: 1 });
    expect(controlOfFolder(m3.model.dir)).toEqual({ kind: 'random', seed: 3, version: 1 });
    expect(controlOfFolder(mt.model.dir)).toBeNull();
    expect(sameModel({ graphSha256: rm.model.graphSha256, control: controlOfFolder(rm.model.dir) }, rm.model)).toBe(
      true,
    );
    expect(
      sameModel({ graphSha256: mt.model.graphSha256, source: mt.model.source, control: controlOfFolder(mt.model.dir) },
        rm.model),
    ).toBe(false);
  });
});
