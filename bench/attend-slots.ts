/**
 * Where the answering position looks among the options, from a `lobes attend --eval` folder
 * alone (its items.jsonl): separates the slot an option is shown in from whether it is the
 * correct option, which matters for a model that picks one slot whatever the item says.
 *
 *  - per slot (option:A, option:B, …): the mean share of the content attention, all items;
 *  - per item, the correct option's share minus the mean share of the other options (> 0: the
 *    correct option draws more attention than a wrong one), over all items, right and wrong
 *    items, and split by whether the correct option sits in the first slot;
 *  - the same contrast for the first slot against the other slots;
 *
 * each mean with a 95% percentile-bootstrap interval over items (seeded).
 *
 *   npx tsx bench/attend-slots.ts ATTEND_DIR [--bootstrap 2000] [--seed 0]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { meanCI } from '../src/attend/stats.js';
import { Rng } from '../src/util/rng.js';
import type { AttendItem, MeanCI } from '../src/attend/types.js';

const args = process.argv.slice(2);
const dir = args.find((a) => !a.startsWith('--'));
if (!dir) {
  console.error('usage: npx tsx bench/attend-slots.ts ATTEND_DIR [--bootstrap 2000] [--seed 0]');
  process.exit(2);
}
const flag = (name: string, dflt: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const B = flag('--bootstrap', 2000);
const rng = new Rng(flag('--seed', 0));

const items: AttendItem[] = readFileSync(join(dir, 'items.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as AttendItem);
const withRoles = items.filter((it) => it.roles && Object.values(it.roles).includes('correct'));
const slots = [...new Set(withRoles.flatMap((it) => Object.keys(it.roles!)))].sort();
const first = slots[0]!;

const fmt = (
  m: MeanCI,
) => (m.mean === null
  ? '–'
  : `${(100 * m.mean).toFixed(1)}${
    m.ci95 ? ` [${(100 * m.ci95[0]).toFixed(1)}, ${(100 * m.ci95[1]).toFixed(1)}]` : ''
  }`);

/** The correct option's share minus the mean share of the item's other options. */
function correctContrast(it: AttendItem): number {
  const opts = Object.keys(it.roles!);
  const c = opts.find((p) => it.roles![p] === 'correct')!;
  const others = opts.filter((p) => p !== c);
  return (it.partShare[c] ?? 0) - others.reduce((s, p) => s + (it.partShare[p] ?? 0), 0) / others.length;
}

/** The first slot's share minus the mean share of the other slots. */
function firstContrast(it: AttendItem): number {
  const opts = Object.keys(it.roles!);
  const others = opts.filter((p) => p !== first);
  return (it.partShare[first] ?? 0) - others.reduce((s, p) => s + (it.partShare[p] ?? 0), 0) / others.length;
}

const correctFirst = (it: AttendItem) => it.roles![first] === 'correct';
const groups: [string, AttendItem[]][] = [
  ['all', withRoles],
  ['right', withRoles.filter((it) => it.correct === true)],
  ['wrong', withRoles.filter((it) => it.correct === false)],
  [`correct option in ${first}`, withRoles.filter(correctFirst)],
  [`correct option elsewhere`, withRoles.filter((it) => !correctFirst(it))],
  [`right, correct option elsewhere`, withRoles.filter((it) => it.correct === true && !correctFirst(it))],
  [`wrong, correct option elsewhere`, withRoles.filter((it) => it.correct === false && !correctFirst(it))],
];

console.log(`${dir}: ${items.length} items, ${withRoles.length} with option roles; bootstrap ${B}`);
console.log('\nShare of the content attention per slot (%), mean [95% CI]:\n');
console.log('| slot | all | right | wrong |\n|---|---|---|---|');
for (const s of slots) {
  const row = [withRoles, groups[1]![1], groups[2]![1]].map((g) =>
    fmt(meanCI(Float64Array.from(g, (it) => it.partShare[s] ?? 0), B, rng))
  );
  console.log(`| ${s} | ${row.join(' | ')} |`);
}
console.log(`\nPer item, in percentage points of the content attention, mean [95% CI]:\n`);
console.log(`| items | n | correct option − mean other option | ${first} − mean other slot |\n|---|---|---|---|`);
for (const [name, g] of groups) {
  const c = meanCI(Float64Array.from(g, correctContrast), B, rng);
  const f = meanCI(Float64Array.from(g, firstContrast), B, rng);
  console.log(`| ${name} | ${g.length} | ${fmt(c)} | ${fmt(f)} |`);
}
