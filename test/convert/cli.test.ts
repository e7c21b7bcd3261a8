/**
 * `lobes convert` and `--model FILE.gguf` through the command line and the conversion cache,
 * on the tiny Llama-3.1-shaped GGUF (test/goldens/gguf-llama3-tiny) and corrupted copies
 * of it: bad input gives a one-line error and leaves nothing behind (no --out folder, no cache
 * entry, no lock, no temporary folder); the cache converts once, also under concurrency, and
 * never uses a stale or half-written entry.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync,
  writeFileSync, appendFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import * as path from 'node:path';
import { ROOT } from './gguf-fixtures.js';
import { TINY_GGUF } from './tiny-llama3.js';
import { resolveModel, defaultCacheDir, cacheEntryName, validEntry } from '../../src/convert/cache.js';
import { ggufIdentity } from '../../src/convert/convert.js';
import { readGgufHeader } from '../../src/formats/gguf.js';

const BIN = path.join(ROOT, 'src/cli/bin.ts');

function lobes(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env },
    encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function lobesAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const TINY = readFileSync(TINY_GGUF);

/** Byte offset of the first occurrence of a GGUF string (u64 length + bytes) in the file. */
function stringAt(buf: Buffer, s: string): number {
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(s)));
  const at = buf.indexOf(Buffer.concat([len, Buffer.from(s)]));
  if (at < 0) throw new Error(`${s} not found`);
  return at;
}

/** Corrupted copies of the tiny GGUF, each with the message its error must contain. */
function badFiles(dir: string): Array<{ name: string; file: string; want: RegExp }> {
  const out: Array<{ name: string; file: string; want: RegExp }> = [];
  const put = (name: string, buf: Buffer, want: RegExp) => {
    const file = path.join(dir, `${name}.gguf`);
    writeFileSync(file, buf);
    out.push({ name, file, want });
  };
  put('truncated', TINY.subarray(0, Math.floor(TINY.length / 2)), /runs past the end of the file.*truncated/);
  put('truncated-header', TINY.subarray(0, 100), /more than the file can hold: truncated or corrupt GGUF/);
  const magic = Buffer.from(TINY);
  magic.write('GGUX', 0, 'latin1');
  put('wrong-magic', magic, /not a GGUF file: magic "GGUX"/);
  // A tensor whose data offset runs past the end: blk.0.ffn_up's info is name, u32 ndims, 2 dims, u32 type, u64 offset.
  const past = Buffer.from(TINY);
  const tAt = stringAt(past, 'blk.0.ffn_up.weight') + 8 + 'blk.0.ffn_up.weight'.length;
  past.writeBigUInt64LE(BigInt(Math.ceil(TINY.length / 32) * 32), tAt + 4 + 16 + 4);
  put('tensor-past-end', past, /tensor "blk\.0\.ffn_up\.weight": data \[\d+, \d+\) runs past the end of the file/);
  // general.name's string length made larger than the file.
  const str = Buffer.from(TINY);
  const nAt = stringAt(str, 'general.name') + 8 + 'general.name'.length;
  str.writeBigUInt64LE(1n << 40n, nAt + 4);
  put('string-past-end', str, /metadata "general\.name": string of 1099511627776 bytes runs past the end of the file/);
  const arch = Buffer.from(TINY);
  const aAt = stringAt(arch, 'general.architecture') + 8 + 'general.architecture'.length + 4;
  expect(arch.toString('latin1', aAt + 8, aAt + 13)).toBe('llama');
  arch.write('gemma', aAt + 8, 'latin1');
  put('non-llama', arch, /architecture "gemma" \(Gemma 1\) is not converted from GGUF: its conversion has no oracle/);
  const other = Buffer.from(TINY);
  other.write('mamba', aAt + 8, 'latin1');
  put('unknown-arch', other,
    /architecture "mamba" is not supported: lobes converts llama, qwen2, qwen3, phi3, gemma2, gemma3 GGUFs/);
  // blk.0.ffn_gate's type (Q4_K) set to IQ2_XXS (id 16), whose blocks are smaller: the file stays readable.
  const quant = Buffer.from(TINY);
  const qAt = stringAt(quant, 'blk.0.ffn_gate.weight') + 8 + 'blk.0.ffn_gate.weight'.length;
  quant.writeUInt32LE(16, qAt + 4 + 16);
  put('unsupported-quant', quant, /tensor "blk\.0\.ffn_gate\.weight": GGML type IQ2_XXS cannot be converted/);
  return out;
}

