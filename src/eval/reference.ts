/**
 * Published SocialEval results to show beside lobes' numbers, clearly as references: they
 * come from the paper (Zhou et al., ACL 2025, §3 and App. C.1), where API-served models answered
 * with chain-of-thought and their JSON answers were parsed, options shuffled 3 times and voted.
 * lobes scores a local model's next-token letter logits without reasoning by default, so the
 * rows are a frame of reference, not a like-for-like comparison. Types only (no Node imports):
 * the report's page script shows them.
 */
export interface PaperReference {
  model: string;
  task: 'iae' | 'gae';
  /** Percent, per language: IAE the item-weighted accuracy (every item once), GAE the overall success rate (every tree once). Compared with the run's per-language row of the same statistic. */
  zh: number;
  en: number;
  setting: string;
}

export const PAPER_SOURCE = 'SocialEval (Zhou et al., ACL 2025), as reported in the paper';
export const PAPER_SETTING = 'API-served model, chain-of-thought, JSON answer parsed; 3 shuffles, majority vote';

export const PAPER_REFERENCE: readonly PaperReference[] = [
  { model: 'Llama-3.1-8B-Instruct', task: 'iae', zh: 60.78, en: 56.79, setting: PAPER_SETTING },
  { model: 'Llama-3.1-70B-Instruct', task: 'iae', zh: 71.15, en: 67.04, setting: PAPER_SETTING },
  { model: 'Llama-3.1-8B-Instruct', task: 'gae', zh: 31.81, en: 28.2, setting: PAPER_SETTING },
  { model: 'Llama-3.1-70B-Instruct', task: 'gae', zh: 36.94, en: 34.15, setting: PAPER_SETTING },
];
