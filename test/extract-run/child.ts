/** Child process for crash tests: runs one extraction with the fake pieces. argv[2] = JSON options. */
import { runExtract } from '../../src/extract/run.js';
import { fakeDeps } from './fake.js';

const o = JSON.parse(process.argv[2]);
runExtract({ ...o, quiet: true, deps: fakeDeps(o.n, { delayMs: o.delayMs }) }).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(String(e?.message ?? e) + '\n');
    process.exit(1);
  },
);
