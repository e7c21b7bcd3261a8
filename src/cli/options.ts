/**
 * The option vocabulary of the lobes command line: every flag that more than one command
 * takes is defined here once, with one meaning and one help line (docs/cli.md is the table).
 *
 *   --model M          the model (ONNX folder or GGUF file); MODEL as the first argument is a shorthand
 *   --device D         cpu, cuda or webgpu; --device-id N picks the GPU
 *   --force            replace the output of an earlier run of the same command
 *   --max-tokens N     keep the last N tokens of each text
 *   --chat-template M  auto, on or off (alone: on)
 *   --limit N          a seeded sample of N items, stratified by --by, the same in extract, eval and attend
 *   --layers L         a layer selection: all, last:N or 0,3,10-19
 *   --quiet            no progress output (warnings still print); --json the result on stdout
 */
import { UsageError } from '../util/errors.js';
import { intOption, type Options } from './args.js';

export const DEVICES = ['cpu', 'cuda', 'webgpu'] as const;
export type DeviceName = (typeof DEVICES)[number];
export const CHAT_TEMPLATE_MODES = ['auto', 'on', 'off'] as const;
export type ChatTemplateMode = (typeof CHAT_TEMPLATE_MODES)[number];

export const MODEL_OPTIONS = { model: { type: 'string' }, cache: { type: 'string' } } as const satisfies Options;
export const DEVICE_OPTIONS = { device: { type: 'string', choices: DEVICES },
  'device-id': { type: 'string' } } as const satisfies Options;
export const QUIET_OPTION = { quiet: { type: 'boolean', short: 'q' } } as const satisfies Options;
export const JSON_OPTION = { json: { type: 'boolean' } } as const satisfies Options;
export const OUTPUT_OPTIONS = { ...QUIET_OPTION, ...JSON_OPTION } as const satisfies Options;
export const FORCE_OPTION = { force: { type: 'boolean' } } as const satisfies Options;
export const CHAT_TEMPLATE_OPTION = {
  'chat-template': { type: 'string', choices: CHAT_TEMPLATE_MODES, bare: 'on' },
} as const satisfies Options;
export const MAX_TOKENS_OPTION = { 'max-tokens': { type: 'string' } } as const satisfies Options;
export const LIMIT_OPTIONS = { limit: { type: 'string' }, by: { type: 'string' },
  seed: { type: 'string' } } as const satisfies Options;
export const LAYERS_OPTION = { layers: { type: 'string' } } as const satisfies Options;

/** What --quiet means wherever it means the shared thing. */
export const QUIET_TEXT = 'no progress output (warnings still print)';

/**
 * One help line, `  FLAG` and then `text` from `column` (0-based; HELP's lines use 23, and a
 * command whose own lines start elsewhere passes its column, so its help stays aligned).
 */
export function helpLine(flag: string, text: string, column = 23): string {
  return `  ${flag}`.padEnd(column) + text;
}

/** Help lines of the shared options (description column 24, as every command's help). */
export const HELP = {
  model: `  --model M            the model: an ONNX model folder (model.onnx and tokenizer files), a llama
                       GGUF file, or a Hugging Face checkpoint folder (config.json, safetensors,
                       tokenizer.json); the last two are converted once into the cache (lobes
                       convert --help); MODEL as the first argument is the same`,
  cache: `  --cache DIR          where converted GGUF and checkpoint models are kept (default $LOBES_CACHE/gguf or
                       ~/.cache/lobes/gguf)`,
  device: `  --device D           ${DEVICES.join(', ')} (default cpu); --device-id N picks the GPU`,
  maxTokens: `  --max-tokens N       keep the last N tokens of each text (the first ones are cut)`,
  chatTemplate: (
    def: ChatTemplateMode,
  ) => `  --chat-template M    auto (the tokenizer's chat template when it has one), on or off; alone: on
                       (default ${def})`,
  limit: `  --limit N            a seeded sample of N items, stratified by --by (the same items in extract,
                       eval and attend for the same data, --by and --seed)
  --by LABELS          label axes the sample is stratified by, comma-separated (default
                       language,aspect where the data has them, else its first axis)`,
  seed: (what: string) => `  --seed N             seed of ${what} (default 0)`,
  layers: `  --layers L           decoder layers: all, last:N or a list like 0,3,10-19 (0-based; recorded
                       sorted without repeats; a layer the model lacks is refused)`,
  force: `  --force              replace an earlier result of this command at --out`,
  quiet: helpLine('--quiet', QUIET_TEXT),
  json: `  --json               print the result as JSON on stdout`,
};

/**
 * The model of a command: --model M, or the first positional argument. Both given and
 * different, or neither when required, is a usage error. Returns the remaining positionals.
 */
export function modelArg(p: { values: { model?: string }; positionals: string[] },
  usage: string): { model: string; rest: string[] }
{
  const flag = p.values.model;
  const [first, ...rest] = p.positionals;
  if (flag !== undefined) {
    if (first !== undefined && first !== flag)
      throw new UsageError(
        `the model is given twice (${JSON.stringify(first)} and --model ${JSON.stringify(flag)}); give one`,
      );
    return { model: flag, rest };
  }
  if (first === undefined)
    throw new UsageError('no model given: --model M (an ONNX folder, a GGUF file or a Hugging Face checkpoint folder)',
      `usage: ${usage.split('\n')[0]}`);
  return { model: first, rest };
}

/** --device and --device-id. */
export function deviceOf(v: Record<string, any>): { device: DeviceName; deviceId: number | undefined } {
  return { device: (v.device ?? 'cpu') as DeviceName,
    deviceId: v['device-id'] !== undefined ? intOption(v['device-id'], '--device-id', 0, 0) : undefined };
}

/** --limit, --by and --seed: null limit when --limit is not given (--by then needs it). */
export function limitOf(v: Record<string, any>,
  byNeedsLimit = true): { limit: number | null; by: string[] | undefined; seed: number }
{
  const limit = v.limit !== undefined ? intOption(v.limit, '--limit', 0, 1) : null;
  const by = v.by !== undefined ? String(v.by).split(',').map((s) => s.trim()).filter(Boolean) : undefined;
  if (by !== undefined && by.length === 0) throw new UsageError('--by needs at least one label axis');
  if (byNeedsLimit && by !== undefined && limit === null)
    throw new UsageError('--by stratifies the --limit sample; give --limit N with it');
  return { limit, by, seed: intOption(v.seed, '--seed', 0, 0, 2 ** 32 - 1) };
}

/** --max-tokens N: keep the last N tokens (null: not given). */
export function maxTokensOf(v: Record<string, any>): number | null {
  return v['max-tokens'] !== undefined ? intOption(v['max-tokens'], '--max-tokens', 0, 1) : null;
}

/**
 * --chat-template for commands that wrap a text as a user turn: on, off, or auto (on when
 * the model's tokenizer has a chat template).
 */
export async function chatTemplateOn(mode: ChatTemplateMode, modelDir: string): Promise<boolean> {
  if (mode !== 'auto') return mode === 'on';
  const { openHfTokenizer } = await import('../runtime/tokenize.js');
  return (await openHfTokenizer(modelDir)).hasTemplate;
}
