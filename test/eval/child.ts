/** Child process for crash tests: runs one evaluation. argv[2] = JSON options of runEval. */
import { runEval } from '../../src/eval/run.js';

const o = JSON.parse(process.argv[2]!);
runEval({ ...o, quiet: true }).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(String(e?.message ?? e) + '\n');
    process.exit(1);
  },
);
