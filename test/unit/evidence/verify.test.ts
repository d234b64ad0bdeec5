import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EvidenceSite } from '../../../src/evidence/verify.js';
import { assessTrust } from '../../../src/trust/assess.js';
import { readDataClass, mergeDataClasses } from '../../../src/evidence/dataclass.js';
import { verifyEvidence, type EvidenceEntry } from '../../../src/evidence/verify.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';

const K = TRUST_KEY;
const KT = 'io.modelcontextprotocol~1trust-annotations';
const RP = `/_meta/${KT}/evidenceRef`;
const BP = (i: number): string => `/content/${i}/_meta/${KT}/evidenceRef`;

/** Digest of a canonical text written out by hand, so these tests do not lean on the canonicalizer they exercise. */
const sha = (canonical: string, alg: 'sha256' | 'sha384' | 'sha512' = 'sha256'): string =>
  `${alg}:${createHash(alg).update(canonical, 'utf8').digest('hex')}`;

const RECORD = { b: 1, a: 'x' };
const RECORD_JCS = '{"a":"x","b":1}';
const D = sha(RECORD_JCS);

const ref = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'sequence',
  digest: D,
  canonicalization: 'jcs/rfc8785',
  ...over,
});
const site = (value: unknown, scope: 'result' | number = 'result'): EvidenceSite => ({
  pointer: scope === 'result' ? RP : BP(scope),
  scope,
  value,
});
const entry = (record: unknown, over: Partial<EvidenceEntry> = {}): EvidenceEntry => ({ record, hasRecord: true, ...over });
const one = (value: unknown, entries: EvidenceEntry[]) => verifyEvidence([site(value)], entries)[0]!;

