import { ABILITIES, type Ability, type Aspect } from './bessi.js';

/**
 * Label repair: map a raw ability label (as found in published data) to one of the 32
 * BESSI abilities, or refuse with a reason. Rules, applied in order (docs/datasets.md):
 *   1. normalize: Unicode NFKC, control characters → space, outer punctuation removed,
 *      lower case, hyphens/underscores → space, whitespace collapsed;
 *   2. a fixed list of labels that are refused (not a BESSI name and not decidable);
 *   3. exact name (also without spaces, e.g. "decisionmaking skill"), Chinese names,
 *      and a fixed table of hand-checked synonyms;
 *   4. word-wise prefix: every word of the label starts a word of exactly one ability
 *      name (also matching names without "skill" / without "capacity for"), e.g.
 *      "information process skill", "perspective", "conversation skill", "capacity for
 *      social warm"; several candidates → ambiguous (e.g. "capacity for");
 *   5. spelling slips: edit distance ≤ 2 to exactly one ability name when the label has
 *      at least 8 letters and every other name is at least 3 edits further away.
 */
export type Resolution =
  | { ability: string; aspect: Aspect; rule: 'exact' | 'chinese' | 'synonym' | 'prefix' | 'spelling' }
  | { ability: null; reason: string; candidates?: string[] };

/** Labels refused on purpose, with the reason (hand-checked against the items carrying them). */
export const REFUSED: Record<string, string> = {
  'anger regulation':
    'not a BESSI ability name: could mean Anger Management or Impulse Regulation (its items ask about both)',
  'communicational skill': 'not a BESSI ability name: could mean Conversational Skill or Expressive Skill',
};

/** Hand-checked synonyms (normalized label → ability). Each was checked against the questions of its items. */
export const SYNONYMS: Record<string, string> = {
  adaptive: 'Adaptability',
  'adaptive skill': 'Adaptability',
  'capacity for stress regulation': 'Stress Regulation',
  'capacity for self reliance': 'Capacity for Independence',
  'responsibility regulation': 'Responsibility Management',
  'engaging with abstract ideas': 'Abstract Thinking Skill',
  'intentionally resisting impulses': 'Impulse Regulation',
};

// eslint-disable-next-line no-control-regex -- control characters are exactly what this strips
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\ufeff]/g;
const OUTER_PUNCT = /^[\s.,;:!?。，、；：！？"'`()（）[\]【】]+|[\s.,;:!?。，、；：！？"'`()（）[\]【】]+$/g;
const CJK = /[\u3400-\u9fff\uf900-\ufaff]/;

export function normalizeLabel(raw: string): string {
  return raw
    .normalize('NFKC')
    .replace(CONTROL, ' ')
    .replace(OUTER_PUNCT, '')
    .toLowerCase()
    .replace(/[-_‐‑–—]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(OUTER_PUNCT, '');
}

interface Variant {
  ability: Ability;
  words: string[];
}

const VARIANTS: Variant[] = [];
const EXACT = new Map<string, Ability>();
const COMPACT = new Map<string, Ability>();
const ZH = new Map<string, Ability>();
const BY_NAME = new Map<string, Ability>(ABILITIES.map((a) => [a.name, a]));

for (const a of ABILITIES) {
  const full = normalizeLabel(a.name);
  EXACT.set(full, a);
  COMPACT.set(full.replace(/ /g, ''), a);
  const words = full.split(' ');
  const forms = [words];
  if (words[words.length - 1] === 'skill') forms.push(words.slice(0, -1));
  if (words[0] === 'capacity' && words[1] === 'for') forms.push(words.slice(2));
  for (const w of forms) VARIANTS.push({ ability: a, words: w });
  for (const z of a.zh) ZH.set(z, a);
}

function ok(a: Ability, rule: 'exact' | 'chinese' | 'synonym' | 'prefix' | 'spelling'): Resolution {
  return { ability: a.name, aspect: a.aspect, rule };
}

const ZH_SUFFIX = /(能力|技能|技巧|力|性)$/;

function resolveChinese(n: string): Resolution {
  const s = n.replace(/\s+/g, '');
  const hit = ZH.get(s);
  if (hit) return ok(hit, 'chinese');
  const stem = s.replace(ZH_SUFFIX, '');
  const cands = new Set<Ability>();
  for (const [z, a] of ZH) if (z.replace(ZH_SUFFIX, '') === stem) cands.add(a);
  if (cands.size === 1) return ok([...cands][0], 'chinese');
  if (cands.size > 1)
    return { ability: null, reason: `ambiguous Chinese label`, candidates: [...cands].map((a) => a.name) };
  // An English name written next to a Chinese one, e.g. "团队合作能力 (Teamwork Skill)".
  const latin = n.replace(/[^a-z ]/g, ' ').replace(/\s+/g, ' ').trim();
  if (latin.length >= 4) {
    const r = resolveEnglish(latin);
    if (r.ability) return r;
  }
  return { ability: null, reason: 'unknown Chinese label' };
}

function damerau(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) > cap) return cap + 1;
  const m = a.length, n = b.length;
  let prev2 = new Int32Array(n + 1), prev = new Int32Array(n + 1), cur = new Int32Array(n + 1);
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= m; i++) {
    cur[0] = i;
    let rowMin = cur[0];
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2] + 1);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > cap) return cap + 1;
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[n];
}

function resolveEnglish(n: string): Resolution {
  if (REFUSED[n]) return { ability: null, reason: REFUSED[n] };
  const exact = EXACT.get(n) ?? COMPACT.get(n.replace(/ /g, ''));
  if (exact) return ok(exact, 'exact');
  const syn = SYNONYMS[n];
  if (syn) return ok(BY_NAME.get(syn)!, 'synonym');
  const words = n.split(' ').filter(Boolean);
  if (words.length === 0) return { ability: null, reason: 'empty label' };
  // Word-wise prefix.
  const cands = new Set<Ability>();
  if (n.replace(/ /g, '').length >= 4) {
    for (const v of VARIANTS) {
      if (words.length > v.words.length) continue;
      if (words.every((w, i) => v.words[i].startsWith(w))) cands.add(v.ability);
    }
    // Compact prefix (missing spaces): "decisionmaking" ⊑ "decisionmakingskill".
    const c = n.replace(/ /g, '');
    for (const v of VARIANTS) if (v.words.join('').startsWith(c)) cands.add(v.ability);
  }
  if (cands.size === 1) return ok([...cands][0], 'prefix');
  if (cands.size > 1) {
    const names = [...cands].map((a) => a.name);
    return { ability: null, reason: `ambiguous label: it begins ${names.length} ability names (${names.join(', ')})`,
      candidates: names };
  }
  // Spelling slips.
  const c = n.replace(/ /g, '');
  if (c.length >= 8) {
    const dist = new Map<Ability, number>();
    for (const v of VARIANTS) {
      const d = damerau(c, v.words.join(''), 5);
      const old = dist.get(v.ability);
      if (old === undefined || d < old) dist.set(v.ability, d);
    }
    const sorted = [...dist.entries()].sort((x, y) => x[1] - y[1]);
    const [best, second] = sorted;
    if (best[1] <= 2 && (second === undefined || second[1] >= best[1] + 3)) return ok(best[0], 'spelling');
  }
  return { ability: null, reason: 'unknown label: not one of the 32 BESSI abilities' };
}

/** Resolve one raw label. */
export function canonicalizeAbility(raw: string): Resolution {
  const n = normalizeLabel(raw);
  if (!n) return { ability: null, reason: 'empty label' };
  if (CJK.test(n)) return resolveChinese(n);
  return resolveEnglish(n);
}
