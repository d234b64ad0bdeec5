/**
 * The Redis session store against a redis-server of the test's own: the
 * merge the Lua script does is mergeSession() (property test), concurrent
 * updates from two clients (two replicas) lose nothing, pins are set once,
 * keys cannot be steered into each other, and a server that goes away fails
 * every operation with SessionStoreUnavailable until it is back.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisSessionStore, pinKey, sessionKey } from '../../../src/session/redis.js';
import { RedisFlowStore } from '../../../src/session/flows-redis.js';
import { RedisRateBuckets } from '../../../src/http/quota.js';
import { RedisUrlError, parseRedisUrl } from '../../../src/session/url.js';
import { SessionNotOwned, SessionStoreFull, SessionStoreUnavailable } from '../../../src/session/store.js';
import { redisTestsRun, startRedis, type TestRedis } from '../../helpers/redis.js';
import { expectMergesLikeMergeSession } from '../../helpers/session.js';

describe('redis:// URLs', () => {
  it.each([
    ['redis://127.0.0.1:6380', { host: '127.0.0.1', port: 6380, db: 0 }],
    ['redis://cache', { host: 'cache', port: 6379, db: 0 }],
    ['redis://u:p%40ss@cache:7000/3', { host: 'cache', port: 7000, db: 3, username: 'u', password: 'p@ss' }],
    ['redis://:secret@cache:7000', { host: 'cache', port: 7000, db: 0, password: 'secret' }],
    ['redis://[::1]:7000/1', { host: '::1', port: 7000, db: 1 }],
  ])('%s', (url, want) => {
    expect(parseRedisUrl(url)).toEqual(want);
  });

  it('rediss:// connects with TLS', () => {
    expect(parseRedisUrl('rediss://cache:6380').tls).toEqual({ servername: 'cache' });
  });

  it.each(['memcached://x', 'redis://', 'redis://h:1/x', 'redis://h:1/0?tls=1', 'not a url', 'redis://h/0#frag'])('%s is refused', (url) => {
    expect(() => parseRedisUrl(url)).toThrow(RedisUrlError);
  });

  it('a refused URL never repeats its password', () => {
    try {
      parseRedisUrl('redis://u:hunter2@h:1/nodb');
      expect.unreachable();
    } catch (err) {
      expect(String((err as Error).message)).not.toContain('hunter2');
    }
  });
});

describe('keys', () => {
  it('one key per (server, tool) pair, whatever the names hold', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b, c, d) => {
        if (a === c && b === d) return;
        expect(pinKey(a, b)).not.toBe(pinKey(c, d));
        expect(pinKey(a, b).startsWith('trustgate:pin:')).toBe(true);
      }),
    );
    expect(pinKey('a\0b', 'c')).not.toBe(pinKey('a', 'b\0c'));
    expect(pinKey('a","b', 'c')).not.toBe(pinKey('a', 'b","c'));
    expect(sessionKey('x')).toBe('trustgate:session:x');
  });
});

const run = redisTestsRun('the Redis session store tests (test/unit/session/redis.test.ts)');

describe.skipIf(!run)('RedisSessionStore', () => {
  let redis: TestRedis;
  const stores: RedisSessionStore[] = [];
  const open = async (extra: Partial<ConstructorParameters<typeof RedisSessionStore>[0]> = {}): Promise<RedisSessionStore> => {
    const s = new RedisSessionStore({ url: redis.url, ttlMs: 60_000, commandTimeoutMs: 500, pingMs: 200, ...extra });
    stores.push(s);
    await s.waitReady(5_000);
    return s;
  };
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    await redis?.close();
  });

  it('answers a request made right after start-up, before the first connection, instead of refusing it', async () => {
    // Each client of a serving process, asked in the same turn it was made (a replica's first request after start).
    const store = new RedisSessionStore({ url: redis.url, ttlMs: 60_000, commandTimeoutMs: 2_000 });
    stores.push(store);
    const flows = new RedisFlowStore(redis.url, { maxValues: 10, ttlMs: 60_000, commandTimeoutMs: 2_000 });
    const buckets = new RedisRateBuckets(redis.url, 2_000);
    try {
      await expect(store.update('first', { result: true })).resolves.toMatchObject({ results: 1 });
      await expect(flows.key()).resolves.toBeInstanceOf(Uint8Array);
      await expect(buckets.take('first', 5)).resolves.toBe(0);
    } finally {
      await flows.close();
      await buckets.close();
    }
  });

  it('merges on the server exactly as mergeSession does (same updates, same state after each)', async () => {
    const store = await open({ maxTools: 4 });
    await expectMergesLikeMergeSession(store, 4);
  });

  it('loses no update when two replicas write one session at once', async () => {
    const [a, b] = [await open(), await open()];
    const N = 200;
    const jobs = Array.from({ length: N }, (_, i) =>
      (i % 2 === 0 ? a : b).update('busy', i % 2 === 0 ? { call: { tool: `tool-${i % 10}` } } : { result: true, ...(i === 51 ? { untrusted: true } : {}), ...(i === 99 ? { dataClass: { class: 'personal', rank: 2, regulatory: ['gdpr'] } } : {}), ...(i === 151 ? { dataClass: { class: 'internal', rank: 1, regulatory: ['hipaa'] } } : {}) }),
    );
    await Promise.all(jobs);
    const s = (await a.get('busy'))!;
    expect(s.calls).toBe(N / 2);
    expect(s.results).toBe(N / 2);
    expect(s.untrusted).toBe(true);
    expect(s.sensitive).toBe(false);
    expect([...s.tools].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `tool-${i}`).filter((_, i) => i % 2 === 0).sort());
    expect(s.dataClass).toEqual({ class: 'personal', regulatory: ['gdpr', 'hipaa'] });
    expect(await b.get('busy')).toEqual(s);
  });

  it('pins the first digest once, whichever replica asks first', async () => {
    const [a, b] = [await open(), await open()];
    const checks = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).checkPin('mail', 'send', `sha256:${i % 4}`)));
    const first = checks.filter((c) => c.status === 'first-seen');
    expect(first).toHaveLength(1);
    const pinned = first[0]!.pinned;
    for (const c of checks) expect(c.pinned).toBe(pinned);
    expect(checks.filter((c) => c.status === 'match').length).toBe(checks.filter((c, i) => c.status !== 'first-seen' && `sha256:${i % 4}` === pinned).length);
    expect(await a.getPin('mail', 'send')).toBe(pinned);
    await b.acceptPin('mail', 'send', 'sha256:new');
    expect(await a.checkPin('mail', 'send', 'sha256:new')).toEqual({ status: 'match', pinned: 'sha256:new' });
    expect(await a.checkPin('mail', 'send', pinned)).toEqual({ status: 'changed', pinned: 'sha256:new' });
    // Names that would collide under a naive join stay apart.
    expect((await a.checkPin('a\0b', 'c', 'x')).status).toBe('first-seen');
    expect((await a.checkPin('a', 'b\0c', 'y')).status).toBe('first-seen');
    expect(await a.getPin('nobody', 'nothing')).toBeUndefined();
  });

  it('keeps a session key TTL seconds after its last use and one TTL more (its forgotten window); delete leaves it forgotten', async () => {
    const store = await open({ ttlMs: 30_000 });
    const raw = new Redis({ port: redis.port, host: '127.0.0.1', lazyConnect: true });
    try {
      await store.update('ttl', { result: true });
      const ttl = await raw.pttl(sessionKey('ttl'));
      expect(ttl).toBeGreaterThan(30_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      await raw.pexpire(sessionKey('ttl'), 5_000);
      await store.get('ttl');
      expect(await raw.pttl(sessionKey('ttl'))).toBeGreaterThan(5_000);
      expect(await store.delete('ttl')).toBe(true);
      expect(await store.get('ttl')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true, results: 0 });
      expect(await raw.pttl(sessionKey('ttl'))).toBeGreaterThan(30_000);
      // A get of a session that does not exist creates nothing.
      expect(await store.get('never')).toBeUndefined();
      expect(await raw.exists(sessionKey('never'))).toBe(0);
    } finally {
      raw.disconnect();
    }
  });

  it('reads a session whose TTL ran out as forgotten (untrusted, sensitive), never clean, not even once the host deleted it', async () => {
    const store = await open({ ttlMs: 400 });
    await store.update('lapse', { result: true, dataClass: { class: 'public', rank: 0, regulatory: [] } });
    expect(await store.get('lapse')).toMatchObject({ forgotten: false, untrusted: false, sensitive: false });
    await new Promise((r) => setTimeout(r, 500));
    expect(await store.get('lapse')).toEqual({ forgotten: true, untrusted: true, sensitive: true, calls: 0, results: 0, tools: [] });
    // Used while forgotten, it stays forgotten however long it is used.
    expect(await store.update('lapse', { call: { tool: 't' } })).toMatchObject({ forgotten: true, untrusted: true, calls: 1 });
    expect(await store.delete('lapse')).toBe(true);
    expect(await store.update('lapse', { result: true })).toMatchObject({ forgotten: true, untrusted: true, sensitive: true, results: 1 });
  });

  it('another owner\'s session is not there: not read, not touched, not written, not ended; its own delete leaves it forgotten and its own', async () => {
    const store = await open({ ttlMs: 30_000 });
    await store.update('owned', { untrusted: true, owner: 'alice' });
    expect(await store.get('owned', 'bob')).toBeUndefined();
    await expect(store.update('owned', { result: true, owner: 'bob' })).rejects.toBeInstanceOf(SessionNotOwned);
    expect(await store.delete('owned', 'bob')).toBe(false);
    expect(await store.get('owned', 'alice')).toMatchObject({ untrusted: true, results: 0, owner: 'alice' });
    expect(await store.delete('owned', 'alice')).toBe(true);
    expect(await store.get('owned', 'bob')).toBeUndefined();
    expect(await store.get('owned', 'alice')).toMatchObject({ forgotten: true, untrusted: true, owner: 'alice' });
  });

  it('notices a FLUSHALL by its marker: every session then reads as forgotten for one TTL, on every replica, a deleted one too', async () => {
    const [a, b] = [await open(), await open()];
    await a.update('conv-1', { result: true });
    await b.update('conv-2', { result: true });
    const raw = new Redis({ port: redis.port, host: '127.0.0.1', lazyConnect: true });
    try {
      await raw.flushall();
    } finally {
      raw.disconnect();
    }
    expect(await a.get('conv-1')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true });
    // The other replica, and a process started after the loss, read their ids so too: the marker records the loss.
    expect(await b.update('conv-2', { result: true })).toMatchObject({ forgotten: true, untrusted: true, results: 1 });
    const later = await open();
    expect(await later.get('never-seen-here')).toMatchObject({ forgotten: true });
    // The host ends a forgotten session: it stays forgotten, never clean.
    expect(await later.delete('conv-1')).toBe(true);
    expect(await b.get('conv-1')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true });
    expect(await a.update('conv-1', { untrusted: true })).toMatchObject({ forgotten: true, untrusted: true });
  });

  it('never evicts a pin: past maxPins a new pin is unavailable (every replica), accepting a new pair is refused', async () => {
    const raw = new Redis({ port: redis.port, host: '127.0.0.1', lazyConnect: true });
    try {
      await raw.flushall();
    } finally {
      raw.disconnect();
    }
    const [a, b] = [await open({ maxPins: 2 }), await open({ maxPins: 2 })];
    expect((await a.checkPin('srv', 'one', 'd1')).status).toBe('first-seen');
    expect((await b.checkPin('srv', 'two', 'd2')).status).toBe('first-seen');
    expect(await a.checkPin('srv', 'three', 'd3')).toEqual({ status: 'unavailable', pinned: 'd3' });
    expect(await b.checkPin('srv', 'three', 'd3')).toEqual({ status: 'unavailable', pinned: 'd3' });
    expect(await b.getPin('srv', 'three')).toBeUndefined();
    expect((await b.checkPin('srv', 'one', 'd1')).status).toBe('match');
    await a.acceptPin('srv', 'two', 'd2b');
    await expect(a.acceptPin('srv', 'three', 'd3')).rejects.toBeInstanceOf(SessionStoreFull);
    expect(await b.checkPin('srv', 'two', 'd2')).toEqual({ status: 'changed', pinned: 'd2b' });
  });

  it('fails closed while the server is down, and recovers when it is back on the same port', async () => {
    const store = await open();
    await store.update('down', { result: true });
    expect(store.healthy()).toBe(true);
    await redis.stop();
    await expect(store.update('down', { result: true })).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.get('down')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.checkPin('s', 't', 'd')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    expect(store.healthy()).toBe(false);
    await redis.start();
    await store.waitReady(10_000);
    const deadline = Date.now() + 10_000;
    while (!store.healthy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(store.healthy()).toBe(true);
    // The data went with the server (no persistence): the session reads as forgotten, never clean.
    expect(await store.update('down', { result: true })).toMatchObject({ results: 1, forgotten: true, untrusted: true, sensitive: true });
  });

  it('fails closed within the command timeout on a server that hangs, operations asked together included, and recovers when it answers again', async () => {
    const store = await open({ commandTimeoutMs: 300 });
    await store.update('hung', { result: true });
    redis.pause();
    try {
      const t0 = performance.now();
      // Asked in one turn: each fails on its own timeout, none waits for another.
      const all = await Promise.allSettled([store.update('hung', { result: true }), store.get('hung'), store.checkPin('s', 't', 'd'), store.update('other', { untrusted: true })]);
      const waited = performance.now() - t0;
      expect(all.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      for (const r of all) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(SessionStoreUnavailable);
      expect(waited).toBeLessThan(3_000);
      expect(store.healthy()).toBe(false);
    } finally {
      redis.resume();
    }
    const deadline = Date.now() + 10_000;
    while (!store.healthy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(store.healthy()).toBe(true);
    // A merge whose answer timed out may still have run once the server went on: never twice, never lost silently.
    const after = (await store.get('hung'))!;
    expect(after.results).toBeGreaterThanOrEqual(1);
    expect(after.results).toBeLessThanOrEqual(2);
    expect(await store.update('hung', { result: true })).toMatchObject({ results: after.results + 1 });
  });

  it('reports a failure counted by operation, and a server that never answers as unhealthy', async () => {
    const errors: string[] = [];
    const store = new RedisSessionStore({ url: 'redis://127.0.0.1:1', ttlMs: 1_000, commandTimeoutMs: 200, onError: (op) => errors.push(op) });
    stores.push(store);
    expect(store.healthy()).toBe(false);
    await expect(store.get('x')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.update('x', {})).rejects.toBeInstanceOf(SessionStoreUnavailable);
    expect(errors).toEqual(['get', 'update']);
  });

  it('logs in with the URL\'s user and password and uses its database; a wrong password fails closed without repeating it', async () => {
    const locked = await startRedis(['--requirepass', 'pa:ss@word', '--user', 'gate', 'on', '>gate-secret', '~trustgate:*', '+@all']);
    try {
      const good = new RedisSessionStore({ url: `redis://:${encodeURIComponent('pa:ss@word')}@127.0.0.1:${locked.port}/2`, ttlMs: 60_000, commandTimeoutMs: 500 });
      const user = new RedisSessionStore({ url: `redis://gate:gate-secret@127.0.0.1:${locked.port}/3`, ttlMs: 60_000, commandTimeoutMs: 500 });
      stores.push(good, user);
      await good.waitReady(5_000);
      await user.waitReady(5_000);
      await good.update('auth', { result: true });
      await user.update('auth', { untrusted: true });
      const raw = new Redis({ port: locked.port, host: '127.0.0.1', password: 'pa:ss@word', lazyConnect: true });
      try {
        expect(await raw.select(2)).toBe('OK');
        expect(await raw.hget(sessionKey('auth'), 'r')).toBe('1');
        await raw.select(3);
        expect(await raw.hget(sessionKey('auth'), 'u')).toBe('1');
        await raw.select(0);
        expect(await raw.exists(sessionKey('auth'))).toBe(0);
      } finally {
        raw.disconnect();
      }
      const health: string[] = [];
      const bad = new RedisSessionStore({ url: `redis://:wrong-secret@127.0.0.1:${locked.port}`, ttlMs: 60_000, commandTimeoutMs: 300, onHealth: (_h, reason) => health.push(reason) });
      stores.push(bad);
      await new Promise((r) => setTimeout(r, 300));
      expect(bad.healthy()).toBe(false);
      const err = await bad.get('auth').catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(SessionStoreUnavailable);
      expect((err as Error).message).not.toContain('wrong-secret');
      expect(health.join(' ')).not.toContain('wrong-secret');
    } finally {
      await locked.close();
    }
  });
});
