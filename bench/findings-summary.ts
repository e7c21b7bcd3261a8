/**
 * The numbers docs/findings.md quotes, as Markdown, from the runs bench/findings-smollm2.sh made.
 *
 *   node --import tsx bench/findings-summary.ts runs/findings > runs/findings/summary.md
 *
 * Separation at the final hidden state of every run (trained and control, question + response
 * and response only, English and Chinese) with chance, the nulls and the token baselines; the
 * paired differences trained − control; the probe per layer; the neuron regions at 256×256 and
 * at --block auto; the wall time of every step. Then, for every run present, the details the
 * findings quote (bench/findings-parts.ts): each classifier with its family's Holm p and z, the
 * paired model − words and incremental probes, the sweep after Holm with its layer steps, the
 * regions pair by pair with Holm and BH, density against random placements and the channel test;
 * and the statistics derived from figures recorded from earlier runs (bench/findings-recorded.json);
 * the cloze-scoring table from the evaluations kept in bench/cloze/ (bench/findings-cloze.ts).
 *
 *   node --import tsx bench/findings-summary.ts --cloze-into bench/findings-summary.out.md
 *
 * writes only the cloze section into an earlier output (its runs need not be on disk).
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { loadRun, type ReportModel } from '../src/report/load.js';
import { compareRuns } from '../src/report/compare.js';
import { verdictLines } from '../src/report/verdict.js';
import type { ClassifierMetrics, MetricWithCI } from '../src/cluster/types.js';
import type { WandaMetrics, WandaSettings } from '../src/wanda/types.js';
import { classifierTable, comparisonTable, recordedLines, sweepDetail, wandaDetail } from './findings-parts.js';
import { clozeLines } from './findings-cloze.js';
import { writeFileAtomicSync } from '../src/util/io.js';
import { loadSocialEvalBench, type IaeItem } from '../src/data/socialeval-eval.js';

const HERE = path.dirname(new URL(import.meta.url).pathname);
/** SocialEval's IAE items per language, for the length statistics of the cloze section, when the data is at $SHARED (default ../shared). */
function clozeData(): { language: string; label: string; items: IaeItem[] }[] {
  const trees = path.join(process.env.SHARED ?? path.join(HERE, '..', '..', 'shared'), 'socialeval', 'worldtree_data');
  if (!existsSync(trees)) return [];
  return (['en', 'zh'] as const).map((l) => ({ language: l, label: l === 'en' ? 'English' : 'Chinese',
    items: loadSocialEvalBench(`socialeval:${trees}?lang=${l}`, { iae: true, gae: false }).iae })
  );
}
if (process.argv[2] === '--cloze-into') {
  // Only the cloze section, from bench/cloze/ alone: written into an earlier output of this script
  // (replacing its cloze section, else placed where the whole script puts it), so that a summary
  // whose runs are no longer on disk gets the section without losing the rest.
  const file = process.argv[3];
  if (!file || !existsSync(file)) {
    process.stderr.write(
      `findings-summary: --cloze-into needs an existing output of this script, got ${file ?? 'nothing'}\n`,
    );
    process.exit(2);
  }
  const text = readFileSync(file, 'utf8');
  if (!text.startsWith('# SmolLM2-135M-Instruct on SocialEval: the numbers')) {
    process.stderr.write(
      `findings-summary: ${file} is not an output of bench/findings-summary.ts (its first line differs); not written\n`,
    );
    process.exit(1);
  }
  const section = clozeLines(path.join(HERE, 'cloze'), clozeData()).join('\n');
  const start = text.indexOf('### Cloze scoring');
  let next: string;
  if (start >= 0) {
    const end = text.indexOf('\n### ', start + 1);
    next = text.slice(0, start) + section + (end >= 0 ? '\n' + text.slice(end + 1) : '\n');
  } else {
    const at = text.indexOf('### scikit-learn on the same runs');
    const w = at >= 0 ? at : text.indexOf('### Wall times');
    next = w >= 0 ? text.slice(0, w) + section + '\n' + text.slice(w) : text.trimEnd() + '\n\n' + section + '\n';
  }
  writeFileAtomicSync(file, next);
  process.stderr.write(`wrote the cloze section into ${file}\n`);
  process.exit(0);
}
const OUT = process.argv[2] ?? 'runs/findings';
const RUNS = ['en-qr', 'en-qr-mean', 'en-qr-mean-control', 'en-qr-control', 'en-r', 'en-r-control', 'en-q',
  'en-q-control', 'zh-qr', 'zh-qr-mean', 'zh-qr-mean-control', 'zh-qr-control', 'zh-r', 'zh-r-control', 'zh-q',
  'zh-q-control'];
