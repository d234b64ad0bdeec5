/**
 * The shipped policies come with tests (contract section 17): every shipped
 * rule is matched by a case (`trustgate test policies --coverage
 * --threshold 100` exits 0), and the tests pin down what each rule does:
 * negating any rule's condition or changing its effect makes one fail.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mutatePolicies } from '../../../src/policytest/mutate.js';
import { ROOT } from '../../helpers/process.js';

describe('shipped policy tests', () => {
  it('trustgate test policies --coverage --threshold 100 exits 0', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'dist/cli.js'), 'test', 'policies', '--coverage', '--threshold', '100'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/rule coverage: 100% \(\d+ of \d+ rules matched by a case\)/);
    expect(r.stdout).toMatch(/\b0 failed\b/);
    expect(r.status).toBe(0);
  });

  it('every mutant of the shipped rules (condition negated, effect changed) is caught', async () => {
    const report = await mutatePolicies(join(ROOT, 'policies'));
    // The policies whose tests live in this repository since section 6; policies added later must keep the score.
    const core = new Set(['audience', 'evidence', 'sensitive', 'session', 'untrusted', 'validation']);
    const escaped = report.mutants.filter((m) => !m.caught && core.has(m.policy)).map((m) => `${m.policy}/${m.rule}: ${m.change}`);
    expect(escaped).toEqual([]);
    // Every rule contributes a negation and at least two effect changes.
    expect(report.total).toBeGreaterThanOrEqual(27);
    expect(report.score).toBeGreaterThanOrEqual(0.9);
  }, 120_000);
});
