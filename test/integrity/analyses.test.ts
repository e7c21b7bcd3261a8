/**
 * Run integrity through the command line, on the built-in tiny model: analyses never run on
 * data that is not what the run says it is, and a failure never leaves a mixed or empty result.
 * Each case reproduces a failure seen by trying lobes as a hostile user would, and asserts the
 * exit code, the one-line message, and that earlier results are byte for byte untouched.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadRun } from '../../src/report/load.js';
import { createHash } from 'node:crypto';
import { runIdentity } from '../../src/store/provenance.js';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { ensureModelFromSpec, GENERATED_MODELS } from '../../src/models/index.js';
import { TINY, lobes, lobesOnFullDisk, snapshot, hidden, writeNpy, writeSt, values } from './helpers.js';

const HAVE = existsSync(path.join(TINY, 'model.onnx'));
if (!HAVE)
  console.log(
    `skipping the integrity CLI tests: ${TINY}/model.onnx is missing (regenerate with npx tsx models/generate.ts)`,
  );

/** Fast analysis settings (the numbers do not matter here, only what is read and written). */
const CLUSTER = ['--iterations', '250', '--bootstrap', '20', '--permutations', '10', '--quiet'];
const WANDA = ['--block', '16', '--permutations', '5', '--quiet'];
/**
 * Added to CLUSTER where the figures are not looked at: in the full-disk test what is checked is
 * where the writes go (a temporary folder renamed at the end), which the token baselines and the
 * probe's nested C do not change (the baselines' figures go into metrics.json with the rest), and
 * the outputs still pass the 20 KB the full disk allows; in the other run's cluster, whose results
 * report and compare refuse by their run identity. They were 24 s of the full-disk test's 26 s.
 */
const CLUSTER_CHEAP = ['--no-baselines', '--probe-repeats', '1', '--probe-c', '1'];

