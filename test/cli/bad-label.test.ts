/**
 * A label axis the run does not have is a usage error: `--by aspct` exits 2 (README: usage errors
 * exit 2) and names the axes the run has, before anything is read or written.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { main } from '../../src/cli/main.js';
import { writeSyntheticRun } from '../../src/report/synthetic.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'lobes-bad-label-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function cli(argv: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const wo = process.stdout.write.bind(process.stdout);
  const we = process.stderr.write.bind(process.stderr);
  (process.stdout as any).write = () => true;
  (process.stderr as any).write = (s: string) => ((err += s), true);
  try {
    return { code: await main(argv), err };
  } finally {
    (process.stdout as any).write = wo;
    (process.stderr as any).write = we;
  }
}

describe('--by with a label the run does not have', () => {
  const run = writeSyntheticRun(path.join(tmp, 'run'), { layers: 2, samplesPerGroup: 6, seed: 1 });
  for (const cmd of ['report', 'compare']) {
    it(`lobes ${cmd} --by aspct exits 2 and names the valid axes`, async () => {
      const r = await cli([cmd, run, ...(cmd === 'compare' ? [run] : []), '--by', 'aspct', '--out',
        path.join(tmp, `${cmd}.html`)]);
      expect(r.err).toContain('has no label axis "aspct" (axes: aspect) (did you mean --by aspect?)');
      expect(existsSync(path.join(tmp, `${cmd}.html`))).toBe(false);
      expect(r.code).toBe(2);
    });
  }
});
