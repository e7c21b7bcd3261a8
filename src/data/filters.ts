import { UsageError } from '../util/errors.js';
import { ASPECTS } from './bessi.js';
import type { Sample } from './types.js';
import type { ParsedSpec } from './spec.js';

/** The label filters shared by builtin: and socialeval: (lang, orientation, aspect, ability). */
export interface Filters {
  lang?: 'en' | 'zh';
  orientation?: string;
  aspects?: Set<string>;
  abilities?: Set<string>;
}

const squash = (s: string) => s.toLowerCase().replace(/[^a-z]/g, '');

export function filtersFromSpec(p: ParsedSpec, abilityNames: readonly string[]): Filters {
  const f: Filters = {};
  const lang = p.params.get('lang');
  if (lang !== undefined) {
    const l = lang.toLowerCase();
    if (l === 'en') f.lang = 'en';
    else if (l === 'zh' || l === 'cn') f.lang = 'zh';
    else
      throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: lang=${JSON.stringify(lang)}`,
        'use lang=en or lang=zh');
  }
  const o = p.params.get('orientation');
  if (o !== undefined) {
    const l = o.toLowerCase().replace(/\s/g, '');
    if (l === 'self' || l === 'altruism') f.orientation = l;
    else if (/^\[?-?[01],-?[01]\]?$/.test(l)) f.orientation = '[' + l.replace(/[[\]]/g, '') + ']';
    else
      throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: orientation=${JSON.stringify(o)}`,
        'use orientation=self, orientation=altruism or an exact pair such as orientation=[1,-1]');
  }
  const a = p.params.get('aspect');
  if (a !== undefined) {
    f.aspects = new Set();
    for (const part of a.split(',')) {
      const hit = ASPECTS.find((x) => squash(x) === squash(part));
      if (!hit)
        throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: unknown aspect ${JSON.stringify(part)}`,
          `aspects: ${ASPECTS.join(', ')}`);
      f.aspects.add(hit);
    }
  }
  const ab = p.params.get('ability');
  if (ab !== undefined) {
    f.abilities = new Set();
    for (const part of ab.split(',')) {
      const hit = abilityNames.find((x) => squash(x) === squash(part));
      if (!hit)
        throw new UsageError(`dataset spec ${JSON.stringify(p.raw)}: unknown ability ${JSON.stringify(part)}`,
          'give a BESSI ability name, e.g. ability=Teamwork Skill');
      f.abilities.add(hit);
    }
  }
  return f;
}

/**
 * Orientation filter: `self` keeps items whose orientation is self (builtin) or whose
 * SocialEval pair [self,altruism] has self = 1; `altruism` likewise for the second
 * component; an exact pair keeps that pair only.
 */
export function orientationMatches(label: string | undefined, want: string): boolean {
  if (label === undefined) return false;
  if (label === want) return true;
  const m = /^\[(-?\d),(-?\d)\]$/.exec(label);
  if (!m) return false;
  if (want === 'self') return m[1] === '1';
  if (want === 'altruism') return m[2] === '1';
  return false;
}

export function keep(s: Sample, f: Filters): boolean {
  if (f.lang && s.labels.language !== f.lang) return false;
  if (f.orientation && !orientationMatches(s.labels.orientation, f.orientation)) return false;
  if (f.aspects && !f.aspects.has(s.labels.aspect)) return false;
  if (f.abilities && !f.abilities.has(s.labels.ability)) return false;
  return true;
}
