#!/usr/bin/env node
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`lobes: internal error: ${e?.message ?? e}\n`);
    process.exitCode = 70;
  },
);
