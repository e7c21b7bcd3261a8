/**
 * The 32 BESSI abilities (Soto et al., 2022) grouped into the five aspects used by
 * SocialEval (Zhou et al., 2025): the three compound skills of BESSI (Adaptability,
 * Capacity for Independence, Self-Reflection Skill) count under Self-Management,
 * which gives it 12 abilities and each other aspect 5.
 */
export const ASPECTS = ['Self-Management', 'Social Engagement', 'Cooperation', 'Emotional Resilience',
  'Innovation'] as const;
export type Aspect = (typeof ASPECTS)[number];

export interface Ability {
  /** Canonical English name, as spelled in the BESSI. */
  name: string;
  aspect: Aspect;
  /** Chinese names that refer to this ability (used to resolve Chinese labels). */
  zh: string[];
}

export const ABILITIES: readonly Ability[] = [
  { name: 'Task Management', aspect: 'Self-Management', zh: ['任务管理'] },
  { name: 'Time Management', aspect: 'Self-Management', zh: ['时间管理'] },
  { name: 'Detail Management', aspect: 'Self-Management', zh: ['细节管理'] },
  { name: 'Organizational Skill', aspect: 'Self-Management', zh: ['组织能力', '组织技能', '组织管理'] },
  { name: 'Responsibility Management', aspect: 'Self-Management', zh: ['责任管理', '责任心管理'] },
  { name: 'Capacity for Consistency', aspect: 'Self-Management', zh: ['一致性能力', '坚持能力', '一致性', '始终如一'] },
  { name: 'Goal Regulation', aspect: 'Self-Management', zh: ['目标调节', '目标管理'] },
  { name: 'Rule-following Skill', aspect: 'Self-Management',
    zh: ['遵守规则能力', '规则遵守能力', '遵守规则', '规则遵循'] },
  { name: 'Decision-Making Skill', aspect: 'Self-Management', zh: ['决策能力', '决策技能', '决策'] },
  { name: 'Adaptability', aspect: 'Self-Management', zh: ['适应能力', '适应性'] },
  { name: 'Capacity for Independence', aspect: 'Self-Management', zh: ['独立能力', '独立性'] },
  { name: 'Self-Reflection Skill', aspect: 'Self-Management', zh: ['自我反思能力', '自我反思'] },
  { name: 'Leadership Skill', aspect: 'Social Engagement', zh: ['领导能力', '领导力'] },
  { name: 'Persuasive Skill', aspect: 'Social Engagement', zh: ['说服能力', '说服力'] },
  { name: 'Conversational Skill', aspect: 'Social Engagement', zh: ['交谈能力', '对话能力', '会话能力'] },
  { name: 'Expressive Skill', aspect: 'Social Engagement', zh: ['表达能力', '表达力'] },
  { name: 'Energy Regulation', aspect: 'Social Engagement', zh: ['精力调节', '能量调节', '精力管理'] },
  { name: 'Teamwork Skill', aspect: 'Cooperation', zh: ['团队合作能力', '团队协作能力', '团队合作', '团队协作'] },
  { name: 'Capacity for Trust', aspect: 'Cooperation', zh: ['信任能力', '信任他人的能力'] },
  { name: 'Perspective-Taking Skill', aspect: 'Cooperation',
    zh: ['换位思考能力', '观点采择能力', '换位思考', '观点采择'] },
  { name: 'Capacity for Social Warmth', aspect: 'Cooperation', zh: ['社交温暖能力', '社交温暖', '社会温暖'] },
  { name: 'Ethical Competence', aspect: 'Cooperation', zh: ['道德能力', '伦理能力', '道德素养'] },
  { name: 'Stress Regulation', aspect: 'Emotional Resilience', zh: ['压力调节', '压力管理'] },
  { name: 'Capacity for Optimism', aspect: 'Emotional Resilience', zh: ['乐观能力', '乐观'] },
  { name: 'Anger Management', aspect: 'Emotional Resilience', zh: ['愤怒管理', '愤怒控制'] },
  { name: 'Confidence Regulation', aspect: 'Emotional Resilience', zh: ['自信调节', '自信心调节', '信心调节'] },
  { name: 'Impulse Regulation', aspect: 'Emotional Resilience', zh: ['冲动调节', '冲动控制'] },
  { name: 'Abstract Thinking Skill', aspect: 'Innovation', zh: ['抽象思维能力', '抽象思考能力', '抽象思维'] },
  { name: 'Creative Skill', aspect: 'Innovation', zh: ['创造能力', '创造力', '创新能力'] },
  { name: 'Artistic Skill', aspect: 'Innovation', zh: ['艺术能力', '艺术技能'] },
  { name: 'Cultural Competence', aspect: 'Innovation', zh: ['文化能力', '跨文化能力'] },
  { name: 'Information Processing Skill', aspect: 'Innovation', zh: ['信息处理能力', '信息处理'] },
];

const BY_NAME = new Map(ABILITIES.map((a) => [a.name, a]));

export function aspectOf(ability: string): Aspect {
  const a = BY_NAME.get(ability);
  if (!a) throw new Error(`not a BESSI ability: ${ability}`);
  return a.aspect;
}