describe('bad GGUF input: one-line errors, nothing half-written', () => {
  let tmp: string;
  let files: ReturnType<typeof badFiles>;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-gguf-bad-'));
    files = badFiles(tmp);
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('lobes convert refuses each one and writes no folder', () => {
    for (const f of files) {
      const outParent = path.join(tmp, `convert-${f.name}`);
      mkdirSync(outParent);
      const r = lobes(['convert', f.file, '--out', path.join(outParent, 'model'), '--quiet']);
      expect(r.code, f.name).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines, f.name).toHaveLength(1);
      expect(lines[0], f.name).toMatch(/^lobes convert: /);
      expect(lines[0], f.name).toContain(f.file);
      expect(lines[0], f.name).toMatch(f.want);
      expect(readdirSync(outParent), f.name).toEqual([]);
    }
  });

  it('lobes extract --model FILE.gguf refuses each one and leaves the cache and the run folder empty', () => {
    for (const f of files) {
      const cache = path.join(tmp, `cache-${f.name}`);
      const run = path.join(tmp, `run-${f.name}`);
      const r = lobes(['extract', '--model', f.file, '--cache', cache, '--data', 'builtin:social', '--out', run,
        '--quiet']);
      expect(r.code, f.name).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines, f.name).toHaveLength(1);
      expect(lines[0], f.name).toMatch(f.want);
      expect(existsSync(cache) ? readdirSync(cache) : [], f.name).toEqual([]);
      expect(existsSync(run), f.name).toBe(false);
    }
  });
});