describe('verifyEvidence: statuses', () => {
  it('verified: the re-derived digest equals the evidenceRef digest', () => {
    const o = one(ref({ schema: 'https://example/s.json', ref: 'audit://1' }), [entry(RECORD, { digest: D })]);
    expect(o).toEqual({
      pointer: RP,
      scope: 'result',
      type: 'sequence',
      canonicalization: 'jcs/rfc8785',
      status: 'verified',
      expected: D,
      derived: D,
      schema: 'https://example/s.json',
      ref: 'audit://1',
      record: RECORD,
      entryIndex: 0,
    });
  });

  it('mismatch: a record was found and the digests differ', () => {
    const o = one(ref(), [entry({ a: 'y', b: 1 }, { digest: D })]);
    expect(o.status).toBe('mismatch');
    expect(o.expected).toBe(D);
    expect(o.derived).toBe(sha('{"a":"y","b":1}'));
    expect(o.record).toBeUndefined();
    expect(o.entryIndex).toBe(0);
  });

  it('unresolved: no entry matches', () => {
    const o = one(ref(), [entry(RECORD, { digest: sha('other') }), entry(RECORD, { ref: 'audit://other' })]);
    expect(o.status).toBe('unresolved');
    expect(o.expected).toBe(D);
    expect(o.derived).toBeUndefined();
    expect(o.entryIndex).toBeUndefined();
  });

  it('unresolved: no evidence at all', () => {
    expect(one(ref(), []).status).toBe('unresolved');
  });

  it('unresolved: the first matching entry carries no record', () => {
    const o = one(ref(), [{ digest: D, hasRecord: false }, entry(RECORD, { digest: D })]);
    expect(o.status).toBe('unresolved');
    expect(o.entryIndex).toBe(0);
  });

  it('unsupported: unknown canonicalization', () => {
    const o = one(ref({ canonicalization: 'xml/c14n' }), [entry(RECORD, { digest: D })]);
    expect(o).toMatchObject({ status: 'unsupported', canonicalization: 'xml/c14n', expected: D });
    expect(o.derived).toBeUndefined();
    expect(o.message).not.toContain('xml');
  });

  for (const digest of ['md5:00', 'sha3-256:' + 'ab'.repeat(32), 'SHA256:' + 'ab'.repeat(32)]) {
    it(`unsupported: unknown digest algorithm (${digest.slice(0, digest.indexOf(':'))})`, () => {
      const o = one(ref({ digest }), [entry(RECORD, { digest })]);
      expect(o.status).toBe('unsupported');
      expect(o.expected).toBeUndefined();
    });
  }

  it('unsupported wins over an unknown canonicalization only when the digest parses', () => {
    expect(one(ref({ digest: 'md5:00', canonicalization: 'x' }), []).status).toBe('unsupported');
    // A broken digest is malformed whatever the canonicalization.
    expect(one(ref({ digest: 'sha256:00', canonicalization: 'x' }), []).status).toBe('malformed');
  });

  for (const [label, value] of [
    ['not an object', 'sha256:00'],
    ['null', null],
    ['an array', [ref()]],
    ['missing type', ref({ type: undefined })],
    ['missing digest', ref({ digest: undefined })],
    ['missing canonicalization', ref({ canonicalization: undefined })],
    ['a numeric type', ref({ type: 1 })],
    ['a digest without a colon', ref({ digest: D.slice(7) })],
    ['a digest with an empty alg', ref({ digest: ':' + D.slice(7) })],
    ['a digest of the wrong length', ref({ digest: D.slice(0, -2) })],
    ['a digest that is too long', ref({ digest: D + '00' })],
    ['a digest that is not hex', ref({ digest: D.slice(0, -1) + 'g' })],
    ['a sha384 digest with a sha256 length', ref({ digest: 'sha384:' + D.slice(7) })],
  ] as const) {
    it(`malformed: ${label}`, () => {
      const value2 = value === null || typeof value !== 'object' ? value : JSON.parse(JSON.stringify(value));
      const o = one(value2, [entry(RECORD, { digest: D })]);
      expect(o.status).toBe('malformed');
      expect(o.derived).toBeUndefined();
      expect(o.entryIndex).toBeUndefined();
    });
  }

  it('reports type and canonicalization as null when they are not strings', () => {
    const o = one(ref({ type: 1, canonicalization: {} }), []);
    expect(o).toMatchObject({ type: null, canonicalization: null, status: 'malformed' });
  });

  it('malformed: the record text was not I-JSON', () => {
    const o = one(ref(), [entry(RECORD, { digest: D, ijsonViolation: 'repeated member name' })]);
    expect(o.status).toBe('malformed');
    expect(o.entryIndex).toBe(0);
    expect(o.derived).toBeUndefined();
  });

  it('malformed: the record nests 129 levels; 128 levels verify', () => {
    const nest = (n: number): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < n; i++) v = [v];
      return v;
    };
    const d128 = sha('['.repeat(128) + '1' + ']'.repeat(128));
    const d129 = sha('['.repeat(129) + '1' + ']'.repeat(129));
    expect(one(ref({ digest: d128 }), [entry(nest(128), { digest: d128 })]).status).toBe('verified');
    const deep = one(ref({ digest: d129 }), [entry(nest(129), { digest: d129 })]);
    expect(deep.status).toBe('malformed');
    expect(deep.message).toMatch(/128/);
  });

  it('malformed: the record holds a lone surrogate', () => {
    for (const record of [{ a: '\ud800' }, { '\udc00': 1 }, ['ok', 'x\ud83d']]) {
      const o = one(ref(), [entry(record, { digest: D })]);
      expect(o.status).toBe('malformed');
      expect(o.message).toMatch(/surrogate/);
    }
  });

  it('verifies records of every JSON type, null included', () => {
    for (const [record, text] of [
      [null, 'null'],
      [true, 'true'],
      ['s', '"s"'],
      [1.5, '1.5'],
      [[], '[]'],
    ] as const) {
      const d = sha(text);
      expect(one(ref({ digest: d }), [entry(record, { digest: d })]).status).toBe('verified');
    }
  });
});

