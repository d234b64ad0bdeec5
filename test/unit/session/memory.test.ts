/**
 * The in-process memory store: merges by mergeSession's rules, bounded in
 * sessions (least recently used evicted, counted), each living its TTL
 * after its last use (on use and on the sweep).
 */
import { describe, expect, it } from 'vitest';
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
});
