/**
 * The real process, started with `npm start` on a free port: readiness,
 * token, reload through the API and SIGHUP (good and broken files),
 * graceful SIGTERM, and fail-closed start-up.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { alive, childrenOf, freePort, isRunning, ROOT, startService, type Running } from '../helpers/process.js';
import { call, waitFor } from '../helpers/http.js';

const started: Running[] = [];
afterAll(async () => {
  for (const s of started) {
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

function policyCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-e2e-'));
  cpSync(join(ROOT, 'policies'), dir, { recursive: true });
  return dir;
}

async function start(env: Record<string, string>): Promise<Running> {
  const s = await startService(env);
  if (!isRunning(s)) throw new Error(`service did not start (exit ${s.code}):\n${s.stderr}\n${s.stdout}`);
  started.push(s);
  return s;
}

const result = { content: [{ type: 'text', text: 'hello' }] };

describe('npm start', () => {
  it.each([
    ['one process', { TRUSTGATE_WORKERS: '1' }],
    ['the default worker count', {}],
  ])('serves the shipped policies, answers decisions, and exits 0 on SIGTERM (%s)', async (_how, env: Record<string, string>) => {
    const s = await start(env);
    expect((await call(s, 'GET', '/healthz')).status).toBe(200);
    const ready = await call(s, 'GET', '/readyz');
    expect(ready.json.policyRevision).toMatch(/^sha256:[0-9a-f]{64}$/);
    const d = await call(s, 'POST', '/v1/evaluate', { result });
    expect(d.status).toBe(200);
    expect(d.json.outcome).toBe('allow');
    const listed = await call(s, 'GET', '/v1/policies');
    expect(listed.json.policies.map((p: any) => p.file).sort()).toEqual(readdirSync(join(ROOT, 'policies')).filter((f) => /\.(ya?ml|json)$/.test(f) && !/\.test\.ya?ml$/.test(f)).sort());
    expect(await s.stop('SIGTERM')).toBe(0);
    expect(s.stdout()).toContain('"msg":"decision"');
    if (env.TRUSTGATE_WORKERS === '1') expect(s.stdout()).not.toContain('worker processes');
  });

  it('requires the bearer token on /v1/* when TRUSTGATE_TOKEN is set', async () => {
    const s = await start({ TRUSTGATE_TOKEN: 'e2e-token' });
    const denied = await call(s, 'POST', '/v1/evaluate', { result });
    expect(denied.status).toBe(401);
    expect(denied.type).toMatch(/problem\+json/);
    expect((await call(s, 'POST', '/v1/evaluate', { result }, { authorization: 'Bearer e2e-token' })).status).toBe(200);
    expect((await call(s, 'GET', '/readyz')).status).toBe(200);
    expect(await s.stop()).toBe(0);
  });

  it('reloads through the API and on SIGHUP; a broken file keeps the last good set', async () => {
    const dir = policyCopy();
    const s = await start({ TRUSTGATE_POLICY_DIR: dir });
    const before = (await call(s, 'GET', '/v1/policies')).json.policyRevision;

    // A good change: a new policy file.
    writeFileSync(join(dir, 'extra.yaml'), 'id: extra\nmode: enforce\nrules:\n  - id: flag-all\n    scope: result\n    when: "true"\n    effect: flag\n');
    const good = await call(s, 'POST', '/v1/policies/reload');
    expect(good.status).toBe(200);
    expect(good.json.policyRevision).not.toBe(before);
    expect(good.json.policies.map((p: any) => p.id)).toContain('extra');
    const withExtra = await call(s, 'POST', '/v1/evaluate', { result });
    expect(withExtra.json.findings.map((f: any) => f.rule)).toContain('flag-all');
    expect(withExtra.json.policyRevision).toBe(good.json.policyRevision);

    // A broken change: the reload is refused with 422 and the previous set keeps serving.
    writeFileSync(join(dir, 'extra.yaml'), 'id: extra\nmode: enforce\nrules:\n  - id: broken\n    when: "block.untrusted &&"\n    effect: flag\n');
    const bad = await call(s, 'POST', '/v1/policies/reload');
    expect(bad.status).toBe(422);
    expect(bad.type).toMatch(/problem\+json/);
    expect(bad.json.code).toBe('TG_ERR_POLICY_RELOAD');
    expect(bad.json.detail).toContain('extra.yaml');
    expect(bad.json.detail).toContain('broken');
    expect((await call(s, 'GET', '/v1/policies')).json.policyRevision).toBe(good.json.policyRevision);
    expect((await call(s, 'POST', '/v1/evaluate', { result })).json.findings.map((f: any) => f.rule)).toContain('flag-all');

    // SIGHUP with the file still broken: logged, previous set kept.
    const failures = () => s.stdout().split('policy reload failed').length - 1;
    const before422 = failures();
    process.kill(s.pid, 'SIGHUP');
    await waitFor(() => failures() > before422 && s.stdout().includes('"source":"SIGHUP"'));
    expect((await call(s, 'GET', '/v1/policies')).json.policyRevision).toBe(good.json.policyRevision);

    // SIGHUP after the file is removed: back to the original set.
    rmSync(join(dir, 'extra.yaml'));
    process.kill(s.pid, 'SIGHUP');
    await waitFor(async () => (await call(s, 'GET', '/v1/policies')).json.policyRevision === before);
    expect(await s.stop()).toBe(0);
  });

  it.each([
    ['an empty folder', () => mkdtempSync(join(tmpdir(), 'trustgate-empty-')), ['no policy files']],
    ['a missing folder', () => join(tmpdir(), 'trustgate-does-not-exist-' + process.pid), ['does-not-exist']],
    [
      'a broken CEL expression',
      () => {
        const dir = policyCopy();
        writeFileSync(join(dir, 'bad.yaml'), 'id: bad\nmode: enforce\nrules:\n  - id: bad-rule\n    when: "block.untrusted ||| true"\n    effect: deny\n');
        return dir;
      },
      ['bad.yaml', 'bad-rule'],
    ],
    [
      'an unknown effect',
      () => {
        const dir = policyCopy();
        writeFileSync(join(dir, 'bad.yaml'), 'id: bad\nrules:\n  - id: r\n    when: "true"\n    effect: quarantine\n');
        return dir;
      },
      ['bad.yaml', 'quarantine', 'redact'],
    ],
  ])('refuses to start with %s, naming the problem', async (_what, makeDir, mentions) => {
    const s = await startService({ TRUSTGATE_POLICY_DIR: makeDir() });
    expect(isRunning(s)).toBe(false);
    if (isRunning(s)) return;
    expect(s.code).not.toBe(0);
    for (const m of mentions) expect(s.stderr).toContain(m);
  });

  it.each([['one process', '1'], ['worker processes', '2']])(
    'keeps a SIGHUP that arrives while it is still starting, and reloads once it can (%s)',
    async (_how, workers) => {
      const port = await freePort();
      const child = spawn(process.execPath, ['dist/server.js'], {
        cwd: ROOT,
        env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', TRUSTGATE_WORKERS: workers },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.on('data', (d) => (out += String(d)));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        // Right after the policies are loaded: the app (or the workers) are still being built.
        await waitFor(() => out.includes('"msg":"policies loaded"'), 30_000);
        process.kill(child.pid!, 'SIGHUP');
        await waitFor(async () => {
          try {
            return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
          } catch {
            return false;
          }
        }, 30_000);
        await waitFor(() => out.includes('"source":"SIGHUP"') && out.includes('"msg":"policies reloaded"'), 30_000);
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        child.kill('SIGKILL');
      }
    },
    60_000,
  );

  it.each([
    ['TRUSTGATE_BODY_LIMIT', '-1', 'TRUSTGATE_BODY_LIMIT'],
    ['TRUSTGATE_DIALECTS', 'ifc,github', 'TRUSTGATE_DIALECTS names an unknown dialect "github"; known: trust-annotations, ifc, fides'],
  ])('refuses to start with a bad setting, naming it (%s=%s)', async (name, value, message) => {
    const s = await startService({ [name]: value });
    expect(isRunning(s)).toBe(false);
    if (isRunning(s)) return;
    expect(s.code).not.toBe(0);
    expect(s.stderr).toContain(`configuration error: ${message}`);
  });
});


describe('the heap limit of the default start', () => {
  it('a lone process runs again under the derived limit, and that process stops when the one that started it is killed, SIGKILL included', async () => {
    const s = await startService({ TRUSTGATE_WORKERS: '1' }, [process.execPath, 'dist/server.js']);
    if (!isRunning(s)) throw new Error(`did not start: ${s.stderr}`);
    const starter = s.child.pid!;
    const serving = childrenOf(starter).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--max-old-space-size='));
    expect(serving, 'the process serving under the derived limit').toBeDefined();
    try {
      expect((await fetch(`${s.base}/readyz`)).status).toBe(200);
      process.kill(starter, 'SIGKILL');
      await waitFor(() => !alive(serving!), 20_000, 'the orphaned server to stop');
    } finally {
      if (alive(serving!)) process.kill(serving!, 'SIGKILL');
    }
  }, 60_000);
});