describe('verifyEvidence: matching', () => {
  it('matches by digest before ref, even when the ref entry comes first', () => {
    const o = one(ref({ ref: 'audit://1' }), [entry({ other: true }, { ref: 'audit://1' }), entry(RECORD, { digest: D })]);
    expect(o).toMatchObject({ status: 'verified', entryIndex: 1 });
  });

  it('takes the first of several entries with the same digest', () => {
    const o = one(ref(), [entry({ a: 'tampered', b: 1 }, { digest: D }), entry(RECORD, { digest: D })]);
    expect(o).toMatchObject({ status: 'mismatch', entryIndex: 0 });
  });

  it('falls back to the first entry with an equal ref', () => {
    const entries = [entry({ z: 1 }, { ref: 'audit://2' }), entry(RECORD, { ref: 'audit://1' }), entry({ y: 1 }, { ref: 'audit://1' })];
    expect(one(ref({ ref: 'audit://1' }), entries)).toMatchObject({ status: 'verified', entryIndex: 1 });
  });

  it('a ref match with another record is a mismatch', () => {
    expect(one(ref({ ref: 'audit://1' }), [entry({ z: 1 }, { ref: 'audit://1' })]).status).toBe('mismatch');
  });

  it('matches refs exactly and only as strings', () => {
    expect(one(ref({ ref: 'AUDIT://1' }), [entry(RECORD, { ref: 'audit://1' })]).status).toBe('unresolved');
    expect(one(ref({ ref: 1 }), [entry(RECORD, { ref: 1 })]).status).toBe('unresolved');
    expect(one(ref(), [entry(RECORD, { ref: undefined })]).status).toBe('unresolved');
  });

  it('compares digests case-insensitively and normalises upper-case hex', () => {
    const upper = 'sha256:' + D.slice(7).toUpperCase();
    expect(one(ref(), [entry(RECORD, { digest: upper })])).toMatchObject({ status: 'verified', expected: D, derived: D });
    expect(one(ref({ digest: upper }), [entry(RECORD, { digest: D })])).toMatchObject({ status: 'verified', expected: D });
    expect(one(ref({ digest: upper }), [entry(RECORD, { digest: 'SHA256:' + D.slice(7).toUpperCase() })]).status).toBe(
      'verified',
    );
  });

  it('ignores entries whose digest is not a string', () => {
    expect(one(ref(), [entry(RECORD, { digest: 42 }), entry(RECORD, { digest: [D] })]).status).toBe('unresolved');
  });

  for (const alg of ['sha384', 'sha512'] as const) {
    it(`verifies ${alg} digests`, () => {
      const d = sha(RECORD_JCS, alg);
      expect(one(ref({ digest: d }), [entry(RECORD, { digest: d })])).toMatchObject({ status: 'verified', derived: d });
      expect(one(ref({ digest: d }), [entry({ a: 1 }, { digest: d })]).status).toBe('mismatch');
    });
  }

  it('verifies unknown evidence types like any other', () => {
    const o = one(ref({ type: 'x-vendor.unheard-of.v7' }), [entry(RECORD, { digest: D })]);
    expect(o).toMatchObject({ status: 'verified', type: 'x-vendor.unheard-of.v7' });
  });

  it('answers one outcome per site, in order, with scopes kept', () => {
    const sites = [site(ref()), site(ref({ digest: 'md5:0' }), 0), site('x', 3)];
    const out = verifyEvidence(sites, [entry(RECORD, { digest: D })]);
    expect(out.map((o) => [o.pointer, o.scope, o.status])).toEqual([
      [RP, 'result', 'verified'],
      [BP(0), 0, 'unsupported'],
      [BP(3), 3, 'malformed'],
    ]);
  });

  it('canonicalizes a record once per scheme however many refs name it', () => {
    let reads = 0;
    const record: Record<string, unknown> = {};
    Object.defineProperty(record, 'a', {
      enumerable: true,
      get: () => {
        reads++;
        return 'x';
      },
    });
    record['b'] = 1;
    const entries = [entry(record, { digest: D, ref: 'audit://1' })];
    verifyEvidence([site(ref())], entries);
    const once = reads;
    expect(once).toBeGreaterThan(0);
    reads = 0;
    const sites = [site(ref()), site(ref(), 0), site(ref({ ref: 'audit://1', digest: sha(RECORD_JCS, 'sha512') }), 1), site(ref(), 2)];
    const out = verifyEvidence(sites, entries);
    expect(out.map((o) => o.status)).toEqual(['verified', 'verified', 'verified', 'verified']);
    expect(reads).toBe(once);
  });

  it('never throws on odd entries', () => {
    const odd = [{ hasRecord: true }, { hasRecord: true, record: undefined, digest: D }] as EvidenceEntry[];
    expect(() => verifyEvidence([site(ref())], odd)).not.toThrow();
    expect(one(ref(), odd).status).toBe('malformed');
  });
});

