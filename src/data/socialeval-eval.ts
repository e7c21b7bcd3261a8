/**
 * SocialEval as a benchmark (docs/eval.md): the items of its two evaluations, with the
 * fields its published prompts are filled with, computed the way the published scripts
 * (thu-coai/SocialEval run_iae.py and run_gae.py) compute them.
 *
 * IAE: one item per skill choice, the same items (and ids) as `socialeval:` samples; the
 * options are the correct utterance and its "skill confusion" utterances; the context is
 * the dialogue along the path from the tree's beginning through the choice's node.
 * GAE: one world tree per unit, walked from its beginning node (cid 0); every node on the
 * way adds its dialogue and the characters it introduces.
 */
import * as path from 'node:path';
import { LobesError, LobesErrors, UsageError, opt } from '../util/errors.js';
import { invalidInputHint, parseJson, problemError, readUtf8, type Problem } from './read.js';
import { fileFacts, listFiles, loadSocialEval, SOCIALEVAL_KEYS } from './socialeval.js';
import { filtersFromSpec, orientationMatches } from './filters.js';
import { ABILITIES, aspectOf } from './bessi.js';
import { formatSpec, parseSpec, type ParsedSpec } from './spec.js';
import type { Excluded } from './types.js';
import { pyJsonDumps, pyRepr, type PyValue } from '../util/pyfmt.js';

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const str = (x: unknown): string | null => (typeof x === 'string' ? x : null);

/** The social-world taxonomy of the SocialEval repository (README, "Social World Taxonomy"): [self-interest, altruism] → category. */
export const ORIENTATION_CATEGORIES: Record<string, { category: string; group: string }> = {
  '[1,1]': { category: 'Cooperation', group: 'Prosocial' },
  '[1,0]': { category: 'Negotiation', group: 'Prosocial' },
  '[0,1]': { category: 'Assistance', group: 'Prosocial' },
  '[-1,1]': { category: 'Altruism', group: 'Prosocial' },
  '[1,-1]': { category: 'Competition', group: 'Proself' },
  '[0,-1]': { category: 'Induction', group: 'Antisocial' },
  '[-1,-1]': { category: 'Conflict', group: 'Antisocial' },
};

/** A character as the published scripts read it from a profile object. */
export interface Profile {
  name: string | null;
  /** "public profile", "private profile", "goal"; null when the key is absent or null. */
  public: string | null;
  private: string | null;
  goal: string | null;
}

/** One dialogue entry of a node: a line (role may be absent) or a profile introducing a character. */
export type DialogEntry = { kind: 'line'; role: string | null; content: string } | { kind: 'profile';
  profile: Profile };

/** One option at a node: the protagonist's utterance and the node it leads to. */
export interface TreeChoice {
  /** Node the choice leads to (cid as a string). */
  next: string;
  type: string;
  role: string;
  content: string;
  /** For skill choices: the texts of its "skill confusion" entries. */
  confusions: string[];
  cid: string;
}

export interface TreeNode {
  cid: string;
  type: string;
  dialog: DialogEntry[];
  choices: TreeChoice[];
  /** "goal achievement" of an ending (null when present but null); undefined for non-endings. */
  goalAchievement?: number | null;
}

/** A world tree read for evaluation. */
export interface WorldTree {
  file: string;
  /** File name without .json: the first part of every item id. */
  stem: string;
  language: 'en' | 'zh';
  orientation: string;
  category: string;
  group: string;
  protagonist: Profile;
  /** predefined_profiles[1:]. */
  others: Profile[];
  nodes: Map<string, TreeNode>;
  /** Parent node of every node reached from the beginning (the trees are trees: one parent each). */
  parent: Map<string, string>;
}

function profileOf(x: unknown): Profile {
  const o = isObj(x) ? x : {};
  const val = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : null);
  return { name: val('name'), public: val('public profile'), private: val('private profile'), goal: val('goal') };
}

const cidOf = (x: unknown): string | null => (typeof x === 'number' || typeof x === 'string' ? String(x) : null);

/** The text and speaker of a choice's content (an object, or a list whose state/stage entries are skipped). */
function choiceContent(c: unknown): { role: string; content: string } | null {
  if (isObj(c)) return typeof c.content === 'string' ? { role: str(c.role) ?? '', content: c.content } : null;
  if (Array.isArray(c)) {
    const parts = c.filter((e): e is Record<string, unknown> =>
      isObj(e) && typeof e.content === 'string' && e.role !== 'state' && e.role !== 'stage'
    );
    if (!parts.length) return null;
    return { role: str(parts[0]!.role) ?? '', content: parts.map((e) => e.content as string).join(' ') };
  }
  return null;
}