const LABEL: Record<string, string> = {
  'en-qr': 'English, question + response, trained',
  'en-qr-mean': 'English, question + response, trained, mean over the tokens (final.mean)',
  'en-qr-mean-control': 'English, question + response, random weights, mean over the tokens (final.mean)',
  'en-qr-control': 'English, question + response, random weights',
  'en-r': 'English, response only, trained',
  'en-r-control': 'English, response only, random weights',
  'en-q': 'English, question only, trained',
  'en-q-control': 'English, question only, random weights',
  'zh-qr': 'Chinese, question + response, trained',
  'zh-qr-mean': 'Chinese, question + response, trained, mean over the tokens (final.mean)',
  'zh-qr-mean-control': 'Chinese, question + response, random weights, mean over the tokens (final.mean)',
  'zh-qr-control': 'Chinese, question + response, random weights',
  'zh-r': 'Chinese, response only, trained',
  'zh-r-control': 'Chinese, response only, random weights',
  'zh-q': 'Chinese, question only, trained',
  'zh-q-control': 'Chinese, question only, random weights',
};

const f2 = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toFixed(3));
const ci = (m: MetricWithCI | null | undefined) => (m?.ci95 ? `[${f2(m.ci95[0])}, ${f2(m.ci95[1])}]` : '');
const nul = (
  m: MetricWithCI | null | undefined,
) => (m && m.nullMean !== null && m.nullMean !== undefined
  ? `${f2(m.nullMean)} [${f2(m.nullBand?.[0])}, ${f2(m.nullBand?.[1])}]`
  : '—');
const p = (
  m: MetricWithCI | null | undefined,
) => (m?.p === null || m?.p === undefined ? '—' : m.p < 0.001 ? m.p.toExponential(1) : m.p.toFixed(3));
const bal = (
  c: ClassifierMetrics | null | undefined,
) => (c ? `${f2(c.balancedAccuracy.value)} ${ci(c.balancedAccuracy)}` : '—');

async function load(name: string, clusterDir?: string): Promise<ReportModel | null> {
  const dir = path.join(OUT, name);
  if (!existsSync(path.join(dir, 'manifest.json'))) return null;
  if (clusterDir && !existsSync(path.join(dir, clusterDir, 'metrics.json'))) return null;
  return loadRun(dir, clusterDir ? { clusterDir: path.join(dir, clusterDir) } : {});
}

function separationTable(models: [string, ReportModel][], title: string): string[] {
  const out = [`### ${title}`, '',
    '| run | items | chance (balanced) | majority rate | probe balanced accuracy [95% CI] | null mean [95% band] | p | probe accuracy | kNN (cosine) balanced accuracy | null | p | kNN accuracy | token counts probe | token embedding-mean probe |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const [name, m] of models) {
    const cm = m.cluster?.metrics;
    if (!cm) continue;
    const eu = cm.spaces.find((s) => s.space === 'original-euclidean');
    const cos = cm.spaces.find((s) => s.space === 'original-cosine');
    const b = (n: string) => cm.baselines?.find((x) => x.name === n)?.probe;
    out.push(
      `| ${LABEL[name] ?? name} | ${cm.metricSample ?? cm.n} | ${f2(cm.chance?.balancedAccuracy)} | ${
        f2(cm.chance?.majorityRate)
      } | ${bal(eu?.probe)} | ${nul(eu?.probe?.balancedAccuracy)} | ${p(eu?.probe?.balancedAccuracy)} | ${
        f2(eu?.probe?.accuracy.value)
      } | ${bal(cos?.knn)} | ${nul(cos?.knn?.balancedAccuracy)} | ${p(cos?.knn?.balancedAccuracy)} | ${
        f2(cos?.knn?.accuracy.value)
      } | ${bal(b('token-counts'))} | ${bal(b('token-embedding-mean'))} |`,
    );
  }
  return [...out, ''];
}

function sweepTable(models: [string, ReportModel][]): string[] {
  const withSweep = models.filter(([, m]) => m.cluster?.metrics?.sweep?.length);
  if (!withSweep.length) return [];
  const points = withSweep[0][1].cluster!.metrics!.sweep!.map((w) => w.point);
  const out = ['### Probe balanced accuracy per layer (residual stream; null mean [95% band] of the first run)', '',
    `| layer | ${withSweep.map(([n]) => n).join(' | ')} | null (${withSweep[0][0]}) |`,
    `|---|${withSweep.map(() => '---|').join('')}---|`];
  for (const pt of points) {
    const cells = withSweep.map(([, m]) => {
      const w = m.cluster!.metrics!.sweep!.find((x) => x.point === pt);
      return w?.balancedAccuracy
        ? `${f2(w.balancedAccuracy.value)}${
          w.balancedAccuracy.p !== null && w.balancedAccuracy.p! <= 0.05 ? ' (*)' : ''
        }`
        : '—';
    });
    const w0 = withSweep[0][1].cluster!.metrics!.sweep!.find((x) => x.point === pt);
    out.push(
      `| ${pt.replace('layers.', '').replace('.resid_out', '')} | ${cells.join(' | ')} | ${
        nul(w0?.balancedAccuracy)
      } |`,
    );
  }
  return [...out, '', '(*) the balanced accuracy beats its permutation null (p ≤ 0.05).', ''];
}