// ---------------------------------------------------------------------------
// data-class.v1 through assessTrust

const dcRecord = (cls: unknown, regulatory?: unknown): Record<string, unknown> =>
  regulatory === undefined ? { class: cls } : { class: cls, regulatory };
/** An evidenceRef plus its entry for a data-class record, digest derived from hand-written JCS. */
function dc(record: Record<string, unknown>): { ref: Record<string, unknown>; entry: EvidenceEntry } {
  const canonical = JSON.stringify(Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1))));
  const digest = sha(canonical);
  return { ref: { type: 'data-class.v1', digest, canonicalization: 'jcs/rfc8785' }, entry: entry(record, { digest }) };
}
const textBlock = (claim?: Record<string, unknown>): Record<string, unknown> =>
  claim === undefined ? { type: 'text', text: 't' } : { type: 'text', text: 't', _meta: { [K]: claim } };
const doc = (content: unknown[], claim?: Record<string, unknown>): Record<string, unknown> =>
  claim === undefined ? { content } : { content, _meta: { [K]: claim } };

describe('data-class.v1', () => {
  it('public: no escalation, no finding, dataClass handed over', () => {
    const p = dc(dcRecord('public', ['GDPR']));
    const a = assessTrust(doc([textBlock()], { evidenceRef: p.ref }), [p.entry]);
    expect(a.labels).toEqual({ sensitive: null, untrusted: null });
    expect(a.result.dataClass).toEqual({ class: 'public', regulatory: ['gdpr'] });
    expect(a.blocks[0]!.dataClass).toEqual({ class: 'public', regulatory: ['gdpr'] });
    expect(a.blocks[0]!.sensitive).toBeNull();
    expect(a.result.asserted).toEqual({});
    expect(a.findings).toEqual([]);
  });

  it('result-level confidential without sensitive: result and every block become sensitive, reported once', () => {
    const c = dc(dcRecord('confidential'));
    const a = assessTrust(doc([textBlock(), textBlock({ sensitive: false })], { evidenceRef: c.ref }), [c.entry]);
    expect(a.labels.sensitive).toBe(true);
    expect(a.result.asserted).toEqual({ sensitive: true });
    expect(a.result.sources.sensitive).toEqual([RP]);
    expect(a.blocks.map((b) => b.sensitive)).toEqual([true, true]);
    expect(a.blocks[1]!.sources.sensitive).toEqual([RP]);
    expect(a.blocks[1]!.asserted).toEqual({ sensitive: true });
    expect(a.blocks[1]!.ownUnion).toEqual({ sensitive: false });
    expect(a.structured.sensitive).toBe(true);
    expect(a.findings).toEqual([
      { rule: 'trust.sensitive.missing', severity: 'warning', pointer: RP, message: expect.any(String) },
    ]);
    for (const f of a.findings) expect(f.message).not.toContain('confidential');
  });

  it('result-level confidential with sensitive: true: no finding, sources list claim and evidence', () => {
    const c = dc(dcRecord('confidential'));
    const a = assessTrust(doc([textBlock()], { sensitive: true, evidenceRef: c.ref }), [c.entry]);
    expect(a.findings).toEqual([]);
    expect(a.result.sources.sensitive).toEqual([`/_meta/${KT}/sensitive`, RP]);
    expect(a.blocks[0]!.sensitive).toBe(true);
  });

  it('result-level confidential is reported when one block is not sensitive by its claims', () => {
    const c = dc(dcRecord('confidential'));
    const a = assessTrust(doc([textBlock({ sensitive: true }), textBlock()], { evidenceRef: c.ref }), [c.entry]);
    expect(a.findings.map((f) => [f.rule, f.pointer])).toEqual([['trust.sensitive.missing', RP]]);
  });

  it('block-level confidential: that block and the labels become sensitive, not the other blocks', () => {
    const c = dc(dcRecord('confidential'));
    const a = assessTrust(doc([textBlock(), textBlock({ evidenceRef: c.ref })], { sensitive: false }), [c.entry]);
    expect(a.blocks.map((b) => b.sensitive)).toEqual([false, true]);
    expect(a.blocks[1]!.sources.sensitive).toEqual([BP(1)]);
    expect(a.labels.sensitive).toBe(true);
    expect(a.result.sources.sensitive).toEqual([BP(1)]);
    expect(a.structured.sensitive).toBe(false);
    expect(a.blocks[0]!.dataClass).toEqual({});
    expect(a.blocks[1]!.dataClass).toEqual({ class: 'confidential', regulatory: [] });
    expect(a.result.dataClass).toEqual({ class: 'confidential', regulatory: [] });
    expect(a.findings).toEqual([
      { rule: 'trust.sensitive.missing', severity: 'warning', pointer: BP(1), message: expect.any(String) },
    ]);
  });

  it('block-level confidential on a block already sensitive by the result-level claim is not reported', () => {
    const c = dc(dcRecord('confidential'));
    const a = assessTrust(doc([textBlock({ evidenceRef: c.ref })], { sensitive: true }), [c.entry]);
    expect(a.findings).toEqual([]);
  });

  for (const [label, cls, reported] of [
    ['an unknown class', 'top_secret_codeword', 'top_secret_codeword'],
    ['the class "unknown"', 'unknown', 'unknown'],
    ['a differently cased "Public"', 'Public', 'Public'],
    ['a class that is not a string', 42, 'unknown'],
    ['a missing class', undefined, 'unknown'],
  ] as const) {
    it(`${label} counts as non-public (fail closed)`, () => {
      const c = dc(cls === undefined ? { regulatory: [] } : dcRecord(cls));
      const a = assessTrust(doc([textBlock()], { evidenceRef: c.ref }), [c.entry]);
      expect(a.evidence[0]!.status).toBe('verified');
      expect(a.labels.sensitive).toBe(true);
      expect(a.result.dataClass).toEqual({ class: reported, regulatory: [] });
      expect(a.findings.map((f) => f.rule)).toEqual(['trust.sensitive.missing']);
    });
  }

  it('a verified data-class record that is not an object counts as non-public', () => {
    expect(readDataClass('public')).toEqual({ class: 'unknown', nonPublic: true, regulatory: [] });
    expect(readDataClass(null)).toMatchObject({ nonPublic: true });
  });

  it('unions regulatory lower-cased in order of first appearance; first non-public class wins', () => {
    const r = dc(dcRecord('public', ['GDPR', 'Hipaa', 7, 'gdpr']));
    const b1 = dc(dcRecord('personal', ['gdpr', 'PCI-DSS']));
    const b2 = dc(dcRecord('confidential', ['ccpa']));
    const a = assessTrust(
      doc([textBlock({ evidenceRef: b1.ref }), textBlock({ evidenceRef: b2.ref }), textBlock()], { evidenceRef: r.ref }),
      [r.entry, b1.entry, b2.entry],
    );
    expect(a.result.dataClass).toEqual({ class: 'personal', regulatory: ['gdpr', 'hipaa', 'pci-dss', 'ccpa'] });
    expect(a.blocks[0]!.dataClass).toEqual({ class: 'personal', regulatory: ['gdpr', 'hipaa', 'pci-dss'] });
    expect(a.blocks[1]!.dataClass).toEqual({ class: 'confidential', regulatory: ['gdpr', 'hipaa', 'ccpa'] });
    expect(a.blocks[2]!.dataClass).toEqual({ class: 'public', regulatory: ['gdpr', 'hipaa'] });
    expect(a.blocks.map((b) => b.sensitive)).toEqual([true, true, null]);
    expect(a.findings.map((f) => f.pointer)).toEqual([BP(0), BP(1)]);
  });

  it('ignores a regulatory member that is not an array, and reads labels and policyRef', () => {
    expect(readDataClass({ class: 'internal', regulatory: 'GDPR', labels: ['a', 1], policyRef: 'p://1' })).toEqual({
      class: 'internal',
      nonPublic: true,
      regulatory: [],
      labels: ['a'],
      policyRef: 'p://1',
    });
    expect(mergeDataClasses([])).toEqual({});
  });

  it('ignores data-class records that are not verified', () => {
    const c = dc(dcRecord('confidential'));
    const tampered = entry({ class: 'public' }, { digest: c.entry.digest });
    const a = assessTrust(doc([textBlock()], { evidenceRef: c.ref }), [tampered]);
    expect(a.evidence[0]!.status).toBe('mismatch');
    expect(a.result.dataClass).toEqual({});
    expect(a.labels.sensitive).toBeNull();
    expect(a.findings).toEqual([]);
  });

  it('reads class only from data-class.v1 evidence', () => {
    const c = dc(dcRecord('confidential'));
    const a = assessTrust(doc([textBlock()], { evidenceRef: { ...c.ref, type: 'data-class.v2' } }), [c.entry]);
    expect(a.evidence[0]!.status).toBe('verified');
    expect(a.result.dataClass).toEqual({});
    expect(a.labels.sensitive).toBeNull();
  });
});

