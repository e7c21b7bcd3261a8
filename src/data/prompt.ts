/**
 * Prompt rendering for evaluation: a template (Python format syntax with ⟦PART⟧…⟦/⟧ part
 * markers, see templates.ts) filled with an item's fields and its options in one order,
 * lettered A, B, C, …, put through the chat template, followed by the answer prefix (e.g.
 * `{"choice": "`) so that the next token is the answer letter. Every character of the
 * result belongs to exactly one named part (contract: /docs/eval.md, "Prompt parts").
 */
import { LobesError } from '../util/errors.js';

/** A named stretch of a rendered prompt: characters [start, end) of its text. */
export interface PromptPart {
  name: string;
  start: number;
  end: number;
}

/** A prompt ready for the tokenizer. */
export interface RenderedPrompt {
  /**
   * The exact string given to the tokenizer (after the chat template, including the answer
   * prefix such as `{"choice": "`), so that the next token is the answer letter.
   */
  text: string;
  /**
   * Named spans of `text`, in order, tiling it: 'instruction', 'profile', 'others',
   * 'context', 'question', 'option:A', 'option:B', …, 'answer_prefix', and 'template' for
   * every other character (template text between sections and the chat-template wrapper).
   */
  parts: PromptPart[];
  /** The option letters of this prompt, e.g. ['A', 'B', 'C', 'D']. */
  letters: string[];
}

/** What a prompt is made of: template fields and option texts in the dataset's order. */
export interface PromptItem {
  id: string;
  /** Values of the template's `{field}`s (not `choices`, which is built from `options`). */
  fields: Record<string, string>;
  options: string[];
}

export interface RenderOptions {
  /** Template in Python format syntax, with optional ⟦PART⟧…⟦/⟧ markers. */
  template: string;
  /** Between the letter and the option text: '. ' (IAE, generic) or ': ' (GAE). */
  separator: string;
  /** Wrap the user message with the tokenizer's chat template (null: no chat template). */
  chat: ((content: string) => string) | null;
  /** Text after the chat template that the answer letter follows. */
  answerPrefix: string;
  /** Option letters (default A, B, C, …). */
  letters?: string[];
}

/** Option letters, in order. */
export const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('');

/** One piece of a parsed template. */
type Segment = { kind: 'text'; text: string } | { kind: 'field'; name: string } | { kind: 'open'; part: string } | {
  kind: 'close';
};

const parsedCache = new Map<string, Segment[]>();

/**
 * Parse a template: `{{` and `}}` are literal braces, `{name}` a field, ⟦PART⟧ opens a
 * part and ⟦/⟧ closes it (parts do not nest). `source` names the template in errors.
 */
export function parseTemplate(template: string, source = 'prompt template'): Segment[] {
  const hit = parsedCache.get(template);
  if (hit) return hit;
  const segs: Segment[] = [];
  let text = '';
  let open = false;
  const flush = () => {
    if (text) segs.push({ kind: 'text', text });
    text = '';
  };
  for (let i = 0; i < template.length;) {
    const c = template[i]!;
    if (c === '⟦') {
      const j = template.indexOf('⟧', i);
      if (j < 0) throw new LobesError(`unclosed part marker at character ${i}`, { file: source });
      const name = template.slice(i + 1, j);
      flush();
      if (name === '/') {
        if (!open) throw new LobesError(`part marker ⟦/⟧ at character ${i} closes nothing`, { file: source });
        segs.push({ kind: 'close' });
        open = false;
      } else {
        if (open) throw new LobesError(`part ⟦${name}⟧ at character ${i} opens inside another part`, { file: source });
        if (!/^[a-z_]+$/.test(name))
          throw new LobesError(`part name ⟦${name}⟧ at character ${i} is not lower-case letters`, { file: source });
        segs.push({ kind: 'open', part: name });
        open = true;
      }
      i = j + 1;
    } else if (c === '{' && template[i + 1] === '{') {
      text += '{';
      i += 2;
    } else if (c === '}' && template[i + 1] === '}') {
      text += '}';
      i += 2;
    } else if (c === '{') {
      const j = template.indexOf('}', i);
      const name = j < 0 ? '' : template.slice(i + 1, j);
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        throw new LobesError(
          `bad field at character ${i}: ${
            JSON.stringify(template.slice(i, i + 20))
          } (fields are {name}; write {{ and }} for literal braces)`,
          { file: source },
        );
      }
      flush();
      segs.push({ kind: 'field', name });
      i = j + 1;
    } else if (c === '}') {
      throw new LobesError(`single '}' at character ${i} (write }} for a literal brace)`, { file: source });
    } else {
      text += c;
      i++;
    }
  }
  flush();
  if (open) throw new LobesError('a part marker is not closed with ⟦/⟧', { file: source });
  parsedCache.set(template, segs);
  return segs;
}

/** The `{field}` names a template uses. */
export function templateFields(template: string): string[] {
  return [...new Set(parseTemplate(template).flatMap((s) => (s.kind === 'field' ? [s.name] : [])))];
}

