/**
 * openapi.yaml passes `redocly lint` (the recommended ruleset, as configured
 * in redocly.yaml) with no errors and no warnings.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ROOT } from '../helpers/process.js';

const run = promisify(execFile);
const REDOCLY = join(ROOT, 'node_modules', '.bin', 'redocly');

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}
interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: LintProblem[];
}

/** `redocly lint <file> --format=json` with the project's redocly.yaml; the JSON report. */
async function lint(file: string): Promise<LintReport> {
  const r = await run(REDOCLY, ['lint', file, '--format=json', `--config=${join(ROOT, 'redocly.yaml')}`], {
    cwd: ROOT,
    // No usage reports and no update check from the test run.
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((err: { stdout?: string; stderr?: string }) => {
    // Exit status 1 when lint reports errors; the report is still on stdout.
    if (typeof err.stdout === 'string' && err.stdout.trim().startsWith('{')) return { stdout: err.stdout, stderr: err.stderr ?? '' };
    throw err;
  });
  return JSON.parse(r.stdout) as LintReport;
}

const summary = (report: LintReport) =>
  report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`).join('\n');

const doc = parse(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8'));
const scratch = mkdtempSync(join(tmpdir(), 'trustgate-lint-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('openapi.yaml lint', () => {
  it('has no errors and no warnings under redocly.yaml', async () => {
    const report = await lint('openapi.yaml');
    expect(summary(report)).toBe('');
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
  });

  it('gives every operation its operationId', () => {
    const ids: Record<string, string> = {};
    for (const [path, item] of Object.entries<Record<string, { operationId?: string }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) ids[`${method.toUpperCase()} ${path}`] = op.operationId ?? '';
    }
    expect(ids).toEqual({
      'POST /v1/evaluate': 'evaluate',
      'POST /v1/validate': 'validate',
      'POST /v1/digest': 'digest',
      'GET /v1/policies': 'listPolicies',
      'POST /v1/policies/reload': 'reloadPolicies',
      'GET /healthz': 'healthz',
      'GET /readyz': 'readyz',
      'POST /v1/interceptors/docker-mcp-gateway': 'dockerMcpGatewayInterceptor',
      'POST /v1/evaluate-call': 'evaluateCall',
      'GET /v1/sessions/{id}': 'getSession',
      'DELETE /v1/sessions/{id}': 'deleteSession',
      'POST /v1/sessions/{id}/user': 'userWords',
      'GET /v1/pins': 'getPin',
      'PUT /v1/pins': 'acceptPin',
      'POST /mcp': 'mcpInterceptors',
    });
  });

  it('still reports a missing 4xx on operations other than the probes and the interceptor', async () => {
    // redocly.yaml replaces operation-4xx-response by a narrower rule; check that it still bites.
    const broken = structuredClone(doc);
    const responses = broken.paths['/v1/evaluate'].post.responses as Record<string, unknown>;
    for (const status of Object.keys(responses)) if (status.startsWith('4')) delete responses[status];
    delete broken.paths['/v1/digest'].post.operationId;
    const file = join(scratch, 'broken.yaml');
    writeFileSync(file, stringify(broken));
    const report = await lint(file);
    const found = report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}`);
    expect(found).toContain('rule/operation-4xx-response #/paths/~1v1~1evaluate/post/responses');
    expect(found).toContain('operation-operationId #/paths/~1v1~1digest/post/operationId');
    expect(report.totals.warnings).toBe(2);
  });
});
