/**
 * What an evaluation runs over: units (one multiple-choice item, or one GAE world tree),
 * each with its prompt style, in dataset order. Built from a `socialeval:` spec (IAE items,
 * GAE trees or both) or a `jsonl:` multiple-choice spec; `--limit N` keeps the seeded sample of
 * src/data/subset.ts, the same as extract and attend take: items stratified by the `--by` axes
 * (default language and aspect), world trees by language and category.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LobesError, UsageError, opt } from '../util/errors.js';
import { limitItems, stratifiedSample } from '../data/subset.js';
import { parseSpec } from '../data/spec.js';
import { loadSocialEvalBench, type WorldTree } from '../data/socialeval-eval.js';
import { loadMcqJsonl } from '../data/mcq.js';
import type { Excluded } from '../data/types.js';
import { ANSWER_PREFIX, MCQ_DEFAULT_TEMPLATE, OPTION_SEPARATOR, SOCIALEVAL_TEMPLATES,
  type PromptVariant } from '../data/prompt-templates.js';
import { LETTERS, parseTemplate, templateFields, type PromptItem } from '../data/prompt.js';
import type { ItemFacts } from './records.js';

/** The plain cloze prompt for `jsonl:` items without --prompt with --scoring cloze (lm-eval's usual "Question: … Answer:" layout). */
export const CLOZE_MCQ_TEMPLATE = 'Question: ⟦question⟧{question}⟦/⟧\nAnswer:';

/** How a unit's prompts are written. */
export interface PromptStyle {
  /** 'iae', 'iae-cot', 'gae', 'gae-cot', 'mcq' or 'custom'. */
  variant: string;
  template: string;
  separator: string;
  answerPrefix: string;
}

export interface ItemUnit {
  kind: 'item';
  facts: ItemFacts;
  prompt: PromptItem;
  style: PromptStyle;
}

export interface TreeUnit {
  kind: 'tree';
  tree: WorldTree;
  style: PromptStyle;
}

export type Unit = ItemUnit | TreeUnit;

export type TaskChoice = 'iae' | 'gae' | 'both';

export interface EvalData {
  /** The dataset spec as loaded (normalized). */
  spec: string;
  kind: 'socialeval' | 'jsonl';
  units: Unit[];
  excluded: Excluded[];
  /** Units before --limit. */
  available: number;
}

export interface EvalDataOptions {
  /** For socialeval: which evaluation(s). */
  task: TaskChoice;
  /** Chain-of-thought prompts (the published explanation variants). */
  cot: boolean;
  /** --prompt TEMPLATE_FILE for jsonl items. */
  promptFile?: string;
  answerPrefix?: string;
  limit?: number | null;
  /** Label axes of the --limit strata (default: language and aspect where present, else the first axis). */
  by?: string[];
  seed: number;
  skipInvalid?: boolean;
  /** 'cloze': options are scored as continuations, so a jsonl --prompt needs no {choices} (default 'letter'). */
  scoring?: 'letter' | 'cloze';
}

/** The SocialEval prompt style for a task and language. */
export function socialEvalStyle(task: 'iae' | 'gae', lang: 'en' | 'zh', cot: boolean,
  answerPrefix?: string): PromptStyle
{
  const variant: PromptVariant = cot ? `${task}-cot` : task;
  return { variant, template: SOCIALEVAL_TEMPLATES[variant][lang], separator: OPTION_SEPARATOR[task],
    answerPrefix: answerPrefix ?? ANSWER_PREFIX.socialeval };
}

