/**
 * The items `lobes attend` reads, from three sources, each as the prompt text the model reads,
 * its named parts and its token ids:
 *
 *   --data SPEC, --position last     each sample's text (with --chat-template, as one user turn
 *                                    of the tokenizer's chat template), tokenized as `lobes
 *                                    extract` does; the part 'text' is the sample's text.
 *   --data socialeval:…, --position answer
 *                                    each IAE item rendered as `lobes eval` renders it (SocialEval's
 *                                    answer-only IAE prompt, options in dataset order, the chat
 *                                    template when the tokenizer has one, the answer prefix
 *                                    `{"choice": "`), with its parts (context, question, option:A…).
 *   --data socialeval:…, --cot N     the IAE prompt that asks for an explanation and a choice
 *                                    (`iae-cot`, as `lobes eval --cot` renders it), without the
 *                                    answer prefix: the model's reasoning and the answer cue are
 *                                    added when the item is computed (cot.ts).
 *   --eval DIR --items wrong|right|all
 *                                    the records of `lobes eval` (DIR/records.jsonl): each selected
 *                                    record's first shuffle, read up to its answer position (the
 *                                    tokens the evaluation scored: after the reasoning, for an
 *                                    evaluation made with --cot), with its parts and the roles of
 *                                    the options (correct, the model's pick, other).
 */
import { limitItems, type LimitSpec } from '../data/subset.js';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { LobesError, UsageError, opt } from '../util/errors.js';
import type { AttendTokenizer } from './tokenize.js';
import type { PromptPart } from './words.js';
import type { AttendItem } from './types.js';
import { TEXT_PART } from './words.js';
import type { EvalRecord } from '../eval/types.js';
import { evalFile, isEvalDir, readEvalResults } from '../eval/store.js';
import { renderPrompt } from '../data/prompt.js';
import { ANSWER_PREFIX, OPTION_SEPARATOR, SOCIALEVAL_TEMPLATES } from '../data/prompt-templates.js';
import { parseSpec } from '../data/spec.js';
import { controlKey, sameModel } from '../store/provenance.js';
import { controlOfFolder } from '../runtime/control.js';
import type { CotBase } from './cot.js';
import type { EvalTokenizer } from '../runtime/eval-tokenizer.js';

/** An item ready for the model: the fields of its DIR/items.jsonl line known before the forward pass (ids after --max-tokens). */
export interface PreparedItem
  extends Pick<AttendItem, 'id' | 'index' | 'labels' | 'correct' | 'prompt' | 'parts' | 'roles' | 'ids' | 'reasoning'>
{
  /** The whole tokenization of `prompt` (ids is ids of `kept`). */
  allIds: number[];
  /** Indices into allIds of the tokens kept. */
  kept: number[];
  truncated: boolean;
  /** --cot: the prompt before the reasoning; prompt, parts and ids are replaced once the model has reasoned (cot.ts). */
  cot?: CotBase;
}

export interface PreparedInput {
  kind: 'data' | 'eval';
  spec: string;
  /** sha256 of the items as read (texts, ids, labels; or the records file). */
  sha256: string;
  items: PreparedItem[];
  /** Items before selection (eval: all records). */
  total: number;
  selection: string;
  chatTemplate: boolean;
  /** --eval: the evaluation's reasoning budget (its settings.cot; 0 when it scored the letter directly). */
  cot?: number;
  /** --eval: records the evaluation skipped (never scored, never read here). */
  skipped?: number;
}

/** Keep the last `max` tokens, and a leading BOS in front. */
function cut(ids: number[], max: number | null, bosId: number | null): { kept: number[]; truncated: boolean } {
  const all = ids.map((_, i) => i);
  if (max === null || ids.length <= max) return { kept: all, truncated: false };
  const keepBos = bosId !== null && ids[0] === bosId && max > 1;
  return { kept: keepBos ? [0, ...all.slice(ids.length - (max - 1))] : all.slice(ids.length - max), truncated: true };
}

export function prepared(base: Omit<PreparedItem, 'ids' | 'kept' | 'truncated'>, maxTokens: number | null,
  bosId: number | null): PreparedItem
{
  if (base.allIds.length === 0)
    throw new LobesError('the prompt tokenizes to zero tokens', { where: `item ${base.id}` });
  const { kept, truncated } = cut(base.allIds, maxTokens, bosId);
  return { ...base, ids: kept.map((i) => base.allIds[i]!), kept, truncated };
}

