/**
 * lobes at Llama-3.1-8B's shape, end to end, on one machine; prints one JSON line.
 *
 *   LOBES_MODEL_CACHE=/path/with/60GB npx tsx bench/scale-8b.ts [--device cpu|cuda|webgpu]
 *       [--items 16] [--stages LIST] [--small] [--seed 8] [--out FILE.json] [--drop-fp16]
 *       [--export int4|fp16] [--torch PYTHON] [--memory-gb N] [--plan]
 *
 * Generates once, into $LOBES_MODEL_CACHE (default os.tmpdir()/lobes-models), never into the
 * repository, from one seeded source (bench/scale/weights.ts): 32 layers, hidden 4096,
 * intermediate 14336, 32 heads / 8 KV heads, vocab 128256 (the Llama 3.1 tokenizer), as
 *   - hf-bf16/            the bf16 Hugging Face checkpoint (4 shards of ≤ 5 GB + index), 16.1 GB
 *   - onnx-genai-int4/    an onnxruntime-genai style int4 export (MatMulNBits, GroupQueryAttention), 7.0 GB
 *   - onnx-genai-fp16/    the same layout in fp16, 16.1 GB (deleted after its stage with --drop-fp16)
 * then runs, each stage in its own process with its wall time, peak RSS and bytes read, on the
 * export --export names (default int4 on the CPU, fp16 on cuda/webgpu):
 *   inspect        lobes inspect of the export
 *   session        graph load + capture surgery + encode + ONNX Runtime session (int4; fp16 in fp16-session)
 *   extract        lobes extract of --items SocialEval items (English, balanced over the 5 aspects), final + mlp
 *   forward        the same items through the unmodified model (no capture; logits at every position, as
 *                  exported) and through the capture engine with final.hidden only: the extraction's
 *                  reference speeds (ratios extractVsForward, extractVsFinalOnly = the cost of capturing
 *                  every MLP input)
 *   cat            cat of the checkpoint's shards, from disk (cache dropped per file) and from the page cache
 *   wanda          the weight pass of lobes wanda --weights hf-bf16 alone, right after a cat of the shards
 *                  and again from disk (cache dropped), each against that cat; then the whole command
 *   cluster        lobes cluster
 *   report         lobes report, and the page's time to interactive in headless Chromium
 *   report-2000    the report of a synthetic 2,000-sample run of the same shape (32 layers × 896 blocks,
 *                  planted regions: src/report/synthetic.ts)
 *   dataset        a full dataset's analysis: --samples (2,000) synthetic captures at the model's shapes
 *                  (bench/scale/activation-run.ts), then lobes wanda --weights hf-bf16, lobes cluster and
 *                  lobes report on them (stages dataset.wanda, dataset.cluster, dataset.report)
 *   fp16-session   session stage on the fp16 export
 *   torch          (with --torch PYTHON, on a GPU box) PyTorch + transformers on the bf16 checkpoint:
 *                  tokens/s and the captures compared with lobes' (bench/scale/torch_compare.py)
 *
 * Memory: before each stage (and before generating the fp16 export), its peak memory is estimated
 * at the spec's shape (bench/scale/memory.ts) and compared with the memory free right then
 * (MemAvailable of /proc/meminfo); a stage that cannot fit is skipped, its reason in the JSON
 * line (stages.NAME.skipped), instead of being killed. --memory-gb N takes N GB as the free
 * memory instead (to try the plan); --plan prints the plan of every stage as the JSON line and
 * stops before generating or running anything.
 *
 * The lobes commands run from the built package (dist/; rebuilt first when older than src/).
 * Targets (issue: scale): no stage above 8 GB peak RSS except what ONNX Runtime needs for the
 * weights; graph load + edit + session creation of the int4 export < 60 s; wanda >= 0.5x cat;
 * report < 10 s and interactive < 3 s.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { SeededLlamaWeights, checkpointReady } from './scale/weights.js';
import { scaleCacheDir, SCALE_CACHE_VERSION } from './scale/cache.js';
import { specFor } from './scale/specs.js';
import { availableMemory, stageNeed, verdict, type MemoryContext, type Verdict } from './scale/memory.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    device: { type: 'string', default: 'cpu' },
    items: { type: 'string', default: '16' },
    stages: { type: 'string' },
    small: { type: 'boolean' },
    seed: { type: 'string', default: '8' },
    out: { type: 'string' },
    'drop-fp16': { type: 'boolean' },
    torch: { type: 'string' },
    export: { type: 'string' },
    samples: { type: 'string', default: '2000' },
    'memory-gb': { type: 'string' },
    plan: { type: 'boolean' },
  },
});
const ALL_STAGES = ['inspect', 'session', 'extract', 'forward', 'cat', 'wanda', 'cluster', 'report', 'report-2000',
  'dataset', 'fp16-session', 'torch'];
const stages = new Set(opt.stages ? opt.stages.split(',') : ALL_STAGES.filter((s) => s !== 'torch' || opt.torch));
for (const s of stages)
  if (!ALL_STAGES.includes(s)) throw new Error(`unknown stage ${s} (known: ${ALL_STAGES.join(', ')})`);
const device = opt.device!;
/** The export extraction runs on: int4 on the CPU (what a CPU user runs), fp16 on a GPU (the genai builder's CUDA export). */
const exportKind = (opt.export ?? (device === 'cpu' ? 'int4' : 'fp16')) as 'int4' | 'fp16';
if (exportKind !== 'int4' && exportKind !== 'fp16') throw new Error(`--export must be int4 or fp16, got ${opt.export}`);
const seed = Number(opt.seed);
const spec = specFor(!!opt.small);
const cache = scaleCacheDir(spec, seed);
const work = path.join(cache, `runs-${device}`);
const log = (l: string) => process.stderr.write(`[scale] ${l}\n`);
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const load = () => r3(os.loadavg()[0]!);
const memoryBudget = opt['memory-gb'] === undefined ? null : Number(opt['memory-gb']);
if (memoryBudget !== null && !(memoryBudget > 0))
  throw new Error(`--memory-gb must be a positive number, got ${opt['memory-gb']}`);
