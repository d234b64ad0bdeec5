/**
 * The in-process memory store: merges by mergeSession's rules, bounded in
 * sessions (least recently used evicted, counted), each living its TTL
 * after its last use (on use and on the sweep).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MemorySessionStore } from '../../../src/session/memory.js';

function clocked(opts: { maxSessions?: number; ttlMs?: number } = {}) {
  let t = 1_000;
  const evicted: Array<[string, string]> = [];
  const store = new MemorySessionStore({
    maxSessions: opts.maxSessions ?? 100,
    maxPins: 2,
    ttlMs: opts.ttlMs ?? 1_000,
    now: () => t,
    onEvict: (id, why) => evicted.push([id, why]),
  });
  return { store, evicted, advance: (ms: number) => (t += ms) };
}

describe('MemorySessionStore', () => {
  it('evicts the least recently used session past its bound; a read counts as use', async () => {
    const { store, evicted } = clocked({ maxSessions: 2 });
    await store.update('a', { result: true });
    await store.update('b', { result: true });
    await store.get('a');
    await store.update('c', { result: true });
    expect(evicted).toEqual([['b', 'lru']]);
    expect(await store.get('b')).toBeUndefined();
    expect(await store.get('a')).toMatchObject({ results: 1 });
    expect(store.size).toBe(2);
  });

  it('drops a session its TTL after its last use, on use and on the sweep', async () => {
    const { store, evicted, advance } = clocked({ ttlMs: 1_000 });
    await store.update('a', { untrusted: true });
    await store.update('b', { result: true });
    advance(600);
    await store.get('a');
    advance(600);
    store.sweep();
    expect(evicted).toEqual([['b', 'ttl']]);
    expect(await store.get('a')).toMatchObject({ untrusted: true });
    advance(1_000);
    expect(await store.get('a')).toBeUndefined();
    expect(evicted).toEqual([['b', 'ttl'], ['a', 'ttl']]);
    // An expired session starts over: nothing of it is merged into.
    expect(await store.update('a', { result: true })).toMatchObject({ untrusted: false, results: 1 });
  });

  it('ends a session on delete, and says whether there was one', async () => {
    const { store } = clocked();
    await store.update('a', { result: true });
    expect(await store.delete('a')).toBe(true);
    expect(await store.delete('a')).toBe(false);
    expect(store.size).toBe(0);
  });

  it('keeps least-recently-used order and TTLs over any sequence of uses, the newest session used again and again included', async () => {
    const op = fc.record({
      kind: fc.constantFrom('get', 'update', 'delete', 'sweep'),
      id: fc.constantFrom('a', 'b', 'c', 'd'),
      advance: fc.constantFrom(0, 0, 0, 300, 700),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const { store, evicted, advance } = clocked({ maxSessions: 3, ttlMs: 1_000 });
        // The model: ids in least-recently-used order, each with its result count and expiry.
        let now = 1_000;
        let model: Array<{ id: string; results: number; expires: number }> = [];
        const want: Array<[string, string]> = [];
        const live = (id: string) => {
          const i = model.findIndex((e) => e.id === id);
          if (i < 0) return undefined;
          const [e] = model.splice(i, 1);
          if (e!.expires <= now) {
            want.push([id, 'ttl']);
            return undefined;
          }
          return e;
        };
        const put = (id: string, results: number) => {
          model.push({ id, results, expires: now + 1_000 });
          while (model.length > 3) want.push([model.shift()!.id, 'lru']);
        };
        for (const o of ops) {
          advance(o.advance);
          now += o.advance;
          if (o.kind === 'get') {
            const e = live(o.id);
            if (e) put(o.id, e.results);
            expect((await store.get(o.id))?.results).toBe(e?.results);
          } else if (o.kind === 'update') {
            const e = live(o.id);
            put(o.id, (e?.results ?? 0) + 1);
            expect((await store.update(o.id, { result: true })).results).toBe((e?.results ?? 0) + 1);
          } else if (o.kind === 'delete') {
            expect(await store.delete(o.id)).toBe(live(o.id) !== undefined);
          } else {
            store.sweep();
            const dead = model.filter((e) => e.expires <= now);
            for (const e of dead) want.push([e.id, 'ttl']);
            model = model.filter((e) => e.expires > now);
          }
          expect(evicted).toEqual(want);
          expect(store.size).toBe(model.length);
        }
      }),
    );
  });
});
