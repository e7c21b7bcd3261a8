/**
 * The t tests and cost ratios of `lobes ablate` summaries (src/ablate/stats.ts predictionTests),
 * as markdown: per summary, the cells' t-test p after Holm (range, and how many pass 0.05), and
 * per specificity row the contrast with its rank p and t-test p, and the cost ratio against the
 * random regions' ratios with its t-test p (Holm over the regions). Summaries written before
 * these fields existed get them derived from their cells and nulls, as the report does.
 *
 *     node --import tsx bench/ablate-tests.ts bench/ablate/smollm2-{en,zh,en-minus,en-iae}-summary.json > bench/ablate/tests.out.md
 */
import { readFileSync } from 'node:fs';
import { parseAblateSummary } from '../src/report/ablate.js';

const p = (x: number | null) => (x === null ? '—' : x < 1e-3 ? x.toExponential(1) : x.toFixed(3));
const r3 = (x: number | null) => (x === null ? '—' : x.toFixed(3));
for (const file of process.argv.slice(2)) {
  const s = parseAblateSummary(JSON.parse(readFileSync(file, 'utf8')), file);
  const holm = s.cells.map((c) => c.pTHolm).filter((x): x is number => x !== null);
  console.log(`## ${file}\n`);
  const items = s.cells.filter((c) => c.region === s.cells[0]!.region && c.minus === s.cells[0]!.minus).reduce(
    (t, c) => t + c.n,
    0,
  );
  console.log(
    `${items} items, K = ${s.random} random regions (rank-p floor ${(1 / (s.random + 1)).toFixed(3)}), unit ${s.unit}.`,
  );
  const raw = s.cells.map((c) => c.pT).filter((x): x is number => x !== null);
  const logs = s.cells.filter((c) => c.pTScale === 'log').length;
  console.log(
    `Cells (region × ${s.by}): t-test p ${p(Math.min(...raw))} to ${
      p(Math.max(...raw))
    } (on ln cost in ${logs} of ${s.cells.length} cells, where the change and every random change are costs; raw changes in the rest); after Holm over ${holm.length} cells ${
      p(Math.min(...holm))
    } to ${p(Math.max(...holm))}; ${holm.filter((x) => x <= 0.05).length} of ${holm.length} at or below 0.05.\n`,
  );
  console.log(
    '| region | target | contrast | random contrasts (mean) | rank p | t-test p | Holm | cost ratio | random ratios | ratio t-test p | Holm |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|');
  for (const x of s.specificity) {
    const name = x.minus === null ? x.region : `${x.region}∖${x.minus}`;
    const nm = x.nullContrast.reduce((a, b) => a + b, 0) / x.nullContrast.length;
    console.log(
      `| ${name} | ${x.target} | ${x.contrast.toFixed(2)} | ${nm.toFixed(2)} | ${x.p.toFixed(3)} | ${p(x.pT)} | ${
        p(x.pTHolm)
      } | ${r3(x.ratio)} | ${x.nullRatio.map(r3).join(', ')} | ${p(x.ratioP)} | ${p(x.ratioPHolm)} |`,
    );
  }
  console.log('');
}
