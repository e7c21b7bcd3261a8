/**
 * SocialEval's evaluation prompts, as published in the SocialEval repository
 * (github.com/thu-coai/SocialEval, evalprompt.py at commit 76de48b; the paper's Tables 8 and
 * 9, App. C.1). The strings below are the published Python format strings character for
 * character (`{{`/`}}` are literal braces, `{name}` a field), with one addition: ⟦PART⟧ … ⟦/⟧
 * marks which named part of the prompt a stretch of text is (see prompt.ts). Removing the
 * markers gives the published string exactly (test/eval/prompt.test.ts checks this).
 *
 * Variants:
 *   iae      Skill_Evaluation_Prompt_zhou_nocot(_en): answer only, {"choice": "A"}
 *   iae-cot  Skill_Evaluation_Prompt_zhou(_en): explanation and choice (the paper's setting)
 *   gae-cot  Ending_Evaluation_Prompt_zhou(_en): explanation and choice (the paper's setting)
 *   gae      DERIVED by lobes, not published: the GAE prompt with its output instruction
 *            edited the way the authors edited the IAE prompt for their nocot variant
 *            ("并给出解释…" → "只需给出答案，不需给出解释…", example {"choice": "A"}); used for
 *            letter scoring without generation. docs/eval.md shows the edit.
 */

export type PromptVariant = 'iae' | 'iae-cot' | 'gae' | 'gae-cot';
export type PromptLanguage = 'en' | 'zh';

const IAE_ZH_HEAD =
  '⟦instruction⟧请你扮演{character_name}，给定{character_name}的信息，其中包含了{character_name}的公开信息、隐私信息和在社交场景中要实现的社交目标，同时，给定在社交中其他角色的信息，请你基于给定的角色信息、{character_name}和其他角色的对话上下文、和提问，从给定的选项中选择一个正确的答案';
const IAE_ZH_BODY =
  '⟦/⟧\n\n[{character_name}的信息]\n⟦profile⟧公开信息：{public}\n隐私信息：{private}\n社交目标：{goal}⟦/⟧\n\n[其他角色的信息]\n⟦others⟧{user_profile}⟦/⟧\n\n[对话上下文]\n⟦context⟧{dialogue_context}⟦/⟧\n\n[提问]\n⟦question⟧{question}⟦/⟧\n\n[选项]\n{choices}\n\n⟦instruction⟧注意：请输出json格式，不要输出其他内容。⟦/⟧\n';

const IAE_EN_HEAD =
  "\n⟦instruction⟧Please act as {character_name}. You are provided with information about {character_name}, which includes {character_name}'s public information, private information, and social goals to achieve in the social scenario. Additionally, information about other roles in the social interaction is provided. Based on the given role information, the dialogue context involving {character_name} and other roles, and the question, choose the correct answer from the given options. Only provide the answer without any explanation. Output the result in JSON format. Example output: ";
const IAE_EN_BODY =
  "⟦/⟧\n\n[{character_name}'s Information]\n⟦profile⟧Public Information: {public}\nPrivate Information: {private}\nSocial Goal: {goal}⟦/⟧\n\n[Other Roles' Information]\n⟦others⟧{user_profile}⟦/⟧\n\n[Dialogue Context]\n⟦context⟧{dialogue_context}⟦/⟧\n\n[Question]\n⟦question⟧{question}⟦/⟧\n\n[Options]\n{choices}\n\n⟦instruction⟧Note: Please output in JSON format, do not output any other content.⟦/⟧\n";

const GAE_ZH_HEAD =
  '⟦instruction⟧请你扮演{character_name}，给定{character_name}的信息，其中包含了{character_name}的公开信息、隐私信息和在社交场景中要实现的社交目标，同时，给定在社交中其他角色的信息，请你基于给定{character_name}的角色信息、{character_name}的社交目标和{character_name}和其他角色的对话上下文，从给定的选项中选择一个最有可能达成目标结局的{character_name}的回复选项';