function compareLines(a: ReportModel | null, b: ReportModel | null, title: string): string[] {
  if (!a || !b) return [];
  const c = compareRuns(a, b);
  return [`### ${title}`, '', ...(c.summary ?? []).map((l) => `- ${l}`), ''];
}

function wandaLines(name: string): string[] {
  const out: string[] = [];
  for (const sub of ['wanda-256', 'wanda']) {
    const dir = path.join(OUT, name, sub);
    if (!existsSync(path.join(dir, 'metrics.json'))) continue;
    const s = JSON.parse(readFileSync(path.join(dir, 'settings.json'), 'utf8')) as WandaSettings;
    const m = JSON.parse(readFileSync(path.join(dir, 'metrics.json'), 'utf8')) as WandaMetrics;
    const sig = (k: 'jaccard' | 'densityAminusB', lower = false) =>
      m.pairs.filter((q) => ((lower ? q[k].pLower : q[k].p) ?? 1) <= 0.05).length;
    const mean = (f: (q: WandaMetrics['pairs'][number]) => number) =>
      m.pairs.reduce((t, q) => t + f(q), 0) / m.pairs.length;
    const regions = JSON.parse(readFileSync(path.join(dir, 'regions.json'), 'utf8'));
    const mat = regions.matrices[0];
    out.push(
      `- ${LABEL[name] ?? name}, ${s.block.join('×')} blocks${
        s.blockCheck?.auto ? ' (auto)' : ''
      }: gate/up map ${mat.rowBlocks}×${mat.colBlocks}; ` +
        `${
          s.blockCheck?.coarse.length
            ? `coarse (${
              s.blockCheck.coarse.map((c) => `${c.proj} ${c.rowBlocks}×${c.colBlocks}, ${c.selected} selected`).join(
                '; ',
              )
            })`
            : 'every matrix passes the block-size rule'
        }; ` +
        `mean Jaccard ${f2(mean((q) => q.jaccard.value))} (null ${
          f2(mean((q) => q.jaccard.nullMean ?? NaN))
        }); pairs with Jaccard below the null (p ≤ 0.05): ${sig('jaccard', true)} of ${m.pairs.length}, after Holm ${
          m.pairs.filter((q) => (q.jaccard.pLowerHolm ?? 1) <= 0.05).length
        }; ` +
        `density of A∖B above the label null: ${
          sig('densityAminusB')
        } of ${m.pairs.length} (${s.permutations} permutations; isolation is the same test as Jaccard, |A| = |B|).`,
    );
  }
  return out;
}

const models: [string, ReportModel][] = [];
for (const r of RUNS) {
  const m = await load(r);
  if (m) models.push([r, m]);
}
const byName = new Map(models);
const lines: string[] = ['# SmolLM2-135M-Instruct on SocialEval: the numbers', '',
  `Runs in ${OUT}. Generated by bench/findings-summary.ts.`, ''];
lines.push('### Runs', '', '| run | items | tokens | capture points | extraction wall s | created |',
  '|---|---|---|---|---|---|');
