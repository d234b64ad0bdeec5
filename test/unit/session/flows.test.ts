/**
 * The flow stores (src/session/flows*.ts) keep one semantics: the same
 * sequence of writes, sent concurrently, reads back the same entries and
 * overflow in memory, in the database worker processes share (two
 * connections, as two workers), and in Redis (two clients, as two
 * replicas); the store's own key is made once and shared.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SOURCES, type FlowWrite } from '../../../src/flows/origin.js';
import { MemoryFlowStore, type FlowStore } from '../../../src/session/flows.js';
import { RedisFlowStore } from '../../../src/session/flows-redis.js';
import { SqliteFlowStore } from '../../../src/session/flows-sqlite.js';
import { createSessionDb } from '../../../src/session/sqlite.js';
import { redisTestsRun, startRedis, type TestRedis } from '../../helpers/redis.js';

const MAX = 12;
const TTL = 3_600_000;

const write = fc.record({
  digest: fc.constantFrom('d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7', 'd8', 'd9', 'dA', 'dB', 'dC', 'dD', 'dE', 'dF'),
  bits: fc.integer({ min: 1, max: 31 }),
  source: fc.constantFrom('srv/a', 'srv/b', 'srv/c', 'user', 'srv/d', 'srv/e'),
}) as fc.Arbitrary<FlowWrite>;
/** Requests of one session: each a batch of writes; sent all at once. */
const batches = fc.array(fc.array(write, { maxLength: 6 }), { minLength: 1, maxLength: 8 });

/** What a store holds of the digests, as plain data: bits, sources as a set (concurrent writers may append them in either order), overflow. */
async function snapshot(a: FlowStore, b: FlowStore, id: string, bs: FlowWrite[][]): Promise<unknown> {
  await Promise.all(bs.map((w, i) => (i % 2 === 0 ? a : b).record(id, w, 0)));
  const digests = [...new Set(bs.flat().map((w) => w.digest))].sort();
  const r = await b.read(id, digests);
  const written = new Map<string, Set<string>>();
  for (const w of bs.flat()) if (w.source !== '') written.set(w.digest, (written.get(w.digest) ?? new Set()).add(w.source));
  // Which sources a digest keeps past MAX_SOURCES depends on the order concurrent requests landed in: then only how many, each one written.
  const entries = [...r.entries]
    .map(([d, e]) => {
      for (const s of e.sources) expect(written.get(d)?.has(s), `${d} keeps a source never written for it: ${s}`).toBe(true);
      const distinct = written.get(d)?.size ?? 0;
      const sources = distinct > MAX_SOURCES ? [`${e.sources.length} of ${distinct}`] : [...e.sources].sort();
      return [d, e.bits, sources] as [string, number, string[]];
    })
    .sort();
  // Past the bound, which values arrived first (and were kept) depends on the order concurrent requests landed in: only how many is fixed.
  return r.overflow ? { overflow: true, kept: entries.length } : { overflow: false, entries };
}

/** The expected state: bits OR per digest, first MAX digests kept, overflow past them, sources up to MAX_SOURCES. */
function expected(bs: FlowWrite[][]): { bits: Map<string, number>; kept: number; overflow: boolean } {
  const bits = new Map<string, number>();
  let overflow = false;
  for (const w of bs.flat()) {
    if (bits.has(w.digest)) bits.set(w.digest, bits.get(w.digest)! | w.bits);
    else if (bits.size < MAX) bits.set(w.digest, w.bits);
    else overflow = true;
  }
  return { bits, kept: bits.size, overflow };
}

describe('flow stores: one semantics', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-flows-'));
  const path = join(dir, 'sessions.db');
  let redis: TestRedis | undefined;
  const stores: Record<string, [FlowStore, FlowStore]> = {};
  beforeAll(async () => {
    createSessionDb(path, TTL);
    const mem = new MemoryFlowStore({ maxValues: MAX, ttlMs: TTL });
    stores.memory = [mem, mem];
    stores.sqlite = [new SqliteFlowStore(path, { maxValues: MAX, ttlMs: TTL, timeoutMs: 2_000 }), new SqliteFlowStore(path, { maxValues: MAX, ttlMs: TTL, timeoutMs: 2_000 })];
    if (redisTestsRun('flow stores on Redis')) {
      redis = await startRedis();
      stores.redis = [new RedisFlowStore(redis.url, { maxValues: MAX, ttlMs: TTL, commandTimeoutMs: 2_000 }), new RedisFlowStore(redis.url, { maxValues: MAX, ttlMs: TTL, commandTimeoutMs: 2_000 })];
    }
  });
  afterAll(async () => {
    for (const [a, b] of Object.values(stores)) await Promise.all([a.close(), a === b ? undefined : b.close()]);
    await redis?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the same writes, concurrently, read back the same in every store: bits OR, sources first seen up to the bound, overflow past MAX values', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(batches, async (bs) => {
        const id = `s${n++}`;
        const seen: unknown[] = [];
        for (const [a, b] of Object.values(stores)) seen.push(await snapshot(a, b, id, bs));
        for (const s of seen.slice(1)) expect(s).toEqual(seen[0]);
        const want = expected(bs);
        const got = seen[0] as { overflow: boolean; kept?: number; entries?: Array<[string, number, string[]]> };
        expect(got.overflow).toBe(want.overflow);
        if (got.overflow) expect(got.kept).toBe(MAX);
        else {
          expect(got.entries!.length).toBe(want.kept);
          for (const [d, bits, sources] of got.entries!) {
            expect(bits).toBe(want.bits.get(d));
            const distinct = new Set(bs.flat().filter((w) => w.digest === d && w.source !== '').map((w) => w.source)).size;
            expect(sources, d).toEqual(distinct > MAX_SOURCES ? [`${MAX_SOURCES} of ${distinct}`] : expect.any(Array));
            if (distinct <= MAX_SOURCES) expect(sources.length, d).toBe(distinct);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a dropped count overflows the session for good; forget ends its values; each store makes its key once', async () => {
    for (const [name, [a, b]] of Object.entries(stores)) {
      expect((await a.record(`o-${name}`, [], 3)).overflow, name).toBe(true);
      expect((await b.record(`o-${name}`, [{ digest: 'x', bits: 1, source: 's' }], 0)).overflow, name).toBe(true);
      await a.forget(`o-${name}`);
      expect(await b.read(`o-${name}`, ['x']), name).toEqual({ entries: new Map(), overflow: false });
      const [ka, kb] = await Promise.all([a.key(), b.key()]);
      expect(Buffer.from(ka).equals(Buffer.from(kb)), name).toBe(true);
      expect(ka.length, name).toBe(32);
    }
  });
});