/** Load the units of an evaluation. */
export function loadEvalData(spec: string, o: EvalDataOptions): EvalData {
  const p = parseSpec(spec);
  if (p.kind === 'socialeval') {
    if (o.promptFile)
      throw new UsageError(`${opt('promptFile')} applies to jsonl: items; SocialEval uses its published prompts`);
    const b = loadSocialEvalBench(spec, { iae: o.task !== 'gae', gae: o.task !== 'iae' }, o.skipInvalid);
    let iae = b.iae;
    let gae = b.gae;
    const available = iae.length + gae.length;
    if (o.limit != null) {
      if (iae.length)
        iae = limitItems(iae, Object.keys(iae[0]!.labels), { limit: o.limit, by: o.by, seed: o.seed }).items;
      gae = stratifiedSample(gae, (t) => `${t.language}/${t.category}`, (t) => t.stem, o.limit, o.seed);
    }
    const units: Unit[] = [
      ...iae.map((it): Unit => ({
        kind: 'item',
        facts: { id: it.id, task: 'iae', language: it.language, ability: it.ability, aspect: it.aspect,
          labels: it.labels, options: it.options, answer: it.answer },
        prompt: { id: it.id, fields: it.fields, options: it.options },
        style: socialEvalStyle('iae', it.language, o.cot, o.answerPrefix),
      })),
      ...gae.map((t): Unit => ({ kind: 'tree', tree: t,
        style: socialEvalStyle('gae', t.language, o.cot, o.answerPrefix) })
      ),
    ];
    if (units.length === 0)
      throw new LobesError(
        `dataset ${spec} has nothing to evaluate for ${opt('task', o.task)}${
          b.excluded.length ? ` (${b.excluded.length} items excluded; first: ${b.excluded[0]!.reason})` : ''
        }`,
      );
    return { spec: b.spec, kind: 'socialeval', units, excluded: b.excluded, available };
  }
  if (p.kind === 'jsonl') {
    if (o.task === 'gae') throw new UsageError(`${opt('task', 'gae')} needs a socialeval: spec (world trees)`);
    const cloze = o.scoring === 'cloze';
    let template = cloze ? CLOZE_MCQ_TEMPLATE : MCQ_DEFAULT_TEMPLATE;
    let variant = cloze ? 'mcq-cloze' : 'mcq';
    if (o.promptFile) {
      try {
        template = readFileSync(o.promptFile, 'utf8');
      } catch (e: any) {
        throw new LobesError(`cannot read the prompt template (${e.code ?? e.message})`, { file: o.promptFile });
      }
      parseTemplate(template, o.promptFile);
      if (!cloze && !templateFields(template).includes('choices'))
        throw new LobesError('the prompt template has no {choices} field (where the lettered options go)', {
          file: o.promptFile,
        });
      variant = 'custom';
    }
    // A prompt that letters its options ({choices}) takes at most 26; the count is checked with
    // the other item checks, before anything is written (--skip-invalid leaves such items out).
    const d = loadMcqJsonl(spec, o.skipInvalid, {
      maxOptions: templateFields(template).includes('choices') ? LETTERS.length : Infinity,
    });
    const style: PromptStyle = { variant, template, separator: '. ',
      answerPrefix: o.answerPrefix ?? (cloze ? '' : ANSWER_PREFIX.mcq) };
    const items = o.limit != null
      ? limitItems(d.items, d.axes, { limit: o.limit, by: o.by, seed: o.seed }).items
      : d.items;
    const units: Unit[] = items.map((it) => ({
      kind: 'item',
      facts: { id: it.id, task: 'mcq', language: it.labels.language ?? null, ability: null, aspect: null,
        labels: it.labels, options: it.options, answer: it.answer },
      prompt: { id: it.id, fields: it.fields, options: it.options },
      style,
    }));
    return { spec: d.spec, kind: 'jsonl', units, excluded: d.excluded, available: d.items.length };
  }
  throw new UsageError(`lobes eval reads socialeval: or jsonl: specs, got ${JSON.stringify(spec)}`,
    'e.g. socialeval:PATH?lang=en or jsonl:FILE?question=q&options=opts&answer=a');
}

/** sha256 over what the units put into prompts and scores (ids, fields, options, answers, templates, trees). */
export function hashUnits(units: readonly Unit[]): string {
  const h = createHash('sha256');
  const sorted = (o: Record<string, unknown>) => Object.keys(o).sort().map((k) => [k, o[k]]);
  for (const u of units) {
    if (u.kind === 'item')
      h.update(
        JSON.stringify(['item', u.facts.id, u.facts.options, u.facts.answer, sorted(u.facts.labels),
          sorted(u.prompt.fields), u.style]) + '\n',
      );
    else {
      const t = u.tree;
      h.update(JSON.stringify(['tree', t.stem, t.protagonist, t.others, [...t.nodes.values()], u.style]) + '\n');
    }
  }
  return h.digest('hex');
}
