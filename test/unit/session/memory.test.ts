/**
 * The in-process memory store: merges by mergeSession's rules, bounded in
 * session ids without ever evicting one (a new session past the bound is
 * refused), each living its TTL after its last use and then read as
 * forgotten (untrusted and sensitive) for one more TTL; pins never evicted.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MemorySessionStore } from '../../../src/session/memory.js';
import { SessionNotOwned, SessionStoreFull } from '../../../src/session/store.js';

function clocked(opts: { maxSessions?: number; maxPins?: number; ttlMs?: number } = {}) {
  let t = 1_000;
  const evicted: Array<[string, string]> = [];
  const store = new MemorySessionStore({
    maxSessions: opts.maxSessions ?? 100,
    maxPins: opts.maxPins ?? 2,
    ttlMs: opts.ttlMs ?? 1_000,
    now: () => t,
    onEvict: (id, why) => evicted.push([id, why]),
  });
  return { store, evicted, advance: (ms: number) => (t += ms) };
}

describe('MemorySessionStore', () => {
  it('refuses a new session past its bound and evicts none; the sessions it holds go on', async () => {
    const { store, evicted } = clocked({ maxSessions: 2 });
    await store.update('a', { untrusted: true });
    await store.update('b', { result: true });
    await expect(store.update('c', { result: true })).rejects.toBeInstanceOf(SessionStoreFull);
    expect(evicted).toEqual([]);
    expect(await store.get('c')).toBeUndefined();
    expect(await store.get('a')).toMatchObject({ untrusted: true, forgotten: false });
    expect(await store.update('b', { result: true })).toMatchObject({ results: 2 });
    // Ending one does not make room: its id reads as forgotten for one more TTL.
    expect(await store.delete('a')).toBe(true);
    await expect(store.update('c', { result: true })).rejects.toBeInstanceOf(SessionStoreFull);
    expect(await store.get('a')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true });
    expect(store.size).toBe(2);
  });

  it('reads a session whose TTL ran out as forgotten (untrusted, sensitive) for one more TTL, never as clean', async () => {
    const { store, evicted, advance } = clocked({ ttlMs: 1_000 });
    await store.update('a', { result: true });
    await store.update('b', { result: true });
    advance(600);
    await store.get('a');
    advance(600);
    store.sweep();
    expect(evicted).toEqual([['b', 'ttl']]);
    expect(await store.get('a')).toMatchObject({ forgotten: false, untrusted: false, results: 1 });
    expect(await store.get('b')).toEqual({ forgotten: true, untrusted: true, sensitive: true, calls: 0, results: 0, tools: [] });
    // A use in the window keeps it, forgotten, as a live session: it stays tainted however long it is used.
    advance(900);
    expect(await store.update('b', { result: true })).toMatchObject({ forgotten: true, untrusted: true, sensitive: true, results: 1 });
    advance(1_500);
    expect(await store.get('b')).toMatchObject({ forgotten: true, untrusted: true });
    // Unused for two TTLs: the id is not held any more, and a request naming it starts a new session.
    advance(2_000);
    store.sweep();
    expect(await store.get('b')).toBeUndefined();
    expect(await store.update('b', { result: true })).toMatchObject({ forgotten: false, untrusted: false, results: 1 });
  });

  it('ending a session never makes it clean: the id reads as forgotten, still its owner\'s, for one more TTL, then is gone', async () => {
    const { store, advance } = clocked();
    await store.update('a', { result: true, owner: 'alice' });
    expect(await store.delete('a', 'bob')).toBe(false);
    expect(await store.get('a', 'alice')).toMatchObject({ forgotten: false, results: 1 });
    expect(await store.delete('a', 'alice')).toBe(true);
    expect(await store.get('a', 'alice')).toMatchObject({ forgotten: true, untrusted: true, sensitive: true, results: 0 });
    expect(await store.get('a', 'bob')).toBeUndefined();
    await expect(store.update('a', { result: true, owner: 'bob' })).rejects.toBeInstanceOf(SessionNotOwned);
    expect(await store.update('a', { result: true, owner: 'alice' })).toMatchObject({ forgotten: true, untrusted: true, results: 1 });
    // A forgotten session whose TTL ran out belongs to no one: it reads as forgotten to whoever uses it next.
    advance(1_000);
    expect(await store.get('a', 'bob')).toMatchObject({ forgotten: true, untrusted: true });
    advance(2_000);
    store.sweep();
    expect(await store.get('a', 'bob')).toBeUndefined();
  });

  it('another owner\'s session is not there: not read, not touched, not written, not ended', async () => {
    const { store, advance } = clocked({ ttlMs: 1_000 });
    await store.update('a', { untrusted: true, owner: 'alice' });
    advance(600);
    expect(await store.get('a', 'bob')).toBeUndefined();
    expect(await store.get('a')).toBeUndefined();
    await expect(store.update('a', { result: true, owner: 'bob' })).rejects.toBeInstanceOf(SessionNotOwned);
    expect(await store.delete('a', 'bob')).toBe(false);
    // bob's reads did not extend it: it lapses one TTL after alice's last use.
    advance(500);
    expect(await store.get('a', 'alice')).toMatchObject({ forgotten: true });
  });

  it('counts an id in its forgotten window against the bound, and frees it once the window is over', async () => {
    const { store, advance } = clocked({ maxSessions: 1, ttlMs: 1_000 });
    await store.update('a', { result: true });
    advance(1_500);
    await expect(store.update('b', {})).rejects.toBeInstanceOf(SessionStoreFull);
    advance(500);
    expect(await store.update('b', {})).toMatchObject({ forgotten: false });
  });

  it('never evicts a pin: past the bound a new pin is unavailable and the pinned ones still match', async () => {
    const { store } = clocked({ maxPins: 2 });
    expect((await store.checkPin('s', 'a', 'd1')).status).toBe('first-seen');
    expect((await store.checkPin('s', 'b', 'd2')).status).toBe('first-seen');
    expect(await store.checkPin('s', 'c', 'd3')).toEqual({ status: 'unavailable', pinned: 'd3' });
    expect(await store.checkPin('s', 'c', 'd3')).toEqual({ status: 'unavailable', pinned: 'd3' });
    expect(await store.getPin('s', 'c')).toBeUndefined();
    expect((await store.checkPin('s', 'a', 'd1')).status).toBe('match');
    expect((await store.checkPin('s', 'b', 'dX')).status).toBe('changed');
    await store.acceptPin('s', 'b', 'dX');
    await expect(store.acceptPin('s', 'c', 'd3')).rejects.toBeInstanceOf(SessionStoreFull);
  });

  it('over any sequence of uses: no held session is evicted, none reads clean after its TTL ran out, a full store refuses only new ids', async () => {
    const op = fc.record({
      kind: fc.constantFrom('get', 'update', 'taint', 'delete', 'sweep'),
      id: fc.constantFrom('a', 'b', 'c', 'd'),
      advance: fc.constantFrom(0, 0, 0, 300, 700, 1_500),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const ttl = 1_000;
        const { store, advance } = clocked({ maxSessions: 3, ttlMs: ttl });
        let now = 1_000;
        type S = { forgotten: boolean; untrusted: boolean; results: number };
        const model = new Map<string, { s: S; expires: number }>();
        const held = (id: string): S | undefined => {
          const e = model.get(id);
          if (!e) return undefined;
          if (e.expires + ttl <= now) {
            model.delete(id);
            return undefined;
          }
          if (e.expires <= now) return { forgotten: true, untrusted: true, results: 0 };
          return e.s;
        };
        const put = (id: string, s: S): boolean => {
          if (!model.has(id)) {
            for (const [k, e] of model) if (e.expires + ttl <= now) model.delete(k);
            if (model.size >= 3) return false;
          }
          model.set(id, { s, expires: now + ttl });
          return true;
        };
        for (const o of ops) {
          advance(o.advance);
          now += o.advance;
          if (o.kind === 'get') {
            const s = held(o.id);
            if (s) put(o.id, s);
            const got = await store.get(o.id);
            expect(got === undefined ? undefined : { forgotten: got.forgotten, untrusted: got.untrusted, results: got.results }).toEqual(s);
            if (got?.forgotten) expect(got.sensitive).toBe(true);
          } else if (o.kind === 'update' || o.kind === 'taint') {
            const s = held(o.id) ?? { forgotten: false, untrusted: false, results: 0 };
            const next = { forgotten: s.forgotten, untrusted: s.untrusted || o.kind === 'taint', results: s.results + 1 };
            if (put(o.id, next)) {
              const got = await store.update(o.id, { result: true, untrusted: o.kind === 'taint' });
              expect({ forgotten: got.forgotten, untrusted: got.untrusted, results: got.results }).toEqual(next);
            } else await expect(store.update(o.id, { result: true })).rejects.toBeInstanceOf(SessionStoreFull);
          } else if (o.kind === 'delete') {
            // Ended, the id reads as forgotten for one more TTL (never clean).
            const had = held(o.id) !== undefined;
            if (had) put(o.id, { forgotten: true, untrusted: true, results: 0 });
            expect(await store.delete(o.id)).toBe(had);
          } else {
            store.sweep();
            for (const [k, e] of model) if (e.expires + ttl <= now) model.delete(k);
            expect(store.size).toBe(model.size);
          }
        }
      }),
    );
  });
});
