/**
 * The data a report page carries: a compact, JSON-serializable view of a ReportModel
 * (the types are in types.ts, shared with the page script).
 *
 * Neuron regions are stored as bitsets (base64) over one flat block index space per run:
 * projection p, layer slot l, block k (row-major in W[d_out, d_in] blocks) sits at
 *   offset[p] + l * blocks[p] + k,
 * so 80 layers x 3 projections x 3,584 blocks cost 107 KB per set. Where pooled scores exist,
 * each group also carries one byte per block: the block's importance percentile within its
 * matrix (0..255), which colours the heatmaps on a scale that is comparable across models.
 */
import type { ReportModel } from './load.js';
import { verdictLines, verdictTable } from './verdict.js';
import type { WandaMatrix, BlockSet } from '../wanda/types.js';
import { attendPayload } from './attend.js';
import { ablatePayload } from './ablate.js';
import type { ScatterPayload, WandaPayload, RunPayload, EvalPayload, VerdictTable } from './types.js';
import { PAPER_REFERENCE, PAPER_SOURCE } from '../eval/reference.js';
import { modelName } from './naming.js';
import { evalHeadline } from '../eval/headline.js';
import { axisFits, islandLine } from './islands.js';
import { readLabelOverlays } from '../store/labels.js';

export type { ScatterPayload, WandaPayload, RunPayload } from './types.js';

const PROJ_ORDER = ['gate_proj', 'up_proj', 'down_proj'];

function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

const round = (v: number, d: number) => {
  const f = 10 ** d;
  return Math.round(v * f) / f;
};

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
  if (m.model?.source?.identity) add('model source', `${m.model.source.format === 'hf-checkpoint' ? 'Hugging Face checkpoint' : 'GGUF'} ${m.model.source.path} (sha256 ${m.model.source.sha256}); identity ${m.model.source.identity} (the same for every layout: ${m.model.source.options?.layout} here)`);
  if (m.model?.control) add('random-weights control of', `${m.model.control.source} (graph sha256 ${m.model.control.sourceGraphSha256}); seed ${m.model.control.seed}; ${m.model.control.scheme}`);
  const a = m.model?.arch;
  if (a) add('architecture', `${a.family ?? '?'}: ${a.layers} layers, hidden ${a.hidden}, intermediate ${a.intermediate}, vocab ${a.vocab}, ${a.dtype}${a.quantization ? `, ${a.quantization}` : ''}`);
  if (m.tokenizer) add('tokenizer', `${m.tokenizer.source}; chat template ${m.tokenizer.chatTemplate ? 'on' : 'off'}; BOS ${m.tokenizer.addBos ? 'added' : 'not added'}; max tokens ${m.tokenizer.maxTokens ?? 'none'}`);
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
    add('wanda', `by ${w.by}; block ${w.block?.join('x')}${w.blockCheck?.auto ? ' (auto)' : ''}; top ${w.top?.kind} ${w.top?.value} per ${w.top?.scope}; ${w.permutations} permutations; seed ${w.seed}; weights ${w.weights?.source} ${w.weights?.path}`);
  }
  const c = model.cluster?.settings;
  if (c) {
    add('cluster', `point ${c.point}; by ${c.by}; seed ${c.seed}; perplexity ${c.perplexity}; t-SNE neighbourhoods ${c.pcaDims ? `in ${c.pcaDims} PCA dims` : 'in the original space'}; theta ${c.theta}; ${c.iterations} iterations; ${c.bootstrap} bootstrap; ${c.permutations} permutations (${c.probePermutations ?? '?'} for the probe); probe on ${c.probePca ? `${c.probePca} PCA dims` : 'all dims'}`);
  }
  return out;
}

