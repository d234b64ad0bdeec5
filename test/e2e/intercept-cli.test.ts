/**
 * `trustgate intercept` (package.json bin): the interceptor contract on
 * stdin/stdout for the gateway's after:exec mode. Empty output passes the
 * original through; any output is the replacement CallToolResult.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

function intercept(input: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, pkg.bin.trustgate), 'intercept'], {
    cwd: ROOT,
    input,
    env: { ...process.env, TRUSTGATE_POLICY_DIR: join(ROOT, 'policies'), ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('trustgate intercept', () => {
  it('is the package bin', () => {
    expect(pkg.bin.trustgate).toBe('dist/cli.js');
  });

  it('writes nothing when nothing applies', () => {
    const r = intercept(JSON.stringify({ content: [{ type: 'text', text: 'fine' }] }));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('"msg":"decision"');
  });

  it('writes the transformed result when effects apply', () => {
    const r = intercept(JSON.stringify({ content: [{ type: 'text', text: 'evil', _meta: { [K]: { untrusted: true } } }] }));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.content[0].text).toMatch(/^<untrusted-content boundary="[0-9a-f]{32}">\n/);
  });

  it('withholds a result that needs consent', () => {
    const r = intercept(JSON.stringify({ _meta: { [K]: { sensitive: true } }, content: [{ type: 'text', text: 'secret' }] }));
    const out = JSON.parse(r.stdout);
    expect(out.isError).toBe(true);
    expect(out.content[0].text).toContain('consent');
  });

  it.each([
    ['malformed input', 'nope', 'TG_ERR_BODY_MALFORMED_JSON'],
    ['a JSON array', '[]', 'TG_ERR_BODY_SCHEMA'],
  ])('fails closed on %s', (_what, input, code) => {
    const r = intercept(input);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.isError).toBe(true);
    expect(out.content[0].text).toContain(code);
  });

  it('fails closed when the policies do not load', () => {
    const r = intercept(JSON.stringify({ content: [] }), { TRUSTGATE_POLICY_DIR: mkdtempSync(join(tmpdir(), 'trustgate-none-')) });
    const out = JSON.parse(r.stdout);
    expect(out.isError).toBe(true);
    expect(r.stderr).toContain('policy load failed');
  });
});
