/**
 * Crash tests' shared piece: run a job in a child process and SIGKILL it once its chunk index
 * lists enough chunks (used by the extract and eval resume tests).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Chunks listed by the index file `indexFile` (0 while it does not exist or is being replaced). */
export function chunksListed(indexFile: string): number {
  try {
    return JSON.parse(readFileSync(indexFile, 'utf8')).chunks.length;
  } catch {
    return 0;
  }
}

/**
 * Run `node --import tsx CHILD JSON(opts)`; SIGKILL it once `indexFile` lists `after` chunks
 * (Infinity: let it finish). Resolves with whether it was killed and how many chunks were
 * listed when it ended; rejects when it fails on its own.
 */
export function runAndKill(child: string, opts: Record<string, unknown>, indexFile: string,
  after: number): Promise<{ killed: boolean; listed: number }>
{
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, JSON.stringify(opts)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    proc.stderr.on('data', (d) => (err += d));
    let killed = false;
    const timer = setInterval(() => {
      if (!killed && chunksListed(indexFile) >= after) {
        killed = true;
        proc.kill('SIGKILL');
      }
    }, 5);
    proc.on('exit', (code, signal) => {
      clearInterval(timer);
      if (signal === 'SIGKILL') resolve({ killed: true, listed: chunksListed(indexFile) });
      else if (code === 0) resolve({ killed: false, listed: chunksListed(indexFile) });
      else reject(new Error(`child exited ${code}: ${err}`));
    });
  });
}
