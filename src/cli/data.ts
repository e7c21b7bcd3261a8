import { parseCommand } from './args.js';
import { nearest } from '../util/suggest.js';
import { LobesErrors, UsageError } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/io.js';
import { checkOwnedOutputFile, fileHead } from '../util/output.js';
import { Progress } from '../util/progress.js';
import { loadDataset } from '../data/index.js';
import { summarize, formatSummary, reasonKey, type TokenLengths } from '../data/inspect.js';
import type { Dataset } from '../data/types.js';
import { OUTPUT_OPTIONS, QUIET_OPTION } from './options.js';
import { stderrIO } from '../util/jobio.js';

const inspectSpec = {
  usage: 'lobes data inspect SPEC [--json] [--verbose] [--tokenizer MODEL_DIR] [--skip-invalid] [--quiet]',
  help: `
Load a dataset and print what it holds: the number of samples, counts per label axis and
value (split by language when the dataset has a language axis), the excluded items counted
by reason (--verbose lists each) and, with --tokenizer, the distribution of token lengths.

  SPEC                 builtin:social (default set), socialeval:DIR[?lang=en|zh&orientation=self|altruism
                       &aspect=A&composite=include&text=question+response|response|question
                       &scenario=1&speaker=1&template=T], jsonl:FILE (a lobes export),
                       jsonl:FILE?text=F&label=F[,F...][&id=F], csv:FILE?... (see docs/datasets.md)
  --json               print one JSON object instead of tables (every excluded item included)
  --verbose            list every excluded item with its reason
  --tokenizer DIR      model folder whose tokenizer measures the texts (no chat template, no truncation)
  --skip-invalid       leave invalid items out (and list them) instead of failing
  --quiet              no progress output while tokenizing (warnings still print)
`,
  options: {
    ...OUTPUT_OPTIONS,
    verbose: { type: 'boolean' as const, short: 'v' },
    tokenizer: { type: 'string' as const },
    'skip-invalid': { type: 'boolean' as const },
  },
  positionals: [1, 1] as [number, number],
};

const exportSpec = {
  usage: 'lobes data export SPEC [--out FILE.jsonl] [--skip-invalid] [--quiet]',
  help: `
Write the dataset's samples, one JSON object per line ({id, text, labels, provenance, extras}),
to FILE (written atomically) or to standard output. A summary of what was excluded goes to
standard error. The file reads back as it is with the spec jsonl:FILE (every label axis,
provenance and extra kept), so an exported set can be edited and used again.

  --out FILE           output file (default: standard output)
  --skip-invalid       leave invalid items out (and list them) instead of failing
  --quiet              no summary on standard error
`,
  options: {
    out: { type: 'string' as const, short: 'o' },
    'skip-invalid': { type: 'boolean' as const },
    ...QUIET_OPTION,
  },
  positionals: [1, 1] as [number, number],
};

const USAGE = 'lobes data inspect SPEC [--json] [--tokenizer DIR] | lobes data export SPEC [--out FILE.jsonl]';

/** Load, printing every problem (not only the first) before failing. */
async function load(spec: string, skipInvalid: boolean): Promise<Dataset> {
  try {
    return await loadDataset(spec, { skipInvalid, skipFlag: '--skip-invalid' });
  } catch (e) {
    if (e instanceof LobesErrors) {
      process.stderr.write(`${e.problems.length} problem${e.problems.length === 1 ? '' : 's'} in ${spec}:\n`);
      for (const p of e.problems) process.stderr.write(`  ${p.message}\n`);
    }
    throw e;
  }
}

async function tokenLengths(ds: Dataset, modelDir: string, quiet: boolean): Promise<TokenLengths> {
  const { loadTokenizer } = await import('../runtime/tokenize.js');
  const tok = await loadTokenizer(modelDir, { maxTokens: null, chatTemplate: false });
  const lengths = new Int32Array(ds.samples.length);
  const progress = new Progress({ label: 'tokenize', total: ds.samples.length, unit: 'samples',
    io: stderrIO({ quiet }) });
  ds.samples.forEach((s, i) => {
    const t = tok.encode(s.text);
    lengths[i] = typeof t.fullLength === 'number' ? t.fullLength : t.ids.length;
    progress.tick(1, { tokens: lengths[i] });
  });
  progress.finish();
  return { source: String(tok.source ?? modelDir), lengths };
}