/** Read one world tree; problems (missing fields the evaluation needs) are collected. */
export function readWorldTree(file: string, problems: Problem[]): WorldTree | null {
  const bad = (where: string | undefined, reason: string) => void problems.push({ file, where, reason });
  const facts = fileFacts(file);
  if (!facts.language || !facts.orientation) {
    bad(undefined,
      'file name must look like [self,altruism]_en_NAME.json or [self,altruism]_cn_NAME.json (language and orientation come from it)');
    return null;
  }
  const r = readUtf8(file);
  if ('problem' in r) return void problems.push(r.problem), null;
  const j = parseJson(r.text, file);
  if ('problem' in j) return void problems.push(j.problem), null;
  const doc = j.value;
  if (!isObj(doc))
    return bad(undefined, 'expected a JSON object with "predefined_profiles" and "interactive_plot"'), null;
  const pp = doc.predefined_profiles;
  if (!Array.isArray(pp) || pp.length === 0 || !isObj(pp[0]))
    return bad('predefined_profiles', pp === undefined
      ? 'missing field "predefined_profiles" (the protagonist is its first entry)'
      : '"predefined_profiles" is not a non-empty list of profiles'), null;
  const protagonist = profileOf(pp[0]);
  if (!protagonist.name) return bad('predefined_profiles[0]', 'the protagonist has no "name"'), null;
  const plot = doc.interactive_plot;
  if (!Array.isArray(plot))
    return bad('interactive_plot',
      plot === undefined ? 'missing field "interactive_plot"' : '"interactive_plot" is not a list'), null;
  const nodes = new Map<string, TreeNode>();
  plot.forEach((n, i) => {
    const node = readNode(n, i, bad);
    if (!node) return;
    if (nodes.has(node.cid)) bad(`interactive_plot[${i}]`, `duplicate node cid ${node.cid}`);
    else nodes.set(node.cid, node);
  });
  if (!nodes.has('0')) return bad('interactive_plot', 'no beginning node (cid 0)'), null;
  const parent = new Map<string, string>();
  const stack = ['0'];
  const seen = new Set<string>(['0']);
  while (stack.length) {
    const c = stack.pop()!;
    for (const ch of nodes.get(c)?.choices ?? []) {
      if (seen.has(ch.next)) {
        bad(`node ${c}`, `node ${ch.next} is reached twice (the plot must be a tree)`);
        continue;
      }
      seen.add(ch.next);
      parent.set(ch.next, c);
      stack.push(ch.next);
    }
  }
  const cat = ORIENTATION_CATEGORIES[facts.orientation] ??
    { category: `orientation ${facts.orientation}`, group: 'unknown' };
  return {
    file,
    stem: path.basename(file).replace(/\.json$/i, ''),
    language: facts.language,
    orientation: facts.orientation,
    ...cat,
    protagonist,
    others: pp.slice(1).map(profileOf),
    nodes,
    parent,
  };
}

function readNode(n: unknown, i: number, bad: (where: string, reason: string) => void): TreeNode | null {
  if (!isObj(n)) return bad(`interactive_plot[${i}]`, 'node is not an object'), null;
  const cid = cidOf(n.cid);
  if (cid === null) return bad(`interactive_plot[${i}]`, 'node has no "cid"'), null;
  const type = str(n.type) ?? '';
  const dialog: DialogEntry[] = [];
  if (n.dialog !== undefined && !Array.isArray(n.dialog)) bad(`node ${cid}`, '"dialog" is not a list');
  for (const e of Array.isArray(n.dialog) ? n.dialog : []) {
    if (!isObj(e)) continue;
    if (isObj(e.profile)) dialog.push({ kind: 'profile', profile: profileOf(e.profile) });
    if (typeof e.content === 'string') dialog.push({ kind: 'line', role: str(e.role), content: e.content });
  }
  const choices: TreeChoice[] = [];
  if (n.choices !== undefined && !Array.isArray(n.choices)) bad(`node ${cid}`, '"choices" is not a list');
  (Array.isArray(n.choices) ? n.choices : []).forEach((ch, ci) => {
    const where = `node ${cid}, choice #${ci}`;
    if (!isObj(ch)) return bad(where, 'choice is not an object');
    const next = cidOf(ch.cid);
    if (next === null) return bad(where, 'choice has no "cid" (the node it leads to)');
    const c = choiceContent(ch.content);
    if (!c) return bad(where, 'choice has no utterance ("content" with "role" and "content")');
    const confusions = (Array.isArray(ch.confusion) ? ch.confusion : [])
      .filter((x): x is Record<string, unknown> =>
        isObj(x) && x.type === 'skill confusion' && isObj(x.content) && typeof x.content.content === 'string'
      )
      .map((x) => (x.content as Record<string, unknown>).content as string);
    choices.push({ next, type: str(ch.type) ?? '', role: c.role, content: c.content, confusions, cid: next });
  });
  const node: TreeNode = { cid, type, dialog, choices };
  if (type === 'ending') {
    const ga = n['goal achievement'];
    node.goalAchievement = typeof ga === 'number' ? ga : null;
  }
  return node;
}

