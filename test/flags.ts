import { spellOption } from '../src/cli/args.js';
import { optionText, type LobesError } from '../src/util/errors.js';

/** A library error's message as the CLI prints it: its options (opt()) spelled as flags. */
export function asCli(e: LobesError): string {
  return e.marked ? optionText(e.marked.message, spellOption) : e.message;
}

/** A library error's hint as the CLI prints it. */
export function hintAsCli(e: LobesError): string | undefined {
  return e.marked?.hint !== undefined ? optionText(e.marked.hint, spellOption) : e.hint;
}
