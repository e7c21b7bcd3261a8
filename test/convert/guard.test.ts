/**
 * The conversion's guards, each a defect reproduced in a temporary folder: a flipped byte in
 * a cache entry (same size, same mtime), a GGUF rewritten during conversion, a lock naming a
 * live process, overlapping tensors, `convert --force` on the folder holding the source or on
 * a folder lobes did not write, a FIFO given as the model. Each asserts the exit code, the
 * one-line message, and that the source and the user's files are byte-identical afterwards.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync,
  writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { ROOT } from './gguf-fixtures.js';
import { TINY_GGUF } from './tiny-llama3.js';
import { resolveModel, cacheEntryName, entryProblem } from '../../src/convert/cache.js';
import { convertGguf, ggufIdentity } from '../../src/convert/convert.js';
import { readGgufHeader } from '../../src/formats/gguf.js';
import { processStartMs } from '../../src/util/lock.js';
import { scopedEnv } from '../env.js';

const BIN = path.join(ROOT, 'src/cli/bin.ts');
let tmp: string;
let env: NodeJS.ProcessEnv;
const scoped = scopedEnv();

function lobes(args: string[], extra: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT,
    env: { ...process.env, ...env, ...extra }, encoding: 'utf8', timeout: 110_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}

/** Every file under `dir` with its bytes (to compare a folder before and after). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const n of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, n.name);
      if (n.isDirectory()) walk(p);
      else if (n.isFile()) out[path.relative(dir, p)] = readFileSync(p).toString('base64');
    }
  };
  walk(dir);
  return out;
}

const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  return lines[0]!;
};

beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'lobes-convert-guard-'));
  // A private file-hash cache, so that what the machine cache holds cannot hide a change.
  env = { LOBES_HASH_CACHE: path.join(tmp, 'file-sha256.json') };
  scoped.set({ LOBES_HASH_CACHE: env.LOBES_HASH_CACHE });
});
afterAll(() => {
  scoped.restore();
  rmSync(tmp, { recursive: true, force: true });
});

describe('the conversion cache is verified on use', { timeout: 300_000 }, () => {
  it('an entry whose model.onnx.data had bytes flipped (same size, same mtime) is not used: rebuilt, with a line saying why', async () => {
    const cache = path.join(tmp, 'flip');
    const logs: string[] = [];
    const a = await resolveModel(TINY_GGUF, { cache, weights: 'fp32', log: (l) => logs.push(l) });
    expect(a.converted).not.toBeNull();
    const data = path.join(a.dir, 'model.onnx.data');
    const good = readFileSync(data);
    // Flip bytes in the middle of the weights, keep size and mtime (to the nanosecond).
    const st = statSync(data);
    const ref = path.join(tmp, 'times-ref');
    writeFileSync(ref, '');
    execFileSync('touch', ['-r', data, ref]);
    const bad = Buffer.from(good);
    for (let i = 0; i < 16; i++) bad[(bad.length >> 1) + i] ^= 0xff;
    writeFileSync(data, bad);
    execFileSync('touch', ['-r', ref, data]);
    expect(statSync(data, { bigint: true }).mtimeNs).toBe(statSync(ref, { bigint: true }).mtimeNs);
    expect(statSync(data).size).toBe(st.size);
    const entry = path.basename(a.dir);
    expect(entryProblem(a.dir, entry)).toMatch(
      /^model\.onnx\.data has sha256 [0-9a-f]{12}…, [0-9a-f]{12}… when written$/,
    );
    logs.length = 0;
    const b = await resolveModel(TINY_GGUF, { cache, weights: 'fp32', log: (l) => logs.push(l) });
    expect(b.dir).toBe(a.dir);
    expect(b.converted).not.toBeNull();
    expect(logs[0]).toMatch(/is not used: model\.onnx\.data has sha256 .* when written; converting again$/);
    expect(readFileSync(data).equals(good)).toBe(true);
    // A third use finds it valid, reading nothing again.
    const c = await resolveModel(TINY_GGUF, { cache, weights: 'fp32', log: (l) => logs.push(l) });
    expect(c.converted).toBeNull();
  });

  it('an added file or a missing one makes the entry invalid too', async () => {
    const cache = path.join(tmp, 'extra');
    const a = await resolveModel(TINY_GGUF, { cache, weights: 'q4', log: () => {} });
    const entry = path.basename(a.dir);
    writeFileSync(path.join(a.dir, 'notes.txt'), 'x');
    expect(entryProblem(a.dir, entry)).toBe('notes.txt was added');
    rmSync(path.join(a.dir, 'notes.txt'));
    rmSync(path.join(a.dir, 'tokenizer.json'));
    expect(entryProblem(a.dir, entry)).toBe('tokenizer.json is missing');
  });

  it('records the GGUF content identity, the same for both layouts', async () => {
    const cache = path.join(tmp, 'ident');
    const ex = await resolveModel(TINY_GGUF, { cache, log: () => {} });
    const ga = await resolveModel(TINY_GGUF, { cache, layout: 'genai', log: () => {} });
    expect(ex.dir).not.toBe(ga.dir);
    const want = execFileSync('sha256sum', [TINY_GGUF], { encoding: 'utf8' }).split(' ')[0];
    expect(ex.source!.sha256).toBe(want);
    expect(ex.source!.identity).toMatch(/^[0-9a-f]{64}$/);
    expect(ga.source!.identity).toBe(ex.source!.identity);
    // The identity is of the storage as resolved: auto resolves to what the record says, and
    // naming that storage is the same model; another storage is another model (other numbers).
    const resolved = JSON.parse(readFileSync(path.join(ex.dir, 'lobes-convert.json'), 'utf8')).options.weights;
    const same = await resolveModel(TINY_GGUF, { cache, weights: resolved, log: () => {} });
    expect(same.source!.identity).toBe(ex.source!.identity);
    const other = await resolveModel(TINY_GGUF, { cache, weights: resolved === 'q4' ? 'fp32' : 'q4', log: () => {} });
    expect(other.source!.identity).not.toBe(ex.source!.identity);
  });

  it('a lock naming a live process ends with one line naming the lock file, instead of waiting forever', () => {
    const cache = path.join(tmp, 'locked');
    mkdirSync(cache);
    const id = ggufIdentity(TINY_GGUF, readGgufHeader(TINY_GGUF).dataStart);
    const entry = cacheEntryName(id, { dtype: 'fp32', weights: 'auto', layout: 'explicit' });
    const lock = path.join(cache, `${entry}.lock`);
    // a live node process (a live pid of another program is a stale lock at once)
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      writeFileSync(lock,
        JSON.stringify({ pid: holder.pid, host: hostname(), processStartMs: processStartMs(holder.pid!),
          takenAt: new Date().toISOString() }));
      const t0 = Date.now();
      const r = lobes(['inspect', TINY_GGUF, '--cache', cache], { LOBES_LOCK_TIMEOUT: '2' });
      expect(Date.now() - t0).toBeLessThan(100_000);
      expect(r.code).toBe(1);
      const last = r.stderr.trim().split('\n').pop()!;
      expect(last).toMatch(
        new RegExp(
          `^lobes inspect: ${
            lock.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
          }: waited \\d+ s for the lock held by pid ${holder.pid} on ${hostname()}`,
        ),
      );
      expect(last).toMatch(/remove the lock file/);
      expect(existsSync(lock)).toBe(true);
      expect(readdirSync(cache)).toEqual([`${entry}.lock`]);
    } finally {
      holder.kill();
    }
  });
});

describe('lobes convert', { timeout: 300_000 }, () => {
  it('refuses a GGUF rewritten while it is converted, writing nothing', async () => {
    const file = path.join(tmp, 'changing.gguf');
    copyFileSync(TINY_GGUF, file);
    const out = path.join(tmp, 'changing-out');
    const g = readGgufHeader(file);
    const t = g.tensors.find((x) => x.name === 'blk.1.ffn_down.weight')!;
    let done = false;
    const err = await convertGguf(file, out, {
      weights: 'fp32',
      onProgress: () => {
        if (done) return;
        done = true;
        // Another writer rewrites weights in place and puts the modification time back.
        const ref = path.join(tmp, 'changing-ref');
        writeFileSync(ref, '');
        execFileSync('touch', ['-r', file, ref]);
        const buf = readFileSync(file);
        for (let i = 0; i < 64; i++) buf[t.offset + i] ^= 0x55;
        writeFileSync(file, buf);
        execFileSync('touch', ['-r', ref, file]);
      },
    }).catch((e) => e);
    expect(done).toBe(true);
    expect(err?.message).toBe(
      `${file}: the GGUF changed while it was being converted (status-change time (the file was written)); nothing was written (convert again once nothing is writing the file)`,
    );
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(tmp).filter((n) => n.includes('changing-out'))).toEqual([]);
  });

  it('--force never removes its source: the folder holding the GGUF is refused, byte-identical', () => {
    const gx = path.join(tmp, 'gx');
    mkdirSync(gx);
    copyFileSync(TINY_GGUF, path.join(gx, 'm.gguf'));
    writeFileSync(path.join(gx, 'notes.txt'), 'mine');
    const before = snapshot(gx);
    const r = lobes(['convert', path.join(gx, 'm.gguf'), '--out', gx, '--force', '--quiet']);
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe(
      `lobes convert: ${gx}: --force would replace the folder that holds the source GGUF (m.gguf); nothing was changed (choose another --out)`,
    );
    expect(snapshot(gx)).toEqual(before);
    expect(readdirSync(tmp).filter((n) => n.startsWith('.gx'))).toEqual([]);
  });

  it("--force refuses a folder lobes did not write, and a converted folder holding the user's files; it replaces a plain conversion", () => {
    const mine = path.join(tmp, 'mine');
    mkdirSync(mine);
    writeFileSync(path.join(mine, 'thesis.tex'), 'years of work');
    const before = snapshot(mine);
    const r = lobes(['convert', TINY_GGUF, '--out', mine, '--force', '--quiet']);
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe(
      `lobes convert: ${mine}: --force replaces only a folder lobes convert wrote (one holding its lobes-convert.json); this one has none, so nothing was changed (choose another --out, or empty the folder yourself)`,
    );
    expect(snapshot(mine)).toEqual(before);

    const conv = path.join(tmp, 'conv');
    expect(lobes(['convert', TINY_GGUF, '--out', conv, '--quiet']).code).toBe(0);
    writeFileSync(path.join(conv, 'my-notes.md'), 'notes');
    const before2 = snapshot(conv);
    const r2 = lobes(['convert', TINY_GGUF, '--out', conv, '--force', '--weights', 'fp32', '--quiet']);
    expect(r2.code).toBe(1);
    expect(oneLine(r2.stderr)).toMatch(
      /--force would remove a file lobes convert did not write \(my-notes\.md\); nothing was changed/,
    );
    expect(snapshot(conv)).toEqual(before2);
    rmSync(path.join(conv, 'my-notes.md'));
    const r3 = lobes(['convert', TINY_GGUF, '--out', conv, '--force', '--weights', 'fp32', '--quiet']);
    expect(r3.code, r3.stderr).toBe(0);
    expect(JSON.parse(readFileSync(path.join(conv, 'lobes-convert.json'), 'utf8')).options.weights).toBe('fp32');
  });

  it('a FIFO as the model is one line, at once (never a hang); so is a GGUF with overlapping tensors', () => {
    const fifo = path.join(tmp, 'pipe.gguf');
    execFileSync('mkfifo', [fifo]);
    const r = lobes(['convert', fifo, '--out', path.join(tmp, 'fifo-out'), '--quiet']);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe(
      `lobes convert: ${fifo}: GGUF file is a named pipe (FIFO), not a regular file (give the path of the .gguf file itself)`,
    );
    expect(existsSync(path.join(tmp, 'fifo-out'))).toBe(false);
    const x = lobes(['extract', '--model', fifo, '--cache', path.join(tmp, 'fifo-cache'), '--data', 'builtin:social',
      '--out', path.join(tmp, 'fifo-run'), '--quiet']);
    expect(x.signal).toBeNull();
    expect(x.code).toBe(1);
    expect(oneLine(x.stderr)).toMatch(/GGUF file is a named pipe \(FIFO\), not a regular file/);

    // Two tensors at one offset: blk.0.ffn_up's offset set to blk.0.ffn_gate's.
    const g = readGgufHeader(TINY_GGUF);
    const buf = readFileSync(TINY_GGUF);
    const up = g.tensors.find((t) => t.name === 'blk.0.ffn_up.weight')!;
    const gate = g.tensors.find((t) => t.name === 'blk.0.ffn_gate.weight')!;
    const name = Buffer.from('blk.0.ffn_up.weight');
    const at = buf.indexOf(name) + name.length + 4 + 8 * up.dims.length + 4;
    expect(Number(buf.readBigUInt64LE(at))).toBe(up.offset - g.dataStart);
    buf.writeBigUInt64LE(BigInt(gate.offset - g.dataStart), at);
    const shared = path.join(tmp, 'shared-offset.gguf');
    writeFileSync(shared, buf);
    const o = lobes(['convert', shared, '--out', path.join(tmp, 'shared-out'), '--quiet']);
    expect(o.code).toBe(1);
    expect(oneLine(o.stderr)).toMatch(
      new RegExp(
        `tensor infos: tensors "blk\\.0\\.ffn_(gate|up)\\.weight" \\[${gate.offset}, \\d+\\) and "blk\\.0\\.ffn_(gate|up)\\.weight" \\[${gate.offset}, \\d+\\) share bytes of the data section`,
      ),
    );
    expect(existsSync(path.join(tmp, 'shared-out'))).toBe(false);
  });
});