/** Free memory now, or the --memory-gb budget. */
const freeMemory =
  () => (memoryBudget !== null ? { bytes: memoryBudget * 1e9, source: '--memory-gb' } : availableMemory());
/** The largest extraction batch the memory plan assumes: 8 rows (lobes extract's default) × 256 tokens (SocialEval items are shorter). */
const PLAN_BATCH = { rows: 8, seq: 256 };

// ---------------------------------------------------------------------------------------
// helpers

function newestMtime(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Build dist/ when it is missing or older than src/. */
function ensureBuilt(): void {
  const main = path.join(ROOT, 'dist', 'cli', 'main.js');
  if (existsSync(main) && statSync(main).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) return;
  log('building dist/ (npm run build)');
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) throw new Error('npm run build failed');
}

interface Measured {
  seconds: number;
  peakRssMB: number;
  io?: Record<string, number>;
  [k: string]: unknown;
}

function readJson<T>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** Run a lobes command in a child (bench/scale/stage.mjs); stdout goes to NAME.out. */
function lobes(name: string, args: string[]): Measured & { stdout: string; loadBefore: number; loadAfter: number;
  wallSeconds: number }
{
  const res = path.join(work, `${name}.stage.json`);
  const loadBefore = load();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bench', 'scale', 'stage.mjs'), res, ...args], { cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 });
  const wallSeconds = (performance.now() - t0) / 1000;
  if (r.status !== 0)
    throw new Error(
      `stage ${name} failed (${r.signal ? `killed by ${r.signal}` : `exit ${r.status}`}): lobes ${args.join(' ')}`,
    );
  const m = readJson<Measured>(res);
  return { ...m, stdout: r.stdout.toString(), loadBefore, loadAfter: load(), wallSeconds: r3(wallSeconds) };
}

/** Run a probe (bench/scale/probes.ts) in a child under tsx. */
function probe(name: string, args: string[], flags: string[] = []): Measured & { loadBefore: number; loadAfter: number;
  wallSeconds: number }
{
  const res = path.join(work, `${name}.stage.json`);
  const loadBefore = load();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'scale', 'probes.ts'), ...args,
    res, '--device', device, ...flags], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0)
    throw new Error(`probe ${name} failed (${r.signal ? `killed by ${r.signal}` : `exit ${r.status}`})`);
  return { ...readJson<Measured>(res), loadBefore, loadAfter: load(),
    wallSeconds: r3((performance.now() - t0) / 1000) };
}