/** Node ids from the beginning to `cid` (inclusive). */
export function pathTo(t: WorldTree, cid: string): string[] {
  const out = [cid];
  let c = cid;
  while (c !== '0') {
    const p = t.parent.get(c);
    if (p === undefined) throw new LobesError(`node ${cid} is not reachable from the beginning`, { file: t.file });
    out.push(p);
    c = p;
  }
  return out.reverse();
}

/** Profiles introduced by dialogue entries of the nodes on `path`. */
function introduced(t: WorldTree, path: string[]): Profile[] {
  return path.flatMap((c) => t.nodes.get(c)!.dialog.flatMap((e) => (e.kind === 'profile' ? [e.profile] : [])));
}

/** The template fields of the IAE prompt for a skill choice at node `cid` (run_iae.py's filling). */
export function iaeFields(t: WorldTree, cid: string, question: string): Record<string, string> {
  const p = pathTo(t, cid);
  const others: PyValue = [...t.others, ...introduced(t, p)].map((o) => ({ name: o.name, info: o.public }));
  const lines = p.flatMap((c) =>
    t.nodes.get(c)!.dialog.flatMap((e) => (e.kind === 'line' ? [`${e.role ?? 'system'}: ${e.content}`] : []))
  );
  return {
    character_name: t.protagonist.name ?? '',
    public: t.protagonist.public ?? '',
    private: t.protagonist.private ?? '',
    goal: t.protagonist.goal ?? '',
    user_profile: pyRepr(others),
    dialogue_context: lines.join('\n'),
    question,
  };
}

/** The template fields of the GAE prompt at the end of `path` (run_gae.py's filling), and the option texts. */
export function gaeFields(t: WorldTree,
  path: string[]): { fields: Record<string, string>; options: string[]; next: string[] }
{
  const main = t.protagonist;
  // Predefined characters: name and "public profile" ('' when absent); characters introduced
  // in the dialogue: their "public profile" as Python formats it (None when absent).
  const others = [...t.others.map((o) => `${o.name ?? 'None'}: ${o.public ?? ''}`),
    ...introduced(t, path).map((o) => `${o.name ?? 'None'}: ${o.public ?? 'None'}`)];
  let dialogue = '';
  for (const c of path)
    for (const e of t.nodes.get(c)!.dialog) if (e.kind === 'line') dialogue += `${e.role ?? '旁白'}: ${e.content}\n`;
  const node = t.nodes.get(path[path.length - 1]!)!;
  return {
    fields: {
      character_name: main.name ?? '',
      main_profile: pyJsonDumps({ name: main.name, public: main.public, private: main.private, goal: main.goal }),
      user_profile: pyJsonDumps(others.join('\n')),
      dialogue_context: dialogue,
    },
    options: node.choices.map((c) => `${c.role}: ${c.content}`),
    next: node.choices.map((c) => c.next),
  };
}

/**
 * Probability that uniformly random choices from `cid` end at a successful ending (goal
 * achievement 2), and that they end at any ending (not at a node without choices), in float64.
 */
export function randomWalkOutcome(t: WorldTree, cid = '0'): { success: number; ending: number } {
  const memo = new Map<string, { success: number; ending: number }>();
  const go = (c: string): { success: number; ending: number } => {
    const hit = memo.get(c);
    if (hit) return hit;
    const n = t.nodes.get(c);
    let r: { success: number; ending: number };
    if (!n) r = { success: 0, ending: 0 };
    else if (n.type === 'ending') r = { success: n.goalAchievement === 2 ? 1 : 0, ending: 1 };
    else if (n.choices.length === 0) r = { success: 0, ending: 0 };
    else {
      r = { success: 0, ending: 0 };
      for (const ch of n.choices) {
        const s = go(ch.next);
        r.success += s.success / n.choices.length;
        r.ending += s.ending / n.choices.length;
      }
    }
    memo.set(c, r);
    return r;
  };
  return go(cid);
}