/** Items from a dataset, read from their last token (`lobes extract`'s tokenization). */
export async function dataLastItems(spec: string, tok: AttendTokenizer,
  opts: { chatTemplate: boolean; maxTokens: number | null; limit: LimitSpec | null }): Promise<PreparedInput>
{
  const { loadDataset } = await import('../data/index.js');
  const ds = await loadDataset(spec);
  if (opts.chatTemplate && !tok.chat)
    throw new LobesError('the tokenizer has no chat template', { hint: `drop ${opt('chatTemplate')}` });
  const samples = opts.limit !== null ? limitItems(ds.samples, ds.axes, opts.limit).items : ds.samples;
  const h = createHash('sha256');
  const items = samples.map((s, index) => {
    const prompt = opts.chatTemplate ? tok.chat!(s.text) : s.text;
    const at = prompt.indexOf(s.text);
    const parts: PromptPart[] = at >= 0 ? [{ name: TEXT_PART, start: at, end: at + s.text.length }] : [];
    const allIds = tok.encode(prompt, !opts.chatTemplate);
    h.update(JSON.stringify([s.id, prompt, allIds]) + '\n');
    return prepared({ id: s.id, index, labels: s.labels, correct: null, prompt, parts, allIds }, opts.maxTokens,
      tok.bosId);
  });
  return { kind: 'data', spec: ds.spec, sha256: h.digest('hex'), items, total: ds.samples.length,
    selection: opts.limit !== null ? limitText(items.length, opts.limit) : 'all', chatTemplate: opts.chatTemplate };
}

/**
 * SocialEval IAE items rendered as `lobes eval` renders them, read from the answering position;
 * with `cot` (a tokenizer of lobes eval), the prompt that asks for reasoning, without the answer
 * prefix, whose reasoning comes later (cot.ts).
 */
export async function socialEvalAnswerItems(spec: string, tok: AttendTokenizer,
  opts: { maxTokens: number | null; limit: LimitSpec | null; cot?: EvalTokenizer | null }): Promise<PreparedInput>
{
  if (parseSpec(spec).kind !== 'socialeval') {
    throw new UsageError(
      `${opt('position', 'answer')} needs multiple-choice prompts: a socialeval: dataset or ${
        opt('eval', 'DIR')
      } (got ${JSON.stringify(spec)})`,
      `use ${opt('position', 'last')} to read the last token of each text`,
    );
  }
  const { loadSocialEvalBench } = await import('../data/socialeval-eval.js');
  const bench = loadSocialEvalBench(spec, { iae: true, gae: false });
  const all = bench.iae;
  const chosen = opts.limit !== null && all.length
    ? limitItems(all, Object.keys(all[0]!.labels), opts.limit).items
    : all;
  const h = createHash('sha256');
  const etok = opts.cot ?? null;
  const items = chosen.map((it, index) => {
    const order = it.options.map((_, i) => i);
    const r = renderPrompt({ id: it.id, fields: it.fields, options: it.options }, order, {
      template: SOCIALEVAL_TEMPLATES[etok ? 'iae-cot' : 'iae'][it.language],
      separator: OPTION_SEPARATOR.iae,
      chat: etok ? etok.chat : tok.chat,
      answerPrefix: etok ? '' : ANSWER_PREFIX.socialeval,
    });
    const allIds = etok ? etok.encode(r.text) : tok.encode(r.text, !tok.chat);
    h.update(JSON.stringify([it.id, r.text, allIds]) + '\n');
    const roles: Record<string, 'correct' | 'picked' | 'other'> = {};
    r.letters.forEach((L, slot) => (roles[`option:${L}`] = order[slot] === it.answer ? 'correct' : 'other'));
    const p = prepared({ id: it.id, index, labels: it.labels, correct: null, prompt: r.text, parts: r.parts, roles,
      allIds }, opts.maxTokens, tok.bosId);
    if (etok)
      p.cot = { text: r.text, parts: r.parts, letters: r.letters, ids: allIds, answerPrefix: ANSWER_PREFIX.socialeval };
    return p;
  });
  return { kind: 'data', spec: bench.spec, sha256: h.digest('hex'), items, total: all.length,
    selection: opts.limit !== null ? limitText(items.length, opts.limit) : 'all',
    chatTemplate: etok ? !!etok.chat : !!tok.chat };
}

