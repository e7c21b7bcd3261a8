/**
 * The outputs of `lobes wanda` (src/wanda/run.ts): the text tables (metrics.csv, channels.csv)
 * made from the metrics, the atomic write of every file of RUN/wanda/ through the store
 * (src/wanda/store.ts), and the line that says what an earlier result there was made with.
 */
import { csvField } from '../util/csv.js';
import { writeDirAtomic } from '../util/io.js';
import type { StWriteTensor } from '../formats/safetensors.js';
import { writeWandaFiles } from './store.js';
import { previousSettings } from '../store/analyses.js';
import type { LineageInput } from '../store/lineage.js';
import { NULL_METRICS, type AnalyzeResult } from './analyze.js';
import { sensitivityCsv } from './sensitivity.js';
import type { WandaSettings, WandaMetrics, NullTested } from './types.js';

/** Columns of metrics.csv. */
export const METRICS_CSV_HEADER =
  'a,b,metric,value,p,p_lower,percentile,null_mean,z,p_holm,p_bh,p_lower_holm,p_lower_bh';

/**
 * metrics.csv: one row per pair × metric, with the family-adjusted p-values beside the raw
 * ones. Isolation is left out (the same test as Jaccard, metrics.json's notes say why);
 * `placement_*` rows test A∖B and B∖A against random placements of their size, and
 * `densityRatio*` is the density over a random set's.
 */
export function metricsCsv(metrics: WandaMetrics): string {
  const rows = [METRICS_CSV_HEADER];
  const nil = [null, null, null, null, null, null, null, null, null, null, null];
  for (const p of metrics.pairs) {
    const nt = (name: string, t: NullTested) =>
      rows.push(
        [p.a, p.b, name, t.value, t.p, t.pLower ?? null, t.percentile, t.nullMean, t.z ?? null, t.pHolm ?? null,
          t.pBH ?? null, t.pLowerHolm ?? null, t.pLowerBH ?? null].map(csvField).join(','),
      );
    const plain = (name: string, v: number | null) => rows.push([p.a, p.b, name, v, ...nil].map(csvField).join(','));
    for (const k of NULL_METRICS) if (k !== 'isolationAB' && k !== 'isolationBA') nt(k, p[k]);
    for (const k of ['sizeAminusB', 'sizeBminusA'] as const) plain(k, p[k]);
    nt('componentsAminusB',
      p.componentsAminusBNull ?? { value: p.componentsAminusB, p: null, percentile: null, nullMean: null });
    nt('componentsBminusA',
      p.componentsBminusANull ?? { value: p.componentsBminusA, p: null, percentile: null, nullMean: null });
    for (const [side, pl] of [['AminusB', p.placementAminusB], ['BminusA', p.placementBminusA]] as const) {
      if (!pl) continue;
      plain(`densityRatio${side}`, pl.densityRatio);
      nt(`placement_density${side}`, pl.density);
      nt(`placement_components${side}`, pl.components);
    }
  }
  for (const w of metrics.weightLevel ?? []) {
    const t = w.jaccard;
    rows.push(
      [w.a, w.b, 'weight_jaccard', t.value, t.p, t.pLower ?? null, t.percentile, t.nullMean, t.z ?? null,
        t.pHolm ?? null, t.pBH ?? null, t.pLowerHolm ?? null, t.pLowerBH ?? null].map(csvField).join(','),
    );
  }
  return rows.join('\n') + '\n';
}

/** channels.csv: the per-channel RMS test, one row per capture point. */
export function channelsCsv(metrics: WandaMetrics): string {
  const rows = ['hook,layer,channels,value,p,z,null_mean,p_holm,p_bh,channels_bh05,top_channels'];
  for (const c of metrics.channels ?? []) {
    const top = c.top.map((t) => `${t.channel}:${t.high}>${t.low}`).join(' ');
    rows.push(
      [c.hook, c.layer, c.channels, c.value, c.p, c.z, c.nullMean, c.pHolm, c.pBH, c.channelsBH05, top].map(csvField)
        .join(','),
    );
  }
  return rows.join('\n') + '\n';
}

/** Write every output into a temporary sibling of `target`, then swap it in (writeDirAtomic). */
export async function writeOutputs(target: string, settings: WandaSettings, result: AnalyzeResult,
  metrics: WandaMetrics, inputs: LineageInput[]): Promise<void>
{
  await writeDirAtomic(target, (tmp) => {
    const tensors: StWriteTensor[] = [];
    for (const [key, map] of result.pooled) {
      const m = result.regions.matrices.find((x) => key.endsWith(`|${x.name}`))!;
      tensors.push({ name: key, dtype: 'F32', shape: [m.rowBlocks, m.colBlocks], data: map });
    }
    writeWandaFiles(tmp, {
      settings,
      regions: result.regions,
      metrics,
      tables: {
        metrics: metricsCsv(metrics),
        ...(metrics.channels ? { channels: channelsCsv(metrics) } : {}),
        ...(metrics.sensitivity ? { sensitivity: sensitivityCsv(metrics.sensitivity) } : {}),
      },
      pooled: { tensors,
        meta: { by: settings.by, block: settings.block.join('x'), seed: String(settings.seed),
          format: 'lobes-wanda-pooled' } },
    });
  }, { kind: 'wanda', inputs });
}

/** What an earlier result in `target` was made with, where it differs from `now` (null: none there, or the same settings). */
export function describeReplaced(target: string, now: WandaSettings): string | null {
  const prev = previousSettings(target) as Partial<WandaSettings> | null;
  if (!prev) return null;
  const shown: [string, unknown, unknown][] = [
    ['--block', prev.block, now.block],
    ['--top', prev.top, now.top],
    ['--permutations', prev.permutations, now.permutations],
    ['--seed', prev.seed, now.seed],
    ['--resolution', prev.resolution, now.resolution],
    ['weights', prev.weights?.path, now.weights.path],
  ];
  const differ = shown.filter(([, a, b]) => JSON.stringify(a) !== JSON.stringify(b)).map(([k, a, b]) =>
    `${k} ${JSON.stringify(a)} then, ${JSON.stringify(b)} now`
  );
  return differ.length ? `made with ${differ.join('; ')}` : 'the same settings, run again';
}
