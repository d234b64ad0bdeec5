/**
 * `trustgate intercept` (package.json bin): the interceptor contract on
 * stdin/stdout for the gateway's after:exec mode. Empty output passes the
 * original through; any output is the replacement CallToolResult. So the
 * command must answer an `isError` result whenever the decision cannot
 * finish: a crash, an out-of-memory, a signal, a timeout.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alive, childrenOf, ROOT } from '../helpers/process.js';
import { waitFor } from '../helpers/http.js';
import { shippedWithoutOpenWorldLabel } from '../helpers/closed-world.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const BIN = join(ROOT, pkg.bin.trustgate);
const UNTRUSTED = JSON.stringify({ content: [{ type: 'text', text: 'evil', _meta: { [K]: { untrusted: true } } }] });

/** The environment without any Trustgate setting, so that defaults are what is tested. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TRUSTGATE_') && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

function intercept(input: string, env: Record<string, string> = {}, args: string[] = [], cwd = ROOT) {
  const r = spawnSync(process.execPath, [BIN, 'intercept', ...args], {
    cwd,
    input,
    env: cleanEnv({ TRUSTGATE_POLICY_DIR: join(ROOT, 'policies'), ...env }),
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The answer must be an isError CallToolResult that says the result is withheld. */
function expectWithheld(stdout: string, says: RegExp | string): void {
  const out = JSON.parse(stdout);
  expect(out.isError).toBe(true);
  expect(out.content).toHaveLength(1);
  expect(out.content[0].type).toBe('text');
  expect(out.content[0].text).toMatch(typeof says === 'string' ? new RegExp(says.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : says);
}

/** Start the command with stdin left open, and wait until its evaluating child runs. */
async function startOpen(env: Record<string, string> = {}) {
  const p = spawn(process.execPath, [BIN, 'intercept'], { cwd: ROOT, env: cleanEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += String(d)));
  p.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<number | null>((resolve) => p.once('close', (code) => resolve(code)));
  let kids: number[] = [];
  await waitFor(() => (kids = childrenOf(p.pid!)).length > 0, 30_000, 'the evaluating child process');
  expect(kids, 'the evaluating child process').toHaveLength(1);
  return { p, child: kids[0]!, exited, out: () => stdout, err: () => stderr };
}

describe('trustgate intercept', () => {
  it('is the package bin', () => {
    expect(pkg.bin.trustgate).toBe('dist/cli.js');
  });

  it('writes nothing when nothing applies', () => {
    // The shipped set labels every result of a command that names no tool (contract section 16); without that rule nothing applies here.
    const r = intercept(JSON.stringify({ content: [{ type: 'text', text: 'fine' }] }), { TRUSTGATE_POLICY_DIR: shippedWithoutOpenWorldLabel() });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('"msg":"decision"');
  });

  it('writes the transformed result when effects apply', () => {
    const r = intercept(UNTRUSTED);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.content[0].text).toMatch(/^<untrusted-content boundary="[0-9a-f]{32}">\n/);
  });

  it('withholds a result that needs consent', () => {
    const r = intercept(JSON.stringify({ _meta: { [K]: { sensitive: true } }, content: [{ type: 'text', text: 'secret' }] }));
    expectWithheld(r.stdout, 'consent');
  });

  it.each([
    ['malformed input', 'nope', 'TG_ERR_BODY_MALFORMED_JSON'],
    ['a JSON array', '[]', 'TG_ERR_BODY_SCHEMA'],
    ['empty input', '', 'TG_ERR_BODY_MALFORMED_JSON'],
  ])('fails closed on %s', (_what, input, code) => {
    const r = intercept(input);
    expect(r.code).toBe(0);
    expectWithheld(r.stdout, code);
  });

  it('fails closed when the policies do not load', () => {
    const r = intercept(JSON.stringify({ content: [] }), { TRUSTGATE_POLICY_DIR: mkdtempSync(join(tmpdir(), 'trustgate-none-')) });
    expectWithheld(r.stdout, 'TG_ERR_SERVER_NOT_READY');
    expect(r.stderr).toContain('policy load failed');
  });

  it('fails closed on a bad setting or an unknown argument', () => {
    expectWithheld(intercept('{"content":[]}', { TRUSTGATE_BODY_LIMIT: '-1' }).stdout, 'TRUSTGATE_BODY_LIMIT');
    const r = intercept('{"content":[]}', {}, ['--polices', 'x']);
    // A usage error: one line, exit 2, and still a withheld answer for the gateway.
    expect(r.code).toBe(2);
    expectWithheld(r.stdout, 'TG_ERR_SERVER_NOT_READY');
    expect(r.stderr).toContain('usage: trustgate intercept [--policies DIR]');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const noFolder = intercept('{"content":[]}', {}, ['--policies']);
    expect(noFolder.code).toBe(2);
    expectWithheld(noFolder.stdout, 'TG_ERR_SERVER_NOT_READY');
  });

  it('fails closed on input over the body limit', () => {
    const r = intercept(JSON.stringify({ content: [{ type: 'text', text: 'x'.repeat(5000) }] }), { TRUSTGATE_BODY_LIMIT: '1024' });
    expectWithheld(r.stdout, 'TG_ERR_BODY_TOO_LARGE');
  });
});