export type ItemSelection = 'wrong' | 'right' | 'all';

/** How a --limit sample is described in the summary. */
function limitText(n: number, l: LimitSpec): string {
  return `${n} by --limit ${l.limit} (seed ${l.seed}${l.by ? `, by ${l.by.join(',')}` : ''})`;
}

/** The label axes every selected record has. */
function evalAxes(selected: { rec: EvalRecord }[]): string[] {
  const first = selected[0]?.rec.labels ?? {};
  return Object.keys(first).filter((a) => selected.every((x) => x.rec.labels?.[a] !== undefined));
}

/** Without a manifest: a chat-templated prompt begins with the template's own opening. */
function looksChatTemplated(prompt: string, tok: AttendTokenizer): boolean {
  if (!tok.chat) return false;
  const open = tok.chat('x');
  const n = Math.min(8, open.indexOf('x') >= 0 ? open.indexOf('x') : 8);
  return n > 0 && prompt.startsWith(open.slice(0, n));
}

/** `--eval DIR` must be a lobes evaluation folder (checked before a model is opened, and again when read). */
export function checkEvalFolder(dir: string): void {
  if (!isEvalDir(dir))
    throw new LobesError('not a lobes evaluation folder (no eval.json)', { file: dir,
      hint: `give the ${opt('out')} folder of lobes eval` });
}

/** Records of `lobes eval` (DIR/records.jsonl), the selected ones, read up to their answer position. */
export async function evalItems(dir: string, modelDir: string,
  model: { graphSha256: string; filesSha256?: string; sourceIdentity?: string }, tok: AttendTokenizer,
  opts: { items: ItemSelection; maxTokens: number | null; limit: LimitSpec | null }): Promise<PreparedInput>
{
  // Through the evaluation's own reader: a finished folder whose records still hash to eval.json.
  checkEvalFolder(dir);
  const ev = readEvalResults(dir);
  const records = ev.records;
  const file = path.join(dir, ev.manifest.files!.records.path);
  const selected: { rec: EvalRecord; index: number }[] = [];
  let skipped = 0;
  records.forEach((rec, index) => {
    // A record lobes eval skipped (its prompt was longer than --max-tokens) was never scored.
    if (rec && typeof rec.skipped === 'string') {
      skipped++;
      return;
    }
    if (!rec || !Array.isArray(rec.shuffles) || !rec.shuffles[0] || typeof rec.shuffles[0].prompt !== 'string') {
      throw new LobesError('record has no shuffles[0].prompt', { file, where: `line ${index + 1}` });
    }
    if (opts.items === 'all' || (opts.items === 'wrong' && rec.correct === false) ||
      (opts.items === 'right' && rec.correct === true)) selected.push({ rec, index });
  });
  const chosen = opts.limit !== null
    ? limitItems(selected.map((x) => ({ ...x, id: x.rec.id, labels: x.rec.labels ?? {} })), evalAxes(selected),
      opts.limit).items
    : selected;
  if (chosen.length === 0)
    throw new LobesError(`no ${opts.items === 'all' ? '' : opts.items + ' '}records to read`, { file,
      hint: opts.items === 'all' ? undefined : `use ${opt('items', 'all')}` });
  const facts = { chat: ev.manifest.tokenizer.chatTemplate };
  checkSameModel(ev.manifest.model, { ...model, control: controlOfFolder(modelDir) }, evalFile(dir, 'manifest'));
  const chat = facts.chat ?? looksChatTemplated(chosen[0]!.rec.shuffles[0]!.prompt, tok);
  // The evaluation's own tokenizer logic, so that the ids are the ones it scored.
  const { loadEvalTokenizer } = await import('../runtime/eval-tokenizer.js');
  const etok = await loadEvalTokenizer(modelDir, { chatTemplate: chat ? 'on' : 'off' });
  const items = chosen.map(({ rec, index }) => {
    const sh = rec.shuffles[0]!;
    const where = `record ${rec.id} (line ${index + 1})`;
    // After reasoning (lobes eval --cot), the model read the prompt's ids, then the generated ids, then the cue's.
    const allIds = sh.cot ? cotIds(sh, etok, file, where) : etok.answerSlot(sh.prompt, sh.letters, where).ids;
    if (Number.isInteger(sh.tokens) && sh.tokens !== allIds.length) {
      throw new LobesError(
        `the record says the model read ${sh.tokens} tokens, but this tokenizer gives ${allIds.length} before the answer`,
        { file, where, hint: 'use the model folder the evaluation used' },
      );
    }
    const answerAt = typeof sh.answerAt === 'number'
      ? sh.answerAt
      : etok.answerSlot(sh.prompt, sh.letters, where).answerAt;
    const prompt = sh.prompt.slice(0, answerAt);
    const parts = (sh.parts ?? []).map((p) => ({ name: p.name, start: Math.min(p.start, answerAt),
      end: Math.min(p.end, answerAt) })
    ).filter((p) => p.end > p.start);
    const roles: Record<string, 'correct' | 'picked' | 'other'> = {};
    const picked = sh.order[sh.pick];
    sh.letters.forEach((L, slot) => {
      const o = sh.order[slot];
      roles[`option:${L}`] = o === rec.answer ? 'correct' : o === picked ? 'picked' : 'other';
    });
    return prepared({ id: rec.id, index, labels: rec.labels ?? {}, correct: rec.correct ?? null, prompt, parts, roles,
      allIds, ...(sh.cot ? { reasoning: sh.cot } : {}) }, opts.maxTokens, tok.bosId);
  });
  return {
    kind: 'eval',
    spec: path.resolve(dir),
    sha256: ev.manifest.files!.records.sha256,
    items,
    total: records.length,
    selection: opts.items + (opts.limit !== null ? `, ${limitText(items.length, opts.limit)}` : ''),
    chatTemplate: chat,
    cot: ev.manifest.settings?.cot ?? 0,
    ...(skipped ? { skipped } : {}),
  };
}

