import { describe, expect, it } from 'vitest';
import { ABILITIES, ASPECTS } from '../../src/data/bessi.js';
import { canonicalizeAbility, normalizeLabel, REFUSED, SYNONYMS } from '../../src/data/labels.js';

describe('BESSI abilities', () => {
  it('has 32 abilities: 12 Self-Management and 5 in each other aspect, all names distinct', () => {
    expect(ABILITIES.length).toBe(32);
    expect(new Set(ABILITIES.map((a) => a.name)).size).toBe(32);
    const per = Object.fromEntries(ASPECTS.map((a) => [a, ABILITIES.filter((x) => x.aspect === a).length]));
    expect(per).toEqual({ 'Self-Management': 12, 'Social Engagement': 5, Cooperation: 5, 'Emotional Resilience': 5, Innovation: 5 });
  });

  it('every canonical name, Chinese name, upper/lower case and hyphen variant resolves to itself', () => {
    for (const a of ABILITIES) {
      for (const v of [a.name, a.name.toUpperCase(), a.name.toLowerCase(), ` ${a.name}\t `, a.name.replace(/-/g, ' '), a.name.replace(/ /g, '-'), a.name + '。']) {
        const r = canonicalizeAbility(v);
        expect(r.ability, v).toBe(a.name);
        if (r.ability) expect(r.aspect).toBe(a.aspect);
      }
      for (const z of a.zh) expect(canonicalizeAbility(z).ability, z).toBe(a.name);
    }
  });

  it('Chinese names are unambiguous across abilities', () => {
    const seen = new Map<string, string>();
    for (const a of ABILITIES) for (const z of a.zh) {
      expect(seen.get(z), z).toBeUndefined();
      seen.set(z, a.name);
    }
  });
});

describe('label repair', () => {
  it('normalizes control characters, spaced hyphens, case and trailing punctuation', () => {
    expect(normalizeLabel('decision\u0002making skill')).toBe('decision making skill');
    expect(normalizeLabel('Capacity for \rIndependence')).toBe('capacity for independence');
    expect(normalizeLabel('Perspective- Taking Skill')).toBe('perspective taking skill');
    expect(normalizeLabel('responsibility management。                    ')).toBe('responsibility management');
    expect(canonicalizeAbility('decision\u0002making skill').ability).toBe('Decision-Making Skill');
    expect(canonicalizeAbility('Capacity for \rIndependence').ability).toBe('Capacity for Independence');
    expect(canonicalizeAbility('Perspective- Taking Skill').ability).toBe('Perspective-Taking Skill');
    expect(canonicalizeAbility('Decision - Making skill').ability).toBe('Decision-Making Skill');
    expect(canonicalizeAbility('DecisionMaking skill').ability).toBe('Decision-Making Skill');
    expect(canonicalizeAbility('Time \rManagement').ability).toBe('Time Management');
  });

  it('accepts a unique word-wise prefix and refuses "capacity for" with its candidates', () => {
    expect(canonicalizeAbility('Information Process Skill')).toMatchObject({ ability: 'Information Processing Skill', rule: 'prefix' });
    expect(canonicalizeAbility('perspective-')).toMatchObject({ ability: 'Perspective-Taking Skill', rule: 'prefix' });
    expect(canonicalizeAbility('conversation skill').ability).toBe('Conversational Skill');
    expect(canonicalizeAbility('consistency').ability).toBe('Capacity for Consistency');
    const amb = canonicalizeAbility('capacity for ');
    expect(amb.ability).toBeNull();
    if (amb.ability === null) {
      expect(amb.reason).toMatch(/ambiguous/);
      expect(new Set(amb.candidates)).toEqual(new Set(['Capacity for Consistency', 'Capacity for Independence', 'Capacity for Trust', 'Capacity for Social Warmth', 'Capacity for Optimism']));
    }
    // Too short to mean anything.
    expect(canonicalizeAbility('co').ability).toBeNull();
    // "regulation" alone begins nothing (it is the second word), "management" likewise.
    expect(canonicalizeAbility('regulation').ability).toBeNull();
  });

  it('fixes small spelling slips only when one ability is clearly nearest', () => {
    expect(canonicalizeAbility('task mangement')).toMatchObject({ ability: 'Task Management', rule: 'spelling' });
    expect(canonicalizeAbility('Stess Regulation')).toMatchObject({ ability: 'Stress Regulation', rule: 'spelling' });
    expect(canonicalizeAbility('IConversational Skill').ability).toBe('Conversational Skill');
    // Near two names at once: refused. "tsk management" is 1 edit from Task Management but
    // only 3 from Time Management, inside the required margin of 3.
    expect(canonicalizeAbility('Tsk Management').ability).toBeNull();
    expect(canonicalizeAbility('Anger Managment').ability).toBe('Anger Management');
  });

  it('refuses labels that are not BESSI names, with a reason', () => {
    for (const k of Object.keys(REFUSED)) {
      const r = canonicalizeAbility(k);
      expect(r.ability).toBeNull();
      if (r.ability === null) expect(r.reason).toBe(REFUSED[k]);
    }
    for (const bad of ['(0,1,0)', 'Making people feel', 'kindness', '', '   ', '未知能力', '能力']) expect(canonicalizeAbility(bad).ability, bad).toBeNull();
    for (const [k, v] of Object.entries(SYNONYMS)) expect(canonicalizeAbility(k).ability).toBe(v);
  });

  it('resolves Chinese labels with or without the 能力 suffix', () => {
    expect(canonicalizeAbility('团队合作').ability).toBe('Teamwork Skill');
    expect(canonicalizeAbility('换位思考 能力').ability).toBe('Perspective-Taking Skill');
    expect(canonicalizeAbility('决策能力。').ability).toBe('Decision-Making Skill');
    expect(canonicalizeAbility('领导力').ability).toBe('Leadership Skill');
    expect(canonicalizeAbility('抽象思维技能').ability).toBe('Abstract Thinking Skill');
    expect(canonicalizeAbility('团队合作能力(Teamwork Skill)').ability).toBe('Teamwork Skill');
  });
});
