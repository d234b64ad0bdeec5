/**
 * `trustgate test` as users run it (the built CLI) on its own fixtures
 * (contract section 17): exit codes 0/1/2, failing cases named with file
 * and line and expected against got, and every output format parsed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/process.js';

const FIX = 'test/fixtures/policytest';

function trustgate(args: string[], opts: { cwd?: string; input?: string } = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, 'dist/cli.js'), ...args], {
    cwd: opts.cwd ?? ROOT,
    encoding: 'utf8',
    input: opts.input,
    env: { ...process.env, TRUSTGATE_POLICY_DIR: '' },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The 1-based line of the first line of `file` that includes `text`. */
function lineOf(file: string, text: string): number {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes(text));
  expect(i).toBeGreaterThanOrEqual(0);
  return i + 1;
}

describe('trustgate test', () => {
  it('exits 0 when every case passes', () => {
    const r = trustgate(['test', `${FIX}/passing`]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok {4}untrusted text is fenced$/m);
    expect(r.stdout).toContain('2 passed, 0 failed');
  });

  it('exits 1 on a failing case and names its file and the line of its "- " item, expected against got', () => {
    const file = `${FIX}/failing/guard.test.yaml`;
    const r = trustgate(['test', `${FIX}/failing`]);
    expect(r.code).toBe(1);
    // The item's "- " stands alone on the line above its name.
    const line = lineOf(file, 'name: wrongly expects') - 1;
    expect(r.stdout).toContain(`FAIL  wrongly expects the fence to be absent  (${file}:${line})`);
    expect(r.stdout).toContain('outcome: expected "deny", got "allow"');
    expect(r.stdout).toMatch(/absent\[0\]: expected \{"absent":\{"rule":"fence-untrusted"\}\}, got \[\{"policy":"guard","rule":"fence-untrusted"/);
    expect(r.stdout).toMatch(/result \/content\/0\/text: expected "hello", got "<untrusted-content boundary=/);
    const stepLine = lineOf(file, 'tool: { name: secrets }');
    expect(r.stdout).toContain(`FAIL  a session whose second step fails  (${file}:${lineOf(file, 'name: a session whose')})`);
    expect(r.stdout).toContain(`step 2 (line ${stepLine}): outcome: expected "allow", got "deny"`);
    expect(r.stdout).not.toMatch(/FAIL {2}plain text passes/);
    expect(r.stdout).toContain('1 passed, 2 failed');
  });

  it('exits 2 when a policy does not load, naming the file and the rule', () => {
    const r = trustgate(['test', `${FIX}/broken`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`policy file ${FIX}/broken/bad.yaml:8:29, rule typo-in-cel: when: CEL syntax error`);
    expect(r.stdout).toBe('');
  });

  it('exits 2 on a test file with an unknown key, naming file and line', () => {
    const file = `${FIX}/badtest/guard.test.yaml`;
    const r = trustgate(['test', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}:${lineOf(file, 'name: a typo in expect')}: expect: unknown key "outcomes"`);
  });

  it('exits 2 on a request the service would refuse, and on YAML that does not parse', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-test-'));
    try {
      copyFileSync(join(ROOT, FIX, 'shared-policies/guard.yaml'), join(dir, 'guard.yaml'));
      writeFileSync(join(dir, 'a.test.yaml'), 'cases:\n  - name: typo\n    evaluate: { result: { content: [] }, evidences: [] }\n');
      const r = trustgate(['test', dir]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/a\.test\.yaml:2: evaluate \(a \/v1\/evaluate body\) has unknown member "evidences"/);
      writeFileSync(join(dir, 'a.test.yaml'), 'cases:\n  - name: [unclosed\n');
      const y = trustgate(['test', dir]);
      expect(y.code).toBe(2);
      expect(y.stderr).toMatch(/a\.test\.yaml:\d+: not valid YAML/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a folder without cases exits 1, or 0 with --allow-empty; a missing path exits 2', () => {
    expect(trustgate(['test', `${FIX}/empty`]).code).toBe(1);
    expect(trustgate(['test', `${FIX}/empty`, '--allow-empty']).code).toBe(0);
    const missing = trustgate(['test', `${FIX}/no-such-folder`]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no-such-folder: no such file or folder');
  });

  it('usage errors exit 2', () => {
    expect(trustgate(['test', '--format', 'xml', `${FIX}/passing`]).code).toBe(2);
    expect(trustgate(['test', '--threshold', '101', `${FIX}/passing`]).code).toBe(2);
    expect(trustgate(['test', '--no-such-flag']).code).toBe(2);
  });

  it('--format json: passed, failed, cases with file, line and failures, and coverage', () => {
    const r = trustgate(['test', `${FIX}/failing`, '--format', 'json', '--coverage']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.passed).toBe(1);
    expect(out.failed).toBe(2);
    const failing = out.cases.find((c: { name: string }) => c.name === 'wrongly expects the fence to be absent');
    expect(failing).toMatchObject({ file: `${FIX}/failing/guard.test.yaml`, passed: false });
    expect(failing.line).toBe(lineOf(`${FIX}/failing/guard.test.yaml`, 'name: wrongly expects') - 1);
    expect(failing.failures).toContainEqual(expect.objectContaining({ expectation: 'outcome', expected: 'deny', got: 'allow' }));
    expect(out.coverage.rules).toEqual([
      expect.objectContaining({ policy: 'guard', rule: 'fence-untrusted', matched: 1 }),
      expect.objectContaining({ policy: 'guard', rule: 'deny-secret-tool', matched: 1 }),
      expect.objectContaining({ policy: 'guard', rule: 'never-matches', matched: 0 }),
    ]);
    expect(out.coverage.percent).toBeCloseTo(66.66, 2);
  });

  it('--format junit: well-formed JUnit XML with one testcase per case', () => {
    const r = trustgate(['test', `${FIX}/failing`, `${FIX}/passing`, '--format', 'junit']);
    expect(r.code).toBe(1);
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'testsuite' || name === 'testcase' }).parse(r.stdout, true);
    const suites = doc.testsuites.testsuite as Array<{ name: string; testcase: Array<{ name: string; line: string; failure?: { '#text': string } }> }>;
    expect(doc.testsuites.tests).toBe('5');
    expect(doc.testsuites.failures).toBe('2');
    const cases = suites.flatMap((s) => s.testcase);
    expect(cases).toHaveLength(5);
    const failed = cases.filter((c) => c.failure !== undefined);
    expect(failed.map((c) => c.name).sort()).toEqual(['a session whose second step fails', 'wrongly expects the fence to be absent']);
    expect(failed.find((c) => c.name.startsWith('wrongly'))!.failure!['#text']).toContain('outcome: expected "deny", got "allow"');
  });

  it('--format tap: a TAP 14 plan and one test point per case, with YAML diagnostics for failures', () => {
    const r = trustgate(['test', `${FIX}/failing`, '--format', 'tap']);
    expect(r.code).toBe(1);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe('TAP version 14');
    expect(lines[1]).toBe('1..3');
    const points = lines.filter((l) => /^(not )?ok \d+ - /.test(l));
    expect(points).toEqual(['ok 1 - plain text passes', 'not ok 2 - wrongly expects the fence to be absent', 'not ok 3 - a session whose second step fails']);
    expect(r.stdout).toContain(`  line: ${lineOf(`${FIX}/failing/guard.test.yaml`, 'name: wrongly expects') - 1}`);
  });

  it('--threshold fails below the rule coverage and implies --coverage', () => {
    const low = trustgate(['test', `${FIX}/passing`, '--threshold', '100']);
    expect(low.code).toBe(1);
    expect(low.stdout).toContain('guard/never-matches  <- no case matches this rule');
    expect(low.stderr).toContain('below the threshold of 100%');
    expect(trustgate(['test', `${FIX}/passing`, '--threshold', '60']).code).toBe(0);
  });

  it('finds test files in sub-folders, and the policies folder defaults to the test file\'s own', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-test-'));
    try {
      mkdirSync(join(dir, 'team'));
      copyFileSync(join(ROOT, FIX, 'shared-policies/guard.yaml'), join(dir, 'team/guard.yaml'));
      writeFileSync(join(dir, 'team/guard.test.yml'), 'cases:\n  - name: secrets\n    evaluate: { tool: { name: secrets }, result: { content: [] } }\n    expect: { outcome: deny }\n');
      const r = trustgate(['test'], { cwd: dir });
      // No argument and no ./policies here (a global install run anywhere): the shipped set's own tests.
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/[1-9][0-9]* passed, 0 failed/);
      expect(r.stdout).not.toContain('guard');
      const ok = trustgate(['test', dir]);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain('1 passed, 0 failed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('expectation semantics', () => {
  it('findings: [] means no finding at all; absent must name something', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-test-'));
    try {
      copyFileSync(join(ROOT, FIX, 'shared-policies/guard.yaml'), join(dir, 'guard.yaml'));
      writeFileSync(join(dir, 'a.test.yaml'), 'cases:\n  - name: denied\n    evaluate: { tool: { name: secrets }, result: { content: [] } }\n    expect: { findings: [] }\n');
      const r = trustgate(['test', dir]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/findings: expected \[\], got \[\{"policy":"guard","rule":"deny-secret-tool"/);
      writeFileSync(join(dir, 'a.test.yaml'), 'cases:\n  - name: x\n    evaluate: { result: { content: [] } }\n    expect: { absent: [] }\n');
      expect(trustgate(['test', dir]).code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