for (const [name, m] of models) {
  const mf = m.manifest as unknown as { counts?: { samples?: number; tokens?: number };
    capture?: { points?: unknown[] }; timings?: { wallMs?: number }; createdAt?: string };
  const cls = m.cluster?.metrics?.chance;
  lines.push(
    `| ${LABEL[name] ?? name} | ${mf.counts?.samples ?? '—'} | ${mf.counts?.tokens ?? '—'} | ${
      mf.capture?.points?.length ?? '—'
    } | ${mf.timings?.wallMs ? (mf.timings.wallMs / 1000).toFixed(0) : '—'} | ${mf.createdAt ?? '—'}${
      cls ? `; classes ${m.cluster!.metrics!.classes.map((c, i) => `${c} ${cls.counts[i]}`).join(', ')}` : ''
    } |`,
  );
}
lines.push('');
lines.push(
  ...separationTable(models,
    'Separation of the five aspects at the final hidden state (probe on 50 principal components)'),
);
const full: [string, ReportModel][] = [];
for (const r of ['en-qr', 'en-qr-control', 'en-q', 'zh-qr', 'zh-qr-control']) {
  const m = await load(r, 'cluster-full');
  if (m?.cluster?.metrics) full.push([r, m]);
}
if (full.length) lines.push(...separationTable(full, 'The same with the probe on all 576 dimensions (--probe-pca 0)'));
lines.push('### What the report says first (English, question + response, trained)', '');
const en = byName.get('en-qr');
if (en) {
  for (const l of verdictLines(en.cluster?.metrics ?? null, en.cluster?.settings ?? null, en.wanda?.settings ?? null))
    lines.push(`> ${l}`, '>');
}
lines.push('');
lines.push(
  ...compareLines(byName.get('en-qr') ?? null, byName.get('en-qr-control') ?? null,
    'English, question + response: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-qr-mean') ?? null, byName.get('en-qr-mean-control') ?? null,
    'English, question + response, mean over the tokens: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-qr') ?? null, byName.get('en-qr-mean') ?? null,
    'English, question + response, trained: the mean over the tokens (final.mean) − the last token (final.hidden) (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-r') ?? null, byName.get('en-r-control') ?? null,
    'English, response only: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-qr') ?? null, byName.get('zh-qr-control') ?? null,
    'Chinese, question + response: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-r') ?? null, byName.get('zh-r-control') ?? null,
    'Chinese, response only: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-qr-mean') ?? null, byName.get('zh-qr-mean-control') ?? null,
    'Chinese, question + response, mean over the tokens: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-qr') ?? null, byName.get('zh-qr-mean') ?? null,
    'Chinese, question + response, trained: the mean over the tokens (final.mean) − the last token (final.hidden) (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-qr') ?? null, byName.get('en-r') ?? null,
    'English, trained: response only − question + response (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-qr') ?? null, byName.get('zh-r') ?? null,
    'Chinese, trained: response only − question + response (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-q') ?? null, byName.get('en-q-control') ?? null,
    'English, question only: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-qr') ?? null, byName.get('en-q') ?? null,
    'English, trained: question only − question + response (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-q') ?? null, byName.get('zh-q-control') ?? null,
    'Chinese, question only: trained − random weights (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('zh-qr') ?? null, byName.get('zh-q') ?? null,
    'Chinese, trained: question only − question + response (paired over items)'),
);
lines.push(
  ...compareLines(byName.get('en-qr') ?? null, byName.get('zh-qr') ?? null,
    'Trained: Chinese − English (independent items)'),
);
lines.push(
  ...sweepTable(
    models.filter(([n]) =>
      ['en-qr', 'en-qr-control', 'en-r', 'en-q', 'zh-qr', 'zh-qr-control', 'zh-r', 'zh-q'].includes(n)
    ),
  ),
);
const w = [...wandaLines('en-qr'), ...wandaLines('en-qr-control'), ...wandaLines('zh-qr'),
  ...wandaLines('zh-qr-control')];
if (w.length) lines.push('### Neuron regions (wanda, by aspect, top 10% of blocks per matrix)', '', ...w, '');
lines.push('### Details', '');
for (const [name, m] of models) {
  const cm = m.cluster?.metrics;
  if (!cm) continue;
  lines.push(...classifierTable(LABEL[name] ?? name, cm), ...comparisonTable(LABEL[name] ?? name, cm),
    ...sweepDetail(LABEL[name] ?? name, cm, m.cluster?.settings ?? null, [[22, 23], [26, 27]]));
}
for (const [name, m] of full) {
  const cm = m.cluster?.metrics;
  if (cm)
    lines.push(...classifierTable(`${LABEL[name] ?? name}, every dimension`, cm),
      ...comparisonTable(`${LABEL[name] ?? name}, every dimension`, cm));
}
for (const r of ['en-qr', 'en-qr-control', 'zh-qr', 'zh-qr-control'])
  for (const sub of ['wanda-256', 'wanda'])
    lines.push(...wandaDetail(`Regions of ${LABEL[r] ?? r}`, path.join(OUT, r, sub)));
lines.push(...recordedLines(path.join(path.dirname(new URL(import.meta.url).pathname), 'findings-recorded.json')));
lines.push(...clozeLines(path.join(HERE, 'cloze'), clozeData()));
const sk = path.join(path.dirname(new URL(import.meta.url).pathname), 'findings-sklearn.out.txt');
if (existsSync(sk))
  lines.push('### scikit-learn on the same runs (bench/findings-sklearn.out.txt)', '', '```',
    readFileSync(sk, 'utf8').trimEnd(), '```', '');
const times = path.join(OUT, 'times.tsv');
if (existsSync(times)) {
  lines.push('### Wall times', '', '| step | seconds | load average (1 min) at start → end |', '|---|---|---|');
  for (const row of readFileSync(times, 'utf8').trim().split('\n').slice(1)) {
    const [step, secs, l0, l1] = row.split('\t');
    lines.push(`| ${step} | ${secs} | ${l0} → ${l1} |`);
  }
  lines.push('');
}
process.stdout.write(lines.join('\n') + '\n');