/** Escape for Plotly's text renderer (which reads a small HTML subset): show the string as typed. */
export function plotlyText(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Hover text for one item: escaped, wrapped at ~70 characters, cut at 600. */
export function hoverText(id: string, label: string, text: string | undefined): string {
  const lines = [`<b>${plotlyText(label)}</b>`, plotlyText(id)];
  if (text) {
    let t = text.length > 600 ? text.slice(0, 600) + '…' : text;
    t = t.replace(/\s+/g, ' ').trim();
    let line = '';
    for (const word of t.split(' ')) {
      if (line && line.length + word.length + 1 > 70) {
        lines.push(plotlyText(line));
        line = '';
      }
      line = line ? `${line} ${word}` : word;
    }
    if (line) lines.push(plotlyText(line));
  }
  return lines.join('<br>');
}

function scatterPayload(model: ReportModel): ScatterPayload | null {
  const c = model.cluster;
  if (!c) return null;
  const { coords } = c;
  const groups: string[] = c.metrics?.classes?.slice() ?? [];
  const index = new Map(groups.map((g, i) => [g, i]));
  for (const l of coords.labels) if (!index.has(l)) index.set(l, groups.push(l) - 1);
  const n = coords.ids.length;
  const x = new Array<number>(n);
  const y = new Array<number>(n);
  const g = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    x[i] = round(coords.xy[2 * i]!, 4);
    y[i] = round(coords.xy[2 * i + 1]!, 4);
    g[i] = index.get(coords.labels[i]!)!;
  }
  // Item text: from coords.json, else from the run's samples (SampleRow.text) by id.
  let text: (string | undefined)[] | undefined = coords.text;
  if (!text) {
    const byId = new Map<string, string>();
    for (const s of model.samples as (typeof model.samples[number] & { text?: string })[]) if (typeof s.text === 'string') byId.set(s.id, s.text);
    if (byId.size) text = coords.ids.map((id) => byId.get(id));
  }
  const hover = coords.ids.map((id, i) => hoverText(id, coords.labels[i]!, text?.[i]));
  const by = c.settings?.by ?? 'label';
  const axes = labelAxes(model, coords.ids, by);
  const fits = axisFits(x, y, [{ axis: by, codes: Int32Array.from(g), classes: groups.length }, ...axes.map((a) => ({ axis: a.axis, codes: Int32Array.from(a.v), classes: a.values.length }))]);
  return { groups, g, x, y, hover, by, axes, fits };
}

/** Most values a label axis may have and still be offered as the map's colouring. */
const MAX_AXIS_VALUES = 40;

/**
 * Every label axis of the run's samples and label overlays (RUN/labels, e.g. `correct` from lobes
 * eval label) other than `by`, as value indices per map point, when it has 2 to MAX_AXIS_VALUES values.
 */
function labelAxes(model: ReportModel, ids: string[], by: string): { axis: string; values: string[]; v: number[] }[] {
  const byId = new Map(model.samples.map((s) => [s.id, s.labels]));
  const names: string[] = [];
  for (const s of model.samples) for (const k of Object.keys(s.labels)) if (!names.includes(k)) names.push(k);
  const overlays = model.samples.length ? readLabelOverlays(model.dir) : new Map();
  for (const k of overlays.keys()) if (!names.includes(k)) names.push(k);
  const out: { axis: string; values: string[]; v: number[] }[] = [];
  for (const axis of names) {
    if (axis === by) continue;
    const o = overlays.get(axis);
    const values: string[] = [];
    const index = new Map<string, number>();
    const v = ids.map((id) => {
      const val = o ? o.values[id] ?? o.default : byId.get(id)?.[axis] ?? '(none)';
      let k = index.get(val);
      if (k === undefined) index.set(val, (k = values.push(val) - 1));
      return k;
    });
    if (values.length >= 2 && values.length <= MAX_AXIS_VALUES) out.push({ axis, values, v });
  }
  return out;
}

class Bits {
  readonly bytes: Uint8Array;
  count = 0;
  constructor(n: number) {
    this.bytes = new Uint8Array((n + 7) >> 3);
  }
  set(i: number): void {
    const m = 1 << (i & 7);
    if (!(this.bytes[i >> 3]! & m)) {
      this.bytes[i >> 3]! |= m;
      this.count++;
    }
  }
}

