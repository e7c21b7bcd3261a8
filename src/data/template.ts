import { UsageError } from '../util/errors.js';
import type { ParsedSpec } from './spec.js';

/**
 * How an item becomes model input. Placeholders: {question} (the situation question),
 * {response} (the correct utterance), {speaker} (who says it), {scenario} (the story setting).
 * The default, after SocialEval §4.3, is the question followed by the response on the next line.
 */
export const DEFAULT_TEMPLATE = '{question}\n{response}';

export interface TemplateFields {
  question: string;
  response: string;
  speaker: string;
  scenario: string;
}

const PLACEHOLDERS = ['question', 'response', 'speaker', 'scenario'];

/**
 * Which text of an item is analysed (the spec option `text=`): the paper's question followed by
 * the correct response (default), the response alone (the behaviour, without a question that may
 * name the ability), or the question alone.
 */
export const TEXT_COMPOSITIONS = ['question+response', 'response', 'question'] as const;
export type TextComposition = (typeof TEXT_COMPOSITIONS)[number];

/** The `text=` option of a spec (default question+response); a usage error for anything else. */
export function textComposition(p: ParsedSpec): TextComposition {
  const v = p.params.get('text');
  if (v === undefined) return 'question+response';
  // a '+' typed in a shell or URL may arrive as a space
  const t = v.trim().replace(/\s+/g, '+').toLowerCase();
  if ((TEXT_COMPOSITIONS as readonly string[]).includes(t)) return t as TextComposition;
  throw new UsageError(
    `dataset spec ${JSON.stringify(p.raw)}: text=${JSON.stringify(v)} is not one of ${TEXT_COMPOSITIONS.join(', ')}`,
    'text=response analyses the utterance without its question',
  );
}

/** Build the template from spec options: text=..., template=..., scenario=1, speaker=1. */
export function templateFromSpec(p: ParsedSpec, flag: (k: string) => boolean): string {
  const custom = p.params.get('template');
  const text = textComposition(p);
  if (custom !== undefined) {
    if (p.params.has('scenario') || p.params.has('speaker') || p.params.has('text')) {
      throw new UsageError(
        `dataset spec ${JSON.stringify(p.raw)}: template= cannot be combined with scenario=, speaker= or text=`,
        'put {scenario}, {question} and {speaker} in the template',
      );
    }
    const t = custom.replace(/\\n/g, '\n').replace(/\\t/g, '\t');
    for (const m of t.matchAll(/\{([^{}]*)\}/g)) {
      if (!PLACEHOLDERS.includes(m[1]))
        throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: unknown template placeholder {${m[1]}}`,
          `use ${PLACEHOLDERS.map((x) => `{${x}}`).join(' ')}`);
    }
    if (!t.includes('{response}'))
      throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: the template has no {response}`);
    return t;
  }
  const response = flag('speaker') ? '{speaker}: {response}' : '{response}';
  if (text === 'question' && flag('speaker'))
    throw new UsageError(
      `dataset spec ${JSON.stringify(p.raw)}: speaker=1 has no effect with text=question (no response is analysed)`,
    );
  const body = text === 'question' ? '{question}' : text === 'response' ? response : '{question}\n' + response;
  return (flag('scenario') ? '{scenario}\n' : '') + body;
}

export function applyTemplate(t: string, f: TemplateFields): string {
  return t.replace(/\{(question|response|speaker|scenario)\}/g, (_, k: keyof TemplateFields) => f[k]);
}
