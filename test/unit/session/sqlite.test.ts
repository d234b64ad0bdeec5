/**
 * The memory store that worker processes share, a SQLite database: the
 * merge inside the statement is mergeSession() (property test), sessions
 * expire their TTL after their last use and then read as forgotten for one
 * more TTL, a new session past the bound is refused and none evicted, pins
 * are set once and never evicted, two processes writing
 * one session at once lose nothing, and a database that is locked past the
 * timeout, deleted or corrupt fails every operation with
 * SessionStoreUnavailable, never a crash. Also the folder the primary
 * makes, and the removal of folders of primaries that are gone.
 */
import { fork, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { createMetrics } from '../../../src/metrics.js';
import { DIR_PREFIX, makeStoreDir, openPrimaryStore, openWorkerStore, removeStaleDirs, SHARED_DB_ENV, STALE_MS } from '../../../src/main/stores.js';
import { createSessionDb, MERGE_GROUP, REFRESH_MS, refreshMs, SqliteSessionStore, type SqliteStoreOptions } from '../../../src/session/sqlite.js';
import { emptySession, SessionNotOwned, SessionStoreFull, SessionStoreUnavailable } from '../../../src/session/store.js';
import { expectMergesLikeMergeSession } from '../../helpers/session.js';

const WRITER = fileURLToPath(new URL('../../fixtures/session/sqlite-writer.ts', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'trustgate-sqlite-test-'));
const stores: SqliteSessionStore[] = [];
afterAll(() => {
  for (const s of stores) s.closeSync();
  rmSync(work, { recursive: true, force: true });
});

let n = 0;
/** A fresh database file and a store on it, on a clock of the test's own. */
function fresh(extra: Partial<SqliteStoreOptions> = {}) {
  const dir = join(work, `db-${n++}`);
  mkdirSync(dir);
  const path = join(dir, 'sessions.db');
  const ttlMs = extra.ttlMs ?? 10_000;
  createSessionDb(path, ttlMs);
  let t = 1_000_000;
  const errors: string[] = [];
  const health: Array<[boolean, string]> = [];
  const open = (more: Partial<SqliteStoreOptions> = {}) => {
    const s = new SqliteSessionStore({
      path,
      ttlMs,
      timeoutMs: 200,
      now: () => t,
      onError: (op) => errors.push(op),
      onHealth: (h, reason) => health.push([h, reason]),
      ...extra,
      ...more,
    });
    stores.push(s);
    return s;
  };
  return { dir, path, store: open(), open, errors, health, advance: (ms: number) => (t += ms), now: () => t };
}

describe('SqliteSessionStore', () => {
  it('merges inside the statement exactly as mergeSession does (same updates, same state after each)', async () => {
    const { store } = fresh({ maxTools: 4 });
    await expectMergesLikeMergeSession(store, 4);
  });

  it('shares sessions and pins between two connections on one file', async () => {
    const { store, open } = fresh();
    const other = open();
    await store.update('s', { untrusted: true });
    expect(await other.update('s', { call: { tool: 'fetch' } })).toMatchObject({ untrusted: true, calls: 1, tools: ['fetch'] });
    expect(await store.get('s')).toMatchObject({ untrusted: true, calls: 1, tools: ['fetch'] });
    expect(await other.checkPin('srv', 'tool', 'd1')).toEqual({ status: 'first-seen', pinned: 'd1' });
    expect(await store.checkPin('srv', 'tool', 'd1')).toEqual({ status: 'match', pinned: 'd1' });
    expect(await store.checkPin('srv', 'tool', 'd2')).toEqual({ status: 'changed', pinned: 'd1' });
    await other.acceptPin('srv', 'tool', 'd2');
    expect(await store.checkPin('srv', 'tool', 'd2')).toEqual({ status: 'match', pinned: 'd2' });
    expect(await store.getPin('srv', 'tool')).toBe('d2');
    expect(await store.getPin('nobody', 'nothing')).toBeUndefined();
    // Names that would collide under a naive join stay apart.
    expect((await store.checkPin('a\0b', 'c', 'x')).status).toBe('first-seen');
    expect((await store.checkPin('a', 'b\0c', 'y')).status).toBe('first-seen');
    expect((await store.checkPin('a","b', 'c', 'z')).status).toBe('first-seen');
    expect(store.healthy()).toBe(true);
  });

  it('ends a session on delete without making it clean: the id reads as forgotten, still its owner\'s, for one more TTL', async () => {
    const { store, advance } = fresh({ ttlMs: 10_000 });
    expect(await store.delete('a')).toBe(false);
    await store.update('a', { result: true, owner: 'alice' });
    expect(await store.delete('a', 'bob')).toBe(false);
    expect(await store.get('a', 'alice')).toMatchObject({ forgotten: false, results: 1 });
    expect(await store.delete('a', 'alice')).toBe(true);
    expect(await store.get('a', 'alice')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true, results: 0 });
    expect(await store.get('a', 'bob')).toBeUndefined();
    await expect(store.update('a', { result: true, owner: 'bob' })).rejects.toBeInstanceOf(SessionNotOwned);
    advance(35_000);
    expect(store.sweep().live).toBe(0);
    expect(await store.get('a', 'alice')).toBeUndefined();
  });

  it('another owner\'s session is not there: not read, not written (alone or in a group), not ended', async () => {
    const { store } = fresh();
    await store.update('a', { untrusted: true, owner: 'alice' });
    expect(await store.get('a', 'bob')).toBeUndefined();
    const group = await Promise.allSettled([store.update('a', { result: true, owner: 'bob' }), store.update('a', { result: true, owner: 'alice' })]);
    expect(group.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
    expect((group[0] as PromiseRejectedResult).reason).toBeInstanceOf(SessionNotOwned);
    expect(await store.get('a', 'alice')).toMatchObject({ untrusted: true, results: 1 });
    expect(await store.delete('a', 'bob')).toBe(false);
  });

  it('a session whose TTL ran out reads as forgotten (untrusted, sensitive) for one more TTL, never clean; the sweep drops it after that', async () => {
    const { store, advance, path } = fresh({ ttlMs: 10_000 });
    await store.update('a', { result: true });
    await store.update('b', { result: true });
    await store.update('c', { sensitive: true });
    advance(6_000);
    // A read is a use: it moves the expiry (its last refresh is more than REFRESH_MS old).
    expect(await store.get('a')).toMatchObject({ forgotten: false, results: 1 });
    await store.update('c', { result: true });
    advance(6_000);
    expect(await store.get('b')).toEqual({ forgotten: true, sensitive: true, untrusted: true, calls: 0, results: 0, tools: [] });
    expect(await store.get('a')).toMatchObject({ forgotten: false, untrusted: false });
    advance(10_000);
    // Expired, not swept: an update merges into the forgotten state (nothing of the old labels, nothing clean).
    expect(await store.update('a', { result: true })).toEqual({ forgotten: true, sensitive: true, untrusted: true, calls: 0, results: 1, tools: [], owner: '' });
    expect(await store.get('a')).toMatchObject({ forgotten: true, results: 1 });
    // b was read forgotten 10 s ago (a use): still held, still forgotten. c: last used 16 s ago, in its window.
    expect(await store.get('c')).toMatchObject({ forgotten: true, sensitive: true });
    advance(25_000);
    // Every id unused for two TTLs: the sweep drops them, and an id not held starts a new session.
    expect(store.sweep()).toMatchObject({ live: 0 });
    expect(await store.get('a')).toBeUndefined();
    expect(await store.update('a', { result: true })).toEqual({ ...emptySession(), results: 1, owner: '' });
    expect(await store.delete('a')).toBe(true);
    advance(25_000);
    expect(store.sweep()).toMatchObject({ live: 0 });
    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.prepare('SELECT id FROM sessions').pluck().all()).toEqual([]);
    } finally {
      raw.close();
    }
  });

  it('refuses a new session past maxSessions and evicts none; a forgotten id counts until its window is over, an ended one too', async () => {
    const { store, advance } = fresh({ ttlMs: 10_000, maxSessions: 2 });
    await store.update('a', { untrusted: true });
    await store.update('b', { result: true });
    await expect(store.update('c', { result: true })).rejects.toBeInstanceOf(SessionStoreFull);
    // Refused in a group of merges too, and only the new one: the others in the group are merged.
    const group = await Promise.allSettled([store.update('a', { result: true }), store.update('d', {}), store.update('b', { result: true })]);
    expect(group.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((group[1] as PromiseRejectedResult).reason).toBeInstanceOf(SessionStoreFull);
    expect(await store.get('a')).toMatchObject({ untrusted: true, results: 1 });
    advance(15_000);
    await expect(store.update('c', {})).rejects.toBeInstanceOf(SessionStoreFull);
    expect(await store.get('a')).toMatchObject({ forgotten: true });
    expect(await store.delete('a')).toBe(true);
    await expect(store.update('c', {})).rejects.toBeInstanceOf(SessionStoreFull);
    advance(10_000);
    // b is past its window now: its room is free without a sweep.
    expect(await store.update('e', {})).toMatchObject({ forgotten: false });
  });

  it('moves the expiry on a use only when it moved more than a second (or a tenth of the TTL) ago: most uses write no expiry', async () => {
    expect(refreshMs(86_400_000)).toBe(REFRESH_MS);
    expect(refreshMs(1_000)).toBe(100);
    const { store, advance, path } = fresh({ ttlMs: 10_000 });
    const raw = new Database(path, { readonly: true });
    const expires = () => raw.prepare('SELECT expires FROM sessions WHERE id = ?').pluck().get('a') as number;
    try {
      await store.update('a', { result: true });
      const first = expires();
      advance(REFRESH_MS / 2);
      await store.get('a');
      expect(expires()).toBe(first);
      await store.update('a', { result: true });
      expect(expires()).toBe(first);
      advance(REFRESH_MS);
      await store.get('a');
      expect(expires()).toBe(first + 1.5 * REFRESH_MS);
      advance(REFRESH_MS + 1);
      await store.update('a', { result: true });
      expect(expires()).toBe(first + 2.5 * REFRESH_MS + 1);
    } finally {
      raw.close();
    }
  });

  it('with the shortest TTL (1 s), a session used every 0.9 s lives on, and one left alone reads as forgotten', async () => {
    const { store, advance } = fresh({ ttlMs: 1_000 });
    await store.update('kept', { result: true });
    await store.update('left', { result: true });
    for (let i = 0; i < 2; i++) {
      advance(900);
      expect(await store.update('kept', { result: true })).toMatchObject({ results: i + 2, forgotten: false });
    }
    // 1.8 s unused: past its TTL, inside its forgotten window.
    expect(await store.get('left')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true });
  });

  it('drops many rows past their window in chunks', async () => {
    const { store, advance } = fresh({ ttlMs: 1_000 });
    for (let i = 0; i < 1_234; i++) await store.update(`s${i}`, { result: true });
    advance(1_500);
    for (let i = 0; i < 100; i++) await store.update(`t${i}`, { result: true });
    advance(600);
    expect(store.sweep()).toEqual({ ttl: 1_234, live: 100 });
  });

  it('never evicts a pin: past maxPins a new pin is unavailable, and accepting a new pair is refused', async () => {
    const { store, open } = fresh({ maxPins: 2 });
    for (const t of ['a', 'b']) expect((await store.checkPin('srv', t, `d-${t}`)).status).toBe('first-seen');
    expect(await store.checkPin('srv', 'c', 'd-c')).toEqual({ status: 'unavailable', pinned: 'd-c' });
    expect(await open().checkPin('srv', 'c', 'd-c')).toEqual({ status: 'unavailable', pinned: 'd-c' });
    await store.acceptPin('srv', 'a', 'd-a2');
    await expect(store.acceptPin('srv', 'c', 'd-c')).rejects.toBeInstanceOf(SessionStoreFull);
    store.sweep();
    expect(await store.getPin('srv', 'a')).toBe('d-a2');
    expect(await store.getPin('srv', 'b')).toBe('d-b');
    expect(await store.getPin('srv', 'c')).toBeUndefined();
  });

  it('loses no update and pins once when two processes write one session at once', async () => {
    const { path, store } = fresh({ ttlMs: 60_000 });
    const N = 1_500;
    const kids = ['p', 'q'].map((who) => fork(WRITER, [path, who, String(N)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
    try {
      await Promise.all(kids.map((k) => new Promise<void>((resolve) => k.once('message', () => resolve()))));
      const done = kids.map((k) => new Promise<{ pins: string[] }>((resolve) => k.on('message', (m: any) => m.kind === 'done' && resolve(m))));
      for (const k of kids) k.send({ kind: 'go' });
      const answers = await Promise.all(done);
      const s = (await store.get('busy'))!;
      expect(s.calls).toBe(N);
      expect(s.results).toBe(N);
      expect(s.untrusted).toBe(true);
      expect(s.sensitive).toBe(false);
      expect([...s.tools].sort()).toEqual(['p', 'q'].flatMap((w) => [0, 1, 2, 3, 4].map((i) => `${w}-${i}`)).sort());
      const statuses = answers.flatMap((a) => a.pins);
      expect(statuses.filter((x) => x === 'first-seen')).toHaveLength(1);
      const pinned = await store.getPin('mail', 'send');
      const winner = pinned === 'sha256:p' ? 0 : 1;
      expect(answers[winner]!.pins.filter((x) => x !== 'first-seen').every((x) => x === 'match')).toBe(true);
      expect(answers[1 - winner]!.pins.every((x) => x === 'changed')).toBe(true);
    } finally {
      for (const k of kids) k.kill('SIGKILL');
    }
  }, 60_000);

  it('commits the merges asked for in one turn together, in the order asked, each answered with the state after its own', async () => {
    const { store, open } = fresh();
    // More than one group's worth, on two sessions, interleaved.
    const n = MERGE_GROUP * 2 + 5;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) => store.update(i % 2 === 0 ? 'a' : 'b', i === 7 ? { result: true, sensitive: true } : { call: { tool: `t${i % 3}` } })),
    );
    const a = answers.filter((_, i) => i % 2 === 0);
    const b = answers.filter((_, i) => i % 2 === 1);
    expect(a.map((s) => s.calls)).toEqual(a.map((_, k) => k + 1));
    expect(b.map((s) => s.calls + s.results)).toEqual(b.map((_, k) => k + 1));
    // Labels go up from the merge that raised them, in order.
    expect(b.map((s) => s.sensitive)).toEqual(b.map((_, k) => k >= 3));
    // What another connection reads once they are answered: all of them.
    const other = open();
    expect(await other.get('a')).toMatchObject({ calls: a.length, results: 0, tools: ['t0', 't2', 't1'] });
    expect(await other.get('b')).toMatchObject({ calls: b.length - 1, results: 1, sensitive: true });
  });

  it('a group that cannot be committed fails every merge in it, each counted', async () => {
    const { store, path, errors } = fresh();
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const all = await Promise.allSettled([store.update('x', { result: true }), store.update('y', { result: true }), store.update('x', { untrusted: true })]);
      expect(all.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
      for (const r of all) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(SessionStoreUnavailable);
      expect(errors).toEqual(['update', 'update', 'update']);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // None of them was applied.
    expect(await store.get('x')).toBeUndefined();
    expect(await store.update('x', { result: true })).toMatchObject({ results: 1, untrusted: false });
  });

  it('fails closed while another connection holds the lock past the timeout, and recovers once it is free', async () => {
    const { store, path, errors, health } = fresh();
    await store.update('s', { result: true });
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const t0 = performance.now();
      await expect(store.update('s', { result: true })).rejects.toBeInstanceOf(SessionStoreUnavailable);
      const waited = performance.now() - t0;
      expect(waited).toBeGreaterThanOrEqual(190);
      expect(waited).toBeLessThan(1_000);
      await expect(store.checkPin('a', 'b', 'c')).rejects.toBeInstanceOf(SessionStoreUnavailable);
      expect(store.healthy()).toBe(false);
      expect(errors).toEqual(['update', 'pin']);
      expect(health).toEqual([[false, 'the session database stayed locked for 200 ms']]);
      // Readers never wait for the writer (WAL).
      expect(await store.get('s')).toMatchObject({ results: 1 });
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(await store.update('s', { result: true })).toMatchObject({ results: 2 });
    expect(store.healthy()).toBe(true);
    expect(health.at(-1)).toEqual([true, 'the session database answers again']);
  });

  it('turns healthy again by itself (the probe takes the write lock) once the lock is free', async () => {
    const { store, path } = fresh();
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    await expect(store.update('s', { result: true })).rejects.toBeInstanceOf(SessionStoreUnavailable);
    holder.exec('ROLLBACK');
    holder.close();
    const deadline = Date.now() + 5_000;
    while (!store.healthy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(store.healthy()).toBe(true);
  });

  it('fails closed, and stays so, once the database file is deleted', async () => {
    const { store, dir, errors } = fresh();
    await store.update('s', { result: true });
    rmSync(dir, { recursive: true });
    // Checked at most once a second.
    await new Promise((r) => setTimeout(r, 1_100));
    await expect(store.get('s')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.update('s', { result: true })).rejects.toThrow(/deleted/);
    expect(store.healthy()).toBe(false);
    expect(errors).toEqual(['get', 'update']);
  });

  it('fails closed on a corrupt database file, without crashing', async () => {
    const { store, path, open } = fresh();
    await store.update('s', { result: true });
    // The same files (same inodes), their bytes overwritten: what another program's mistake would do.
    for (const f of [path, `${path}-wal`, `${path}-shm`]) writeFileSync(f, Buffer.alloc(64 * 1024, 0x5a));
    const results = await Promise.allSettled([store.get('s'), store.update('s', { result: true }), store.checkPin('a', 'b', 'c')]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(SessionStoreUnavailable);
      expect(String((r as PromiseRejectedResult).reason.message)).toContain('SQLITE_NOTADB');
    }
    expect(store.healthy()).toBe(false);
    // A worker that starts now (a replacement) cannot open it, and fails closed too.
    const late = open();
    await expect(late.get('s')).rejects.toThrow(/cannot be opened: SQLITE_NOTADB/);
    expect(late.healthy()).toBe(false);
  });

  it('opened on a file that is not there: every operation fails closed, nothing throws', async () => {
    const errors: string[] = [];
    const store = new SqliteSessionStore({ path: join(work, 'nowhere', 'sessions.db'), ttlMs: 1_000, timeoutMs: 100, onError: (op) => errors.push(op) });
    stores.push(store);
    expect(store.healthy()).toBe(false);
    await expect(store.get('x')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.delete('x')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    expect(errors).toEqual(['open', 'get', 'delete']);
    expect(existsSync(join(work, 'nowhere'))).toBe(false);
  });

  it('fails every operation after close', async () => {
    const { store } = fresh();
    await store.close();
    await expect(store.get('x')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    expect(store.healthy()).toBe(false);
  });
});

describe('the folder of the database', () => {
  const base = mkdtempSync(join(work, 'base-'));

  it('is private to this user, named with the pid', () => {
    const dir = makeStoreDir(base);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(dir).toContain(`${DIR_PREFIX}${process.pid}-`);
  });

  it('of a primary that is gone is removed at start; a live one, a fresh one and anything else stay', () => {
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(gone.stdout);
    const old = new Date(Date.now() - 2 * STALE_MS);
    const make = (name: string, age: Date | undefined) => {
      const d = join(base, name);
      mkdirSync(d);
      writeFileSync(join(d, 'sessions.db'), '');
      if (age) utimesSync(d, age, age);
      return d;
    };
    const dead = make(`${DIR_PREFIX}${deadPid}-abcDEF`, old);
    // Our own pid before we made a folder: a process of an earlier life of this container (pid 1 again).
    const mine = make(`${DIR_PREFIX}${process.pid}-ghiJKL`, old);
    const live = make(`${DIR_PREFIX}${process.ppid}-mnoPQR`, old);
    // A pid that runs no process here, but touched a moment ago: a live service in another pid namespace.
    const fresh = make(`${DIR_PREFIX}${deadPid}-stuVWX`, undefined);
    const other = make(`${DIR_PREFIX}x-abcdef`, old);
    const removed = removeStaleDirs(base);
    expect(removed.sort()).toEqual([dead, mine].sort());
    for (const d of [live, fresh, other]) expect(existsSync(d), d).toBe(true);
    expect(existsSync(dead)).toBe(false);
  });
});

describe('the primary and worker sides (src/main/stores.ts)', () => {
  it('the primary makes the database, the workers open it and refuse a session past the bound, the sweep counts and logs, and close removes the folder', async () => {
    const base = mkdtempSync(join(work, 'primary-'));
    const config = loadConfig({ TRUSTGATE_MAX_SESSIONS: '2', TRUSTGATE_SESSION_TTL: '1', LOG_LEVEL: 'silent' });
    const metrics = createMetrics(false);
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
    const primary = (await openPrimaryStore(config, metrics, log, base))!;
    const path = primary.env[SHARED_DB_ENV]!;
    expect(path.startsWith(join(base, DIR_PREFIX))).toBe(true);
    const workers = [await openWorkerStore(config, createMetrics(false), log, primary.env), await openWorkerStore(config, createMetrics(false), log, primary.env)];
    await workers[0]!.update('secret-0', { result: true });
    await workers[1]!.update('secret-1', { result: true });
    await expect(workers[0]!.update('secret-2', { result: true })).rejects.toBeInstanceOf(SessionStoreFull);
    expect(await workers[1]!.get('secret-0')).toMatchObject({ results: 1 });
    // Two TTLs unused: the sweep (every second) drops both rows and counts them.
    const deadline = Date.now() + 10_000;
    const expired = async () => (await metrics.registry.getSingleMetric('trustgate_session_evictions_total')!.get()).values.find((v) => v.labels.reason === 'ttl')?.value ?? 0;
    while ((await expired()) < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await expired()).toBe(2);
    expect(metrics.sessionCount?.()).toBe(0);
    expect(lines.some((l) => l.includes('sessions expired'))).toBe(true);
    expect(lines.join('')).not.toContain('secret-');
    for (const w of workers) await w.close();
    primary.close();
    expect(readdirSync(base)).toEqual([]);
  });

  it('a worker without the path refuses to open the memory store', async () => {
    const config = loadConfig({ LOG_LEVEL: 'silent' });
    await expect(openWorkerStore(config, createMetrics(false), pino({ level: 'silent' }), {})).rejects.toThrow(SHARED_DB_ENV);
  });
});