/** Check that `order` is a permutation of 0..n-1. */
function checkOrder(order: readonly number[], n: number, id: string): void {
  const seen = new Uint8Array(n);
  let ok = order.length === n;
  for (const o of order) {
    if (!Number.isInteger(o) || o < 0 || o >= n || seen[o]) ok = false;
    else seen[o] = 1;
  }
  if (!ok)
    throw new LobesError(`option order ${JSON.stringify(order)} is not a permutation of ${n} options`, {
      where: `item ${id}`,
    });
}

/** Builds text while recording named spans. */
class SpanText {
  text = '';
  parts: PromptPart[] = [];

  push(s: string, part: string | null): void {
    if (!s) return;
    const start = this.text.length;
    this.text += s;
    if (part) this.parts.push({ name: part, start, end: this.text.length });
  }
}

/** The user message: the template with fields and lettered options filled in, with its parts. */
export function renderContent(item: PromptItem, order: readonly number[],
  opts: Pick<RenderOptions, 'template' | 'separator' | 'letters'>
): { text: string; parts: PromptPart[]; letters: string[] } {
  const n = item.options.length;
  if (n < 2)
    throw new LobesError(`item has ${n} option${n === 1 ? '' : 's'}; multiple choice needs at least 2`, {
      where: `item ${item.id}`,
    });
  const letterSet = opts.letters ?? LETTERS;
  // Letters are needed only where the template lists the options ({choices}); a cloze template
  // without it takes any number of options.
  const lettered = templateFields(opts.template).includes('choices');
  if (lettered && n > letterSet.length)
    throw new LobesError(`item has ${n} options, more than the ${letterSet.length} answer letters`, {
      where: `item ${item.id}`,
    });
  checkOrder(order, n, item.id);
  const letters = letterSet.slice(0, Math.min(n, letterSet.length));
  const out = new SpanText();
  let part: string | null = null;
  for (const s of parseTemplate(opts.template)) {
    if (s.kind === 'open') part = s.part;
    else if (s.kind === 'close') part = null;
    else if (s.kind === 'text') out.push(s.text, part);
    else if (s.name === 'choices') {
      if (part)
        throw new LobesError('{choices} must not be inside a part marker (each option is its own part)', {
          file: 'prompt template',
        });
      order.forEach((o, slot) => {
        if (slot > 0) out.push('\n', null);
        out.push(`${letters[slot]}${opts.separator}${item.options[o]}`, `option:${letters[slot]}`);
      });
    } else {
      const v = item.fields[s.name];
      if (v === undefined)
        throw new LobesError(`the template uses {${s.name}} but the item has no field ${JSON.stringify(s.name)}`, {
          where: `item ${item.id}`,
          hint: `fields: ${Object.keys(item.fields).concat('choices').join(', ')}`,
        });
      out.push(v, part);
    }
  }
  return { text: out.text, parts: mergeAdjacent(out.parts), letters };
}

/** Join touching spans of the same name (a part made of text and fields is one span). */
function mergeAdjacent(parts: PromptPart[]): PromptPart[] {
  const out: PromptPart[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if (last && last.name === p.name && last.end === p.start) last.end = p.end;
    else out.push({ ...p });
  }
  return out;
}

/** Fill gaps with 'template' spans so that the parts tile [0, length). */
function tile(parts: PromptPart[], length: number): PromptPart[] {
  const out: PromptPart[] = [];
  let at = 0;
  for (const p of parts) {
    if (p.start > at) out.push({ name: 'template', start: at, end: p.start });
    if (p.end > p.start) out.push(p);
    at = p.end;
  }
  if (at < length) out.push({ name: 'template', start: at, end: length });
  return out;
}

/**
 * Render one prompt: the item's options in `order` (order[slot] = index into item.options
 * shown at letter slot), the chat template around the user message, then the answer prefix.
 */
export function renderPrompt(item: PromptItem, order: readonly number[], opts: RenderOptions): RenderedPrompt {
  const c = renderContent(item, order, opts);
  let text = c.text;
  let shift = 0;
  let parts = c.parts;
  if (opts.chat) {
    const full = opts.chat(c.text);
    let at = full.indexOf(c.text);
    if (at >= 0) shift = at;
    else {
      // Chat templates that trim the message: find the trimmed text and clip the spans to it.
      const lead = c.text.length - c.text.trimStart().length;
      const core = c.text.trim();
      at = core ? full.indexOf(core) : -1;
      if (at < 0)
        throw new LobesError("the chat template changes the message text, so the prompt's parts cannot be located", {
          where: `item ${item.id}`,
          hint: 'use a chat template that copies the message, or run without it',
        });
      shift = at - lead;
      const lo = lead;
      const hi = lead + core.length;
      parts = parts.map((p) => ({ ...p, start: Math.min(Math.max(p.start, lo), hi),
        end: Math.min(Math.max(p.end, lo), hi) })
      ).filter((p) => p.end > p.start);
    }
    text = full;
  }
  const shifted = parts.map((p) => ({ name: p.name, start: p.start + shift, end: p.end + shift }));
  const prefixStart = text.length;
  text += opts.answerPrefix;
  if (opts.answerPrefix) shifted.push({ name: 'answer_prefix', start: prefixStart, end: text.length });
  return { text, parts: tile(shifted, text.length), letters: c.letters };
}