/** The token ids a record of `lobes eval --cot` was scored on: the prompt before the reasoning, the kept reasoning ids, the cue before the letter. */
function cotIds(sh: EvalRecord['shuffles'][number], etok: EvalTokenizer, file: string, where: string): number[] {
  const cot = sh.cot!;
  const tail = cot.text + cot.suffix;
  if (!Array.isArray(cot.ids) || typeof cot.suffix !== 'string' || !sh.prompt.endsWith(tail)) {
    throw new LobesError("the record's reasoning (shuffles[0].cot) does not end its prompt", { file, where });
  }
  return [...etok.encode(sh.prompt.slice(0, sh.prompt.length - tail.length)), ...cot.ids,
    ...etok.pieceSlot(cot.suffix, sh.letters, where).ids];
}

/** What two records of a model hold to name it (the evaluation's eval.json, this command's model). */
interface ModelFacts {
  graphSha256?: string | null;
  filesSha256?: string | null;
  source?: { identity?: string } | null;
  sourceIdentity?: string;
  control?: { kind: string; seed: number; version?: number } | null;
}

/**
 * Refuse an evaluation of another model (src/store/provenance.ts sameModel decides, as for the
 * report and eval label); the message says what differs.
 */
function checkSameModel(ev: ModelFacts, here: ModelFacts, file: string): void {
  const mine = { graphSha256: here.graphSha256, filesSha256: here.filesSha256,
    source: here.source ?? (here.sourceIdentity ? { identity: here.sourceIdentity } : null),
    control: here.control ?? null };
  if (sameModel(ev, mine)) return;
  if (controlKey(ev.control) !== controlKey(mine.control)) {
    throw new LobesError(
      ev.control
        ? `the evaluation scored a random-weights control of the model (${
          controlKey(ev.control)
        }, eval --control), not the trained model lobes attend reads`
        : `the evaluation scored the trained model, not a random-weights control (${controlKey(mine.control)})`,
      { file, hint: 'run lobes attend --eval on an evaluation of the trained model' },
    );
  }
  if (ev.source?.identity && mine.source?.identity) {
    throw new LobesError(
      'the evaluation was run with another model (its eval.json records another GGUF identity: other file contents, dtype or weight storage)',
      { file,
        hint:
          'give lobes attend the GGUF the evaluation used, converted the same way (lobes convert --dtype and --weights)' },
    );
  }
  if (ev.graphSha256 && ev.graphSha256 === mine.graphSha256) {
    throw new LobesError(
      'the evaluation was run with other model files (its eval.json records another sha256 over graph, weights and tokenizer files)',
      { file, hint: 'give lobes attend the model folder the evaluation used, unchanged' },
    );
  }
  throw new LobesError('the evaluation was run with another model (its eval.json records another graph sha256)', { file,
    hint: 'give lobes attend the model the evaluation used' });
}
