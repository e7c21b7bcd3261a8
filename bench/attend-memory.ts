/**
 * Peak memory of one attention batch: the attend surgery of a model (src/runtime/attention-surgery.ts)
 * over one prompt of T tokens, reading the layers FROM..TO−1, in this process alone (peak RSS
 * from /proc/self/status). Run it once per setting: all layers against the last layer alone
 * shows whether the selected layers' [heads, T, T] weights are freed as the decoder goes on.
 *
 *   node --import tsx bench/attend-memory.ts MODEL_DIR [T] [FROM] [TO]
 */
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { analyseModel, planInputs, batchFeeds } from '../src/runtime/engine.js';
import { attentionSites } from '../src/runtime/attention-engine.js';
import { buildAttentionModel } from '../src/runtime/attention-surgery.js';
import { encodeModel } from '../src/onnx/index.js';

const dir = process.argv[2]!;
const T = Number(process.argv[3] ?? 1500);
const a = analyseModel(dir);
const all = attentionSites(a);
const sites = all.slice(Number(process.argv[4] ?? 0), Number(process.argv[5] ?? all.length));
const { plans, mask, inGraphPast } = planInputs(a);
const surg = buildAttentionModel(a.loaded.model, a.disc.index, sites, mask, inGraphPast, a.loaded.file);
const so = { graphOptimizationLevel: 'all', logSeverityLevel: 3, intraOpNumThreads: 1,
  extra: {
    session: { model_external_initializers_file_folder_path: a.loaded.dir },
  } } as ort.InferenceSession.SessionOptions;
const s = await ort.InferenceSession.create(encodeModel(surg.model), so);
const ids = BigInt64Array.from({ length: T }, (_, i) => BigInt(100 + (i % 3000)));
const b = { inputIds: ids, attentionMask: new BigInt64Array(T).fill(1n), batch: 1, seq: T,
  lastIndex: Int32Array.of(T - 1) };
const before = process.memoryUsage().rss;
await s.run(batchFeeds(s, plans, b, surg.maskAdded ? surg.maskInput : null));
const peak = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
const heads = a.info.arch.heads ?? 0;
console.log(
  JSON.stringify({ tokens: T, layers: sites.map((x) => x.layer), rssBeforeRunMB: Math.round(before / 1e6),
    peakMB: Math.round(peak / 1e6), oneLayersWeightsMB: Math.round((heads * T * T * 4) / 1e6) }),
);
