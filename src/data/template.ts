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

/** Build the template from spec options: template=..., scenario=1, speaker=1. */
export function templateFromSpec(p: ParsedSpec, flag: (k: string) => boolean): string {
  const custom = p.params.get('template');
  if (custom !== undefined) {
    if (p.params.has('scenario') || p.params.has('speaker')) {
      throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: template= cannot be combined with scenario= or speaker=`, 'put {scenario} and {speaker} in the template');
    }
    const t = custom.replace(/\\n/g, '\n').replace(/\\t/g, '\t');
    for (const m of t.matchAll(/\{([^{}]*)\}/g)) {
      if (!PLACEHOLDERS.includes(m[1])) throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: unknown template placeholder {${m[1]}}`, `use ${PLACEHOLDERS.map((x) => `{${x}}`).join(' ')}`);
    }
    if (!t.includes('{response}')) throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: the template has no {response}`);
    return t;
  }
  const response = flag('speaker') ? '{speaker}: {response}' : '{response}';
  return (flag('scenario') ? '{scenario}\n' : '') + '{question}\n' + response;
}

export function applyTemplate(t: string, f: TemplateFields): string {
  return t.replace(/\{(question|response|speaker|scenario)\}/g, (_, k: keyof TemplateFields) => f[k]);
}
