/**
 * Session updates as fast-check draws them, for the stores' merge property
 * tests (each store must merge exactly as mergeSession() does): names and
 * classes with newlines, quotes, lone surrogates and case variants, and
 * ranks that disagree with the class's own.
 */
import fc from 'fast-check';
import { dataClassRank, type SessionUpdate } from '../../src/session/store.js';

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
