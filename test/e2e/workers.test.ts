/**
 * TRUSTGATE_WORKERS=2, the real process: one service whichever worker a
 * connection reaches. Decisions come from both workers; GET /metrics counts
 * every worker's decisions; a reload (API or SIGHUP, good or broken) is in
 * force on every worker once answered; a worker that dies is replaced with
 * the set in force; decision lines of both workers never interleave on a
 * shared stdout; SIGTERM stops every process with exit 0.
 */
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { alive, childrenOf, isRunning, ROOT, serviceStarter, startService, type Running } from '../helpers/process.js';
import { call, waitFor } from '../helpers/http.js';

const startServing = serviceStarter();

async function start(env: Record<string, string>): Promise<Running> {
  const s = await startServing({ TRUSTGATE_WORKERS: '2', ...env });
  await waitFor(() => s.stdout().includes('serving with 2 worker processes'));
  return s;
}

/** Revisions that `n` requests on fresh connections see. */
async function revisions(s: Running, n = 8): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) seen.add((await call(s, 'GET', '/v1/policies')).json.policyRevision);
  return seen;
}

function counter(metrics: string, name: string, label: string): number {
  const m = new RegExp(`^${name}\\{${label}\\} (\\S+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : 0;
}

/** The service's log lines (npm's own `> trustgate start` banner left out); JSON.parse throws on a split or joined line. */
function lines(s: Running): any[] {
  return s
    .stdout()
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('> '))
    .map((l) => JSON.parse(l));
}

const result = { content: [{ type: 'text', text: 'hello' }] };
const EXTRA = 'id: extra\nmode: enforce\nrules:\n  - id: flag-all\n    scope: result\n    when: "true"\n    effect: flag\n';

describe('TRUSTGATE_WORKERS=2', () => {
  it('decides on both workers, counts every decision in /metrics, and stops every process with exit 0', async () => {
    const s = await start({});
    const workers = childrenOf(s.pid);
    expect(workers).toHaveLength(2);
    for (let i = 0; i < 10; i++) expect((await call(s, 'POST', '/v1/evaluate', { result })).status).toBe(200);
    await waitFor(() => lines(s).filter((l) => l.msg === 'decision').length === 10);
    const deciders = new Set(lines(s).filter((l) => l.msg === 'decision').map((l) => l.pid));
    expect([...deciders].sort()).toEqual([...workers].sort());
    // Whichever worker answers the scrape, it counts the decisions of both (figures travel to the
    // primary and back every second: a scrape is served from that copy, with no work per scrape).
    await waitFor(async () => counter((await call(s, 'GET', '/metrics')).json as string, 'trustgate_decisions_total', 'outcome="allow"') === 10);
    for (let i = 0; i < 4; i++) {
      const text = (await call(s, 'GET', '/metrics')).json as string;
      expect(counter(text, 'trustgate_decisions_total', 'outcome="allow"')).toBe(10);
      expect(text).toMatch(/^trustgate_evaluation_duration_seconds_count 10$/m);
      // Not summed: the service's start time, as one process reports it.
      expect(text).toMatch(/^trustgate_process_start_time_seconds \d+$/m);
    }
    expect(await s.stop()).toBe(0);
    for (const pid of workers) expect(alive(pid)).toBe(false);
  });

  it('answers a reload once every worker serves the new set; a broken reload leaves every worker on the last good set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trustgate-workers-'));
    cpSync(join(ROOT, 'policies'), dir, { recursive: true });
    const s = await start({ TRUSTGATE_POLICY_DIR: dir });
    const [before] = [...(await revisions(s))];

    writeFileSync(join(dir, 'extra.yaml'), EXTRA);
    const good = await call(s, 'POST', '/v1/policies/reload');
    expect(good.status).toBe(200);
    expect(good.json.policyRevision).not.toBe(before);
    expect(await revisions(s)).toEqual(new Set([good.json.policyRevision]));
    for (let i = 0; i < 4; i++) {
      expect((await call(s, 'POST', '/v1/evaluate', { result })).json.findings.map((f: any) => f.rule)).toContain('flag-all');
    }

    writeFileSync(join(dir, 'extra.yaml'), EXTRA.replace('"true"', '"true &&"'));
    const bad = await call(s, 'POST', '/v1/policies/reload');
    expect(bad.status).toBe(422);
    expect(bad.json.code).toBe('TG_ERR_POLICY_RELOAD');
    expect(bad.json.detail).toContain(join(dir, 'extra.yaml'));
    expect(bad.json.detail).toContain('flag-all');
    expect(await revisions(s)).toEqual(new Set([good.json.policyRevision]));

    // SIGHUP to the process that was started reaches every worker.
    writeFileSync(join(dir, 'extra.yaml'), EXTRA.replace('flag-all', 'flag-everything'));
    process.kill(s.pid, 'SIGHUP');
    await waitFor(async () => (await revisions(s, 2)).size === 1 && !(await revisions(s, 2)).has(good.json.policyRevision));
    const third = await revisions(s);
    expect(third.size).toBe(1);

    // One line and one count per reload, not one per worker.
    await waitFor(async () => counter((await call(s, 'GET', '/metrics')).json as string, 'trustgate_policy_reloads_total', 'result="success"') >= 2);
    const metrics = (await call(s, 'GET', '/metrics')).json as string;
    expect(counter(metrics, 'trustgate_policy_reloads_total', 'result="success"')).toBe(2);
    expect(counter(metrics, 'trustgate_policy_reloads_total', 'result="failure"')).toBe(1);
    expect(lines(s).filter((l) => l.msg === 'policies reloaded')).toHaveLength(2);
    expect(lines(s).filter((l) => String(l.msg).startsWith('policy reload failed'))).toHaveLength(1);

    // A worker that dies is replaced, and the replacement serves the set in force;
    // the counts a scrape saw never go down (the dead worker's last counts are kept).
    const counted = () => call(s, 'GET', '/metrics').then((r) => counter(r.json as string, 'trustgate_decisions_total', 'outcome="allow"'));
    for (let i = 0; i < 8; i++) expect((await call(s, 'POST', '/v1/evaluate', { result })).status).toBe(200);
    await waitFor(async () => (await counted()) === 12);
    const decided = await counted();
    expect(decided).toBe(12);
    const [victim] = childrenOf(s.pid);
    process.kill(victim!, 'SIGKILL');
    await waitFor(() => childrenOf(s.pid).length === 2 && !childrenOf(s.pid).includes(victim!) && s.stdout().split('Server listening').length - 1 === 3);
    expect(lines(s).some((l) => l.msg === 'a worker process exited; starting a replacement' && l.workerPid === victim)).toBe(true);
    expect(await revisions(s)).toEqual(third);
    expect(await counted()).toBe(decided);
    expect((await call(s, 'POST', '/v1/evaluate', { result })).status).toBe(200);
    await waitFor(async () => (await counted()) === decided + 1);
    expect(await s.stop()).toBe(0);
  });

  it('replaces a replacement that dies before it serves, instead of stopping the service', async () => {
    const s = await start({});
    const first = childrenOf(s.pid);
    process.kill(first[0]!, 'SIGKILL');
    // Kill the replacement as soon as it exists, long before it listens.
    let replacement: number | undefined;
    await waitFor(() => (replacement = childrenOf(s.pid).find((pid) => !first.includes(pid))) !== undefined, 20_000);
    process.kill(replacement!, 'SIGKILL');
    await waitFor(() => childrenOf(s.pid).filter((pid) => !first.includes(pid) && pid !== replacement).length === 1 && s.stdout().split('Server listening').length - 1 === 3);
    expect(lines(s).filter((l) => l.msg === 'a worker process exited; starting a replacement')).toHaveLength(2);
    for (let i = 0; i < 4; i++) expect((await call(s, 'POST', '/v1/evaluate', { result })).status).toBe(200);
    expect(await s.stop()).toBe(0);
  });

  it('leaves no worker behind when the started process is killed outright', async () => {
    const s = await start({});
    const workers = childrenOf(s.pid);
    expect(workers).toHaveLength(2);
    process.kill(s.pid, 'SIGKILL');
    await waitFor(() => workers.every((pid) => !alive(pid)));
  });

  it('stops with a non-zero exit when the workers cannot serve (the port is taken)', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      const s = await startService({ TRUSTGATE_WORKERS: '2', PORT: String(port) });
      expect(isRunning(s)).toBe(false);
      if (isRunning(s)) return;
      expect(s.code).not.toBe(0);
      expect(s.stderr).toContain('EADDRINUSE');
      expect(s.stderr).toContain('refusing to start');
    } finally {
      taken.close();
    }
  });

  it('replaces a worker whose event loop is stuck (the watchdog), and keeps serving', async () => {
    // A condition whose work is cubic in a request list: minutes on 1,000 items. The CEL budget,
    // which comprehensions ask too, is set to its longest (60 s), past the watchdog's 5 s: the
    // worker is held for longer than the watchdog waits.
    const dir = mkdtempSync(join(tmpdir(), 'trustgate-watchdog-'));
    writeFileSync(
      join(dir, 'stuck.yaml'),
      'id: stuck\nmode: enforce\nrules:\n  - id: cubic\n    scope: result\n    when: "has(context.l) && context.l.exists(a, context.l.exists(b, context.l.exists(c, a + b + c < 0.0)))"\n    effect: flag\n',
    );
    const s = await start({ TRUSTGATE_POLICY_DIR: dir, TRUSTGATE_WORKER_WATCHDOG_MS: '5000', TRUSTGATE_EVAL_BUDGET_MS: '60000' });
    const before = childrenOf(s.pid);
    const stuck = call(s, 'POST', '/v1/evaluate', { result, context: { l: Array.from({ length: 1000 }, (_, i) => i) } }).then(
      () => 'answered',
      () => 'connection lost',
    );
    const replaced = () => lines(s).find((l) => l.msg === 'a worker process stopped answering; replacing it');
    await waitFor(() => replaced() !== undefined, 30_000);
    expect(before).toContain(replaced().workerPid);
    expect(replaced().silentMs).toBeGreaterThan(5000);
    expect(await stuck).toBe('connection lost');
    await waitFor(() => childrenOf(s.pid).length === 2 && !childrenOf(s.pid).includes(replaced().workerPid) && s.stdout().split('Server listening').length - 1 === 3, 30_000);
    // Both workers answer again (each request on a connection of its own goes to the next worker).
    for (let i = 0; i < 4; i++) expect((await call(s, 'POST', '/v1/evaluate', { result })).status).toBe(200);
    expect(lines(s).filter((l) => l.msg === 'a worker process stopped answering; replacing it')).toHaveLength(1);
    expect(await s.stop()).toBe(0);
  }, 90_000);

  it('keeps every decision line whole when both workers write at once', async () => {
    const s = await start({});
    const body = JSON.stringify({ result: { content: Array.from({ length: 20 }, (_, i) => ({ type: 'text', text: `block ${i}` })) } });
    const N = 300;
    let sent = 0;
    const client = async (): Promise<void> => {
      while (sent < N) {
        sent += 1;
        expect((await call(s, 'POST', '/v1/evaluate', JSON.parse(body))).status).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: 12 }, client));
    await waitFor(() => s.stdout().split('"msg":"decision"').length - 1 >= N);
    // Every line is one JSON object (JSON.parse throws on a split or joined line).
    expect(lines(s).filter((l) => l.msg === 'decision')).toHaveLength(N);
    expect(await s.stop()).toBe(0);
  }, 90_000);
});