describe.skipIf(!HAVE)('analyses read only what the run says, and fail without leaving a mix', () => {
  let root: string;
  let run: string;
  let before: Record<string, string>;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'lobes-integrity-'));
    process.env.LOBES_HASH_CACHE = path.join(root, 'hash-cache.json');
    run = path.join(root, 'run');
    const x = await lobes(['extract', '--model', TINY, '--data', 'builtin:social', '--out', run, '--chunk-rows', '32',
      '--quiet']);
    expect(x.code, x.stderr).toBe(0);
    expect((await lobes(['cluster', run, '--by', 'aspect', ...CLUSTER])).code).toBe(0);
    expect((await lobes(['wanda', run, '--by', 'aspect', ...WANDA])).code).toBe(0);
    before = snapshot(run);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('a full disk during cluster leaves the previous cluster/ exactly as it was (exit 1, one line, no temporary folder)', () => {
    const r = lobesOnFullDisk(['cluster', run, '--by', 'ability', ...CLUSTER, ...CLUSTER_CHEAP], run, 20_000);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      new RegExp(`lobes cluster: ${run}/cluster\\.by-ability/\\S+: no space left on the device \\(ENOSPC, write\\)`),
    );
    expect(r.stderr).not.toMatch(/internal error/);
    expect(snapshot(run)).toEqual(before);
    expect(hidden(run)).toEqual([]);
  });

  it('a full disk during wanda leaves the previous wanda/ exactly as it was', () => {
    const r = lobesOnFullDisk(['wanda', run, '--by', 'ability', ...WANDA], run, 5_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/lobes wanda: .*\/wanda\.by-ability\/\S+: no space left on the device \(ENOSPC/);
    expect(snapshot(run)).toEqual(before);
    expect(hidden(run)).toEqual([]);
  });

  it('cluster and wanda --by another axis add their folders beside the aspect ones; the report says which it shows', async () => {
    const copy = path.join(root, 'two-axes');
    cpSync(run, copy, { recursive: true });
    const first = snapshot(copy);
    const QUICK = [...CLUSTER, '--no-baselines', '--probe-permutations', '3', '--probe-repeats', '1', '--probe-c', '1'];
    expect((await lobes(['cluster', copy, '--by', 'ability', ...QUICK])).code).toBe(0);
    const w = await lobes(['wanda', copy, '--by', 'ability', ...WANDA]);
    expect(w.code, w.stderr).toBe(0);
    const after = snapshot(copy);
    // the aspect analyses are byte for byte what they were
    for (const k of Object.keys(first)) expect(after[k], k).toBe(first[k]);
    expect(Object.keys(after).filter((k) => k.startsWith('cluster.by-ability/')).length).toBeGreaterThan(3);
    expect(JSON.parse(readFileSync(path.join(copy, 'wanda.by-ability', 'settings.json'), 'utf8')).by).toBe('ability');
    const page = path.join(root, 'two-axes.html');
    const r = await lobes(['report', copy, '--out', page]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /Shown: the map and separation by aspect at final\.hidden \(cluster\/\); the neuron regions by aspect \(wanda\/\)/,
    );
    expect(r.stdout + r.stderr).toMatch(
      /Also in this run, not shown: cluster\.by-ability\/, wanda\.by-ability\/ \(lobes report \S+ --by ability/,
    );
    const byAbility = await loadRun(copy, { by: 'ability' });
    expect(byAbility.cluster?.settings?.by).toBe('ability');
    expect(byAbility.wanda?.settings.by).toBe('ability');
    // rerun with other settings: it says what it replaces
    const again = await lobes(['cluster', copy, '--by', 'ability', ...QUICK, '--perplexity', '12']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr + again.stdout).toMatch(/cluster: replacing \S*cluster\.by-ability \(made with /);
  });

  it('an edited wanda/regions.json (a region cut to 30 blocks) is refused by ablate and left out of the report, naming the file', async () => {
    const copy = path.join(root, 'cut-region');
    cpSync(run, copy, { recursive: true });
    const rf = path.join(copy, 'wanda', 'regions.json');
    const r = JSON.parse(readFileSync(rf, 'utf8'));
    const g = Object.keys(r.regions)[0]!;
    const mats = Object.keys(r.regions[g]);
    let left = 30;
    for (const m of mats) {
      r.regions[g][m] = r.regions[g][m].slice(0, Math.max(0, Math.min(left, r.regions[g][m].length)));
      left -= r.regions[g][m].length;
    }
    writeFileSync(rf, JSON.stringify(r));
    const edited = snapshot(copy);
    const out = path.join(root, 'cut-ablate');
    const a = await lobes(['ablate', copy, '--region', g, '--data', 'builtin:social?lang=en', '--out', out, '--random',
      '2', '--quiet']);
    expect(a.code).toBe(1);
    expect(a.stderr.trim().split('\n')).toHaveLength(1);
    expect(a.stderr).toMatch(
      /cut-region\/wanda\/regions\.json: was changed after lobes wanda wrote it \(sha256 [0-9a-f]{12}…, recorded [0-9a-f]{12}…\)/,
    );
    expect(existsSync(out)).toBe(false);
    const page = path.join(root, 'cut-region.html');
    const rep = await lobes(['report', copy, '--out', page]);
    expect(rep.code, rep.stderr).toBe(0);
    expect(rep.stdout + rep.stderr).toMatch(
      /the neuron regions \(wanda\) left out: .*regions\.json: was changed after lobes wanda wrote it/,
    );
    expect(snapshot(copy)).toEqual(edited);
  });

  it('cluster and wanda refuse a bit-flipped chunk file (exit 1, naming the file) and keep their earlier results', async () => {
    const copy = path.join(root, 'flipped');
    cpSync(run, copy, { recursive: true });
    const copyBefore = snapshot(copy);
    for (const hook of ['final.hidden', 'layers.0.mlp.in']) {
      const f = path.join(copy, 'activations', hook, 'chunk-000001.safetensors');
      const b = readFileSync(f);
      b[b.length - 7] ^= 0x10; // one bit of one value
      writeFileSync(f, b);
    }
    const c = await lobes(['cluster', copy, ...CLUSTER]);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(
      /final\.hidden\/chunk-000001\.safetensors: chunk file is corrupted: sha256 [0-9a-f]{16}… does not match/,
    );
    const w = await lobes(['wanda', copy, ...WANDA]);
    expect(w.code).toBe(1);
    expect(w.stderr).toMatch(/layers\.0\.mlp\.in\/chunk-000001\.safetensors: chunk file is corrupted/);
    const after = snapshot(copy);
    for (const k of Object.keys(copyBefore).filter((k) => k.startsWith('cluster/') || k.startsWith('wanda/')))
      expect(after[k]).toBe(copyBefore[k]);
  });

  it('a chunk file copied over another chunk slot (its sha256 updated in the index) is refused by its row_start', async () => {
    const copy = path.join(root, 'swapped');
    cpSync(run, copy, { recursive: true });
    const idxFile = path.join(copy, 'activations/index.json');
    const idx = JSON.parse(readFileSync(idxFile, 'utf8'));
    const hook = 'final.hidden';
    cpSync(path.join(copy, 'activations', hook, 'chunk-000002.safetensors'),
      path.join(copy, 'activations', hook, 'chunk-000001.safetensors'));
    idx.chunks[1].files[hook] = { ...idx.chunks[2].files[hook], path: idx.chunks[1].files[hook].path };
    writeFileSync(idxFile, JSON.stringify(idx));
    const c = await lobes(['cluster', copy, ...CLUSTER]);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(
      /chunk-000001\.safetensors: chunk file holds rows from "64" on \(row_start\), but its slot in the index is chunk 1, rows from 32/,
    );
  });

  it('wanda refuses a model folder whose graph is not the one the run was extracted with (a decoy of the same shapes)', async () => {
    const model = path.join(root, 'model-decoy');
    cpSync(TINY, model, { recursive: true });
    const r2 = path.join(root, 'run-decoy');
    expect(
      (await lobes(['extract', '--model', model, '--data', 'builtin:social?lang=en', '--out', r2, '--quiet'])).code,
    ).toBe(0);
    const decoy = ensureModelFromSpec('tiny-decoy', { model: { ...GENERATED_MODELS['tiny-llama']!.model, seed: 777 } });
    cpSync(path.join(decoy, 'model.onnx'), path.join(model, 'model.onnx'));
    const w = await lobes(['wanda', r2, ...WANDA]);
    expect(w.code).toBe(1);
    expect(w.stderr).toMatch(
      /the run's model is not the one it was extracted with: .*model\.onnx has sha256 [0-9a-f]{12}… but the run was extracted from a graph with sha256/,
    );
    expect(existsSync(path.join(r2, 'wanda'))).toBe(false);
  });

  it('a finished run whose model tokenizer.json was edited is refused on rerun, naming the file', async () => {
    const model = path.join(root, 'model-tok');
    cpSync(TINY, model, { recursive: true });
    const r3 = path.join(root, 'run-tok');
    const args = ['extract', '--model', model, '--data', 'builtin:social?lang=en', '--out', r3, '--quiet'];
    expect((await lobes(args)).code).toBe(0);
    const runBefore = snapshot(r3);
    const tf = path.join(model, 'tokenizer.json');
    const tok = JSON.parse(readFileSync(tf, 'utf8'));
    const vocab = tok.model.vocab as Record<string, number>;
    const [a, b] = Object.keys(vocab).filter((k) => /^[a-z]{3,}$/.test(k));
    [vocab[a!], vocab[b!]] = [vocab[b!]!, vocab[a!]!]; // two words trade ids
    writeFileSync(tf, JSON.stringify(tok));
    const again = await lobes(args);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /this run folder was made with different settings: tokenizer file tokenizer\.json sha256 is "[0-9a-f]{64}" in .* but "[0-9a-f]{64}" in this command/,
    );
    expect(snapshot(r3)).toEqual(runBefore);
  });

  it('report --cluster-dir and compare refuse analyses of another run (exit 1, no page written)', async () => {
    const other = path.join(root, 'run-other');
    expect(
      (await lobes(['extract', '--model', TINY, '--data', 'builtin:social?lang=zh', '--out', other, '--quiet'])).code,
    ).toBe(0);
    expect((await lobes(['cluster', other, ...CLUSTER, ...CLUSTER_CHEAP, '--perplexity', '10'])).code).toBe(0);
    const out = path.join(root, 'mixed.html');
    const r = await lobes(['report', run, '--cluster-dir', path.join(other, 'cluster'), '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /run-other\/cluster\/settings\.json: the cluster results are not current: they belong to another run \(run identity [0-9a-f]{12}… of .*run-other, this run is [0-9a-f]{12}…\)/,
    );
    expect(existsSync(out)).toBe(false);
    // The same results copied into a run folder are refused by compare as well.
    const planted = path.join(root, 'run-planted');
    cpSync(run, planted, { recursive: true });
    rmSync(path.join(planted, 'cluster'), { recursive: true });
    cpSync(path.join(other, 'cluster'), path.join(planted, 'cluster'), { recursive: true });
    // Found inside a run folder (not asked for), they are left out of compare's page with a note.
    const cmpOut = path.join(root, 'cmp.html');
    const c = await lobes(['compare', run, planted, '--out', cmpOut]);
    expect(c.code, c.stderr).toBe(0);
    const page = readFileSync(cmpOut, 'utf8');
    expect(page).toMatch(
      /the cluster results left out: .*run-planted\/cluster\/settings\.json: the cluster results are not current: they belong to another run/,
    );
    // Unchanged results of the run itself are shown.
    expect((await lobes(['report', run, '--out', path.join(root, 'ok.html')])).code).toBe(0);
  });

  it('report refuses cluster results from before the run was re-extracted with other samples', async () => {
    const copy = path.join(root, 'relabelled');
    cpSync(run, copy, { recursive: true });
    // the run re-extracted with one sample relabelled: a new samples table (and run identity)
    const table = readFileSync(path.join(copy, 'samples.jsonl'), 'utf8').split('\n');
    const row = JSON.parse(table[0]!);
    row.labels.aspect = row.labels.aspect === 'Cooperation' ? 'Self-Management' : 'Cooperation';
    table[0] = JSON.stringify(row);
    writeFileSync(path.join(copy, 'samples.jsonl'), table.join('\n'));
    const mf = path.join(copy, 'manifest.json');
    const m = JSON.parse(readFileSync(mf, 'utf8'));
    m.samplesSha256 = createHash('sha256').update(table.join('\n')).digest('hex');
    delete m.identity;
    m.identity = runIdentity(m);
    writeFileSync(mf, JSON.stringify(m, null, 2) + '\n');
    const out = path.join(root, 'relabelled.html');
    const r = await lobes(['report', copy, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr + r.stdout).toMatch(
      /the cluster results left out: .*cluster\/settings\.json: the cluster results are not current: (they belong to another run|the run's samples table \(samples\.jsonl\) has changed since)/,
    );
    const m2 = await loadRun(copy);
    expect(m2.cluster).toBeNull();
  });

  it('a failed cluster (perplexity too large; fewer than 2 classes) leaves no empty or temporary folder', async () => {
    const fresh = path.join(root, 'fresh');
    cpSync(run, fresh, { recursive: true });
    rmSync(path.join(fresh, 'cluster'), { recursive: true });
    const big = await lobes(['cluster', fresh, ...CLUSTER, '--perplexity', '1000']);
    expect(big.code).toBe(1);
    expect(big.stderr).toMatch(/perplexity 1000 is too large for 150 points/);
    expect(existsSync(path.join(fresh, 'cluster'))).toBe(false);
    expect(hidden(fresh)).toEqual([]);
    // A matrix whose rows all carry one label: no NAME.cluster folder beside it.
    const npy = path.join(root, 'one-class.npy');
    writeNpy(npy, 20, 4, values(80, 3));
    writeFileSync(path.join(root, 'one-class.txt'), 'a\n'.repeat(20));
    const one = await lobes(['cluster', npy, '--labels', path.join(root, 'one-class.txt'), ...CLUSTER, '--perplexity',
      '5']);
    expect(one.code).toBe(1);
    expect(one.stderr).toMatch(/fewer than 2 classes: every row has the label "a"/);
    expect(existsSync(path.join(root, 'one-class.cluster'))).toBe(false);
    expect(hidden(root)).toEqual([]);
  });

  it('cluster MATRIX.safetensors --point NAME refuses a tensor name the file does not hold (also when it holds only one)', async () => {
    writeFileSync(path.join(root, 'xy.txt'), 'x\ny\n'.repeat(10));
    const one = path.join(root, 'one.safetensors');
    writeSt(one, { a: { shape: [20, 4], data: values(80, 1) } });
    const r = await lobes(['cluster', one, '--labels', path.join(root, 'xy.txt'), '--point', 'nope', ...CLUSTER,
      '--perplexity', '5']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /one\.safetensors: no tensor "nope"; the file holds 1 tensor \(a\) \(pick one with --point NAME\)/,
    );
    expect(existsSync(path.join(root, 'one.cluster'))).toBe(false);
    const two = path.join(root, 'two.safetensors');
    writeSt(two, { a: { shape: [20, 4], data: values(80, 1) }, b: { shape: [20, 4], data: values(80, 2) } });
    const ok = await lobes(['cluster', two, '--labels', path.join(root, 'xy.txt'), '--point', 'b', ...CLUSTER,
      '--perplexity', '5']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(readFileSync(path.join(root, 'two.cluster/settings.json'), 'utf8')).point).toBe('b');
  });

  it('--perplexity below 1 is a usage error', async () => {
    const r = await lobes(['cluster', run, '--perplexity', '0.001']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--perplexity must be a decimal number of at least 1, got "0\.001"/);
  });

  it('--out naming a folder for a file output fails with one line and leaves no temporary file', async () => {
    const dir = path.join(root, 'a-folder');
    mkdirSync(dir);
    for (const args of [['data', 'export', 'builtin:social', '--out', dir], ['report', run, '--out', dir], ['compare',
      run, run, '--out', dir]])
    {
      const r = await lobes(args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^lobes \\w+: ${dir}: is a folder; a file is written here \\(give a file path inside the folder, not the folder itself\\)\\n$`,
        ),
      );
      expect(readdirSync(dir)).toEqual([]);
      expect(hidden(root)).toEqual([]);
    }
  });

  it('environment errors are one line with exit 1, not internal errors: a file where a folder is needed', async () => {
    const file = path.join(root, 'plain-file');
    writeFileSync(file, 'x');
    const x = await lobes(['extract', '--model', TINY, '--data', 'builtin:social', '--out', path.join(file, 'run'),
      '--quiet']);
    expect(x.code).toBe(1);
    expect(x.stderr).toMatch(/plain-file\/run: a part of the path is not a folder \(ENOTDIR/);
    const rep = await lobes(['report', run, '--out', path.join(file, 'r.html')]);
    expect(rep.code).toBe(1);
    expect(rep.stderr).toMatch(/plain-file: exists as a file where a folder is needed \(EEXIST, mkdir\)/);
    for (const r of [x, rep]) expect(r.stderr).not.toMatch(/internal error/);
  });

  it('a FIFO or a device given as the model is refused at once (exit 1), not read', async () => {
    const { execFileSync } = await import('node:child_process');
    const fifo = path.join(root, 'model.fifo');
    execFileSync('mkfifo', [fifo]);
    const f = await lobes(['inspect', fifo]);
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(
      /model\.fifo: model is a named pipe \(FIFO\), not a regular file \(give a model folder or an \.onnx file\)/,
    );
    const z = await lobes(['extract', '--model', '/dev/zero', '--data', 'builtin:social', '--out',
      path.join(root, 'zero'), '--quiet']);
    expect(z.code).toBe(1);
    expect(z.stderr).toMatch(/\/dev\/zero: model is a device, not a regular file/);
    expect(existsSync(path.join(root, 'zero'))).toBe(false);
  });
});