function wandaPayload(model: ReportModel): WandaPayload | null {
  const w = model.wanda;
  if (!w) return null;
  const mats = w.regions.matrices;
  const projs = [...new Set(mats.map((m) => m.proj))].sort((a, b) => {
    const ia = PROJ_ORDER.indexOf(a);
    const ib = PROJ_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : a > b ? 1 : 0);
  });
  const layers = [...new Set(mats.map((m) => m.layer))].sort((a, b) => a - b);
  const layerIdx = new Map(layers.map((l, i) => [l, i]));
  const grid: WandaPayload['grid'] = [];
  let offset = 0;
  for (const p of projs) {
    const ms = mats.filter((m) => m.proj === p);
    // Display grid of a projection: its largest matrix (all layers share one shape in Llama models).
    let rb = 0;
    let cb = 0;
    for (const m of ms) if (m.rowBlocks * m.colBlocks > rb * cb) [rb, cb] = [m.rowBlocks, m.colBlocks];
    grid.push({ rowBlocks: rb, colBlocks: cb, blocks: rb * cb, offset });
    offset += layers.length * rb * cb;
  }
  const total = offset;
  const place = new Map<string, { base: number; m: WandaMatrix }>();
  const present = new Bits(projs.length * layers.length);
  for (const m of mats) {
    const p = projs.indexOf(m.proj);
    const l = layerIdx.get(m.layer)!;
    place.set(m.name, { base: grid[p]!.offset + l * grid[p]!.blocks, m });
    present.set(p * layers.length + l);
  }
  const toBits = (set: BlockSet | undefined): Bits => {
    const bits = new Bits(total);
    if (!set) return bits;
    for (const [name, idx] of Object.entries(set)) {
      const pl = place.get(name);
      if (!pl) continue;
      for (const k of idx) bits.set(pl.base + k);
    }
    return bits;
  };
  const groups = w.settings.groups;
  const regions: Record<string, string> = {};
  for (const g of groups) regions[g] = b64(toBits(w.regions.regions[g]).bytes);
  let pct: Record<string, string> | null = null;
  if (w.pooled) {
    pct = {};
    for (const g of groups) {
      const bytes = new Uint8Array(total);
      let any = false;
      for (const { base, m } of place.values()) {
        const s = w.pooled(g, m.name);
        if (!s) continue;
        any = true;
        percentileBytes(s, bytes, base);
      }
      if (any) pct[g] = b64(bytes);
    }
    if (!Object.keys(pct).length) pct = null;
  }
  const metricsFor = (a: string, b: string) => w.metrics?.pairs.find((p) => p.a === a && p.b === b) ?? null;
  const pairs = w.regions.differences.map((d) => {
    const ab = toBits(d.aMinusB);
    const ba = toBits(d.bMinusA);
    return { a: d.a, b: d.b, ab: b64(ab.bytes), ba: b64(ba.bytes), nAB: ab.count, nBA: ba.count, metrics: metricsFor(d.a, d.b) };
  });
  // the capture points' per-channel families (d members each) stay out of the page: it names them from metrics.channels
  const metrics = w.metrics?.declaredFamilies?.some((f) => f.family.startsWith('channels ')) ? { ...w.metrics, declaredFamilies: w.metrics.declaredFamilies.filter((f) => !f.family.startsWith('channels ')) } : w.metrics;
  return { by: w.settings.by, groups, projs, layers, grid, total, present: b64(present.bytes), pct, regions, pairs, metrics, settings: w.settings };
}

/**
 * Write each block's rank percentile within `s` (0 = least important, 255 = most) to out[base + k].
 * Ties share the lowest rank of their run.
 */
export function percentileBytes(s: Float32Array, out: Uint8Array, base: number): void {
  const n = s.length;
  if (n === 1) {
    out[base] = 255;
    return;
  }
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((i, j) => s[i]! - s[j]!);
  let r = 0;
  for (let k = 0; k < n; k++) {
    if (k > 0 && s[order[k]!]! !== s[order[k - 1]!]!) r = k;
    out[base + order[k]!] = Math.round((255 * r) / (n - 1));
  }
}