describe('lobes convert and --model FILE.gguf on a good file', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-gguf-cli-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('convert writes the folder, --json describes it, and a second run without --force refuses to overwrite', () => {
    const out = path.join(tmp, 'tiny');
    const r = lobes(['convert', TINY_GGUF, '--out', out, '--weights', 'q4', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.options).toEqual({ dtype: 'fp32', weights: 'q4', layout: 'explicit' });
    expect(j.spec.ropeScaling.rope_type).toBe('llama3');
    expect(readdirSync(out).sort()).toEqual(['config.json', 'generation_config.json', 'lobes-convert.json',
      'model.onnx', 'model.onnx.data', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']);
    const rec = JSON.parse(readFileSync(path.join(out, 'lobes-convert.json'), 'utf8'));
    expect(rec.source).toMatchObject({ format: 'gguf', path: TINY_GGUF, size: statSync(TINY_GGUF).size });
    expect(statSync(path.join(out, 'model.onnx.data')).size).toBe(j.dataBytes);
    const again = lobes(['convert', TINY_GGUF, '--out', out, '--quiet']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/exists and is not empty/);
    const forced = lobes(['convert', TINY_GGUF, '--out', out, '--weights', 'fp32', '--force', '--quiet']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(readFileSync(path.join(out, 'lobes-convert.json'), 'utf8')).options.weights).toBe('fp32');
  });

  it('bad flags are usage errors (exit 2)', () => {
    expect(lobes(['convert', TINY_GGUF, '--out', path.join(tmp, 'x'), '--weights', 'q3']).code).toBe(2);
    expect(lobes(['convert', TINY_GGUF, '--out', path.join(tmp, 'x'), '--dtype', 'fp16', '--weights', 'fp32']).code)
      .toBe(2);
    expect(lobes(['convert', TINY_GGUF]).code).toBe(2);
    expect(existsSync(path.join(tmp, 'x'))).toBe(false);
  });

  it('inspect takes the GGUF, converting it once into the cache; two processes at once share one conversion', async () => {
    const cache = path.join(tmp, 'cache-inspect');
    const [a, b] = await Promise.all([lobesAsync(['inspect', TINY_GGUF, '--cache', cache]),
      lobesAsync(['inspect', TINY_GGUF, '--cache', cache])]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(a.stdout).toContain(`converted from ${TINY_GGUF}`);
    // Exactly one of the two converted (the other waited for its lock, or found the entry).
    expect([a.stderr, b.stderr].filter((e) => /converting .* to ONNX \(once\)/.test(e))).toHaveLength(1);
    const j = lobes(['inspect', TINY_GGUF, '--cache', cache, '--json']);
    expect(j.code, j.stderr).toBe(0);
    expect(j.stderr).toBe('');
    const ja = JSON.parse(j.stdout);
    expect(ja.arch).toMatchObject({ family: 'llama', layers: 2, hidden: 256, intermediate: 512, heads: 4, kvHeads: 2,
      vocab: 1024 });
    expect(ja.source).toMatchObject({ format: 'gguf', path: TINY_GGUF });
    // One entry, no lock, no build folder left.
    expect(readdirSync(cache)).toEqual([path.basename(ja.source.converted)]);
  });

  it('demo --model FILE.gguf runs the whole pipeline on the GGUF', () => {
    const out = path.join(tmp, 'demo');
    const r = lobes(['demo', '--model', TINY_GGUF, '--cache', path.join(tmp, 'cache-demo'), '--out', out,
      '--permutations', '3', '--quiet', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(existsSync(j.report)).toBe(true);
    const m = JSON.parse(readFileSync(path.join(j.run, 'manifest.json'), 'utf8'));
    expect(m.model.source.path).toBe(TINY_GGUF);
    const settings = JSON.parse(readFileSync(path.join(j.run, 'wanda', 'settings.json'), 'utf8'));
    expect(settings.weights.source).toBe('gguf');
    expect(settings.block).toEqual([16, 16]); // hidden 256: the default (auto) gives 16 blocks on the short side
    // wanda takes the GGUF as --model too (the same as --weights).
    const w = lobes(['wanda', j.run, '--model', TINY_GGUF, '--block', '32', '--permutations', '0', '--threads', '1',
      '--json']);
    expect(w.code, w.stderr).toBe(0);
    expect(JSON.parse(w.stdout).settings.weights).toMatchObject({ source: 'gguf', path: TINY_GGUF });
    expect(lobes(['wanda', j.run, '--model', TINY_GGUF, '--weights', path.join(ROOT, 'models', 'tiny-llama')]).code)
      .toBe(2);
  });
});

describe('the conversion cache', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(path.join(tmpdir(), 'lobes-gguf-cache-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const quiet = { log: () => {} };

  it('lives in --cache, else $LOBES_CACHE/gguf, else $XDG_CACHE_HOME/lobes/gguf, else ~/.cache/lobes/gguf', () => {
    expect(defaultCacheDir({ LOBES_CACHE: '/c' })).toBe(path.join('/c', 'gguf'));
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/x' })).toBe(path.join('/x', 'lobes', 'gguf'));
    expect(defaultCacheDir({ HOME: process.env.HOME })).toMatch(/\.cache[/\\]lobes[/\\]gguf$/);
  });

  it('passes a folder through and converts a GGUF once; concurrent calls share one conversion', async () => {
    expect(await resolveModel(path.join(ROOT, 'models', 'tiny-llama'), quiet)).toEqual({
      dir: path.join(ROOT, 'models', 'tiny-llama'),
      source: null,
      converted: null,
    });
    const cache = path.join(tmp, 'c1');
    const all = await Promise.all([0, 1, 2].map(() => resolveModel(TINY_GGUF, { ...quiet, cache, weights: 'fp32' })));
    expect(new Set(all.map((r) => r.dir)).size).toBe(1);
    expect(all.filter((r) => r.converted !== null)).toHaveLength(1);
    const again = await resolveModel(TINY_GGUF, { ...quiet, cache, weights: 'fp32' });
    expect(again.converted).toBeNull();
    expect(again.dir).toBe(all[0]!.dir);
    // Other options are another entry.
    const q4 = await resolveModel(TINY_GGUF, { ...quiet, cache, weights: 'q4' });
    expect(q4.dir).not.toBe(again.dir);
    expect(readdirSync(cache).sort()).toEqual([path.basename(again.dir), path.basename(q4.dir)].sort());
  });

  it('never uses a half-written or altered entry, and a lock of a dead process does not block', async () => {
    const cache = path.join(tmp, 'c2');
    const id = ggufIdentity(TINY_GGUF, readGgufHeader(TINY_GGUF).dataStart);
    const entry = cacheEntryName(id, { dtype: 'fp32', weights: 'auto', layout: 'explicit' });
    const dir = path.join(cache, entry);
    // Half-written: the folder exists with a model.onnx and nothing else.
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'model.onnx'), 'partial');
    // A lock left by a process that is gone.
    writeFileSync(`${dir}.lock`, JSON.stringify({ pid: 2 ** 22 + 12345, host: hostname() }));
    expect(validEntry(dir, entry)).toBe(false);
    const r = await resolveModel(TINY_GGUF, { ...quiet, cache });
    expect(r.dir).toBe(dir);
    expect(r.converted).not.toBeNull();
    expect(validEntry(dir, entry)).toBe(true);
    expect(existsSync(`${dir}.lock`)).toBe(false);
    // Altered after the fact (a file grew): rebuilt, not used.
    appendFileSync(path.join(dir, 'model.onnx.data'), 'x');
    expect(validEntry(dir, entry)).toBe(false);
    const r2 = await resolveModel(TINY_GGUF, { ...quiet, cache });
    expect(r2.converted).not.toBeNull();
    expect(validEntry(dir, entry)).toBe(true);
    expect(readdirSync(cache)).toEqual([entry]);
  });

  it('a touched or edited GGUF gets a new entry (key: size, mtime, header hash)', async () => {
    const cache = path.join(tmp, 'c3');
    const file = path.join(tmp, 'copy.gguf');
    copyFileSync(TINY_GGUF, file);
    const a = await resolveModel(file, { ...quiet, cache });
    const st = statSync(file);
    utimesSync(file, st.atime, new Date(st.mtimeMs + 5000));
    const b = await resolveModel(file, { ...quiet, cache });
    expect(b.dir).not.toBe(a.dir);
    // Same size and mtime, one metadata byte changed (the model name): the header hash tells.
    const buf = readFileSync(file);
    const at = stringAt(buf, 'general.name') + 8 + 'general.name'.length + 4 + 8;
    buf[at] = buf[at]! ^ 0x20;
    const st2 = statSync(file);
    writeFileSync(file, buf);
    utimesSync(file, st2.atime, st2.mtime);
    expect(statSync(file).mtimeMs).toBe(st2.mtimeMs);
    const c = await resolveModel(file, { ...quiet, cache });
    expect(c.dir).not.toBe(b.dir);
    expect(c.source!.headerSha256).not.toBe(b.source!.headerSha256);
  });
});