describe('trustgate intercept: which policies', () => {
  const denyAll = { id: 'deny-all', mode: 'enforce', rules: [{ id: 'all', scope: 'result', when: 'true', effect: 'deny' }] };

  it('uses the policies shipped with the package from any working directory when neither flag nor setting is given', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'trustgate-cwd-'));
    const r = spawnSync(process.execPath, [BIN, 'intercept'], { cwd: elsewhere, input: UNTRUSTED, env: cleanEnv(), encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).content[0].text).toMatch(/^<untrusted-content boundary=/);
  });

  it('--policies DIR is read relative to the working directory, and wins over TRUSTGATE_POLICY_DIR', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'trustgate-cwd-'));
    mkdirSync(join(cwd, 'mine'));
    writeFileSync(join(cwd, 'mine', 'deny.json'), JSON.stringify(denyAll));
    for (const args of [['--policies', 'mine'], ['--policies=mine'], ['--policies', join(cwd, 'mine')]]) {
      const r = intercept('{"content":[{"type":"text","text":"hi"}]}', { TRUSTGATE_POLICY_DIR: join(ROOT, 'policies') }, args, cwd);
      expectWithheld(r.stdout, 'deny-all/all');
    }
  });

  it('a relative TRUSTGATE_POLICY_DIR is read relative to the working directory', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'trustgate-cwd-'));
    mkdirSync(join(cwd, 'mine'));
    writeFileSync(join(cwd, 'mine', 'deny.json'), JSON.stringify(denyAll));
    expectWithheld(intercept('{"content":[]}', { TRUSTGATE_POLICY_DIR: 'mine' }, [], cwd).stdout, 'deny-all/all');
  });
});

describe('trustgate intercept: the decision cannot finish', () => {
  it('answers isError when the evaluating process runs out of memory', () => {
    // 1.5 million objects in structuredContent: far more than a 32 MiB heap holds once parsed.
    const input = `{"content":[],"structuredContent":{"a":[${new Array(1_500_000).fill('{}').join(',')}]}}`;
    const r = intercept(input, { TRUSTGATE_INTERCEPT_HEAP_MB: '32' });
    expect(r.code).toBe(0);
    expectWithheld(r.stdout, /could not check this tool result.*decision process was ended by SIGABRT/);
  });

  it('the same input passes with the default heap', () => {
    const input = `{"content":[],"structuredContent":{"a":[${new Array(1_500_000).fill('{}').join(',')}]}}`;
    const r = intercept(input);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('could not check');
  });

  it('answers isError when the evaluating process is killed', async () => {
    const s = await startOpen();
    process.kill(s.child, 'SIGKILL');
    s.p.stdin.end(UNTRUSTED);
    expect(await s.exited).toBe(0);
    expectWithheld(s.out(), /decision process was ended by SIGKILL/);
  });

  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)('answers isError on %s, and leaves no process behind', async (sig) => {
    const s = await startOpen();
    s.p.kill(sig);
    expect(await s.exited).toBe(0);
    expectWithheld(s.out(), `interrupted by ${sig}`);
    await waitFor(() => !alive(s.child), 10_000, 'the evaluating child to be gone');
    expect(alive(s.child), 'the evaluating child is gone').toBe(false);
  });

  it('answers isError when the decision does not finish in time', async () => {
    const p = spawn(process.execPath, [BIN, 'intercept'], { cwd: ROOT, env: cleanEnv({ TRUSTGATE_REQUEST_TIMEOUT_MS: '100' }), stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    p.stdout.on('data', (d) => (out += String(d)));
    // stdin is never closed: the decision cannot finish.
    p.stdin.write('{"content":[');
    expect(await new Promise((resolve) => p.once('close', resolve))).toBe(0);
    expectWithheld(out, 'TG_ERR_REQUEST_TIMEOUT');
    p.stdin.destroy();
  });
});