/** Generate an artefact in a child process when it is not cached. */
function ensure(kind: 'checkpoint' | 'int4' | 'fp16',
  dir: string): { dir: string; bytes: number; generatedSeconds: number | null; writerPeakRssMB: number | null }
{
  const ready = kind === 'checkpoint' ? checkpointReady(dir) : existsSync(path.join(dir, 'model.onnx'));
  const info = path.join(cache, `gen-${kind}.json`);
  if (!ready) {
    mkdirSync(cache, { recursive: true });
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    log(`generating ${kind} into ${dir}`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'scale', 'generate.ts'), kind,
      dir, info, ...(opt.small ? ['--small'] : []), '--seed', String(seed)], { cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`generating ${kind} failed`);
  }
  const g = existsSync(info) ? readJson<{ seconds: number; peakRssMB: number }>(info) : null;
  const bytes = readdirSync(dir).reduce((a, f) => a + statSync(path.join(dir, f)).size, 0);
  return { dir, bytes, generatedSeconds: g ? r3(g.seconds) : null, writerPeakRssMB: g?.peakRssMB ?? null };
}

function shards(ck: string): string[] {
  return readdirSync(ck).filter((f) => f.endsWith('.safetensors')).sort().map((f) => path.join(ck, f));
}

/** Drop the page cache of these files (GNU dd's nocache flag: POSIX_FADV_DONTNEED on the whole file). */
function dropCache(files: string[]): void {
  for (const f of files) spawnSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none']);
}

/** Share of these files' pages in the page cache (util-linux fincore), or null. */
function cachedFraction(files: string[]): number | null {
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES,SIZE', ...files], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  let res = 0;
  let size = 0;
  for (const l of r.stdout.trim().split('\n')) {
    const [a, b] = l.trim().split(/\s+/).map(Number);
    res += a!;
    size += b!;
  }
  return size ? r3(res / size) : null;
}

function timeCat(files: string[]): number {
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', 'cat "$@" > /dev/null', 'cat', ...files]);
  if (r.status !== 0) throw new Error('cat failed');
  return (performance.now() - t0) / 1000;
}

/** --items SocialEval items (English), round-robin over the five aspects in file order, as JSONL. */
function writeItems(n: number): string {
  const file = path.join(work, `items-${n}.jsonl`);
  const data = path.resolve(ROOT, '..', 'shared', 'socialeval', 'worldtree_data');
  let rows: { id: string; text: string; labels: Record<string, string> }[];
  if (existsSync(data)) {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'cli', 'bin.js'), 'data', 'export',
      `socialeval:${data}?lang=en`], { encoding: 'utf8', maxBuffer: 1 << 28 });
    if (r.status !== 0) throw new Error(`lobes data export failed: ${r.stderr}`);
    rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  } else {
    log(`${data} is missing: using the built-in dataset instead of SocialEval`);
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'cli', 'bin.js'), 'data', 'export',
      'builtin:social'], { encoding: 'utf8', maxBuffer: 1 << 28 });
    rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((x) => x.labels?.language !== 'zh');
  }
  const byAspect = new Map<string, typeof rows>();
  for (const x of rows) {
    const a = x.labels.aspect!;
    if (!byAspect.has(a)) byAspect.set(a, []);
    byAspect.get(a)!.push(x);
  }
  const picked: typeof rows = [];
  for (let i = 0; picked.length < n; i++) {
    let any = false;
    for (const list of byAspect.values()) {
      if (i < list.length && picked.length < n) {
        picked.push(list[i]!);
        any = true;
      }
    }
    if (!any) break;
  }
  writeFileSync(file,
    picked.map((x) => JSON.stringify({ id: x.id, text: x.text, aspect: x.labels.aspect, ability: x.labels.ability }))
      .join('\n') + '\n');
  return file;
}

