/** Child process for crash tests: runs one lobes attend job. argv[2] = JSON options of runAttend. */
import { runAttend } from '../../src/attend/run.js';

const o = JSON.parse(process.argv[2]!);
runAttend({ ...o, quiet: true }).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(String(e?.message ?? e) + '\n');
    process.exit(1);
  },
);
