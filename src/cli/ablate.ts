import { parseCommand, intOption, requireValues } from './args.js';
import { UsageError } from '../util/errors.js';
import { INTERVENE_HELP, INTERVENE_OPTION, interventionsOf } from './intervene.js';
import { DEVICE_OPTIONS, FORCE_OPTION, HELP, LIMIT_OPTIONS, MODEL_OPTIONS, OUTPUT_OPTIONS, deviceOf,
  limitOf } from './options.js';
import type { AblateSummary } from '../ablate/store.js';
import { ABLATE_ALPHA, ABLATE_POWER, ABLATE_RANDOM, type HeadTest, type NullNormality,
  type PairedSide } from '../ablate/stats.js';
import type { WeightsMode } from '../convert/convert.js';
import { readManifest } from '../store/manifest.js';
import { interruptSignal } from './interrupt.js';
import { stderrIO } from '../util/jobio.js';

/** `--shuffled` alone: 5 shuffled-label regions per region (rank p floor 1/6). */
const SHUFFLED_DEFAULT = 5;

const USAGE =
  'lobes ablate RUN --region A|all [--minus B|others] --data SPEC --out DIR [--task continuation|iae [--scoring letter|cloze] [--metric acc|acc_norm|acc_mutual_info]] [--random K] [--top F1,F2,…] [--magnitude] [--shuffled [S]] [--fit-split SEED] [--scope matrix|layer|global] [--wanda-by LABEL] [--model M] [--limit N [--by LABELS]] [--seed N] [--bootstrap B] [--batch N] [--device cpu|cuda|webgpu] [--device-id N] [--threads N] [--intervene SPEC ...] [--force] [--quiet] [--json]';

const HELP_TEXT = `
A causal test of wanda's neuron regions: zero every weight in the blocks of a group's region
(RUN/wanda/regions.json), or of a set difference, and measure how each item's continuation
log-likelihood changes, against random regions of the same size and block count per matrix.
Writes DIR/ablation.json (every zeroed block: Hugging Face tensor, rows, cols, ONNX
initializer), DIR/records.jsonl (one item per line) and DIR/summary.json (docs/ablate.md).

  --region A|all       the group whose region is zeroed; all: every group's region in turn
                       (one scoring of the unablated model shared by all)
  --minus B|others     zero A∖B instead (the blocks of A's region not in B's); others: the
                       blocks of A's region in no other group's region
  --data SPEC          socialeval:DIR?lang=en (context: the skill question and a newline,
                       continuation: the correct response) or
                       jsonl:FILE?context=F&continuation=G&label=L[&id=I]
  --out DIR            the ablation folder (a killed run resumes into it)
  --task T             continuation (default): each item's continuation log-likelihood;
                       iae: the multiple-choice items of lobes eval (SocialEval IAE, or
                       jsonl:FILE?question=…&options=…&answer=…), answered right or not
  --scoring S          --task iae: letter (default, eval's letter scoring over 3 orders) or
                       cloze (every option as a continuation)
  --metric M           --task iae: acc (default), acc_norm or acc_mutual_info (cloze); the
                       model must be above chance on it before ablating, else lobes refuses
  --random K           random regions per region for the null (default 20; rank p ≥ 1/(K+1))
  --top F1,F2,…        a dose–response: every region also at these wanda top fractions
                       (e.g. 0.005,0.01,0.02,0.05,0.1), computed from RUN/wanda's pooled
                       block scores, each against its own K random regions of its size
                       (continuation task; block-resolution wanda results)
  --magnitude          a |W|-magnitude baseline per region: as many blocks per pool, those of
                       largest mean |W| (no activation norm), scored against the same random
                       regions and compared with the region item by item (continuation task)
  --shuffled [S]       the shuffled-label null: S labellings (alone: 5) with the groups
                       shuffled across the run's rows (seeded); wanda's regions under each,
                       recomputed from the run's activations, are ablated too, and each
                       region's specificity (contrast, cost ratio) is ranked among theirs
                       (rank p floor 1/(S+1); 19 gives 0.05); continuation task
  --fit-split SEED     split the items in halves stratified by label (seeded); fit the regions
                       on the fit half's rows of the run (wanda's machinery) and ablate on the
                       test half only
  --scope S            where random blocks are drawn with the region's count: matrix (default:
                       the same number of blocks in every matrix), layer or global
  --wanda-by LABEL     the label axis of the wanda results that give the regions (default the
                       run's default axis, RUN/wanda; another axis: RUN/wanda.by-LABEL)
  --model M            the model to score: an ONNX model folder or a llama GGUF file (converted
                       once into the cache; with --task iae, to the KV-cache layout, so each
                       prompt is computed once for all its options); default the run's model;
                       another must be the same model (every file the same by sha256, or a
                       conversion of the same GGUF)
${HELP.cache}
${HELP.limit}
${HELP.seed('the --limit sample, the random regions and the bootstrap')}
  --bootstrap B        bootstrap resamples of the CIs (default 2000)
  --batch N            rows per forward pass (default 8)
${HELP.device}
  --threads N          onnxruntime threads (default: onnxruntime's)
${INTERVENE_HELP}; before and after ablating alike
${HELP.force}
${HELP.quiet}
${HELP.json}
`;

