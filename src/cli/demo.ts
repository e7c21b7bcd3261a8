import { LobesError } from '../util/errors.js';

export async function run(_argv: string[]): Promise<number> {
  throw new LobesError('the demo command is not available in this build yet');
}
