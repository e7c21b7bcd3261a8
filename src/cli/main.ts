/**
 * The lobes command line. Each command lives in its own module under src/cli/ and is
 * loaded only when used, so `lobes data inspect` never loads ONNX Runtime.
 * The analyses' commands come from the analysis registry (src/analysis/registry.ts).
 * Every command module exports `run(argv: string[]): Promise<number>` (the exit code).
 * A failure prints one line on stderr; with --json it is also one JSON object on stdout,
 * `{"error":{"code","message","option","file","where","hint","exitCode"}}` (code: docs/api.md, "Error codes").
 * An error about a library option (its `option` key) is printed with the command's flag for
 * it (spellOption: the flag definitions' keys), as the command line names it.
 */
import { isLobesError, optionText, systemError } from '../util/errors.js';
import { releaseCommandFlags, spellOption } from './args.js';
import { LOBES_VERSION } from '../version.js';
import { nearest } from '../util/suggest.js';
import { interruptedExitCode, releaseInterrupts } from './interrupt.js';
import { ANALYSES } from '../analysis/registry.js';

type Command = { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> };

/** The commands: the run's own, every registered analysis (src/analysis/registry.ts, in its order), then the pages and tools. */
const COMMANDS: Record<string, Command> = {
  inspect: { summary: 'architecture and capture points of an ONNX model folder', load: () => import('./inspect.js') },
  data: { summary: 'inspect or export a dataset (data inspect SPEC | data export SPEC)',
    load: () => import('./data.js') },
  extract: { summary: 'run a model over a dataset and store last-token activations',
    load: () => import('./extract.js') },
  merge: { summary: 'merge shard runs into one run, proving they cover every sample once',
    load: () => import('./merge.js') },
  ...Object.fromEntries(ANALYSES.map((a): [string, Command] => [a.id, { summary: a.summary, load: a.cli }])),
  report: { summary: 'self-contained HTML report of a run', load: () => import('./report.js') },
  compare: { summary: 'side-by-side report of two runs (e.g. 8B vs 70B)', load: () => import('./compare.js') },
  convert: { summary: 'convert a llama GGUF (llama.cpp, Ollama) into an ONNX model folder',
    load: () => import('./convert.js') },
  demo: { summary: 'the whole pipeline on the built-in tiny model and dataset', load: () => import('./demo.js') },
  doctor: { summary: 'which execution providers load here, what they miss, and the fix',
    load: () => import('./doctor.js') },
};

function usage(): string {
  const w = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  return [
    `lobes ${LOBES_VERSION}: look inside local Llama-class language models`,
    '',
    'usage: lobes COMMAND [options]     (lobes COMMAND --help for details)',
    '',
    ...Object.entries(COMMANDS).map(([k, v]) => `  ${k.padEnd(w)}  ${v.summary}`),
    '',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(usage());
    return cmd ? 0 : 2;
  }
  if (cmd === '--version' || cmd === '-V') {
    process.stdout.write(LOBES_VERSION + '\n');
    return 0;
  }
  const entry = COMMANDS[cmd];
  if (!entry) {
    const near = nearest(cmd, Object.keys(COMMANDS));
    process.stderr.write(
      `lobes: unknown command ${JSON.stringify(cmd)} (${near ? `did you mean lobes ${near}? ` : ''}run lobes --help)\n`,
    );
    return 2;
  }
  try {
    const mod = await entry.load();
    return await mod.run(rest);
  } catch (caught) {
    // Operating-system failures (a full disk, a folder where a file belongs, a missing
    // permission) are the user's to fix: the same one-line form as every other error.
    const e = systemError(caught) ?? caught;
    if (isLobesError(e)) {
      // a job stopped by Ctrl-C exits as a process ended by that signal would (130, 143 for SIGTERM)
      const exitCode = e.code === 'E_ABORTED' ? interruptedExitCode(e.exitCode) : e.exitCode;
      // the options the message names, spelled as this command's flags
      const message = e.marked ? optionText(e.marked.message, spellOption) : e.message;
      const hint = e.marked?.hint !== undefined ? optionText(e.marked.hint, spellOption) : e.hint;
      // a message that already names the command ("lobes extract was cancelled …") is not prefixed again
      process.stderr.write(message.startsWith(`lobes ${cmd} `) ? `${message}\n` : `lobes ${cmd}: ${message}\n`);
      if (wantsJson(rest))
        process.stdout.write(
          JSON.stringify({
            error: { code: e.code, message, option: e.option !== undefined ? spellOption(e.option) : null,
              file: e.file ?? null, where: e.where ?? null, hint: hint ?? null, exitCode },
          }) + '\n',
        );
      if (process.env.LOBES_DEBUG && e.stack) process.stderr.write(e.stack + '\n');
      return exitCode;
    }
    const err = e as Error;
    process.stderr.write(
      `lobes ${cmd}: internal error: ${
        String(err?.message ?? err).split('\n')[0]
      } (set LOBES_DEBUG=1 for the stack trace)\n`,
    );
    if (wantsJson(rest))
      process.stdout.write(
        JSON.stringify({
          error: { code: 'E_INTERNAL', message: `internal error: ${String(err?.message ?? err).split('\n')[0]}`,
            option: null, file: null, where: null, hint: 'set LOBES_DEBUG=1 for the stack trace', exitCode: 70 },
        }) + '\n',
      );
    if (process.env.LOBES_DEBUG && err?.stack) process.stderr.write(err.stack + '\n');
    return 70;
  } finally {
    // the command's Ctrl-C handlers and flags end with it (src/cli/interrupt.ts, args.ts)
    releaseInterrupts();
    releaseCommandFlags();
  }
}

/** Whether the command's arguments ask for JSON output (--json before any `--`). */
function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}