export async function run(argv: string[]): Promise<number> {
  const p = parseCommand(argv, {
    usage: USAGE,
    help: HELP_TEXT,
    positionals: [1, 1],
    options: {
      ...MODEL_OPTIONS,
      ...DEVICE_OPTIONS,
      ...OUTPUT_OPTIONS,
      ...FORCE_OPTION,
      ...LIMIT_OPTIONS,
      region: { type: 'string' },
      'wanda-by': { type: 'string' },
      minus: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      task: { type: 'string', choices: ['continuation', 'iae'] as const },
      scoring: { type: 'string', choices: ['letter', 'cloze'] as const },
      metric: { type: 'string', choices: ['acc', 'acc_norm', 'acc_mutual_info'] as const },
      random: { type: 'string' },
      top: { type: 'string', key: 'tops' },
      magnitude: { type: 'boolean' },
      shuffled: { type: 'string', bare: String(SHUFFLED_DEFAULT) },
      'fit-split': { type: 'string' },
      scope: { type: 'string', choices: ['matrix', 'layer', 'global'] as const },
      bootstrap: { type: 'string' },
      batch: { type: 'string' },
      threads: { type: 'string' },
      ...INTERVENE_OPTION,
    },
  });
  if (!p) return 0;
  const v = requireValues(p.values, ['region', 'data', 'out'] as const, `usage: ${USAGE}`);
  const { limit, by, seed } = limitOf(v);
  const { device, deviceId } = deviceOf(v);
  const interventions = interventionsOf(v);
  let model: string | null = null;
  let modelSource = null;
  if (v.model !== undefined) {
    // The run and the data are checked before the model is loaded or converted (minutes for a
    // GGUF); without --model nothing is opened before the run's own checks.
    (await import('../store/manifest.js')).readManifest(p.positionals[0]!);
    (await import('../data/index.js')).checkDataSpec(v.data, ['socialeval', 'jsonl']);
    const { modelFolder } = await import('./convert.js');
    const m = await modelFolder(v.model, { cache: v.cache, quiet: !!v.quiet,
      ...(v.task === 'iae' ? iaeConversion(p.positionals[0]!) : {}) });
    model = m.dir;
    modelSource = m.source;
  }
  const { runAblate } = await import('../ablate/run.js');
  const s = await runAblate({
    run: p.positionals[0]!,
    region: v.region,
    minus: v.minus ?? null,
    wandaBy: v['wanda-by'],
    data: v.data,
    out: v.out,
    random: intOption(v.random, '--random', ABLATE_RANDOM, 1),
    scope: v.scope,
    magnitude: !!v.magnitude,
    shuffled: intOption(v.shuffled, '--shuffled', 0, 0),
    fitSplit: v['fit-split'] === undefined ? null : intOption(v['fit-split'], '--fit-split', 0, 0),
    tops: v.top === undefined ? undefined : topList(v.top),
    task: v.task,
    scoring: v.scoring,
    metric: v.metric,
    model,
    modelSource,
    seed,
    limit,
    by,
    device,
    deviceId,
    threads: v.threads !== undefined ? intOption(v.threads, '--threads', 1, 1) : undefined,
    batch: intOption(v.batch, '--batch', 8, 1),
    bootstrap: intOption(v.bootstrap, '--bootstrap', 2000, 100),
    force: !!v.force,
    io: stderrIO({ quiet: !!v.quiet || !!v.json, signal: interruptSignal('ablate') }),
    ...(interventions.length ? { interventions } : {}),
  });
  process.stdout.write(v.json ? JSON.stringify(s, null, 1) + '\n' : formatAblate(s) + '\n');
  return 0;
}

