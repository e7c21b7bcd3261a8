import { UsageError } from '../util/errors.js';
import { ABILITIES, aspectOf } from './bessi.js';
import { SOCIAL_EN, SOCIAL_ZH } from './builtin/social.js';
import { canonicalizeAbility } from './labels.js';
import { checkParams, formatSpec, boolParam, type ParsedSpec } from './spec.js';
import { applyTemplate, templateFromSpec } from './template.js';
import { filtersFromSpec, keep } from './filters.js';
import type { Dataset, Sample } from './types.js';

export const BUILTIN_NAMES = ['social'] as const;
export const DEFAULT_BUILTIN = 'social';

/** One built-in item before templating. */
export interface BuiltinItem {
  id: string;
  ability: string;
  aspect: string;
  language: 'en' | 'zh';
  orientation: 'self' | 'altruism';
  speaker: string;
  scenario: string;
  question: string;
  response: string;
  /** The Chinese ability name written with a Chinese item. */
  zhLabel?: string;
}

const ASPECT_CODE: Record<string, string> = {
  'Self-Management': 'sm',
  'Social Engagement': 'se',
  Cooperation: 'co',
  'Emotional Resilience': 'er',
  Innovation: 'in',
};

let cache: BuiltinItem[] | null = null;

/** Parse the built-in item tables (validated: every ability resolves, Chinese labels agree). */
export function builtinItems(): BuiltinItem[] {
  if (cache) return cache;
  const out: BuiltinItem[] = [];
  const counters = new Map<string, number>();
  const add = (lang: 'en' | 'zh', fields: string[], line: string, zhLabel?: string) => {
    if (fields.length !== 6) throw new Error(`builtin:social ${lang} item has ${fields.length} fields: ${line}`);
    const [ability, o, speaker, scenario, question, response] = fields;
    if (!ABILITIES.some((a) => a.name === ability)) throw new Error(`builtin:social: unknown ability ${ability}`);
    if (zhLabel !== undefined) {
      const r = canonicalizeAbility(zhLabel);
      if (r.ability !== ability)
        throw new Error(`builtin:social: Chinese label ${zhLabel} does not resolve to ${ability}`);
    }
    const aspect = aspectOf(ability);
    const key = `${lang}-${ASPECT_CODE[aspect]}`;
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n);
    out.push({
      id: `social-${key}-${String(n).padStart(2, '0')}`,
      ability,
      aspect,
      language: lang,
      orientation: o === 's' ? 'self' : o === 'a' ? 'altruism' : (() => {
        throw new Error(`builtin:social: orientation ${o}`);
      })(),
      speaker,
      scenario,
      question,
      response,
      zhLabel,
    });
  };
  for (const line of SOCIAL_EN) add('en', line.split('|'), line);
  for (const line of SOCIAL_ZH) {
    const [zh, ...rest] = line.split('|');
    add('zh', rest, line, zh);
  }
  cache = out;
  return out;
}

export function loadBuiltin(p: ParsedSpec): Dataset {
  const name = p.path === '' ? DEFAULT_BUILTIN : p.path;
  if (!(BUILTIN_NAMES as readonly string[]).includes(name)) {
    throw new UsageError(`unknown built-in dataset ${JSON.stringify(name)}`,
      `built-in datasets: ${BUILTIN_NAMES.map((n) => 'builtin:' + n).join(', ')}`);
  }
  checkParams(p, ['lang', 'orientation', 'aspect', 'ability', 'template', 'scenario', 'speaker', 'text']);
  const template = templateFromSpec(p, (k) => boolParam(p, k));
  const filters = filtersFromSpec(p, ABILITIES.map((a) => a.name));
  const samples: Sample[] = [];
  for (const it of builtinItems()) {
    const s: Sample = {
      id: it.id,
      text: applyTemplate(template, it),
      labels: { aspect: it.aspect, ability: it.ability, language: it.language, orientation: it.orientation },
      provenance: { file: `builtin:${name}`, node: it.id, choice: '0' },
      extras: { question: it.question, response: it.response, speaker: it.speaker, scenario: it.scenario,
        distractors: [] },
    };
    if (keep(s, filters)) samples.push(s);
  }
  return { spec: formatSpec('builtin', name, p.params), samples, excluded: [],
    axes: ['aspect', 'ability', 'language', 'orientation'] };
}