const mb = (b: number | undefined) => (b === undefined ? null : Math.round(b / 1e6));
function summary(
  m: Measured & { loadBefore?: number; loadAfter?: number; wallSeconds?: number },
): Record<string, unknown> {
  return {
    seconds: r3(m.seconds ?? m.wallSeconds ?? 0),
    wallSeconds: m.wallSeconds,
    /** CPU time of the stage's process (user + system): what other load on the machine barely changes. */
    cpuSeconds: typeof m.userSeconds === 'number'
      ? r3((m.userSeconds as number) + ((m.systemSeconds as number) ?? 0))
      : undefined,
    peakRssMB: m.peakRssMB,
    readMB: mb(m.io?.rchar),
    storageReadMB: mb(m.io?.read_bytes),
    loadBefore: m.loadBefore,
    loadAfter: m.loadAfter,
  };
}

// ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const result: Record<string, any> = {
    bench: 'scale-8b',
    cacheVersion: SCALE_CACHE_VERSION,
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGB: r3(os.totalmem() / 2 ** 30),
      node: process.version, loadAtStart: os.loadavg().map(r3) },
    device,
    spec: { ...spec, seed,
      parameters: new SeededLlamaWeights(spec, seed).tensors().reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1),
        0) },
    artefacts: {},
    stages: {},
    ratios: {},
    targets: {},
  };
  const S = result.stages;
  // The memory plan: each stage's estimated peak against the memory free just before it.
  const dirBytes = (
    d: string,
  ) => (existsSync(path.join(d, 'model.onnx'))
    ? readdirSync(d).reduce((a, f) => a + statSync(path.join(d, f)).size, 0)
    : null);
  const memCtx = (): MemoryContext => ({ spec, parameters: result.spec.parameters, device,
    int4Bytes: dirBytes(path.join(cache, 'onnx-genai-int4')), fp16Bytes: dirBytes(path.join(cache, 'onnx-genai-fp16')),
    exportKind, batch: PLAN_BATCH });
  result.memory = { budgetGB: memoryBudget, source: freeMemory().source, assumedBatch: PLAN_BATCH,
    stages: {} as Record<string, Verdict & { estimate: string }> };
  const judge = (stage: string): Verdict => {
    const need = stageNeed(stage, memCtx());
    const v = verdict(stage, need, freeMemory());
    result.memory.stages[stage] = { ...v, estimate: need.what };
    return v;
  };
  /** Whether a stage runs; a stage that cannot fit is recorded as skipped, with its reason. */
  const gate = (stage: string): boolean => {
    const v = judge(stage);
    if (!v.run) {
      S[stage] = { skipped: v.reason, needGB: v.needGB, availableGB: v.availableGB };
      log(`skipping ${stage}: ${v.reason}`);
    }
    return v.run;
  };
  if (opt.plan) {
    // What a run would do now: each stage's estimate, and the skipped ones with their reasons.
    result.plan = true;
    for (const st of ALL_STAGES) if (stages.has(st)) gate(st);
    process.stdout.write(JSON.stringify(result) + '\n');
    return;
  }
  ensureBuilt();
  // A new extraction replaces the run; other stages reuse the last one.
  mkdirSync(work, { recursive: true });
  if (stages.has('extract')) rmSync(path.join(work, 'run'), { recursive: true, force: true });
  const ck = ensure('checkpoint', path.join(cache, 'hf-bf16'));
  const int4 = ensure('int4', path.join(cache, 'onnx-genai-int4'));
  result.artefacts.checkpoint = ck;
  result.artefacts.int4 = int4;
  const model = exportKind === 'int4' ? int4 : ensure('fp16', path.join(cache, 'onnx-genai-fp16'));
  if (exportKind === 'fp16') result.artefacts.fp16 = model;
  result.export = exportKind;
  const run = path.join(work, 'run');

  if (stages.has('inspect') && gate('inspect')) {
    const m = lobes('inspect', ['inspect', model.dir, '--json']);
    const info = JSON.parse(m.stdout);
    S.inspect = { ...summary(m), points: info.points.length, quantization: info.arch.quantization };
  }
  if (stages.has('session') && gate('session')) {
    const m = probe('session', ['session', model.dir]);
    S.session = { ...summary(m), loadMs: m.loadMs, surgeryMs: m.surgeryMs, encodeMs: m.encodeMs, sessionMs: m.sessionMs,
      totalMs: m.totalMs, nodes: m.nodes, hooks: m.hooks };
  }
  const items = writeItems(Number(opt.items));
  if (stages.has('extract') && gate('extract')) {
    const m = lobes('extract', ['extract', '--model', model.dir, '--data',
      `jsonl:${items}?text=text&label=aspect,ability&id=id`, '--out', run, '--capture', 'final,mlp', '--device', device,
      '--quiet']);
    const man = readJson<any>(path.join(run, 'manifest.json'));
    S.extract = { ...summary(m), samples: man.counts.samples, tokens: man.counts.tokens, timings: man.timings,
      tokensPerSecond: r3(man.counts.tokens / (man.timings.computeMs / 1000)) };
  }
  if (stages.has('forward') && gate('forward')) {
    const m = probe('forward', ['forward', model.dir, items], ['--mode', 'plain']);
    S.forward = { ...summary(m), tokens: m.tokens, sessionMs: m.sessionMs, computeMs: m.computeMs,
      tokensPerSecond: r3(m.tokensPerSecond as number) };
    const f = probe('forward-final', ['forward', model.dir, items], ['--mode', 'final']);
    S['forward-final'] = { ...summary(f), tokens: f.tokens, sessionMs: f.sessionMs, computeMs: f.computeMs,
      tokensPerSecond: r3(f.tokensPerSecond as number) };
    if (S.extract) {
      result.ratios.extractVsForwardTokensPerSecond = r3(S.extract.tokensPerSecond / S.forward.tokensPerSecond);
      result.ratios.extractVsFinalOnlyTokensPerSecond = r3(
        S.extract.tokensPerSecond / S['forward-final'].tokensPerSecond,
      );
    }
  }
  const files = shards(ck.dir);
  const ckBytes = files.reduce((a, f) => a + statSync(f).size, 0);
  if (stages.has('cat') || stages.has('wanda')) {
    dropCache(files);
    const before = cachedFraction(files);
    const cold = timeCat(files);
    const after = cachedFraction(files);
    const warm = timeCat(files);
    S.cat = { bytes: ckBytes, files: files.length, cachedBeforeCold: before, cachedBeforeWarm: after,
      coldSeconds: r3(cold), coldGBs: r3(ckBytes / 1e9 / cold), warmSeconds: r3(warm),
      warmGBs: r3(ckBytes / 1e9 / warm), load: load() };
  }
  if (stages.has('wanda') && existsSync(path.join(run, 'manifest.json')) && gate('wanda')) {
    // The weight pass alone (what "wanda vs cat" compares: both read the checkpoint), right after
    // a cat of the same files (from the page cache, as far as memory holds them) and again after
    // dropping them from the cache (from disk); then the whole command, after another cat.
    const catWarm = timeCat(files);
    const cachedWarm = cachedFraction(files);
    const pw = probe('wanda-pass', ['wanda-pass', run, ck.dir]);
    dropCache(files);
    const catCold = timeCat(files);
    dropCache(files);
    const pc = probe('wanda-pass-cold', ['wanda-pass', run, ck.dir]);
    const catAgain = timeCat(files);
    const cachedCmd = cachedFraction(files);
    const w = lobes('wanda', ['wanda', run, '--weights', ck.dir, '--quiet']);
    // The same without the permutation null: the pass plus the observed analysis only.
    timeCat(files);
    const w0 = lobes('wanda-0', ['wanda', run, '--weights', ck.dir, '--permutations', '0', '--quiet']);
    const weightBytes = pw.bytes as number;
    S.wanda = {
      ...summary(w),
      cachedBefore: cachedCmd,
      catGBsBefore: r3(ckBytes / 1e9 / catAgain),
      GBs: r3(weightBytes / 1e9 / w.seconds),
      pass: { ...summary(pw), weightBytes, cachedBefore: cachedWarm, passSeconds: r3(pw.passSeconds as number),
        GBs: r3(pw.GBs as number), catGBs: r3(ckBytes / 1e9 / catWarm) },
      passCold: { ...summary(pc), cachedBefore: 0, passSeconds: r3(pc.passSeconds as number), GBs: r3(pc.GBs as number),
        catGBs: r3(ckBytes / 1e9 / catCold) },
      noPermutations: summary(w0),
    };
    result.ratios.wandaPassVsCatWarm = r3(S.wanda.pass.GBs / S.wanda.pass.catGBs);
    result.ratios.wandaPassVsCatCold = r3(S.wanda.passCold.GBs / S.wanda.passCold.catGBs);
    result.ratios.wandaCommandVsCat = r3(S.wanda.GBs / S.wanda.catGBsBefore);
  }
  if (stages.has('cluster') && existsSync(path.join(run, 'manifest.json')) && gate('cluster')) {
    // t-SNE's perplexity must stay below (N - 1) / 3; 30 (the default) from 91 items on
    const perplexity = Math.max(1, Math.min(30, Math.floor((Number(opt.items) - 1) / 3)));
    S.cluster = { ...summary(lobes('cluster', ['cluster', run, '--perplexity', String(perplexity), '--quiet'])),
      perplexity };
  }
  const { chromiumProblem } = await import('../src/report/index.js');
  const { measureReportLoad } = await import('../src/report/browser.js');
  const interactive = async (file: string, pair: number) => {
    const problem = chromiumProblem();
    if (problem) return { skipped: problem };
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await measureReportLoad(pathToFileURL(file).href, { pair }));
    runs.sort((a, b) => a.totalMs - b.totalMs);
    const m = runs[1]!;
    return { medianOf: 3, readyMs: Math.round(m.readyMs), interactiveMs: Math.round(m.totalMs),
      mainThreadCpuMs: Math.round(m.mainThreadCpuMs), rendererCpuMs: Math.round(m.rendererCpuMs),
      problems: runs.flatMap((r) => r.problems), load: load() };
  };
  if (stages.has('report') && existsSync(path.join(run, 'wanda')) && gate('report')) {
    const out = path.join(run, 'report.html');
    const m = lobes('report', ['report', run, '--out', out]);
    S.report = { ...summary(m), bytes: statSync(out).size, browser: await interactive(out, 1) };
  }
  if (stages.has('report-2000') && gate('report-2000')) {
    const { writeSyntheticRun } = await import('../src/report/synthetic.js');
    const syn = path.join(work, 'synthetic-2000');
    const rb = Math.ceil(spec.intermediate / 256);
    const cb = Math.ceil(spec.hidden / 256);
    writeSyntheticRun(syn, { samplesPerGroup: 400, layers: spec.layers, seed: 8,
      grid: { gate_proj: [rb, cb], up_proj: [rb, cb], down_proj: [cb, rb] } });
    const out = path.join(syn, 'report.html');
    const m = lobes('report-2000', ['report', syn, '--out', out]);
    S['report-2000'] = { ...summary(m), bytes: statSync(out).size, blocksPerMatrix: rb * cb,
      browser: await interactive(out, 5) };
  }
  if (stages.has('dataset') && gate('dataset')) {
    const n = Number(opt.samples);
    const drun = path.join(work, `dataset-${n}`);
    const t0 = performance.now();
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'scale', 'activation-run.ts'),
      drun, String(n), ...(opt.small ? ['--small'] : [])], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error('writing the synthetic dataset run failed');
    const writeSeconds = r3((performance.now() - t0) / 1000);
    timeCat(files); // weights in the page cache as far as memory allows, as for the wanda stage
    const cached = cachedFraction(files);
    const w = lobes('dataset.wanda', ['wanda', drun, '--weights', ck.dir, '--quiet']);
    const c = lobes('dataset.cluster', ['cluster', drun, '--quiet']);
    const out = path.join(drun, 'report.html');
    const rep = lobes('dataset.report', ['report', drun, '--out', out]);
    S.dataset = {
      samples: n,
      runBytes: readdirSync(path.join(drun, 'activations'), { recursive: true }).reduce(
        (a: number, f) =>
          a + (statSync(path.join(drun, 'activations', String(f))).isFile()
            ? statSync(path.join(drun, 'activations', String(f))).size
            : 0),
        0,
      ),
      writeSeconds,
      wanda: { ...summary(w), cachedBefore: cached },
      cluster: summary(c),
      report: { ...summary(rep), bytes: statSync(out).size, browser: await interactive(out, 1) },
    };
    for (const k of ['wanda', 'cluster', 'report'])
      S[`dataset.${k}`] = { peakRssMB: S.dataset[k].peakRssMB, seconds: S.dataset[k].seconds };
    rmSync(drun, { recursive: true, force: true });
  }
  // Judged before the fp16 export is generated: no 16 GB written for a session that cannot fit.
  if (stages.has('fp16-session') && exportKind !== 'fp16' && gate('fp16-session')) {
    const free = freeMemory().bytes;
    const fp16 = ensure('fp16', path.join(cache, 'onnx-genai-fp16'));
    result.artefacts.fp16 = fp16;
    try {
      const m = probe('fp16-session', ['session', fp16.dir]);
      S['fp16-session'] = { ...summary(m), loadMs: m.loadMs, surgeryMs: m.surgeryMs, encodeMs: m.encodeMs,
        sessionMs: m.sessionMs, totalMs: m.totalMs, freeMemGBBefore: r3(free / 1e9) };
    } catch (e) {
      // The estimate said it fits but the stage died (other jobs took the memory meanwhile): recorded, not fatal.
      S['fp16-session'] = { failed: (e as Error).message, freeMemGBBefore: r3(free / 1e9),
        freeMemGBAfter: r3(freeMemory().bytes / 1e9) };
    }
    if (opt['drop-fp16']) rmSync(fp16.dir, { recursive: true, force: true });
  }
  if (stages.has('torch') && opt.torch && existsSync(path.join(run, 'manifest.json')) && gate('torch')) {
    const out = path.join(work, 'torch.json');
    // PyTorch in the export's compute precision: float16 against the fp16 export on a GPU, float32 on the CPU.
    const dtype = device === 'cpu' ? 'float32' : exportKind === 'fp16' ? 'float16' : 'bfloat16';
    const r = spawnSync(opt.torch, [path.join(ROOT, 'bench', 'scale', 'torch_compare.py'), '--checkpoint', ck.dir,
      '--tokenizer', model.dir, '--items', items, '--run', run, '--device', device === 'cpu' ? 'cpu' : 'cuda',
      '--dtype', dtype, '--out', out], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    S.torch = r.status === 0 ? readJson(out) : { failed: `exit ${r.status}` };
    if (S.torch.tokensPerSecond && S.extract)
      result.ratios.extractVsTorchTokensPerSecond = r3(S.extract.tokensPerSecond / S.torch.tokensPerSecond);
  }

  // Targets.
  const T = result.targets;
  const under = (v: number | undefined,
    max: number) => (v === undefined ? null : { value: v, target: `< ${max}`, met: v < max });
  const over = (v: number | undefined,
    min: number) => (v === undefined ? null : { value: v, target: `>= ${min}`, met: v >= min });
  const weightsMB = Math.round(model.bytes / 1e6);
  for (const [k, v] of Object.entries(S)) {
    const rss = (v as { peakRssMB?: number }).peakRssMB;
    if (rss === undefined) continue;
    const ortStage = ['session', 'extract', 'forward', 'forward-final', 'fp16-session'].includes(k);
    T[`${k}.peakRssMB`] = ortStage
      ? { value: rss, target: `<= 8000 + ONNX Runtime's weights (${weightsMB} MB on disk)`,
        met: rss - weightsMB <= 8000 }
      : under(rss, 8000);
  }
  if (S.session) T['session.seconds'] = under(S.session.totalMs / 1000, 60);
  if (result.ratios.wandaPassVsCatWarm !== undefined)
    T['wanda.passVsCatWarm'] = over(result.ratios.wandaPassVsCatWarm, 0.5);
  if (result.ratios.wandaPassVsCatCold !== undefined)
    T['wanda.passVsCatCold'] = over(result.ratios.wandaPassVsCatCold, 0.5);
  const reports: [string, any][] = [['report', S.report], ['report-2000', S['report-2000']], ['dataset.report',
    S.dataset?.report]];
  for (const [k, v] of reports) {
    if (!v) continue;
    T[`${k}.seconds`] = under(v.seconds, 10);
    if (v.browser?.interactiveMs) T[`${k}.interactiveSeconds`] = under(v.browser.interactiveMs / 1000, 3);
  }
  result.machine.loadAtEnd = os.loadavg().map(r3);
  result.machine.freeDiskGB = (() => {
    const r = spawnSync('df', ['-k', '--output=avail', cache], { encoding: 'utf8' });
    const kb = Number(r.stdout.trim().split('\n').pop());
    return Number.isFinite(kb) ? r3(kb / 2 ** 20) : null;
  })();
  const line = JSON.stringify(result);
  if (opt.out) writeFileSync(opt.out, line + '\n');
  process.stdout.write(line + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