/** --top F1,F2,…: fractions in (0, 1]. */
function topList(v: string): number[] {
  return v.split(',').map((x) => {
    const t = Number(x.trim());
    if (!x.trim() || !Number.isFinite(t) || !(t > 0 && t <= 1))
      throw new UsageError(`--top takes comma-separated fractions in (0, 1], got ${JSON.stringify(x.trim())}`,
        'e.g. --top 0.005,0.01,0.02,0.05,0.1');
    return t;
  });
}

/**
 * --task iae with a GGUF --model: the genai (KV-cache) conversion, so that each item's prompt is
 * computed once for all its options (cloze) or option orders (letters) instead of once per
 * row; with the run's weight storage and compute dtype (when the run came from a GGUF), so it is
 * the run's model (the conversion identity covers the GGUF, the dtype and the weights, not the
 * layout). An ONNX --model folder is used as it is.
 */
function iaeConversion(run: string): { layout: 'genai'; weights?: WeightsMode; dtype?: 'fp32' | 'fp16' } {
  let src: { options?: { dtype?: string; weights?: string } } | null | undefined = null;
  try {
    src = readManifest(run).model.source;
  } catch {
    // runAblate reports an unreadable run in its own words
  }
  const weights = src?.options?.weights;
  const dtype = src?.options?.dtype;
  return { layout: 'genai',
    ...(weights && ['auto', 'q4', 'fp16', 'fp32', 'bf16'].includes(weights) ? { weights: weights as WeightsMode } : {}),
    ...(dtype === 'fp32' || dtype === 'fp16' ? { dtype } : {}) };
}

/** How a row's headline p was chosen: the t test when its null passed Shapiro–Wilk, else the rank p. */
function headNote(head: HeadTest | undefined, n: NullNormality | null | undefined,
  fp: (x: number | null) => string): string
{
  if (!head) return '';
  if (!n) return head === 'rank' ? ' (rank p: the null has too few values or no spread for a normality check)' : '';
  return head === 't'
    ? ` (t test: its null passes Shapiro–Wilk, W ${n.w.toFixed(3)}, p ${fp(n.p)})`
    : ` (rank p: its null fails Shapiro–Wilk, W ${n.w.toFixed(3)}, p ${
      fp(n.p)
    }, so the t test's normality does not hold)`;
}

/** One side of the paired tests: how many random regions the region beats at Holm ≤ α. */
function pairedNote(side: PairedSide, K: number, what: string): string {
  const worst = side.pHolm.reduce<number | null>((m, p) => (p === null ? m : m === null ? p : Math.max(m, p)), null);
  return `${what} (n=${side.n}): costlier than ${side.beaten} of ${K} random regions${
    worst === null ? '' : `, largest Holm p ${worst < 1e-3 ? worst.toExponential(1) : worst.toFixed(3)}`
  }`;
}

