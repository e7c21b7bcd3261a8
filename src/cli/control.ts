/**
 * `--control random [--control-seed N]` for the commands that take it (extract, eval): the model
 * folder of the random-weights control of --model, and the record the command's manifest keeps
 * (model.control). One helper, so that extract and eval of one model and seed read the same
 * control weights:
 *
 * - an ONNX folder: its control (src/runtime/control.ts), whatever its layout;
 * - a GGUF: the control of its explicit-layout conversion (an fp16 one when the conversion has
 *   4-bit weights, which the control does not redraw), as extract reads it; with `layout: 'genai'`
 *   (eval's default conversion, with a KV cache) the same weights laid out again in the genai
 *   layout (src/runtime/control-layout.ts), with the compute dtype of the trained conversion.
 */
import { UsageError } from '../util/errors.js';
import { intOption } from './args.js';
import { controlSourceFolder, modelFolder } from './convert.js';
import type { ResolvedModel } from '../convert/cache.js';
import type { ControlInfo } from '../store/types.js';
import { stderrIO } from '../util/jobio.js';

export interface ControlFlags {
  control?: string;
  'control-seed'?: string;
}

/** --control-seed as given (default 0); a seed without --control random is a usage error. */
export function controlSeedOf(v: ControlFlags): number | null {
  if (v.control === undefined) {
    if (v['control-seed'] !== undefined) throw new UsageError('--control-seed needs --control random');
    return null;
  }
  return intOption(v['control-seed'], '--control-seed', 0, 0, 2 ** 32 - 1);
}

/**
 * The control of `modelArgument` (as given on the command line) whose trained folder `resolved`
 * was resolved with `layout`; `command` names the command in the lines printed.
 */
export async function controlModel(modelArgument: string, resolved: ResolvedModel,
  opts: { seed: number; cache?: string; quiet?: boolean; layout?: 'explicit' | 'genai'; command: string }
): Promise<{ dir: string; info: ControlInfo }> {
  const { analyseModel } = await import('../runtime/engine.js');
  const { randomControlModel } = await import('../runtime/control.js');
  const say = (l: string) => void (opts.quiet ? undefined : process.stderr.write(`${opts.command}: ${l}\n`));
  const gguf = resolved.source !== null && resolved.source !== undefined;
  // A GGUF's control is drawn in the explicit layout, as extract converts it: from the fp16
  // conversion when the trained conversion holds 4-bit blocks (read from the conversion at hand,
  // whatever its layout, so that eval's genai conversion needs no explicit 4-bit one, gigabytes
  // for an 8B file, only to learn the same), else from the explicit conversion itself.
  let from = await controlSourceFolder(modelArgument, resolved, { cache: opts.cache, quiet: opts.quiet,
    command: opts.command });
  if (gguf && opts.layout === 'genai' && from === resolved.dir)
    from = (await modelFolder(modelArgument, { cache: opts.cache, quiet: opts.quiet, layout: 'explicit' })).dir;
  const { arch } = analyseModel(from).info;
  const drawn = await randomControlModel(from, arch, { seed: opts.seed, io: stderrIO({ quiet: opts.quiet }),
    ...(opts.cache ? { cacheDir: opts.cache } : {}) });
  if (!gguf || opts.layout !== 'genai') {
    say(`random-weights control of ${from} (seed ${drawn.info.seed}) at ${drawn.dir}`);
    return drawn;
  }
  const { genaiControlModel } = await import('../runtime/control-layout.js');
  let spec;
  if (resolved.source!.format === 'hf-checkpoint') {
    const { openHfCheckpoint } = await import('../convert/hf-checkpoint.js');
    spec = openHfCheckpoint(resolved.source!.path).spec;
  } else {
    const { openGgufLlama } = await import('../convert/gguf-llama.js');
    const g = openGgufLlama(resolved.source!.path);
    try {
      spec = g.spec;
    } finally {
      g.close();
    }
  }
  const dtype = resolved.source!.options?.dtype === 'fp16' ? 'fp16' : 'fp32';
  const c = await genaiControlModel(drawn, spec, { dtype, io: stderrIO({ quiet: opts.quiet }) });
  say(
    `random-weights control of ${from} (seed ${c.info.seed}), drawn at ${drawn.dir}, in the genai layout at ${c.dir}`,
  );
  return c;
}
