import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LobesError, UsageError } from '../util/errors.js';
import { ABILITIES, aspectOf } from './bessi.js';
import { canonicalizeAbility, type Resolution } from './labels.js';
import { parseJson, readUtf8, type Problem } from './read.js';
import { boolParam, checkParams, formatSpec, type ParsedSpec } from './spec.js';
import { applyTemplate, templateFromSpec } from './template.js';
import { filtersFromSpec, keep } from './filters.js';
import type { Excluded, Sample } from './types.js';
import { SWAP_AXES, swapSamples, swapSeed, type SwapComposition } from './swap.js';
import { GROUP_AXIS } from './generic.js';

// eslint-disable-next-line no-control-regex -- control characters are exactly what this replaces
const CONTROL_CHARS = /[\u0000-\u001f]/g;

/** How the ability of one skill choice was decided (kept in extras.labelRule). */
export interface ChoiceLabel {
  abilities: string[];
  rule: string;
  /** The question's own label when it resolves to different abilities (the choice's label is used). */
  questionSkill?: string[];
}

export interface SocialEvalLoad {
  samples: Sample[];
  excluded: Excluded[];
  problems: Problem[];
  /** The scenario of each sample's world tree, by sample id. */
  scenarios: Map<string, string>;
  /** Skill choices seen, per language, and how many had a single ability that resolved. */
  stats: Record<'en' | 'zh',
    { choices: number; single: number; singleResolved: number; composite: number; unresolved: number }>;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const CJK_END = /[\u3000-\u9fff\uff00-\uffef]$/;
const CJK_START = /^[\u3000-\u9fff\uff00-\uffef]/;

/** Join pieces of a question that the published files split across list entries. */
function joinPieces(a: string, b: string): string {
  if (!a) return b;
  if (/\s$/.test(a) || /^\s/.test(b) || CJK_END.test(a) || CJK_START.test(b)) return a + b;
  return a + ' ' + b;
}

/** The parts of a "skill question" entry: question text, label fragments, explicit #skill# labels. */
export function splitQuestion(q: unknown): { question: string; fragments: string[]; explicit: string[] } {
  const items = typeof q === 'string'
    ? [q]
    : Array.isArray(q)
    ? q.filter((x): x is string => typeof x === 'string')
    : [];
  let question = '';
  const fragments: string[] = [];
  const explicit: string[] = [];
  let first = true;
  for (const raw of items) {
    const t = raw.replace(CONTROL_CHARS, ' ').trim();
    if (!t) continue;
    if (first) {
      let q = t.replace(/#question#/gi, '');
      // Labels and states written inline after the question: "...?  #skill#Teamwork Skill".
      const st = /\s*#state#.*$/is.exec(q);
      if (st) q = q.slice(0, st.index);
      const sk = /\s*(?:#+skill#?|\{skill\})\s*(.*)$/is.exec(q);
      if (sk) {
        if (sk[1].trim()) explicit.push(sk[1].trim());
        q = q.slice(0, sk.index);
      }
      question = q.trim();
      first = false;
      continue;
    }
    if (/^#state#/i.test(t)) continue;
    const m = /^(?:#+skill#?|\{skill\}|skill#)\s*(.*)$/i.exec(t);
    if (m) {
      if (m[1].trim()) explicit.push(m[1].trim());
      continue;
    }
    if (t.includes('#question#')) {
      question = joinPieces(question, t.replace(/#question#/gi, '').trim());
      continue;
    }
    if (/[?？]$/.test(t) || CJK_START.test(t)) {
      question = joinPieces(question, raw.replace(CONTROL_CHARS, ' ').replace(/\s+$/, ''));
      continue;
    }
    fragments.push(t);
  }
  return { question: question.trim(), fragments, explicit };
}

function uniq<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

function describe(r: Resolution, raw: string): string {
  return `label ${JSON.stringify(raw)}: ${'reason' in r ? r.reason : 'resolved'}`;
}

/**
 * Decide the abilities of one skill choice from its labels: the choice's `skill` list, the
 * label fragments and #skill# labels that the files put in the question list, and the
 * question's own `skill` list. Returns the abilities or the reason the choice is left out.
 */
export function resolveChoiceLabels(choiceSkill: string[], questionSkill: string[], fragments: string[],
  explicit: string[], requireAgreement = false): ChoiceLabel | { reason: string }
{
  const rules: string[] = [];
  const resolveList = (labels: string[], allowFragments: boolean): { abilities: string[]; failures: string[] } => {
    const abilities: string[] = [];
    const failures: string[] = [];
    for (const raw of labels) {
      const r1 = canonicalizeAbility(raw);
      let r2: Resolution | null = null;
      if (allowFragments && fragments.length > 0 && labels.length === 1)
        r2 = canonicalizeAbility(raw.replace(/\s+$/, '') + ' ' + fragments.join(' '));
      if (r1.ability) {
        if (r2?.ability && r2.ability !== r1.ability) {
          failures.push(
            `label ${JSON.stringify(raw)} reads ${r1.ability} but with the fragment ${
              JSON.stringify(fragments.join(' '))
            } it reads ${r2.ability}`,
          );
          continue;
        }
        abilities.push(r1.ability);
        rules.push(r1.rule);
      } else if (r2?.ability) {
        abilities.push(r2.ability);
        rules.push('completed from question list');
      } else failures.push(describe(r1, raw));
    }
    return { abilities: uniq(abilities), failures };
  };

  const primary = choiceSkill.filter((s) => s.trim() !== '');
  const secondaryRaw = questionSkill.filter((s) => s.trim() !== '');
  const secondary = resolveList(secondaryRaw.length ? secondaryRaw : explicit, secondaryRaw.length > 0);
  if (primary.length === 0) {
    if (secondaryRaw.length === 0 && explicit.length === 0)
      return { reason: 'no skill label on the choice or its question' };
    if (secondary.failures.length)
      return { reason: `choice has no skill label; question ${secondary.failures.join('; ')}` };
    return { abilities: secondary.abilities.sort(), rule: 'from question skill: ' + uniq(rules).join('+') };
  }
  const main = resolveList(primary, true);
  if (main.failures.length === 0) {
    // The choice's label is the item's label; the question's own label, when it resolves
    // to something else, is recorded (and with agree=1 the choice is left out).
    let disagreement: string | undefined;
    if (secondary.failures.length === 0 && secondary.abilities.length > 0) {
      const a = [...main.abilities].sort().join('|');
      const b = [...secondary.abilities].sort().join('|');
      if (a !== b)
        disagreement = `labels disagree: choice says ${main.abilities.join(' + ')}, question says ${
          secondary.abilities.join(' + ')
        }`;
    }
    if (disagreement && requireAgreement) return { reason: disagreement + ' (agree=1)' };
    return { abilities: main.abilities.sort(), rule: uniq(rules).join('+'),
      ...(disagreement ? { questionSkill: secondary.abilities } : {}) };
  }
  // Fall back on the question's label when the choice label cannot be read.
  if (secondary.failures.length === 0 && secondary.abilities.length > 0 &&
    secondary.abilities.length >= main.abilities.length && main.abilities.every((a) => secondary.abilities.includes(a)))
  {
    return { abilities: secondary.abilities.sort(), rule: 'from question skill' };
  }
  return { reason: main.failures.join('; ') };
}

/** One file's language and orientation from its name: `[self,altruism]_en_...` / `_cn_`. */
export function fileFacts(file: string): { language?: 'en' | 'zh'; orientation?: string } {
  const base = path.basename(file);
  const language = /_en_/i.test(base) ? 'en' : /_(cn|zh)_/i.test(base) ? 'zh' : undefined;
  const m = /^\[\s*(-?[01])\s*,\s*(-?[01])\s*\]/.exec(base);
  return { language, orientation: m ? `[${Number(m[1])},${Number(m[2])}]` : undefined };
}

/** The world-tree files of a socialeval: path (a folder of .json files, or one file). */
export function listFiles(p: string): string[] {
  let st;
  try {
    st = statSync(p);
  } catch {
    throw new LobesError('no such file or folder', { file: p,
      hint: 'socialeval:PATH takes the worldtree_data folder or one of its .json files' });
  }
  if (st.isFile()) return [p];
  const files = readdirSync(p).filter((n) => n.toLowerCase().endsWith('.json')).sort().map((n) => path.join(p, n));
  if (files.length === 0) throw new LobesError('folder has no .json world-tree files', { file: p });
  return files;
}

export interface SocialEvalOptions {
  template: string;
  includeComposite: boolean;
  /** Leave out choices whose question label resolves to different abilities. */
  requireAgreement?: boolean;
}

/** One world-tree file being read, and where its findings go. */
interface TreeContext {
  file: string;
  /** File name without .json: the first part of every item id. */
  stem: string;
  lang: 'en' | 'zh';
  orientation: string;
  scenario: string;
  /** The tree has no scenario and the template uses {scenario}: its items are left out. */
  noScenario: boolean;
  opts: SocialEvalOptions;
  out: SocialEvalLoad;
  /** Item id -> where it was first seen. */
  seen: Map<string, string>;
}

/** Read every world-tree file under `root`; nothing is filtered here. */
export function readSocialEval(root: string, opts: SocialEvalOptions): SocialEvalLoad {
  const out: SocialEvalLoad = {
    samples: [],
    excluded: [],
    problems: [],
    scenarios: new Map(),
    stats: { en: { choices: 0, single: 0, singleResolved: 0, composite: 0, unresolved: 0 },
      zh: { choices: 0, single: 0, singleResolved: 0, composite: 0, unresolved: 0 } },
  };
  const seen = new Map<string, string>();
  for (const file of listFiles(root)) {
    const tree = readTree(file, opts, out.problems);
    if (!tree) continue;
    const ctx: TreeContext = { ...tree.facts, file, stem: path.basename(file).replace(/\.json$/i, ''), opts, out,
      seen };
    tree.plot.forEach((node, ni) => readNode(ctx, node, ni));
  }
  return out;
}

/**
 * A world-tree file's plot and facts (language, orientation from the file name; scenario), or
 * null after recording why it cannot be read.
 */
function readTree(file: string, opts: SocialEvalOptions, problems: Problem[]): { plot: unknown[];
  facts: Pick<TreeContext, 'lang' | 'orientation' | 'scenario' | 'noScenario'> } | null
{
  const facts = fileFacts(file);
  const bad = (where: string | undefined, reason: string) => problems.push({ file, where, reason, id: undefined });
  if (!facts.language)
    bad(undefined,
      'file name has neither _en_ nor _cn_, so its language is unknown (name files like [1,0]_en_example_3.json)');
  if (!facts.orientation)
    bad(undefined, 'file name does not start with the [self,altruism] orientation, e.g. [1,-1]_en_example_0.json');
  const r = readUtf8(file);
  if ('problem' in r) {
    problems.push(r.problem);
    return null;
  }
  if (r.text.trim() === '') {
    bad(undefined, 'file is empty');
    return null;
  }
  const j = parseJson(r.text, file);
  if ('problem' in j) {
    problems.push(j.problem);
    return null;
  }
  if (!facts.language || !facts.orientation) return null;
  const doc = j.value;
  if (!isObj(doc)) {
    bad(undefined, 'expected a JSON object with "interactive_plot"');
    return null;
  }
  const plot = doc.interactive_plot;
  if (!Array.isArray(plot)) {
    bad('interactive_plot',
      plot === undefined ? 'missing field "interactive_plot"' : '"interactive_plot" is not a list');
    return null;
  }
  const scenario = typeof doc.scenario === 'string' ? doc.scenario.trim() : '';
  // Some published trees have "scenario": null; with a template that uses {scenario} their items are left out.
  const noScenario = opts.template.includes('{scenario}') && !scenario;
  return { plot, facts: { lang: facts.language, orientation: facts.orientation, scenario, noScenario } };
}

/** Record a problem in the current file. */
function problem(ctx: TreeContext, where: string | undefined, reason: string, id?: string): void {
  ctx.out.problems.push({ file: ctx.file, where, reason, id });
}

/** One node of the plot: its skill choices. */
function readNode(ctx: TreeContext, node: unknown, ni: number): void {
  if (!isObj(node)) return problem(ctx, `interactive_plot[${ni}]`, 'node is not an object');
  const nodeId = typeof node.cid === 'number' || typeof node.cid === 'string' ? String(node.cid) : null;
  if (nodeId === null) return problem(ctx, `interactive_plot[${ni}]`, 'node has no "cid"');
  const choices = node.choices;
  if (choices === undefined) return;
  if (!Array.isArray(choices)) return problem(ctx, `node ${nodeId}`, '"choices" is not a list');
  choices.forEach((ch, ci) => readChoice(ctx, nodeId, ch, ci));
}

/** One skill choice: a sample, an exclusion (with its reason) or a problem. */
function readChoice(ctx: TreeContext, nodeId: string, ch: unknown, ci: number): void {
  const { out, opts, lang } = ctx;
  if (!isObj(ch)) return problem(ctx, `node ${nodeId}, choice #${ci}`, 'choice is not an object');
  if (ch.type !== 'skill choice') return;
  const choiceId = typeof ch.cid === 'number' || typeof ch.cid === 'string' ? String(ch.cid) : `#${ci}`;
  const where = `node ${nodeId}, choice ${choiceId}`;
  const id = `${ctx.stem}/${nodeId}/${choiceId}`;
  const bad = (reason: string) => problem(ctx, where, reason, id);
  out.stats[lang].choices++;
  const prev = ctx.seen.get(id);
  if (prev) return bad(`duplicate item id ${id} (also at ${prev})`);
  ctx.seen.set(id, `${ctx.file}: ${where}`);
  const exclude = (reason: string) => void out.excluded.push({ id, file: ctx.file, where, reason });
  // Labels.
  if (ch.skill !== undefined && !(Array.isArray(ch.skill) && ch.skill.every((s) => typeof s === 'string'))) {
    return bad('"skill" is not a list of strings');
  }
  const choiceSkill = (ch.skill as string[] | undefined) ?? [];
  const confusion = Array.isArray(ch.confusion) ? ch.confusion.filter(isObj) : [];
  const sq = confusion.find((c) => c.type === 'skill question');
  const qs = sq ? splitQuestion(sq.question) : { question: '', fragments: [], explicit: [] };
  const qSkill = sq && Array.isArray(sq.skill) ? sq.skill.filter((s): s is string => typeof s === 'string') : [];
  const lab = resolveChoiceLabels(choiceSkill, qSkill, qs.fragments, qs.explicit, opts.requireAgreement);
  const distinctRaw = new Set(
    choiceSkill.map((s) => canonicalizeAbility(s).ability ?? s.trim().toLowerCase()).filter(Boolean),
  );
  const single = 'abilities' in lab ? lab.abilities.length === 1 : distinctRaw.size <= 1;
  if (single) out.stats[lang].single++;
  if ('reason' in lab) {
    out.stats[lang].unresolved++;
    return exclude(lab.reason);
  }
  if (single) out.stats[lang].singleResolved++;
  else out.stats[lang].composite++;
  if (!single && !opts.includeComposite)
    return exclude(`composite: ${lab.abilities.join(' + ')} (add composite=include to keep)`);
  if (ctx.noScenario) return exclude('the world tree has no scenario and the template uses {scenario}');
  // Question.
  if (!sq) return exclude('no skill question');
  if (!qs.question) return exclude('skill question is empty');
  // Utterance.
  const u = choiceUtterance(ch.content);
  if ('problem' in u) return bad(u.problem);
  if ('exclude' in u) return exclude(u.exclude);
  const { speaker, response } = u;
  const distractors = confusion
    .filter((c) => c.type === 'skill confusion' && isObj(c.content) && typeof (c.content as any).content === 'string')
    .map((c) => ((c.content as any).content as string).trim());
  const ability = lab.abilities.join(' + ');
  const aspects = uniq(lab.abilities.map(aspectOf));
  out.scenarios.set(id, ctx.scenario);
  out.samples.push({
    id,
    text: applyTemplate(opts.template, { question: qs.question, response, speaker, scenario: ctx.scenario }),
    labels: { aspect: aspects.join(' + '), ability, language: lang, orientation: ctx.orientation },
    provenance: { file: path.basename(ctx.file), node: nodeId, choice: choiceId },
    extras: { question: qs.question, response, speaker, distractors, rawSkill: choiceSkill, labelRule: lab.rule,
      ...(lab.questionSkill ? { questionSkill: lab.questionSkill } : {}) },
  });
}

/**
 * The utterance of a choice's "content" (an object, or a list whose state/stage entries are
 * skipped): speaker and trimmed text, a reason to exclude the choice, or a problem.
 */
function choiceUtterance(
  content: unknown,
): { speaker: string; response: string } | { exclude: string } | { problem: string } {
  let speaker: string;
  let response: string;
  if (isObj(content)) {
    if (content.role === 'stage') return { exclude: 'stage placeholder: the choice carries no utterance' };
    if (typeof content.content !== 'string') return { problem: 'choice "content" has no text' };
    speaker = typeof content.role === 'string' ? content.role : '';
    response = content.content;
  } else if (Array.isArray(content)) {
    const parts = content.filter((c): c is Record<string, unknown> =>
      isObj(c) && typeof c.content === 'string' && c.role !== 'state' && c.role !== 'stage'
    );
    if (parts.length === 0) return { exclude: 'choice content holds no utterance (only state/stage entries)' };
    speaker = typeof parts[0].role === 'string' ? parts[0].role : '';
    response = parts.map((c) => c.content as string).join(' ');
  } else
    return {
      problem: content === undefined ? 'choice has no "content"' : 'choice "content" is neither an object nor a list',
    };
  response = response.trim();
  if (!response) return { exclude: 'the correct utterance is empty' };
  return { speaker, response };
}

export const SOCIALEVAL_KEYS = ['lang', 'orientation', 'aspect', 'ability', 'composite', 'agree', 'template',
  'scenario', 'speaker', 'text', 'swap', 'group'];

export function loadSocialEval(
  p: ParsedSpec,
): { samples: Sample[]; excluded: Excluded[]; problems: Problem[]; spec: string; axes: string[];
  composition?: SwapComposition }
{
  checkParams(p, SOCIALEVAL_KEYS);
  if (!p.path)
    throw new UsageError('socialeval: needs a path', 'e.g. socialeval:../shared/socialeval/worldtree_data?lang=en');
  const includeComposite = boolParam(p, 'composite');
  const template = templateFromSpec(p, (k) => boolParam(p, k));
  const filters = filtersFromSpec(p, ABILITIES.map((a) => a.name));
  const r = readSocialEval(p.path, { template, includeComposite, requireAgreement: boolParam(p, 'agree') });
  let samples = r.samples.filter((s) => keep(s, filters));
  // each item's world tree (its file; one story, many items) as the axis item_group, by default
  // (group=none: no groups), which lobes cluster keeps whole in the probes' folds and resamples as
  // a unit; on a swap, each sample keeps its response's tree (the labels are copied before swapping)
  const group = p.params.get('group') ?? 'tree';
  if (group !== 'tree' && group !== 'none')
    throw new UsageError(
      `socialeval: group=${group}: the groupings are group=tree (each item's world tree, the default) and group=none`,
      'use group=tree or group=none',
    );
  const grouped = group === 'tree';
  if (grouped)
    samples = samples.map((s) => ({ ...s, labels: { ...s.labels, [GROUP_AXIS]: s.id.slice(0, s.id.indexOf('/')) } }));
  // swap=SEED: every response with its own question and with one naming another aspect (src/data/swap.ts)
  const swap = p.params.get('swap');
  let composition: SwapComposition | undefined;
  if (swap !== undefined) {
    const seed = swapSeed(swap, p.raw);
    ({ samples, composition } = swapSamples(samples, template, (id) => r.scenarios.get(id) ?? '', seed, p.raw));
  }
  const excluded = r.excluded.filter((e) => {
    // Keep exclusions of the selected language/orientation only.
    const facts = fileFacts(e.file ?? '');
    if (filters.lang && facts.language !== filters.lang) return false;
    if (filters.orientation && facts.orientation) {
      const m = /^\[(-?\d),(-?\d)\]$/.exec(facts.orientation)!;
      if (filters.orientation === 'self' && m[1] !== '1') return false;
      if (filters.orientation === 'altruism' && m[2] !== '1') return false;
      if (filters.orientation.startsWith('[') && filters.orientation !== facts.orientation) return false;
    }
    return true;
  });
  const axes = ['aspect', 'ability', 'language', 'orientation', ...(composition ? SWAP_AXES : []),
    ...(grouped ? [GROUP_AXIS] : [])];
  return { samples, excluded, problems: r.problems, spec: formatSpec('socialeval', p.path, p.params), axes,
    ...(composition ? { composition } : {}) };
}