/** The effect matrix and the specificity rows as text. */
export function formatAblate(s: AblateSummary): string {
  const f = (x: number) => (x >= 0 ? '+' : '') + x.toFixed(3);
  const fp = (x: number | null) => (x === null ? '—' : x < 1e-3 ? x.toExponential(1) : x.toFixed(3));
  const key = (r: { region: string; minus: string | null }) => (r.minus === null ? r.region : `${r.region}∖${r.minus}`);
  // --task iae measures accuracy (the share of items answered right), not a log-likelihood
  const what = s.unit === 'accuracy'
    ? `accuracy (${s.iae?.metric ?? 'acc'}, share answered right, after − before)`
    : 'log-likelihood (nats, after − before)';
  const out = [
    `mean change of ${what} per item, by ${s.by}; p against ${s.random} random regions (rank p floor ${
      s.pFloor.toFixed(3)
    }; the t test heads a row only when its random regions pass Shapiro–Wilk at ${ABLATE_ALPHA})`,
  ];
  for (const r of s.regions) {
    const k = r.minus === null ? r.name : `${r.name}∖${r.minus}`;
    out.push(`${k} (${r.blocks} blocks):`);
    for (const c of s.cells.filter((c) => key(c) === k)) {
      const head = c.head === undefined
        ? ''
        : `  headline ${c.head === 't' ? 't-test' : 'rank'} p=${
          fp(c.pHead ?? null)
        } (Holm over ${s.cells.length} cells ${fp(c.pHeadHolm ?? null)})${
          c.head === 'rank' && c.normality ? ', null not normal' : ''
        }`;
      out.push(
        `  ${c.label.padEnd(24)} n=${String(c.n).padStart(4)}  ${f(c.delta)} [${f(c.ci[0])}, ${f(c.ci[1])}]  random ${
          f(c.nullDelta.reduce((a, b) => a + b, 0) / c.nullDelta.length)
        }  rank p=${c.p.toFixed(3)}${c.pT === null ? '' : `  t-test p=${fp(c.pT)} (Holm ${fp(c.pTHolm)})`}${head}`,
      );
    }
  }
  const m = s.specificity.length;
  for (const sp of s.specificity) {
    const nullMean = sp.nullContrast.reduce((a, b) => a + b, 0) / sp.nullContrast.length;
    out.push(
      `specificity ${key(sp)} for ${sp.target}: ${f(sp.contrast)} [${f(sp.ci[0])}, ${
        f(sp.ci[1])
      }] (own items − others; random regions ${f(nullMean)}), rank p=${sp.p.toFixed(3)}, Holm over ${m} region${
        m === 1 ? '' : 's'
      } ${sp.pHolm.toFixed(3)}${sp.pT === null ? '' : `; t-test p=${fp(sp.pT)} (Holm ${fp(sp.pTHolm)})`}`,
    );
    if (sp.head !== undefined)
      out.push(
        `  headline ${sp.head === 't' ? 't-test' : 'rank'} p=${fp(sp.pHead ?? null)}, Holm ${fp(sp.pHeadHolm ?? null)}${
          headNote(sp.head, sp.normality, fp)
        }; detectable (α ${ABLATE_ALPHA}, power ${ABLATE_POWER}): a contrast of ${
          sp.mde == null ? '— (no spread)' : f(sp.mde)
        } or lower`,
      );
    if (sp.ratio !== null) {
      out.push(
        `  cost ratio own/others ${sp.ratio.toFixed(3)} (random regions: ${
          sp.nullRatio.map((r) => (r === null ? '—' : r.toFixed(3))).join(', ')
        }), chance 1 (no specificity)${sp.ratioRankP == null ? '' : `, rank p=${fp(sp.ratioRankP)}`}${
          sp.ratioP === null ? '' : `, t-test p=${fp(sp.ratioP)} (Holm ${fp(sp.ratioPHolm)})`
        }`,
      );
      if (sp.ratioHead !== undefined && sp.ratioPHead != null)
        out.push(
          `  ratio headline ${sp.ratioHead === 't' ? 't-test' : 'rank'} p=${fp(sp.ratioPHead)}, Holm over ${m} ${
            fp(sp.ratioPHeadHolm ?? null)
          }${headNote(sp.ratioHead, sp.ratioNormality, fp)}; detectable: a ratio of ${
            sp.ratioMde == null ? '—' : sp.ratioMde.toFixed(3)
          } or more`,
        );
    }
    const pt = sp.perToken;
    if (pt) {
      const g = (x: number) => x.toFixed(4);
      out.push(
        `  per-token cost ratio own/others ${
          pt.ratio === null ? '— (not both costs)' : pt.ratio.toFixed(3)
        } (d / continuation tokens: own ${g(pt.own)}, others ${g(pt.others)} nats per token; random regions: ${
          pt.nullRatio.map((r) => (r === null ? '—' : r.toFixed(3))).join(', ')
        }), chance 1 whatever the continuations' lengths${
          pt.ratioRankP == null ? '' : `, rank p=${fp(pt.ratioRankP)}`
        }${pt.ratioP === null ? '' : `, t-test p=${fp(pt.ratioP)} (Holm ${fp(pt.ratioPHolm)})`}${
          pt.ratioPHead == null
            ? ''
            : `; headline ${pt.ratioHead === 't' ? 't-test' : 'rank'} p=${fp(pt.ratioPHead)}, Holm over ${m} ${
              fp(pt.ratioPHeadHolm)
            }`
        }`,
      );
    }
    if (sp.paired) {
      const K = sp.paired.own.p.length;
      out.push(
        `  paired per item (Wilcoxon signed-rank, one-sided, Holm over the ${K} random regions of ${
          key(sp)
        }, α ${sp.paired.alpha}): ${pairedNote(sp.paired.own, K, `own items`)}; ${
          pairedNote(sp.paired.others, K, 'other items')
        }`,
      );
    }
  }
  for (const mg of s.magnitude ?? []) {
    const sp = mg.specificity;
    const k = key({ region: mg.region, minus: mg.minus });
    const gm = sp.nullRatio.length && sp.nullRatio.every((x) => x !== null)
      ? Math.exp((sp.nullRatio as number[]).reduce((a, b) => a + Math.log(b), 0) / sp.nullRatio.length)
      : null;
    const own = s.specificity.find((x) => key(x) === k);
    out.push(
      `|W| baseline of ${k} (${mg.blocks} blocks of largest mean |W|, no activation norm): cost ratio for ${sp.target} ${
        sp.ratio === null ? '—' : sp.ratio.toFixed(3)
      } (random regions ${gm === null ? '—' : gm.toFixed(3)}, region ${
        own?.ratio == null ? '—' : own.ratio.toFixed(3)
      }), ${sp.ratioHead === 't' ? 't-test' : 'rank'} p=${
        fp(sp.ratioPHead ?? null)
      }; ${k} costlier than it item by item (Wilcoxon signed-rank, one-sided, uncorrected): own items p=${
        fp(mg.versusRegion.own.p)
      } (n=${mg.versusRegion.own.n}), others p=${fp(mg.versusRegion.others.p)} (n=${mg.versusRegion.others.n})`,
    );
  }
  if (s.shuffled) {
    const sh = s.shuffled;
    out.push(
      `shuffled-label null: each region against the regions wanda gives its group under ${sh.shuffles} shuffles of the labels (seeds ${
        sh.seeds.join(', ')
      }; rank p floor ${sh.pFloor.toFixed(3)}; Holm over the ${sh.rows.length} region${
        sh.rows.length === 1 ? '' : 's'
      })`,
    );
    for (const r of sh.rows) {
      const k = key(r);
      const gm = r.nullRatio.length && r.nullRatio.every((x) => x !== null)
        ? Math.exp((r.nullRatio as number[]).reduce((a, b) => a + Math.log(b), 0) / r.nullRatio.length)
        : null;
      const cm = r.nullContrast.reduce((a, b) => a + b, 0) / r.nullContrast.length;
      out.push(
        `  ${k} for ${r.target} (shuffled regions of ${(sh.blocks[k] ?? []).join(', ')} blocks): cost ratio ${
          r.ratio === null ? '—' : r.ratio.toFixed(3)
        } (shuffled ${gm === null ? '—' : gm.toFixed(3)}), rank p=${fp(r.ratioP)} Holm ${fp(r.ratioPHolm)}, z ${
          r.ratioZ === null ? '—' : r.ratioZ.toFixed(2)
        } (ln); contrast ${f(r.contrast)} (shuffled ${f(cm)}), rank p=${fp(r.contrastP)} Holm ${
          fp(r.contrastPHolm)
        }, z ${r.contrastZ === null ? '—' : r.contrastZ.toFixed(2)}`,
      );
    }
  }
  if (s.fitSplit) {
    const fs = s.fitSplit;
    const per = (x: Record<string, number>) => Object.entries(x).map(([g, n]) => `${g} ${n}`).join(', ');
    out.push(
      `fit split (seed ${fs.seed}, stratified by ${fs.by}): regions fitted on ${fs.fit.rows} run rows of the fit half's ${fs.fit.items} items (${
        per(fs.fit.byLabel)
      }${
        fs.fit.notInRun ? `; ${fs.fit.notInRun} not in the run` : ''
      }); every figure above is on the test half's ${fs.test.items} items (${
        per(fs.test.byLabel)
      }), Holm families as above`,
    );
    out.push(
      `  fitted regions vs regions.json (fitted on every row): ${
        fs.regions.map((r) => `${r.name} ${r.blocks} blocks, Jaccard ${r.jaccardWithStored.toFixed(2)}`).join('; ')
      }`,
    );
  }
  if (s.doses?.length) {
    out.push(
      `dose–response: each region at each wanda top fraction, against its own ${s.random} random regions of its size (mean change per item, own items | the others; cost ratio with chance 1; headline p with Holm over the ${
        s.doses[0]!.specificity.length
      } regions of the dose)`,
    );
    for (const d of s.doses) {
      for (const sp of d.specificity) {
        const k = key(sp);
        const r = d.regions.find((x) => key({ region: x.name, minus: x.minus }) === k);
        const own = d.cells.find((c) => key(c) === k && c.label === sp.target);
        const others = d.cells.filter((c) => key(c) === k && c.label !== sp.target);
        const n = others.reduce((t, c) => t + c.n, 0);
        const pooled = (
          v: (c: (typeof others)[number]) => number,
        ) => (n ? others.reduce((t, c) => t + c.n * v(c), 0) / n : NaN);
        const nm = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
        const gm = sp.nullRatio.every((x) => x !== null) && sp.nullRatio.length
          ? Math.exp(nm((sp.nullRatio as number[]).map(Math.log)))
          : null;
        out.push(
          `  top ${String(d.top).padEnd(6)}${d.stored ? '*' : ' '} ${k.padEnd(20)} ${
            String(r?.blocks ?? '?').padStart(6)
          } blocks  own ${own ? f(own.delta) : '—'} (random ${own ? f(nm(own.nullDelta)) : '—'})  others ${
            f(pooled((c) => c.delta))
          } (random ${f(pooled((c) => nm(c.nullDelta)))})  ratio ${
            sp.ratio === null ? '—' : sp.ratio.toFixed(3)
          } (random ${gm === null ? '—' : gm.toFixed(3)}, detectable ${
            sp.ratioMde == null ? '—' : sp.ratioMde.toFixed(3)
          })  ${sp.ratioHead === 't' ? 't-test' : 'rank'} p=${fp(sp.ratioPHead ?? null)} Holm ${
            fp(sp.ratioPHeadHolm ?? null)
          }`,
        );
      }
    }
    if (s.doses.some((d) => d.stored)) out.push('  * the regions regions.json holds (the figures above)');
  }
  return out.join('\n');
}