function excludedSummary(ds: Dataset): string {
  if (ds.excluded.length === 0) return '';
  const by = new Map<string, number>();
  for (const e of ds.excluded) {
    const k = e.reason.startsWith('invalid:') ? 'invalid input' : reasonKey(e.reason);
    by.set(k, (by.get(k) ?? 0) + 1);
  }
  const lines = [`excluded ${ds.excluded.length}:`];
  for (const [k, n] of [...by.entries()].sort((a, b) => b[1] - a[1])) lines.push(`  ${String(n).padStart(5)}  ${k}`);
  const invalid = ds.excluded.filter((e) => e.reason.startsWith('invalid:'));
  if (invalid.length) {
    lines.push(`skipped as invalid (${invalid.length}):`);
    for (const e of invalid)
      lines.push(`  ${[e.file, e.where].filter(Boolean).join(': ')}: ${e.reason.slice('invalid: '.length)}`);
  }
  return lines.join('\n') + '\n';
}

/**
 * Whether an existing file is an earlier `lobes data export` (its first line is a sample:
 * id, text and labels), or empty: only such a file is overwritten.
 */
function isExport(file: string): boolean {
  const head = fileHead(file, 1 << 22).toString('utf8');
  if (!head.length) return true;
  const nl = head.indexOf('\n');
  if (nl < 0) return false;
  try {
    const s = JSON.parse(head.slice(0, nl));
    return typeof s?.id === 'string' && typeof s.text === 'string' && typeof s.labels === 'object' &&
      s.labels !== null && !Array.isArray(s.labels);
  } catch {
    return false;
  }
}

/** Refuse an export destination that is a folder, lies among a run's files, or is a file lobes did not export. */
function checkExportFile(file: string): void {
  checkOwnedOutputFile(file, 'export file', isExport);
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h') {
    process.stdout.write(
      `usage: ${USAGE}\n\n  inspect   counts per label, exclusions, token lengths\n  export    one sample per line as JSONL\n\nlobes data inspect --help, lobes data export --help for the options.\n`,
    );
    return sub ? 0 : 2;
  }
  if (sub === 'inspect') {
    const a = parseCommand(rest, inspectSpec);
    if (!a) return 0;
    const ds = await load(a.positionals[0], !!a.values['skip-invalid']);
    const tokens = a.values.tokenizer ? await tokenLengths(ds, a.values.tokenizer, !!a.values.quiet) : undefined;
    const sum = summarize(ds, tokens);
    if (a.values.json) process.stdout.write(JSON.stringify(sum, null, 1) + '\n');
    else process.stdout.write(formatSummary(sum, { verbose: !!a.values.verbose }));
    return 0;
  }
  if (sub === 'export') {
    const a = parseCommand(rest, exportSpec);
    if (!a) return 0;
    if (a.values.out !== undefined) checkExportFile(a.values.out);
    const ds = await load(a.positionals[0], !!a.values['skip-invalid']);
    const body = ds.samples.map((s) => JSON.stringify(s)).join('\n') + '\n';
    if (a.values.out) {
      checkExportFile(a.values.out);
      writeFileAtomicSync(a.values.out, body);
    } else process.stdout.write(body);
    if (!a.values.quiet) {
      process.stderr.write(
        `${ds.spec}: ${ds.samples.length} samples${a.values.out ? ` written to ${a.values.out}` : ''}\n`,
      );
      process.stderr.write(excludedSummary(ds));
    }
    return 0;
  }
  const near = nearest(sub, ['inspect', 'export']);
  throw new UsageError(`unknown data subcommand ${JSON.stringify(sub)}`,
    `${near ? `did you mean lobes data ${near}? ` : ''}usage: ${USAGE}`);
}
