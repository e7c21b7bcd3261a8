import { describe, expect, it } from 'vitest';
import { ABILITIES, ASPECTS } from '../../src/data/bessi.js';
import { canonicalizeAbility, normalizeLabel } from '../../src/data/labels.js';

const SM = 'Self-Management';
const SE = 'Social Engagement';
const CO = 'Cooperation';
const ER = 'Emotional Resilience';
const IN = 'Innovation';

/**
 * The 32 BESSI abilities (Soto et al., 2022) in SocialEval's five aspects (Zhou et al., 2025),
 * written out by hand: the nine Self-Management skills of BESSI plus its three compound skills
 * (Adaptability, Capacity for Independence, Self-Reflection Skill) make 12; each other aspect has 5.
 */
const CANONICAL: [string, string][] = [
  ['Task Management', SM],
  ['Time Management', SM],
  ['Detail Management', SM],
  ['Organizational Skill', SM],
  ['Responsibility Management', SM],
  ['Capacity for Consistency', SM],
  ['Goal Regulation', SM],
  ['Rule-following Skill', SM],
  ['Decision-Making Skill', SM],
  ['Adaptability', SM],
  ['Capacity for Independence', SM],
  ['Self-Reflection Skill', SM],
  ['Leadership Skill', SE],
  ['Persuasive Skill', SE],
  ['Conversational Skill', SE],
  ['Expressive Skill', SE],
  ['Energy Regulation', SE],
  ['Teamwork Skill', CO],
  ['Capacity for Trust', CO],
  ['Perspective-Taking Skill', CO],
  ['Capacity for Social Warmth', CO],
  ['Ethical Competence', CO],
  ['Stress Regulation', ER],
  ['Capacity for Optimism', ER],
  ['Anger Management', ER],
  ['Confidence Regulation', ER],
  ['Impulse Regulation', ER],
  ['Abstract Thinking Skill', IN],
  ['Creative Skill', IN],
  ['Artistic Skill', IN],
  ['Cultural Competence', IN],
  ['Information Processing Skill', IN],
];

/**
 * Messy ability labels exactly as they occur in the published SocialEval world trees
 * (../shared/socialeval/worldtree_data: control characters, stray spaces and hyphens,
 * truncations, spelling slips, paraphrases), each mapped by hand to its ability and aspect.
 */
const MESSY: [string, string, string][] = [
  ['decision\u0002making skill', 'Decision-Making Skill', SM],
  [' Decision- Making skill', 'Decision-Making Skill', SM],
  ['Decision - Making skill\r', 'Decision-Making Skill', SM],
  ['DecisionMaking skill', 'Decision-Making Skill', SM],
  ['Decision-Making-skill ', 'Decision-Making Skill', SM],
  ['Time \rManagement\r', 'Time Management', SM],
  ['time mangement', 'Time Management', SM],
  ['Task Managementl', 'Task Management', SM],
  ['Detail', 'Detail Management', SM],
  ['detail mangement', 'Detail Management', SM],
  ['Organization Skill', 'Organizational Skill', SM],
  ['responsibility ', 'Responsibility Management', SM],
  ['responsibility management。                    ', 'Responsibility Management', SM],
  ['responsibility regulation', 'Responsibility Management', SM],
  ['consistency ', 'Capacity for Consistency', SM],
  ['goal regulationl', 'Goal Regulation', SM],
  ['rule - following skill', 'Rule-following Skill', SM],
  [' Rule-following  Skill ', 'Rule-following Skill', SM],
  ['Adaptablity', 'Adaptability', SM],
  ['Adaptive Skill', 'Adaptability', SM],
  ['Capacity for \rIndependence', 'Capacity for Independence', SM],
  ['capacity for self-reliance', 'Capacity for Independence', SM],
  ['Self-Reflection Skil', 'Self-Reflection Skill', SM],
  ['self- reflection skill', 'Self-Reflection Skill', SM],
  [' leadership skill', 'Leadership Skill', SE],
  ['Persuasive Skil  ', 'Persuasive Skill', SE],
  ['persuasive skill。                                        ', 'Persuasive Skill', SE],
  ['IConversational Skill', 'Conversational Skill', SE],
  ['conversationl skill', 'Conversational Skill', SE],
  [' conversation skill', 'Conversational Skill', SE],
  ['expressive skill\r', 'Expressive Skill', SE],
  ['Energy ', 'Energy Regulation', SE],
  ['Teamwork Skil', 'Teamwork Skill', CO],
  ['Capacity for \rTrust', 'Capacity for Trust', CO],
  ['perspective\taking skill', 'Perspective-Taking Skill', CO],
  ['Perspective-Talking Skill', 'Perspective-Taking Skill', CO],
  ['perspective-', 'Perspective-Taking Skill', CO],
  ['capacity for social warm', 'Capacity for Social Warmth', CO],
  ['Ehtical Competence', 'Ethical Competence', CO],
  ['ethical competence。                                 ', 'Ethical Competence', CO],
  ['Stess Regulation', 'Stress Regulation', ER],
  ['Capacity for Stress Regulation', 'Stress Regulation', ER],
  ['Capacity for  Optimism', 'Capacity for Optimism', ER],
  ['Anger Managemen', 'Anger Management', ER],
  ['Confidence ', 'Confidence Regulation', ER],
  ['Intentionally resisting impulses', 'Impulse Regulation', ER],
  [' Engaging with abstract ideas', 'Abstract Thinking Skill', IN],
  ['abstract thinking', 'Abstract Thinking Skill', IN],
  ['Informationn Processing Skill', 'Information Processing Skill', IN],
  [' Information Process Skill', 'Information Processing Skill', IN],
  ['Information ', 'Information Processing Skill', IN],
];