/** The evaluation as the page shows it: the summary, the settings in words, the paper's rows as references. */
function evalPayload(model: ReportModel): EvalPayload | null {
  const ev = model.eval;
  if (!ev) return null;
  const m = ev.manifest;
  const s = m.settings ?? {};
  const t = m.throughput ?? {};
  const cloze = s.scoring === 'cloze';
  const words = [
    cloze ? 'cloze scoring: every option\'s text scored as a continuation of the prompt (no letters, no shuffles)' : `${s.shuffles} shuffles of the options, majority vote (seed ${s.seed})`,
    ...(cloze ? [] : [s.cot ? `greedy reasoning up to ${s.cot} tokens before the answer` : 'answer letter scored directly (no reasoning)']),
    s.limit ? `--limit ${s.limit} (seeded, stratified subset of ${m.dataset?.available} units)` : 'every item',
    `${t.prompts} prompts, ${t.prompts ? Math.round(t.promptTokens / t.prompts) : 0} tokens per prompt on average`,
    `${s.device}, ${Math.round((m.timings?.wallMs ?? 0) / 1000)} s`,
  ];
  return {
    dir: ev.dir,
    model: modelName(m.model),
    dataset: String(m.dataset?.spec ?? ''),
    settings: words.join('; '),
    summary: ev.summary,
    ...evalHeadline(ev.summary),
    reference: { source: PAPER_SOURCE, rows: [...PAPER_REFERENCE] },
  };
}

export function runPayload(model: ReportModel): RunPayload {
  const ctl = model.control;
  const scatter = scatterPayload(model);
  const summary = verdictLines(model.cluster?.metrics ?? null, model.cluster?.settings ?? null, model.wanda?.settings ?? null, model.wanda?.metrics ?? null);
  // First line: when the map's islands follow another label better than the one it is coloured by.
  const islands = scatter?.fits ? islandLine(scatter.fits, scatter.by) : null;
  const ablate = model.ablate ? ablatePayload(model.ablate) : null;
  const ev = evalPayload(model);
  // an evaluation alone: its headline is the page's first lines
  const evalFirst = ev && !model.cluster && !model.wanda ? [...(ev.warnings ?? []), ...(ev.headline ?? [])] : [];
  return {
    name: model.name,
    randomModel: model.randomModel,
    control: ctl ? `This run is a random-weights control: the architecture and tokenizer of ${ctl.source} with every weight drawn again (seed ${ctl.seed}; ${ctl.scheme}). Its numbers are the floor a trained model's must beat.` : null,
    summary: [...evalFirst, ...(model.omitted ?? []).map((n) => `Note: ${n}.`.replace(/\.\.$/, '.')), ...(islands ? [islands, ...summary] : summary), ...(model.shown ?? []).map((n) => `${n}.`)],
    provenance: provenanceOf(model),
    scatter,
    cluster: model.cluster ? { metrics: model.cluster.metrics, settings: model.cluster.settings } : null,
    wanda: wandaPayload(model),
    attend: model.attend ? attendPayload(model.attend) : null,
    ablate,
    eval: ev,
    verdicts: verdictTables(model, ablate),
    // the analyses that load through the contract, by payload key (src/analysis/registry.ts)
    ...(model.analyses ?? {}),
  };
}

/** The run's verdict tables: its own label axis (with the ablation when one is shown), then each other axis it was analysed by. */
export function verdictTables(model: ReportModel, ablate: ReturnType<typeof ablatePayload> | null = model.ablate ? ablatePayload(model.ablate) : null): VerdictTable[] {
  const own = verdictTable(model.cluster?.metrics ?? null, model.cluster?.settings ?? null, model.wanda?.settings ?? null, model.wanda?.metrics ?? null, ablate);
  const others = (model.otherAxes ?? []).map((a) => verdictTable(a.cluster?.metrics ?? null, a.cluster?.settings ?? null, a.wanda?.settings ?? null, a.wanda?.metrics ?? null));
  return [own, ...others].filter((t): t is VerdictTable => !!t);
}