/** One IAE item: a skill choice with its options (correct first) and prompt fields. */
export interface IaeItem {
  id: string;
  language: 'en' | 'zh';
  ability: string;
  aspect: string;
  /** The abilities the item counts toward (two or more for composite items). */
  abilities: string[];
  labels: Record<string, string>;
  options: string[];
  /** Index of the correct option (always 0 before shuffling). */
  answer: number;
  fields: Record<string, string>;
}

export interface SocialEvalBench {
  spec: string;
  iae: IaeItem[];
  gae: WorldTree[];
  excluded: Excluded[];
}

export const SOCIALEVAL_EVAL_KEYS = SOCIALEVAL_KEYS;

/**
 * Load SocialEval for evaluation from a `socialeval:PATH?...` spec. IAE items are the
 * `socialeval:` samples of the same spec (same ids, labels and label repair), with composite
 * items included unless the spec says composite=0 (run_iae.py credits a composite item to
 * each of its abilities). Trees that lack what the evaluation needs fail with every problem
 * listed, unless `skipInvalid`.
 */
export function loadSocialEvalBench(spec: string, tasks: { iae: boolean; gae: boolean },
  skipInvalid = false): SocialEvalBench
{
  const p = parseSpec(spec);
  if (p.kind !== 'socialeval') throw new UsageError(`expected a socialeval: spec, got ${JSON.stringify(spec)}`);
  const params = new Map(p.params);
  if (!params.has('composite')) params.set('composite', 'include');
  const eff: ParsedSpec = { ...p, params };
  const excluded: Excluded[] = [];
  const problems: Problem[] = [];
  const filters = filtersFromSpec(eff, ABILITIES.map((a) => a.name));
  const trees = new Map<string, WorldTree>();
  for (const file of listFiles(p.path)) {
    const f = fileFacts(file);
    if (filters.lang && f.language && f.language !== filters.lang) continue;
    if (filters.orientation && f.orientation && !orientationMatches(f.orientation, filters.orientation)) continue;
    const t = readWorldTree(file, problems);
    if (t) trees.set(t.stem, t);
  }
  const iae: IaeItem[] = [];
  if (tasks.iae) {
    const d = loadSocialEval(eff);
    for (const pr of d.problems) problems.push(pr);
    excluded.push(...d.excluded);
    for (const s of d.samples) {
      const stem = String(s.provenance?.file ?? '').replace(/\.json$/i, '');
      const t = trees.get(stem);
      if (!t) continue; // its tree has a problem, recorded above
      const node = t.nodes.get(s.provenance!.node!);
      const choice = node?.choices.find((c) => c.cid === s.provenance!.choice);
      if (!node || !choice) {
        excluded.push({ id: s.id, reason: 'the skill choice is not a choice of a node reachable in the tree' });
        continue;
      }
      if (!t.parent.has(node.cid) && node.cid !== '0') {
        excluded.push({ id: s.id,
          reason: `node ${node.cid} is not reachable from the beginning, so its dialogue context is unknown` });
        continue;
      }
      const options = [choice.content, ...choice.confusions];
      if (options.length < 2) {
        excluded.push({ id: s.id, file: t.file, where: `node ${node.cid}, choice ${choice.cid}`,
          reason: `the skill choice has ${choice.confusions.length} confusion utterances, so fewer than 2 options` });
        continue;
      }
      const abilities = s.labels.ability!.split(' + ');
      iae.push({
        id: s.id,
        language: t.language,
        ability: s.labels.ability!,
        aspect: s.labels.aspect!,
        abilities,
        labels: s.labels,
        options,
        answer: 0,
        fields: iaeFields(t, node.cid, String(s.extras?.question ?? '')),
      });
    }
  }
  if (problems.length && !skipInvalid) {
    throw new LobesErrors(`dataset ${spec} cannot be evaluated`, problems.map(problemError), {
      hint: invalidInputHint(iae.length + trees.size, 'fix the trees', opt('skipInvalid')),
    });
  }
  for (const pr of problems)
    excluded.push({ id: [pr.file, pr.where].filter(Boolean).join(': '), file: pr.file, where: pr.where,
      reason: `invalid: ${pr.reason}` });
  return { spec: formatSpec('socialeval', p.path, params), iae, gae: tasks.gae ? [...trees.values()] : [], excluded };
}

/** The aspect of each ability of a composite label ('A + B'), as the item counts toward them. */
export function aspectsOf(abilities: string[]): string[] {
  return [...new Set(abilities.map(aspectOf))];
}
