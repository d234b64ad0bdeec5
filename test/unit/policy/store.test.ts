import { describe, expect, it } from 'vitest';
import { PolicyStore } from '../../../src/policy/reload.js';
import { indexPolicies, type PolicySet } from '../../../src/policy/load.js';

const set = (revision: string): PolicySet => ({ policies: [], revision, files: [], index: indexPolicies([]) });

describe('PolicyStore', () => {
  it('a reload asked for while one runs is queued behind it and sees the later folder', async () => {
    let folder = 'a';
    const gates: Array<() => void> = [];
    const loader = async () => {
      const seen = folder;
      await new Promise<void>((r) => gates.push(r));
      return set(seen);
    };
    const store = new PolicyStore('/x', loader);
    const first = store.reload();
    folder = 'b';
    const second = store.reload();
    const third = store.reload();
    expect(third).toBe(second);
    gates.shift()!();
    expect((await first).ok && (await first as any).set.revision).toBe('a');
    await new Promise((r) => setTimeout(r, 0));
    gates.shift()!();
    const r = await second;
    expect(r.ok && r.set.revision).toBe('b');
    expect(store.current?.revision).toBe('b');
  });

  it('a failed reload keeps the set in force', async () => {
    let fail = false;
    const store = new PolicyStore('/x', async () => {
      if (fail) throw new Error('broken');
      return set('good');
    });
    await store.load();
    fail = true;
    const r = await store.reload();
    expect(r.ok).toBe(false);
    expect(store.current?.revision).toBe('good');
  });
});
