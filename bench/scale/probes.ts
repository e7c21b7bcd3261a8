/**
 * Child-process stages of bench/scale-8b.ts that are not lobes commands (run under tsx):
 *
 *   node --import tsx bench/scale/probes.ts session MODEL_DIR RESULT.json [--device cpu]
 *     graph load, capture-graph surgery, encoding and ONNX Runtime session creation, timed
 *     one by one exactly as openCaptureEngine does them (capture final + mlp).
 *
 *   node --import tsx bench/scale/probes.ts forward MODEL_DIR ITEMS.jsonl RESULT.json [--device cpu] [--batch 8] [--mode plain|final]
 *     the same items through the unmodified model (plain: openPlainSession, no capture, logits
 *     at every position as the export computes them) or through the capture engine with only
 *     final.hidden captured (final: the least lobes computes), batched like `lobes extract`
 *     (longest first, 8 rows, right padding): real tokens per second of compute.
 *
 *   node --import tsx bench/scale/probes.ts wanda-pass RUN CHECKPOINT RESULT.json
 *     the weight pass of `lobes wanda --weights CHECKPOINT` alone (the matrices the run's
 *     capture points read, located and streamed by the same functions): seconds and GB/s.
 *
 * RESULT.json also holds the process's peak RSS and /proc/self/io counters.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { analyseModel, openCaptureEngine, openPlainSession } from '../../src/runtime/engine.js';
import { buildCaptureModel } from '../../src/runtime/surgery.js';
import { executionProviders } from '../../src/runtime/providers.js';
import { loadTokenizer } from '../../src/runtime/tokenize.js';
import { planBatches, padBatch } from '../../src/runtime/batching.js';
import { encodeModel } from '../../src/onnx/index.js';
import { siteFamily } from '../../src/hooks.js';
import type { Device } from '../../src/runtime/types.js';

function resources(): Record<string, unknown> {
  let io: Record<string, number> = {};
  try {
    io = Object.fromEntries(readFileSync('/proc/self/io', 'utf8').trim().split('\n').map((l) => {
      const [k, v] = l.split(':');
      return [k!.trim(), Number(v)];
    }));
  } catch {
    // not Linux
  }
  const ru = process.resourceUsage();
  return { peakRssMB: Math.round(ru.maxRSS / 1024), io, majorFaults: ru.majorPageFault,
    userSeconds: ru.userCPUTime / 1e6, systemSeconds: ru.systemCPUTime / 1e6 };
}

function flag(name: string, def: string): string {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : def;
}

const ms = (t: number) => Math.round(performance.now() - t);

async function session(modelDir: string, out: string): Promise<void> {
  const device = flag('--device', 'cpu') as Device;
  const t0 = performance.now();
  let t = performance.now();
  const a = analyseModel(modelDir);
  const loadMs = ms(t);
  const hooks = a.disc.points.filter((p) => ['final', 'mlp'].includes(siteFamily(p.site)));
  const mask = a.loaded.model.graph!.input.some((v) => v.name === 'attention_mask') ? 'attention_mask' : null;
  t = performance.now();
  const surg = buildCaptureModel(a.loaded.model, hooks, mask, []);
  const surgeryMs = ms(t);
  t = performance.now();
  const bytes = encodeModel(surg.model);
  const encodeMs = ms(t);
  t = performance.now();
  const s = await ort.InferenceSession.create(bytes, {
    executionProviders: executionProviders(device, 0),
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    extra: { session: { model_external_initializers_file_folder_path: a.loaded.dir } },
  } as ort.InferenceSession.SessionOptions);
  const sessionMs = ms(t);
  const totalMs = ms(t0);
  const res = {
    device,
    nodes: a.loaded.model.graph!.node.length,
    graphBytes: a.loaded.bytes.byteLength,
    captureGraphBytes: bytes.byteLength,
    hooks: hooks.length,
    outputs: s.outputNames.length,
    loadMs,
    surgeryMs,
    encodeMs,
    sessionMs,
    totalMs,
    ...resources(),
  };
  await s.release();
  writeFileSync(out, JSON.stringify(res) + '\n');
}

async function forward(modelDir: string, itemsFile: string, out: string): Promise<void> {
  const device = flag('--device', 'cpu') as Device;
  const batch = Number(flag('--batch', '8'));
  const tok = await loadTokenizer(modelDir, { maxTokens: null, chatTemplate: false });
  const texts = readFileSync(itemsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l).text as string);
  const ids = texts.map((x) => tok.encode(x).ids);
  const plan = planBatches(Int32Array.from(ids, (x) => x.length), { batch });
  const mode = flag('--mode', 'plain');
  let t = performance.now();
  let runBatch: (tb: ReturnType<typeof padBatch>) => Promise<void>;
  let release: () => Promise<void>;
  if (mode === 'plain') {
    const { session: s, feeds } = await openPlainSession(modelDir, device);
    runBatch = async (tb) => {
      const o = await s.run(feeds(tb));
      for (const v of Object.values(o)) v.dispose?.();
    };
    release = () => s.release();
  } else if (mode === 'final') {
    const e = await openCaptureEngine(modelDir, { capture: ['final'], device });
    runBatch = async (tb) => {
      await e.run(tb);
    };
    release = () => e.close();
  } else throw new Error(`unknown --mode ${mode}`);
  const sessionMs = ms(t);
  let tokens = 0;
  let computeMs = 0;
  for (const b of plan) {
    const tb = padBatch(b.map((i) => ids[i]!), tok.padId, tok.paddingSide);
    t = performance.now();
    await runBatch(tb);
    computeMs += performance.now() - t;
    for (const i of b) tokens += ids[i]!.length;
  }
  await release();
  writeFileSync(out,
    JSON.stringify({ device, mode, items: ids.length, batches: plan.length, tokens, sessionMs,
      computeMs: Math.round(computeMs), tokensPerSecond: tokens / (computeMs / 1000), ...resources() }) + '\n');
}

async function wandaPass(runDir: string, weights: string, out: string): Promise<void> {
  const { openRun } = await import('../../src/store/index.js');
  const { wantedMatrices } = await import('../../src/wanda/weights.js');
  const { locateWeights } = await import('../../src/wanda/run.js');
  const { weightPass } = await import('../../src/wanda/pass.js');
  const { expectedBytes } = await import('../../src/wanda/kernel.js');
  const reader = await openRun(runDir);
  const located = await locateWeights(weights, wantedMatrices(reader.hooks()));
  const bytes = located.matrices.reduce((a, m) => a + expectedBytes(m), 0);
  const t = performance.now();
  await weightPass(located.matrices, { rowBlock: 256 });
  const seconds = (performance.now() - t) / 1000;
  writeFileSync(out,
    JSON.stringify({ matrices: located.matrices.length, bytes, passSeconds: seconds, GBs: bytes / 1e9 / seconds,
      ...resources() }) + '\n');
}

const [cmd, ...rest] = process.argv.slice(2);
const run = cmd === 'session' ?
  session(rest[0]!, rest[1]!)
  : cmd === 'forward' ?
  forward(rest[0]!, rest[1]!, rest[2]!)
  : cmd === 'wanda-pass' ?
  wandaPass(rest[0]!, rest[1]!, rest[2]!)
  : Promise.reject(new Error(`unknown probe ${cmd}`));
run.then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