/** Chinese ability names as the Chinese trees' questions write them, translated by hand. */
const CHINESE: [string, string, string][] = [
  ['团队合作能力', 'Teamwork Skill', CO],
  ['换位思考能力', 'Perspective-Taking Skill', CO],
  ['社交温暖', 'Capacity for Social Warmth', CO],
  ['道德能力', 'Ethical Competence', CO],
  ['时间管理', 'Time Management', SM],
  ['细节管理', 'Detail Management', SM],
  ['决策能力', 'Decision-Making Skill', SM],
  ['适应能力', 'Adaptability', SM],
  ['遵守规则', 'Rule-following Skill', SM],
  ['领导力', 'Leadership Skill', SE],
  ['说服能力', 'Persuasive Skill', SE],
  ['压力调节', 'Stress Regulation', ER],
  ['信息处理能力', 'Information Processing Skill', IN],
];

/** Labels in the trees that name no single ability, refused by hand. */
const NOT_AN_ABILITY = ['', '(0,1,0)', 'capacity for', 'Capacity for ', 'anger regulation', 'Communicational Skill',
  'Making people feel'];

describe('BESSI abilities', () => {
  it('are the 32 abilities in their five aspects (12 + 5 + 5 + 5 + 5)', () => {
    expect([...ASPECTS]).toEqual([SM, SE, CO, ER, IN]);
    expect(ABILITIES.map((a) => [a.name, a.aspect]).sort()).toEqual(CANONICAL.slice().sort());
  });

  it('every canonical name, upper/lower case and hyphen variant resolves to itself and its aspect', () => {
    for (const [name, aspect] of CANONICAL) {
      for (const v of [name, name.toUpperCase(), name.toLowerCase(), ` ${name}\t `, name.replace(/-/g, ' '),
        name.replace(/ /g, '-'), name + '。'])
      {
        const r = canonicalizeAbility(v);
        expect(r.ability, v).toBe(name);
        if (r.ability) expect(r.aspect, v).toBe(aspect);
      }
    }
  });

  it('Chinese names are unambiguous across abilities', () => {
    const seen = new Map<string, string>();
    for (const a of ABILITIES)
      for (const z of a.zh) {
        expect(seen.get(z), z).toBeUndefined();
        seen.set(z, a.name);
      }
  });
});

describe('real messy labels from the SocialEval trees, mapped by hand', () => {
  it('each resolves to its ability and aspect', () => {
    expect(MESSY.length).toBeGreaterThanOrEqual(45);
    for (const [raw, ability, aspect] of MESSY) {
      const r = canonicalizeAbility(raw);
      expect(r.ability, JSON.stringify(raw)).toBe(ability);
      if (r.ability) expect(r.aspect, JSON.stringify(raw)).toBe(aspect);
    }
  });

  it('Chinese names resolve to their ability and aspect, with or without 能力', () => {
    for (const [raw, ability, aspect] of CHINESE) {
      for (const v of [raw, raw.replace(/能力$/, ''), `${raw}。`]) {
        const r = canonicalizeAbility(v);
        expect(r.ability, v).toBe(ability);
        if (r.ability) expect(r.aspect, v).toBe(aspect);
      }
    }
  });

  it('labels that name no single ability are refused with a reason', () => {
    for (const raw of NOT_AN_ABILITY) {
      const r = canonicalizeAbility(raw);
      expect(r.ability, JSON.stringify(raw)).toBeNull();
      if (r.ability === null) expect(r.reason.length, JSON.stringify(raw)).toBeGreaterThan(5);
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
    expect(canonicalizeAbility('Information Process Skill')).toMatchObject({ ability: 'Information Processing Skill',
      rule: 'prefix' });
    expect(canonicalizeAbility('perspective-')).toMatchObject({ ability: 'Perspective-Taking Skill', rule: 'prefix' });
    expect(canonicalizeAbility('conversation skill').ability).toBe('Conversational Skill');
    expect(canonicalizeAbility('consistency').ability).toBe('Capacity for Consistency');
    const amb = canonicalizeAbility('capacity for ');
    expect(amb.ability).toBeNull();
    if (amb.ability === null) {
      expect(amb.reason).toMatch(/ambiguous/);
      expect(new Set(amb.candidates)).toEqual(
        new Set(['Capacity for Consistency', 'Capacity for Independence', 'Capacity for Trust',
          'Capacity for Social Warmth', 'Capacity for Optimism']),
      );
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
    const amb = canonicalizeAbility('Anger Regulation');
    expect(amb.ability).toBeNull();
    if (amb.ability === null) expect(amb.reason).toMatch(/Anger Management.*Impulse Regulation/);
    const comm = canonicalizeAbility('communicational skill');
    expect(comm.ability).toBeNull();
    if (comm.ability === null) expect(comm.reason).toMatch(/Conversational Skill.*Expressive Skill/);
    for (const bad of ['(0,1,0)', 'Making people feel', 'kindness', '', '   ', '未知能力', '能力'])
      expect(canonicalizeAbility(bad).ability, bad).toBeNull();
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
