/**
 * The lineage operations alone, timed in-process on a run that bench/lineage-cost.sh made (its
 * run-after, ablate-after): what recording (hash every output file, collect the inputs) and
 * checking (every input now, every file read against its record) cost each stage, to set beside
 * the stage's wall time. Unlike the end-to-end pairs, this does not depend on the machine's load
 * for its ratio's meaning: the operations are the whole difference.
 *
 *   npx tsx bench/lineage-ops.ts [BENCH_DIR]       # default /tmp/lobes-lineage-bench
 */
import * as path from 'node:path';
import { readFileSync } from 'node:fs';
import { openRun, readManifest } from '../src/store/index.js';
import { runInputs } from '../src/store/lineage.js';
import { hashFolderFiles } from '../src/util/output.js';
import { readWanda, wandaDir, wandaRegionInputs } from '../src/wanda/store.js';
import { clusterDir, readCluster } from '../src/cluster/store.js';
import { readSamples } from '../src/store/index.js';
import { checkAblateOfRun } from '../src/report/ablate.js';
import { modelIdentity } from '../src/runtime/modelfiles.js';

const dir = process.argv[2] ?? '/tmp/lobes-lineage-bench';
const run = path.join(dir, 'run-after');
const ablate = path.join(dir, 'ablate-after');

function time(label: string, f: () => unknown, reps = 5): number {
  f();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    f();
    ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ts.sort((a, b) => a - b);
  const med = ts[Math.floor(ts.length / 2)]!;
  console.log(`${label.padEnd(58)} ${med.toFixed(1).padStart(8)} ms (median of ${reps})`);
  return med;
}

const manifest = readManifest(run);
const samples = readSamples(run);
const reader = await openRun(run);
const hooks = reader.hooks().map((h) => h.name);
console.log(`run ${run}: ${samples.length} samples, ${hooks.length} capture points`);
const rec = {
  wanda: time('wanda: hash its output files (record)', () => hashFolderFiles(wandaDir(run))) +
    time('wanda: the run inputs (identity, samples, chunk digests)',
      () => runInputs(reader, hooks.filter((h) => h.includes('mlp')))),
  cluster: time('cluster: hash its output files (record)', () => hashFolderFiles(clusterDir(run))) +
    time('cluster: the run inputs', () => runInputs(reader, ['final.hidden'])),
  model: time('model files by content (warm file-hash cache)', () => modelIdentity(manifest.model.dir)),
};
const chk = {
  wanda: time('read wanda verified (every file against its sha256, inputs now)',
    () => readWanda(run, manifest, wandaDir(run))),
  cluster: time('read cluster verified', () => readCluster(clusterDir(run), run, manifest, samples, false)),
  ablate: time('ablation current for the run (report/compare)', () => checkAblateOfRun(ablate, run, manifest)) +
    time('ablate: the wanda inputs it records', () => wandaRegionInputs(run, wandaDir(run))),
};
const times = readFileSync(path.join(dir, 'times.tsv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split('\t'));
const wall = (stage: string) => {
  const v = times.filter((t) => t[0]!.startsWith(`${stage} after`)).map((t) => Number(t[1]) * 1000).sort((a, b) =>
    a - b
  );
  return v[Math.floor(v.length / 2)]!;
};
console.log('\nstage     lineage ms  stage wall ms (median)  share');
const row = (stage: string, ms: number) =>
  console.log(
    `${stage.padEnd(9)} ${ms.toFixed(1).padStart(10)}  ${wall(stage).toFixed(0).padStart(22)}  ${
      ((100 * ms) / wall(stage)).toFixed(2)
    }%`,
  );
row('wanda', rec.wanda + rec.model + chk.wanda);
row('cluster', rec.cluster + rec.model + chk.cluster);
row('ablate', chk.wanda + chk.ablate + rec.model);
row('report', chk.wanda + chk.cluster + chk.ablate);
