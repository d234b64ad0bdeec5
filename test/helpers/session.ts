/**
 * Session updates as fast-check draws them, for the stores' merge property
 * tests (each store must merge exactly as mergeSession() does): names and
 * classes with newlines, quotes, lone surrogates and case variants, and
 * ranks that disagree with the class's own.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { dataClassRank, emptySession, mergeSession, type SessionState, type SessionStore, type SessionUpdate } from '../../src/session/store.js';

const names = fc.constantFrom('read_file', 'send_email', 'fetch', 'ünïcødé', 'a\nb', '\ud800', '\udc00', '"', '');
const classes = fc.constantFrom('public', 'internal', 'personal', 'confidential', 'restricted', 'highly_confidential', 'Secret', 'INTERNAL', 'x\ny');

export const sessionUpdate: fc.Arbitrary<SessionUpdate> = fc.record(
  {
    sensitive: fc.boolean(),
    untrusted: fc.boolean(),
    call: fc.record({ tool: names }),
    result: fc.boolean(),
    dataClass: fc
      .tuple(classes, fc.array(fc.constantFrom('GDPR', 'hipaa', 'pci', 'İ', 'ß', 'ΣΑΣ', '\ud83d\ude00', '\ue000'), { maxLength: 3 }), fc.option(fc.integer({ min: -1, max: 7 })))
      .map(([cls, regulatory, rank]) => ({ class: cls, rank: rank ?? dataClassRank(cls), regulatory })),
  },
  { requiredKeys: [] },
);

/**
 * The merge property every store must hold: for any sequence of updates of a
 * fresh session, the state after each is mergeSession()'s (with `maxTools`),
 * and a read gives the last one. Session ids are `<prefix>-<n>`.
 */
export async function expectMergesLikeMergeSession(store: SessionStore, maxTools: number, prefix = 'prop'): Promise<void> {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(sessionUpdate, { maxLength: 12 }), async (updates) => {
      const id = `${prefix}-${n++}`;
      let want: SessionState = emptySession();
      for (const u of updates) {
        want = mergeSession(want, u, maxTools);
        expect(await store.update(id, u)).toEqual(want);
      }
      expect(await store.get(id)).toEqual(updates.length === 0 ? undefined : want);
    }),
    { numRuns: 150 },
  );
}
