/**
 * `lobes ablate --task iae --model X.gguf`: the items are answered through the GGUF's genai
 * conversion (KV cache: each prompt once for all its options), converted with the run's own
 * weight storage so that it is the run's model, and the answers are the ones the run's explicit
 * conversion (no cache, every option a whole padded row) gives. The tiny GGUF is at chance, so
 * both commands are refused after the pass before ablating; the refusal states what that pass
 * answered, which must agree, and nothing is written.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { cli } from '../runtime/helpers.js';
import { TINY_GGUF } from '../convert/tiny-llama3.js';
import { scopedEnv } from '../env.js';

let root: string;
let cache: string;
const env = scopedEnv();
beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), 'lobes-ablate-gguf-'));
  cache = path.join(root, 'cache');
  env.set({ LOBES_HASH_CACHE: path.join(root, 'file-sha256.json') });
});
afterAll(() => {
  env.restore();
  rmSync(root, { recursive: true, force: true });
});

const layouts = () =>
  readdirSync(cache)
    .filter((n) => existsSync(path.join(cache, n, 'lobes-convert.json')))
    .map((n) =>
      JSON.parse(readFileSync(path.join(cache, n, 'lobes-convert.json'), 'utf8')).options as { layout: string;
        weights: string }
    )
    .map((o) => `${o.layout} ${o.weights}`)
    .sort();

describe('lobes ablate --task iae --model GGUF', () => {
  it("answers through the genai conversion with the run's weights, as the run's explicit conversion answers",
    async () => {
      const texts = path.join(root, 'texts.jsonl');
      const words = ['care', 'plan', 'talk', 'help', 'rest', 'work'];
      writeFileSync(texts,
        Array.from({ length: 24 },
          (_, i) =>
            JSON.stringify({ id: `t${i}`, text: `${words[i % 6]} and ${words[(i * 5) % 6]} every day ${i}`,
              label: 'AB'[i % 2] })).join('\n') + '\n');
      const run = path.join(root, 'run');
      expect(
        (await cli(['extract', '--model', TINY_GGUF, '--data', `jsonl:${texts}?text=text&label=label&id=id`, '--out',
          run, '--capture', 'mlp', '--cache', cache, '--quiet'])).code,
      ).toBe(0);
      expect((await cli(['wanda', run, '--by', 'label', '--block', '16', '--permutations', '9', '--quiet'])).code).toBe(
        0,
      );
      expect(layouts()).toEqual(['explicit fp32']);
      const items = path.join(root, 'items.jsonl');
      const qs = Array.from({ length: 6 },
        (_, i) => ({ id: `q${i}`, q: `Which word is ${words[i]}?`,
          o: [words[i], words[(i + 1) % 6], words[(i + 2) % 6], words[(i + 3) % 6]], a: 0, label: 'AB'[i % 2] }));
      writeFileSync(items, qs.map((x) => JSON.stringify(x)).join('\n') + '\n');
      const args = (out: string,
        extra: string[]) => ['ablate', run, '--region', 'A', '--data',
        `jsonl:${items}?id=id&question=q&options=o&answer=a&label=label`, '--out', out, '--task', 'iae', '--scoring',
        'cloze', '--metric', 'acc_mutual_info', '--random', '1', '--cache', cache, '--quiet', ...extra];
      const cached = await cli(args(path.join(root, 'genai'), ['--model', TINY_GGUF]));
      const plain = await cli(args(path.join(root, 'explicit'), []));
      // The genai conversion was made, with the run's weights; nothing else.
      expect(layouts()).toEqual(['explicit fp32', 'genai fp32']);
      const answered = (err: string) => /acc_mutual_info: (\d+\/\d+) = /.exec(err)?.[1];
      for (const r of [cached, plain]) {
        expect(r.code, r.err).not.toBe(0);
        expect(r.err).toMatch(/not above chance before ablating/);
      }
      expect(answered(cached.err)).toBeDefined();
      expect(answered(cached.err)).toBe(answered(plain.err));
      expect(existsSync(path.join(root, 'genai'))).toBe(false);
      expect(existsSync(path.join(root, 'explicit'))).toBe(false);
      // Letter scoring: the genai conversion shares each prompt across its option orders through
      // the KV cache, the explicit one scores whole padded prompts; the votes agree.
      const letters = (out: string, extra: string[]) =>
        args(out, extra).map((x) => (x === 'cloze' ? 'letter' : x)).filter((x, i, all) =>
          x !== '--metric' && all[i - 1] !== '--metric'
        );
      const lc = await cli(letters(path.join(root, 'genai-letters'), ['--model', TINY_GGUF]));
      const lp = await cli(letters(path.join(root, 'explicit-letters'), []));
      const votes = (err: string) => /letter scoring, acc: (\d+\/\d+) = /.exec(err)?.[1];
      for (const r of [lc, lp]) expect(r.err).toMatch(/not above chance before ablating/);
      expect(votes(lc.err)).toBeDefined();
      expect(votes(lc.err)).toBe(votes(lp.err));
    }, 300_000);
});
