/**
 * `trustgate eval <request.json> [--call] [--policies DIR] [--explain]`
 * (contract section 17): prints the /v1/evaluate or /v1/evaluate-call
 * answer and exits 0 whatever the outcome; 2 on a load or request error.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/process.js';

const dir = mkdtempSync(join(tmpdir(), 'tg-eval-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FIX = join(ROOT, 'test/fixtures/policytest/shared-policies');

function write(name: string, body: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, typeof body === 'string' ? body : JSON.stringify(body));
  return p;
}

function trustgate(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [join(ROOT, 'dist/cli.js'), 'eval', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    input,
    env: { ...process.env, TRUSTGATE_POLICY_DIR: '', TRUSTGATE_MODE: '' },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('trustgate eval', () => {
  it('prints a deny decision and exits 0', () => {
    const r = trustgate([write('deny.json', { tool: { name: 'secrets' }, result: { content: [{ type: 'text', text: 'x' }] } }), '--policies', FIX]);
    expect(r.code).toBe(0);
    const answer = JSON.parse(r.stdout);
    expect(answer.outcome).toBe('deny');
    expect(answer.findings).toContainEqual(expect.objectContaining({ policy: 'guard', rule: 'deny-secret-tool', effect: 'deny' }));
    expect(answer).not.toHaveProperty('result');
    expect(answer).not.toHaveProperty('trace');
  });

  it('--explain adds the trace, with rules that did not match', () => {
    const r = trustgate([write('allow.json', { result: { content: [{ type: 'text', text: 'x' }] } }), '--policies', FIX, '--explain']);
    expect(r.code).toBe(0);
    const answer = JSON.parse(r.stdout);
    expect(answer.outcome).toBe('allow');
    expect(answer.trace).toEqual([
      { policy: 'guard', rule: 'fence-untrusted', scope: 'block', pointer: '/content/0', value: false },
      { policy: 'guard', rule: 'deny-secret-tool', scope: 'result', pointer: '', value: false },
      { policy: 'guard', rule: 'never-matches', scope: 'result', pointer: '', value: false },
    ]);
  });

  it('--call decides a tool call with the shipped policies by default, from standard input too', () => {
    const r = trustgate(['-', '--call', '--policies', join(ROOT, 'policies')], JSON.stringify({ call: { name: 'write' }, tool: { name: 'write' } }));
    expect(r.code).toBe(0);
    const answer = JSON.parse(r.stdout);
    expect(answer.outcome).toBe('allow');
    expect(answer.tool.pin).toBe('first-seen');
  });

  it('exits 2 on a request error or a load error', () => {
    const typo = trustgate([write('typo.json', { result: { content: [] }, evidences: [] }), '--policies', FIX]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('has unknown member "evidences"');
    const notJson = trustgate([write('bad.json', '{"result": '), '--policies', FIX]);
    expect(notJson.code).toBe(2);
    expect(trustgate([join(dir, 'missing.json'), '--policies', FIX]).code).toBe(2);
    const broken = trustgate([write('ok.json', { result: { content: [] } }), '--policies', join(ROOT, 'test/fixtures/policytest/broken')]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('rule typo-in-cel');
    // A call body is not a result body.
    expect(trustgate([write('call.json', { call: { name: 'x' } }), '--policies', FIX]).code).toBe(2);
    expect(trustgate(['--policies', FIX]).code).toBe(2);
  });
});
