/**
 * The page's lines that read several analyses of a run together: the provenance rows, the
 * first lines (which numbers beat chance, the map's islands, an evaluation's headline on its
 * own page, what was left out and what is shown) and the verdict tables (src/report/verdict.ts).
 * Each analysis's own payload is its report module's (src/NAME/report.ts).
 */
import type { ReportModel } from './load.js';
import { verdictLines } from './verdict.js';
import { verdictTable } from './verdict-table.js';
import { ablatePayload } from './ablate.js';
import { islandLine } from './islands.js';
import type { AblatePayload, RunPayload, VerdictTable } from './types.js';

export function provenanceOf(model: ReportModel): [string, string][] {
  const m: any = model.manifest;
  const out: [string, string][] = [];
  const add = (k: string, v: unknown) => {
    if (v === undefined || v === null || v === '') return;
    out.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
  };
  add('run', model.dir);
  add('created', m.createdAt);
  add('lobes version', m.lobesVersion);
  add('model', m.model?.dir);
  add('model graph sha256', m.model?.graphSha256);
  if (m.model?.source?.identity)
    add('model source',
      `${
        m.model.source.format === 'hf-checkpoint' ? 'Hugging Face checkpoint' : 'GGUF'
      } ${m.model.source.path} (sha256 ${m.model.source.sha256}); identity ${m.model.source.identity} (the same for every layout: ${m.model.source.options?.layout} here)`);
  if (m.model?.control)
    add('random-weights control of',
      `${m.model.control.source} (graph sha256 ${m.model.control.sourceGraphSha256}); seed ${m.model.control.seed}; ${m.model.control.scheme}`);
  const a = m.model?.arch;
  if (a)
    add('architecture',
      `${
        a.family ?? '?'
      }: ${a.layers} layers, hidden ${a.hidden}, intermediate ${a.intermediate}, vocab ${a.vocab}, ${a.dtype}${
        a.quantization ? `, ${a.quantization}` : ''
      }`);
  if (m.tokenizer)
    add('tokenizer',
      `${m.tokenizer.source}; chat template ${m.tokenizer.chatTemplate ? 'on' : 'off'}; BOS ${
        m.tokenizer.addBos ? 'added' : 'not added'
      }; max tokens ${m.tokenizer.maxTokens ?? 'none'}`);
  if (m.dataset) {
    add('dataset', m.dataset.spec);
    add('dataset items sha256', m.dataset.itemsSha256);
    add('label axes', Array.isArray(m.dataset.axes) ? m.dataset.axes.join(', ') : m.dataset.axes);
  }
  if (m.counts) add('samples', `${m.counts.samples} (${m.counts.truncated} truncated, ${m.counts.tokens} tokens)`);
  add('dtype', m.dtype);
  if (m.provider) add('device', `${m.provider.device}${m.provider.deviceId ? ` #${m.provider.deviceId}` : ''}`);
  if (m.shard) add('shard', `${m.shard.index + 1} of ${m.shard.count}`);
  if (m.capture?.selection) add('captured', m.capture.selection.join(', '));
  add('complete', m.complete === undefined ? undefined : m.complete ? 'yes' : 'no');
  const w = model.wanda?.settings;
  if (w) {
    add('wanda',
      `by ${w.by}; block ${w.block?.join('x')}${
        w.blockCheck?.auto ? ' (auto)' : ''
      }; top ${w.top?.kind} ${w.top?.value} per ${w.top?.scope}; ${w.permutations} permutations; seed ${w.seed}; weights ${w.weights?.source} ${w.weights?.path}`);
  }
  const c = model.cluster?.settings;
  if (c) {
    add('cluster',
      `point ${c.point}; by ${c.by}; seed ${c.seed}; perplexity ${c.perplexity}; t-SNE neighbourhoods ${
        c.pcaDims ? `in ${c.pcaDims} PCA dims` : 'in the original space'
      }; theta ${c.theta}; ${c.iterations} iterations; ${c.bootstrap} bootstrap; ${c.permutations} permutations (${
        c.probePermutations ?? '?'
      } for the probe); probe on ${c.probePca ? `${c.probePca} PCA dims` : 'all dims'}`);
  }
  return out;
}

/** The run's first lines: an evaluation's headline on its own page, what was left out, the map's islands, the verdicts in words, what is shown. */
export function summaryLines(model: ReportModel, parts: Partial<RunPayload>): string[] {
  const summary = verdictLines(model.cluster?.metrics ?? null, model.cluster?.settings ?? null,
    model.wanda?.settings ?? null, model.wanda?.metrics ?? null);
  // First line: when the map's islands follow another label better than the one it is coloured by.
  const scatter = parts.scatter;
  const islands = scatter?.fits ? islandLine(scatter.fits, scatter.by) : null;
  const ev = parts.eval;
  // an evaluation alone: its headline is the page's first lines
  const evalFirst = ev && !model.cluster && !model.wanda ? [...(ev.warnings ?? []), ...(ev.headline ?? [])] : [];
  return [...evalFirst, ...(model.omitted ?? []).map((n) => `Note: ${n}.`.replace(/\.\.$/, '.')),
    ...(islands ? [islands, ...summary] : summary), ...(model.shown ?? []).map((n) => `${n}.`)];
}

/** The run's verdict tables: its own label axis (with the ablation when one is shown), then each other axis it was analysed by. */
export function verdictTables(model: ReportModel,
  ablate: AblatePayload | null = model.ablate ? ablatePayload(model.ablate) : null): VerdictTable[]
{
  const own = verdictTable(model.cluster?.metrics ?? null, model.cluster?.settings ?? null,
    model.wanda?.settings ?? null, model.wanda?.metrics ?? null, ablate);
  const others = (model.otherAxes ?? []).map((a) =>
    verdictTable(a.cluster?.metrics ?? null, a.cluster?.settings ?? null, a.wanda?.settings ?? null,
      a.wanda?.metrics ?? null)
  );
  return [own, ...others].filter((t): t is VerdictTable => !!t);
}
