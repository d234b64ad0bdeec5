/**
 * What reading the label dialects (contract section 13) costs on the hot
 * path. Claims are read once per decision (readTrust in
 * src/annotations/claims.ts); a result that carries no ifc or fides key
 * should pay next to nothing for the dialects being on.
 *
 * Inputs (bench/fixtures.ts, all without dialect keys): the ~4 KB mixed
 * fixture's result, the other ~4 KB shapes, and requestWithBlocks(100).
 * For each, in this process, alternating within every round:
 *
 * - baseline: readTrust(result, ['trust-annotations']), the trust key only;
 * - all dialects: readTrust(result) with the default trust-annotations,ifc,fides.
 *
 * Printed: µs per reading and all/baseline (median of per-round ratios;
 * target <= 1.05, the extra own-property lookups only). For scale, a
 * labelled variant of the mixed fixture (GitHub's ifc label on the result
 * and every block, and a fides map with $, block and structuredContent
 * paths) is read too, against the same baseline.
 *
 * Our code is loaded from dist/ (rebuilt first with `npm run build`);
 * BENCH_CODE=src loads the TypeScript sources instead.
 *
 * Run: npm run bench:dialects      (env BENCH_ROUNDS, BENCH_SLICE_MS, BENCH_CODE)
 */
import { evaluateRequest, OTHER_SHAPES, requestWithBlocks, shapeText } from './fixtures.js';
import { CODE, QUICK, envNumber, fmt, machine, median, ours, table } from './lib.js';

const { readTrust } = await ours<typeof import('../src/annotations/claims.js')>('annotations/claims.js');

const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 9);
const SLICE_MS = envNumber('BENCH_SLICE_MS', QUICK ? 100 : 300);

type Result = Record<string, unknown>;

/** Microseconds per call over one slice of time (at least 3 calls). */
function slice(op: () => unknown): number {
  let n = 0;
  const t0 = performance.now();
  let dt = 0;
  while (dt < SLICE_MS || n < 3) {
    op();
    n++;
    dt = performance.now() - t0;
  }
  return (dt * 1000) / n;
}

/** The mixed fixture with ifc labels on the result and every block, and a fides map. */
function labelled(): Result {
  const result = structuredClone(evaluateRequest().result) as Result;
  const content = result.content as Result[];
  const meta = (result._meta ??= {}) as Result;
  meta.ifc = { integrity: 'untrusted', confidentiality: 'public' };
  meta['com.github.ifc/labels'] = {
    $: { integrity: 'untrusted', confidentiality: [] },
    "$['content'][0]": { integrity: 'trusted', confidentiality: ['octocat'] },
    '$.content[1].text': { integrity: 'untrusted', confidentiality: ['public'] },
    "$['structuredContent']['rows'][0]": { integrity: 'untrusted', confidentiality: [] },
  };
  result.structuredContent = { rows: [1] };
  for (const b of content) ((b._meta ??= {}) as Result).ifc = { integrity: 'trusted', confidentiality: ['octocat', 'hubot'] };
  return result;
}

function main(): void {
  console.log(`bench:dialects  ${machine()}`);
  console.log(`code: ${CODE}/; ${ROUNDS} rounds x ${SLICE_MS} ms slices; baseline = trust key only, alternating\n`);
  const inputs: Array<[string, Result]> = [
    ['mixed-5 (no dialect keys)', evaluateRequest().result as Result],
    ...Object.keys(OTHER_SHAPES).map((name): [string, Result] => [`${name} (no dialect keys)`, (JSON.parse(shapeText(name)) as { result: Result }).result]),
    ['100 blocks (no dialect keys)', requestWithBlocks(100).result as Result],
    ['mixed-5 labelled (ifc + fides)', labelled()],
  ];
  // The readings must agree where there is nothing to read (else the ratio would compare different work).
  for (const [name, r] of inputs.slice(0, -1)) {
    if (JSON.stringify(readTrust(r)) !== JSON.stringify(readTrust(r, ['trust-annotations']))) throw new Error(`${name}: the dialects changed a reading without dialect keys`);
  }
  const rows: Array<Array<string | number>> = [['input', 'baseline µs', 'all dialects µs', 'all/baseline']];
  for (const [name, result] of inputs) {
    const base: number[] = [];
    const all: number[] = [];
    const ratios: number[] = [];
    // Warm up both paths before measuring.
    slice(() => readTrust(result, ['trust-annotations']));
    slice(() => readTrust(result));
    const baseline = () => slice(() => readTrust(result, ['trust-annotations']));
    const dialects = () => slice(() => readTrust(result));
    for (let round = 0; round < ROUNDS; round++) {
      // Which variant goes first alternates round by round.
      let a: number;
      let b: number;
      if (round % 2 === 0) {
        a = baseline();
        b = dialects();
      } else {
        b = dialects();
        a = baseline();
      }
      base.push(a);
      all.push(b);
      ratios.push(b / a);
    }
    rows.push([name, fmt(median(base), 2), fmt(median(all), 2), fmt(median(ratios), 3)]);
  }
  table(rows);
  console.log('\ntarget: all/baseline <= 1.05 for the inputs without dialect keys');
}

main();
