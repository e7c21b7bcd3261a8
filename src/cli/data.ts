import { LobesError } from '../util/errors.js';

export async function run(_argv: string[]): Promise<number> {
  throw new LobesError('the data command is not available in this build yet');
}
