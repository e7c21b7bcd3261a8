/**
 * The commands that load (or convert) a model check their --data before it: a mistyped dataset
 * path must fail in one line naming it, not after minutes of converting a GGUF. The model given
 * here is a file that is not a GGUF at all, so a command that opened the model first would fail
 * on it instead, and nothing may be written to the conversion cache.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'lobes-early-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const model = join(dir, 'model.gguf');
writeFileSync(model, 'this is not a GGUF file\n');
const cache = join(dir, 'cache');
const missing = join(dir, 'no-such-data');
// a run folder as far as ablate's first check reads it (its manifest)
const run = join(dir, 'run');
mkdirSync(run);
writeFileSync(join(run, 'manifest.json'), JSON.stringify({ format: 'lobes-run', formatVersion: 1 }));

type Cmd = { name: string; argv: (data: string) => string[]; run: () => Promise<(argv: string[]) => Promise<number>> };
const commands: Cmd[] = [
  { name: 'eval', argv: (d) => ['--model', model, '--data', d, '--out', join(dir, 'e'), '--cache', cache, '--quiet'],
    run: async () => (await import('../../src/cli/eval.js')).run },
  { name: 'extract', argv: (d) => ['--model', model, '--data', d, '--out', join(dir, 'x'), '--cache', cache, '--quiet'],
    run: async () => (await import('../../src/cli/extract.js')).run },
  { name: 'attend', argv: (d) => ['--model', model, '--data', d, '--out', join(dir, 'a'), '--cache', cache, '--quiet'],
    run: async () => (await import('../../src/cli/attend.js')).run },
  { name: 'ablate',
    argv: (
      d,
    ) => [run, '--model', model, '--region', 'all', '--data', d, '--out', join(dir, 'b'), '--cache', cache, '--quiet'],
    run: async () => (await import('../../src/cli/ablate.js')).run },
];

async function failure(c: Cmd, data: string): Promise<string> {
  const run = await c.run();
  try {
    await run(c.argv(data));
  } catch (e: any) {
    return String(e?.message ?? e);
  }
  throw new Error(`lobes ${c.name} --data ${data} did not fail`);
}

describe('--data is checked before the model is opened', () => {
  for (const c of commands) {
    it(`lobes ${c.name}: a socialeval: folder that does not exist`, async () => {
      const msg = await failure(c, `socialeval:${missing}`);
      expect(msg).toContain(missing);
      expect(msg).toMatch(/no such file or folder/);
      expect(msg).not.toMatch(/gguf|magic/i);
      expect(existsSync(cache)).toBe(false);
    });
  }

  it('a jsonl: path that is a folder, and one that does not exist', async () => {
    const run = (await import('../../src/cli/extract.js')).run;
    await expect(
      run(['--model', model, '--data', `jsonl:${dir}?text=t&label=l`, '--out', join(dir, 'x'), '--cache', cache]),
    ).rejects.toThrow(/is a folder, expected a file/);
    await expect(
      run(['--model', model, '--data', `jsonl:${missing}.jsonl?text=t&label=l`, '--out', join(dir, 'x'), '--cache',
        cache]),
    ).rejects.toThrow(/no-such-data\.jsonl.*no such file/);
    expect(existsSync(cache)).toBe(false);
  });

  it('a kind the command does not read, and a missing --prompt file', async () => {
    const run = (await import('../../src/cli/eval.js')).run;
    await expect(
      run(['--model', model, '--data', `csv:${missing}.csv?text=t&label=l`, '--out', join(dir, 'e'), '--cache', cache]),
    ).rejects.toThrow(/does not read csv:/);
    const jsonl = join(dir, 'items.jsonl');
    writeFileSync(jsonl, '');
    await expect(
      run(['--model', model, '--data', `jsonl:${jsonl}`, '--prompt', join(dir, 'no-prompt.txt'), '--out',
        join(dir, 'e'), '--cache', cache]),
    ).rejects.toThrow(/no-prompt\.txt.*no such file/);
    expect(existsSync(cache)).toBe(false);
  });

  it('ablate: a run folder that is not a run; attend: an --eval folder that is not an evaluation', async () => {
    const ablate = (await import('../../src/cli/ablate.js')).run;
    await expect(
      ablate([join(dir, 'no-run'), '--model', model, '--region', 'all', '--data', `socialeval:${dir}`, '--out',
        join(dir, 'b'), '--cache', cache]),
    ).rejects.toThrow(/no-run\/manifest\.json: not a lobes run/);
    const attend = (await import('../../src/cli/attend.js')).run;
    await expect(attend(['--model', model, '--eval', join(dir, 'no-eval'), '--out', join(dir, 'a'), '--cache', cache]))
      .rejects.toThrow(/no-eval: not a lobes evaluation folder \(no eval\.json\)/);
    expect(existsSync(cache)).toBe(false);
  });

  it('with good data, the model is what fails (the check is not a blanket refusal)', async () => {
    const run = (await import('../../src/cli/extract.js')).run;
    await expect(
      run(['--model', model, '--data', 'builtin:social', '--out', join(dir, 'x'), '--cache', cache, '--quiet']),
    ).rejects.toThrow(/model\.gguf/);
  });
});
