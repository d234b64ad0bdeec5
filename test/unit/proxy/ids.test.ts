/**
 * The relay's id correlation (src/bindings/proxy/ids.ts): an answer is
 * taken only for an id Trustgate sent, exactly and once; cancellations and
 * progress follow only requests in flight.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DONE_KEPT, HostIds, UpstreamIds } from '../../../src/bindings/proxy/ids.js';

const req = (hostId: string | number, progressToken?: string | number) => ({ hostId, params: progressToken === undefined ? {} : { _meta: { progressToken } } });

describe('UpstreamIds', () => {
  it('answers each request once, under an id never used before on the connection and not guessable from the last one', () => {
    const ids = new UpstreamIds<ReturnType<typeof req>>();
    const a = ids.open(req(1));
    const b = ids.open(req(1));
    expect(a).not.toBe(b);
    expect(a).toMatch(/^t1\.[0-9a-f]{12}$/);
    expect(b).toMatch(/^t2\.[0-9a-f]{12}$/);
    expect(ids.take(a)?.hostId).toBe(1);
    expect(ids.take(a)).toBeUndefined();
    expect(ids.answered(a)).toBe(true);
    expect(ids.answered(b)).toBe(false);
    expect(ids.take(b.slice(0, 3))).toBeUndefined();
  });

  it('takes an answer only for its exact id: another JSON type, a prefix, anything but a string or a finite number are unknown', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null), fc.boolean(), fc.object()), { maxLength: 20 }), (guesses) => {
        const ids = new UpstreamIds<ReturnType<typeof req>>();
        const id = ids.open(req('h'));
        for (const g of guesses) if (g !== id) expect(ids.take(g)).toBeUndefined();
        expect(ids.take(id)?.hostId).toBe('h');
      }),
    );
  });

  it('follows the host\'s cancellation and progress only while the request is in flight', () => {
    const ids = new UpstreamIds<ReturnType<typeof req>>();
    const id = ids.open(req(7, 'tok'));
    expect(ids.ofHost(7)).toBe(id);
    expect(ids.hasToken('tok')).toBe(true);
    expect(ids.hasToken(7)).toBe(false);
    ids.take(id);
    expect(ids.ofHost(7)).toBeUndefined();
    expect(ids.hasToken('tok')).toBe(false);
  });

  it('a host id reused by a later request follows the later one; answering the first does not forget it', () => {
    const ids = new UpstreamIds<ReturnType<typeof req>>();
    const first = ids.open(req(1));
    const second = ids.open(req(1));
    ids.take(first);
    expect(ids.ofHost(1)).toBe(second);
  });

  it('remembers the last DONE_KEPT answered ids, and no more', () => {
    const ids = new UpstreamIds<ReturnType<typeof req>>();
    const first = ids.open(req(0));
    ids.take(first);
    for (let i = 1; i < DONE_KEPT; i++) ids.take(ids.open(req(i)));
    expect(ids.answered(first)).toBe(true);
    ids.take(ids.open(req(DONE_KEPT)));
    expect(ids.answered(first)).toBe(false);
  });
});

describe('HostIds', () => {
  it('passes a server request under a fresh id, taken once by the host\'s answer', () => {
    const ids = new HostIds<{ serverId: string | number; method: string }>();
    const id = ids.pass({ serverId: 5, method: 'sampling/createMessage' });
    expect(id).toMatch(/^trustgate-[0-9a-f-]{36}-\d+$/);
    expect(ids.size).toBe(1);
    expect(ids.take(id)?.method).toBe('sampling/createMessage');
    expect(ids.take(id)).toBeUndefined();
    expect(ids.size).toBe(0);
    expect(ids.cancel(5)).toBeUndefined();
  });

  it('the server cancels its own request by its own id, exactly; a question of Trustgate\'s takes no place', () => {
    const ids = new HostIds<{ serverId: string | number; method: string }>();
    const question = ids.fresh();
    const id = ids.pass({ serverId: 'r1', method: 'elicitation/create' });
    expect(question).not.toBe(id);
    expect(ids.size).toBe(1);
    expect(ids.cancel(1)).toBeUndefined();
    expect(ids.cancel('r1')).toBe(id);
    expect(ids.take(id)).toBeUndefined();
    expect(ids.size).toBe(0);
  });
});
