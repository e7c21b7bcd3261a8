#!/usr/bin/env node
import { main } from './main.js';

// A reader that stops early (`lobes data export … | head -1`) closes the pipe: that is the
// reader's choice, not a failure, so the command ends quietly with exit status 0.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`lobes: internal error: ${e?.message ?? e}\n`);
    process.exitCode = 70;
  },
);
