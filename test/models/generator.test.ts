/**
 * The model generator: determinism of the committed built-in model, the tokenizer as
 * @huggingface/transformers loads it, the ONNX graph run by ONNX Runtime against the
 * independent plain-TypeScript forward pass, KV-cache variant, and planting.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { generatedModelParams as genParams, writeModelFolder, ensureGeneratedModel } from '../../src/models/write.js';
import { encodeBpe } from '../../src/models/tokenizer.js';
import { BLOCK, generateParams, type TinyLlamaParams } from '../../src/models/tinyllama.js';
import { LobesError, UsageError } from '../../src/util/errors.js';
import { plantedSamples, readPlant } from '../../src/models/plant.js';
import { halfArrayToFloat } from '../../src/util/half.js';
import { cachedParams, referenceForward, relErr, row } from './reference-forward.js';

const generatedModelParams = (name: string) => cachedParams(name, genParams);

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TINY = path.join(ROOT, 'models', 'tiny-llama');

const TEXTS = [
  'The lighthouse keeper wrote in her notebook.',
  '朋友之间要互相信任。',
  'Hi',
  "It's 2048 o'clock, friends!  Really?",
];

describe('built-in tiny-llama', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'lobes-gen-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('regenerates byte-identically from its seed', () => {
    writeModelFolder(tmp, generatedModelParams('tiny-llama'));
    const committed = readdirSync(TINY).sort();
    expect(readdirSync(tmp).sort()).toEqual(committed);
    for (const f of committed) {
      const a = readFileSync(path.join(TINY, f));
      const b = readFileSync(path.join(tmp, f));
      expect(a.equals(b), `${f} differs`).toBe(true);
    }
  });

  it('tokenizer loads in @huggingface/transformers offline and matches the BPE definition', async () => {
    env.allowRemoteModels = false;
    env.localModelPath = path.dirname(TINY) + path.sep;
    const tok = await AutoTokenizer.from_pretrained(path.basename(TINY), { local_files_only: true });
    const p = generatedModelParams('tiny-llama');
    for (const t of TEXTS) {
      const ids = Array.from(tok.encode(t)) as number[];
      expect(ids[0]).toBe(p.tokenizer.bosId);
      expect(ids).toEqual([p.tokenizer.bosId, ...encodeBpe(p.tokenizer, t)]);
      expect(tok.decode(ids, { skip_special_tokens: true })).toBe(t);
    }
    expect(tok.pad_token_id).toBe(p.tokenizer.padId);
    const chat = tok.apply_chat_template([{ role: 'user', content: 'Hi there' }], { tokenize: false,
      add_generation_prompt: true });
    expect(chat).toBe('<|begin_of_text|>user: Hi there\nassistant:');
  });
});

function makeBatch(seqs: number[][], pad: number, side: 'left' | 'right') {
  const B = seqs.length;
  const S = Math.max(...seqs.map((s) => s.length));
  const ids = new BigInt64Array(B * S).fill(BigInt(pad));
  const mask = new BigInt64Array(B * S);
  const pos = new BigInt64Array(B * S).fill(1n);
  for (let b = 0; b < B; b++) {
    const off = side === 'left' ? S - seqs[b]!.length : 0;
    seqs[b]!.forEach((id, t) => {
      ids[b * S + off + t] = BigInt(id);
      mask[b * S + off + t] = 1n;
      pos[b * S + off + t] = BigInt(t);
    });
  }
  return { B, S, ids, mask, pos };
}

async function checkLogits(modelFile: string, p: TinyLlamaParams, withPast: boolean, fp16 = false) {
  const session = await ort.InferenceSession.create(modelFile);
  const seqs = [
    [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, TEXTS[0]!)],
    [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, TEXTS[2]!)],
    [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, TEXTS[1]!)],
  ];
  const refs = seqs.map((s) => referenceForward(p, s));
  const V = p.opts.vocab;
  let worst = 0;
  for (const side of ['left', 'right'] as const) {
    const { B, S, ids, mask, pos } = makeBatch(seqs, p.tokenizer.padId, side);
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', ids, [B, S]),
      attention_mask: new ort.Tensor('int64', mask, [B, S]),
      position_ids: new ort.Tensor('int64', pos, [B, S]),
    };
    if (withPast) {
      for (let l = 0; l < p.opts.layers; l++) {
        for (const kv of ['key', 'value']) {
          const dims = [B, p.opts.kvHeads, 0, p.headDim];
          feeds[`past_key_values.${l}.${kv}`] = fp16
            ? new ort.Tensor('float16', new Uint16Array(0), dims)
            : new ort.Tensor('float32', new Float32Array(0), dims);
        }
      }
    }
    const out = await session.run(feeds);
    const logits = fp16 ? halfArrayToFloat(out.logits!.data as Uint16Array) : (out.logits!.data as Float32Array);
    expect(out.logits!.type).toBe(fp16 ? 'float16' : 'float32');
    expect(out.logits!.dims).toEqual([B, S, V]);
    if (withPast) expect(out['present.1.key']!.dims).toEqual([B, p.opts.kvHeads, S, p.headDim]);
    for (let b = 0; b < B; b++) {
      const n = seqs[b]!.length;
      const off = side === 'left' ? S - n : 0;
      for (let t = 0; t < n; t++) {
        const got = logits.subarray((b * S + off + t) * V, (b * S + off + t + 1) * V);
        const e = relErr(got, row(refs[b]!.logits, t, V));
        worst = Math.max(worst, e);
      }
      // Padded positions stay finite (no NaN leaking from fully masked rows).
      expect(Array.from(logits.subarray(b * S * V, (b + 1) * S * V)).every(Number.isFinite)).toBe(true);
    }
  }
  await session.release();
  return worst;
}

describe('generated ONNX vs plain-TypeScript forward pass (ONNX Runtime, unmodified graph)', () => {
  it('tiny-llama logits match at every real token, left and right padding', async () => {
    const worst = await checkLogits(path.join(TINY, 'model.onnx'), generatedModelParams('tiny-llama'), false);
    expect(worst).toBeLessThan(1e-4);
  });

  it('KV-cache variant with empty past gives the same logits and present.* shapes', async () => {
    const dir = ensureGeneratedModel('tiny-llama-past');
    const worst = await checkLogits(path.join(dir, 'model.onnx'), generatedModelParams('tiny-llama-past'), true);
    expect(worst).toBeLessThan(1e-4);
  });

  it('4-bit MatMulNBits variant computes with exactly the dequantized weights', async () => {
    const p = generatedModelParams('tiny-llama-q4');
    const base = generatedModelParams('tiny-llama');
    // Quantization changed the weights, but only by at most half a quantization step.
    const q = p.quantized![0]!.gate;
    let maxDiff = 0;
    let maxScale = 0;
    for (let i = 0; i < base.layers[0]!.gate.length; i++)
      maxDiff = Math.max(maxDiff, Math.abs(p.layers[0]!.gate[i]! - base.layers[0]!.gate[i]!));
    for (const s of q.scales) maxScale = Math.max(maxScale, s);
    expect(maxDiff).toBeGreaterThan(0);
    expect(maxDiff).toBeLessThanOrEqual(maxScale / 2 + 1e-6);
    const dir = ensureGeneratedModel('tiny-llama-q4');
    const worst = await checkLogits(path.join(dir, 'model.onnx'), p, false);
    expect(worst).toBeLessThan(1e-4);
  });

  it('float16 variant (fp16 weights, compute, past and logits) agrees within fp16 precision', async () => {
    const dir = ensureGeneratedModel('tiny-llama-fp16');
    const worst = await checkLogits(path.join(dir, 'model.onnx'), generatedModelParams('tiny-llama-fp16'), true, true);
    expect(worst).toBeLessThan(1e-2);
  });
});

describe('planting (blocks model)', () => {
  it.each(['blocks', 'blocks-q4'])(
    '%s: a planted group lights up its hidden block F, intermediate block G, and its Wanda blocks win',
    (name) => {
      const p = generatedModelParams(name);
      const H = p.opts.hidden;
      const I = p.opts.intermediate;
      expect(p.planted.map((g) => g.group)).toEqual(['alpha', 'beta']);
      // Mean x² per feature at the last token, per group, per layer.
      const sq = new Map<string, { mlp: Float64Array[]; down: Float64Array[] }>();
      for (const g of p.planted) {
        const acc = { mlp: p.layers.map(() => new Float64Array(H)), down: p.layers.map(() => new Float64Array(I)) };
        for (const w of g.words) {
          const ids = [p.tokenizer.bosId, ...encodeBpe(p.tokenizer, 'We talked about it and then' + w)];
          expect(ids[ids.length - 1]).toBe(g.tokenIds[g.words.indexOf(w)]);
          const r = referenceForward(p, ids);
          const t = ids.length - 1;
          for (let l = 0; l < p.layers.length; l++) {
            const x = row(r.mlpIn[l]!, t, H);
            const m = row(r.downIn[l]!, t, I);
            for (let j = 0; j < H; j++) acc.mlp[l]![j]! += (x[j]! * x[j]!) / g.words.length;
            for (let j = 0; j < I; j++) acc.down[l]![j]! += (m[j]! * m[j]!) / g.words.length;
          }
        }
        sq.set(g.group, acc);
      }
      // Wanda block score: mean over the block of |W_oi| · sqrt(mean x_i²), W in HF layout [out, in].
      const blockScores = (w: Float32Array, dOut: number, dIn: number, x2: Float64Array) => {
        const nO = dOut / BLOCK;
        const nI = dIn / BLOCK;
        const s = new Float64Array(nO * nI);
        for (let o = 0; o < dOut; o++) {
          for (let i = 0; i < dIn; i++) {
            s[Math.floor(o / BLOCK) * nI + Math.floor(i / BLOCK)]! += Math.abs(w[o * dIn + i]!) * Math.sqrt(x2[i]!);
          }
        }
        return s;
      };
      for (const g of p.planted) {
        const other = p.planted.find((o) => o.group !== g.group)!;
        const mine = sq.get(g.group)!;
        const theirs = sq.get(other.group)!;
        for (let l = 0; l < p.layers.length; l++) {
          const L = p.layers[l]!;
          // Energy of the MLP input concentrated on F; of the down input on G.
          const energy = (a: Float64Array, blk: number) => {
            let inB = 0;
            let all = 0;
            for (let j = 0; j < a.length; j++) {
              all += a[j]!;
              if (Math.floor(j / BLOCK) === blk) inB += a[j]!;
            }
            return inB / all;
          };
          expect(energy(mine.mlp[l]!, g.hiddenBlock)).toBeGreaterThan(0.9);
          expect(energy(mine.down[l]!, g.interBlock)).toBeGreaterThan(0.95);
          const nI = H / BLOCK;
          const gate = blockScores(L.gate, I, H, mine.mlp[l]!);
          const gateOther = blockScores(L.gate, I, H, theirs.mlp[l]!);
          const target = g.interBlock * nI + g.hiddenBlock;
          expect(argmax(gate)).toBe(target);
          expect(gate[target]!).toBeGreaterThan(2 * gateOther[target]!);
          const down = blockScores(L.down, H, I, mine.down[l]!);
          const downOther = blockScores(L.down, H, I, theirs.down[l]!);
          const dTarget = g.downBlock * (I / BLOCK) + g.interBlock;
          expect(argmax(down)).toBe(dTarget);
          expect(down[dTarget]!).toBeGreaterThan(2 * downOther[dTarget]!);
        }
      }
    },
  );
});

function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[best]!) best = i;
  return best;
}

describe('bad input', () => {
  it('an unknown model name or an impossible shape is a one-line LobesError', () => {
    expect(() => ensureGeneratedModel('no-such-model')).toThrow(
      /unknown generated model "no-such-model" \(known: tiny-llama, /,
    );
    expect(() => genParams('no-such-model')).toThrow(UsageError);
    const base = { layers: 1, hidden: 64, intermediate: 256, heads: 4, kvHeads: 2, vocab: 512, seed: 1 };
    expect(() => generateParams({ ...base, kvHeads: 3 })).toThrow(/heads 4 is not a multiple of kvHeads 3/);
    expect(() => generateParams({ ...base, vocab: 100 })).toThrow(LobesError);
    expect(() => generateParams({ ...base, plant: [{ group: 'x', hiddenBlock: 1, interBlock: 0 }] })).toThrow(
      /hidden block out of range/,
    );
    expect(() => generateParams({ ...base, quant: { bits: 4, blockSize: 48 } })).toThrow(
      /not a multiple of block size 48/,
    );
  });
});

describe('planted samples', () => {
  it('plant.json matches the generator and every sample ends in a planted token of its group', () => {
    const dir = ensureGeneratedModel('blocks');
    const plant = readPlant(dir)!;
    const p = generatedModelParams('blocks');
    expect(plant.groups).toEqual(JSON.parse(JSON.stringify(p.planted)));
    const samples = plantedSamples(plant, { perGroup: 12, control: true, seed: 7 });
    expect(samples.length).toBe(36);
    const plantedIds = new Set(p.planted.flatMap((g) => g.tokenIds));
    for (const s of samples) {
      const ids = encodeBpe(p.tokenizer, s.text);
      const last = ids[ids.length - 1]!;
      const g = p.planted.find((x) => x.group === s.labels.group);
      if (g) expect(g.tokenIds).toContain(last);
      else {
        expect(s.labels.group).toBe('control');
        expect(plantedIds.has(last)).toBe(false);
      }
    }
    expect(plantedSamples(plant, { perGroup: 12, control: true, seed: 7 })).toEqual(samples);
    expect(readPlant(TINY)).toBeNull();
  });
});
