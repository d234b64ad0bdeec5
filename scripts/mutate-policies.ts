/**
 * `npm run mutate:policies [-- DIR [--min SCORE]]`: mutation testing of a
 * policy folder's tests (default: the shipped policies). Prints every
 * mutant that escaped and the score (caught/total); exits 1 below `--min`
 * (default 0.9), 2 when the policies or tests do not load.
 */
import { parseArgs } from 'node:util';
import { mutatePolicies } from '../src/policytest/mutate.js';
import { TestLoadError } from '../src/policytest/cases.js';
import { SHIPPED_POLICY_DIR } from '../src/policy/shipped.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { min: { type: 'string', default: '0.9' } } });
const dir = positionals[0] ?? SHIPPED_POLICY_DIR;
const min = Number(values.min);
try {
  const r = await mutatePolicies(dir);
  for (const m of r.mutants) if (!m.caught) console.log(`escaped: ${m.file} ${m.policy}/${m.rule}: ${m.change}`);
  console.log(`mutation score ${r.caught}/${r.total} = ${r.score.toFixed(3)}`);
  process.exitCode = r.score >= min ? 0 : 1;
} catch (err) {
  if (!(err instanceof TestLoadError)) throw err;
  console.error(`mutate:policies: ${err.message}`);
  process.exitCode = 2;
}