describe('assessTrust: composition', () => {
  it('lists governing evidence per scope and all outcomes in document order', () => {
    const r = dc(dcRecord('public'));
    const a = assessTrust(
      doc([textBlock({ evidenceRef: { type: 'x', digest: 'md5:0', canonicalization: 'jcs/rfc8785' } }), textBlock()], {
        evidenceRef: r.ref,
        untrusted: true,
      }),
      [r.entry],
    );
    expect(a.evidence.map((o) => [o.pointer, o.status])).toEqual([
      [RP, 'verified'],
      [BP(0), 'unsupported'],
    ]);
    const rs = { type: 'data-class.v1', status: 'verified', canonicalization: 'jcs/rfc8785', pointer: RP };
    const bs = { type: 'x', status: 'unsupported', canonicalization: 'jcs/rfc8785', pointer: BP(0) };
    expect(a.result.evidence).toEqual([rs, bs]);
    expect(a.blocks[0]!.evidence).toEqual([rs, bs]);
    expect(a.blocks[1]!.evidence).toEqual([rs]);
    expect(a.blocks[0]).toMatchObject({ index: 0, type: 'text', untrusted: true, asserted: { untrusted: true } });
    expect(a.labels).toEqual({ sensitive: null, untrusted: true });
    expect(a.result).toMatchObject({ sensitive: null, untrusted: true, asserted: { untrusted: true } });
  });

  it('collects every trust finding', () => {
    const c = dc(dcRecord('restricted'));
    const a = assessTrust(
      doc([textBlock({ sensitive: 'yes', untrusted: false, evidenceRef: { type: 'x' } }), textBlock({ evidenceRef: c.ref })], {
        untrusted: true,
      }),
      [c.entry],
    );
    expect(a.findings.map((f) => [f.rule, f.pointer])).toEqual([
      ['trust.annotation.type', `/content/0/_meta/${KT}/sensitive`],
      ['trust.evidenceRef.shape', BP(0)],
      ['trust.evidenceRef.shape', BP(0)],
      ['trust.no-weakening', `/content/0/_meta/${KT}/untrusted`],
      ['trust.sensitive.missing', BP(1)],
    ]);
  });

  it('never throws for inputs of any shape', () => {
    for (const input of [null, 'x', [], { content: 5 }, { _meta: { [K]: { evidenceRef: null } } }]) {
      expect(() => assessTrust(input, [])).not.toThrow();
    }
    expect(assessTrust({ _meta: { [K]: { evidenceRef: null } } }, []).evidence[0]!.status).toBe('malformed');
  });
});