const GAE_ZH_BODY =
  '⟦/⟧\n[{character_name}的信息]\n⟦profile⟧{main_profile}⟦/⟧\n\n[其他角色的信息]\n⟦others⟧{user_profile}⟦/⟧\n\n[对话上下文]\n⟦context⟧{dialogue_context}⟦/⟧\n\n[选项]\n{choices}\n\n⟦instruction⟧注意：请输出json格式，不要输出其他内容。⟦/⟧\n';

const GAE_EN_HEAD =
  "⟦instruction⟧Please play the role of {character_name}. Given the information about {character_name}, which includes {character_name}'s public information, private information, and social goals to be achieved in a social scenario, and also given the information of other characters in the social setting, please choose the response option for {character_name} that is most likely to achieve the target outcome based on the given role information of {character_name}, {character_name}'s social goals, and the dialogue context between {character_name} and other characters. ";
const GAE_EN_BODY =
  "⟦/⟧\n[{character_name}'s Information]\n⟦profile⟧{main_profile}⟦/⟧\n\n[Other Characters' Information]\n⟦others⟧{user_profile}⟦/⟧\n\n[Dialogue Context]\n⟦context⟧{dialogue_context}⟦/⟧\n\n[Options]\n{choices}\n\n⟦instruction⟧Note: Please output in JSON format, do not output any other content.⟦/⟧\n";

/** The templates, by variant and language (Python format syntax plus part markers). */
export const SOCIALEVAL_TEMPLATES: Record<PromptVariant, Record<PromptLanguage, string>> = {
  iae: {
    zh: IAE_ZH_HEAD + ',只需给出答案，不需给出解释，输出json格式，输出示例：{{"choice": "A"}}。' + IAE_ZH_BODY,
    en: IAE_EN_HEAD + '{{"choice": "A"}}.' + IAE_EN_BODY,
  },
  'iae-cot': {
    zh: IAE_ZH_HEAD +
      '并给出解释，输出json格式，输出示例(json有两个字段，explaination和choice）：{{"explaination": "解释", "choice": "A"}}。' +
      IAE_ZH_BODY,
    en: IAE_EN_HEAD + '{{"explaination":"explaination to your answer", "choice": "A"}}.' + IAE_EN_BODY,
  },
  'gae-cot': {
    zh: GAE_ZH_HEAD + '，并给出解释，输出json格式，输出示例: {{"explaination": 解释,"choice": "A"}}。' + GAE_ZH_BODY,
    en: GAE_EN_HEAD +
      'Provide an explanation and output in JSON format. Output example: {{"explanation": "explanation", "choice": "A"}}.' +
      GAE_EN_BODY,
  },
  gae: {
    zh: GAE_ZH_HEAD + ',只需给出答案，不需给出解释，输出json格式，输出示例：{{"choice": "A"}}。' + GAE_ZH_BODY,
    en: GAE_EN_HEAD +
      'Only provide the answer without any explanation. Output the result in JSON format. Example output: {{"choice": "A"}}.' +
      GAE_EN_BODY,
  },
};

/** How the published scripts letter the options: "A. text" (run_iae.py) or "A: role: text" (run_gae.py). */
export const OPTION_SEPARATOR: Record<'iae' | 'gae', string> = { iae: '. ', gae: ': ' };

/**
 * The plain multiple-choice prompt for `jsonl:` items without --prompt: the question, the
 * lettered options, and "Answer:" (the answer prefix then adds a space before the letter).
 */
export const MCQ_DEFAULT_TEMPLATE = '⟦question⟧{question}⟦/⟧\n{choices}\n';

/** The answer prefix the letter follows, per variant family (see docs/eval.md). */
export const ANSWER_PREFIX = { socialeval: '{"choice": "', mcq: 'Answer: ' } as const;

/** A template without its part markers (the published Python format string for SocialEval's). */
export function stripMarkers(template: string): string {
  return template.replace(/⟦[^⟧]*⟧/g, '');
}
