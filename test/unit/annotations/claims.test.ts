import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readTrust, type TrustReading } from '../../../src/annotations/claims.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';
import { type Tri } from '../../../src/annotations/tri.js';

const K = TRUST_KEY;
/** K as an RFC 6901 reference token. */
const KT = 'io.modelcontextprotocol~1trust-annotations';
const SHA = 'sha256:' + 'ab'.repeat(32);

const text = (meta?: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => {
  const b: Record<string, unknown> = { type: 'text', text: 'hello', ...extra };
  if (meta !== undefined) b['_meta'] = { [K]: meta };
  return b;
};
const result = (content: unknown, claim?: unknown): Record<string, unknown> => {
  const r: Record<string, unknown> = { content };
  if (claim !== undefined) r['_meta'] = { [K]: claim };
  return r;
};
const rules = (r: TrustReading): string[] => r.findings.map((f) => f.rule);

describe('readTrust: tri-state flags', () => {
  it('reads absent flags as no claim (null), never false', () => {
    const r = readTrust(result([text({})], {}));
    expect(r.labels).toEqual({ sensitive: null, untrusted: null });
    expect(r.blocks[0]).toMatchObject({ sensitive: null, untrusted: null, ownUnion: {} });
    expect(r.findings).toEqual([]);
  });

  it('keeps asserted false apart from absent', () => {
    const r = readTrust(result([text()], { sensitive: false }));
    expect(r.labels).toEqual({ sensitive: false, untrusted: null });
    expect(r.blocks[0]!.sensitive).toBe(false);
    expect(r.blocks[0]!.untrusted).toBeNull();
  });

  it('reads a result without any _meta as no claims', () => {
    const r = readTrust({ content: [{ type: 'text', text: 'x' }] });
    expect(r.labels).toEqual({ sensitive: null, untrusted: null });
    expect(r.resultClaim).toEqual({ sensitive: null, untrusted: null });
    expect(r.blocks).toHaveLength(1);
    expect(r.evidence).toEqual([]);
  });
});

describe('readTrust: union table (result-level × block-level)', () => {
  type V = true | false | undefined;
  const values: V[] = [true, false, undefined];
  const name = (v: V): string => (v === undefined ? 'absent' : String(v));
  // Expected effective block flag and result label for each pair.
  const blockExpect = (r: V, b: V): Tri => (r === true || b === true ? true : r === false || b === false ? false : null);
  const labelExpect = (r: V, b: V): Tri => (r === true || b === true ? true : r === false ? false : null);

  for (const rv of values) {
    for (const bv of values) {
      it(`result ${name(rv)} × block ${name(bv)}`, () => {
        const r = readTrust(
          result([text(bv === undefined ? {} : { untrusted: bv })], rv === undefined ? {} : { untrusted: rv }),
        );
        expect(r.blocks[0]!.untrusted).toBe(blockExpect(rv, bv));
        expect(r.labels.untrusted).toBe(labelExpect(rv, bv));
        expect(r.resultClaim.untrusted).toBe(rv === undefined ? null : rv);
        expect(r.blocks[0]!.ownUnion).toEqual(bv === undefined ? {} : { untrusted: bv });
        // Only the weakening attempt is reported.
        expect(rules(r)).toEqual(rv === true && bv === false ? ['trust.no-weakening'] : []);
      });
    }
  }

  it('spelled out: block-level table values', () => {
    expect(blockExpect(true, false)).toBe(true);
    expect(blockExpect(false, true)).toBe(true);
    expect(blockExpect(undefined, false)).toBe(false);
    expect(labelExpect(undefined, false)).toBeNull();
    expect(labelExpect(false, undefined)).toBe(false);
  });

  it('a block-level true anywhere makes the result label true, not the other blocks', () => {
    const r = readTrust(result([text(), text({ sensitive: true }), text({ sensitive: false })], { sensitive: false }));
    expect(r.labels.sensitive).toBe(true);
    expect(r.blocks.map((b) => b.sensitive)).toEqual([false, true, false]);
    expect(r.resultClaim.sensitive).toBe(false);
  });
});

describe('readTrust: no-weakening', () => {
  it('ignores a block-level false under a result-level true and reports it at the flag', () => {
    const r = readTrust(result([text(), text({ sensitive: false, untrusted: false })], { sensitive: true }));
    expect(r.blocks[1]!.sensitive).toBe(true);
    expect(r.blocks[1]!.untrusted).toBe(false);
    expect(r.blocks[1]!.sources.sensitive).toEqual([`/_meta/${KT}/sensitive`]);
    expect(r.blocks[1]!.ownUnion).toEqual({ sensitive: false, untrusted: false });
    expect(r.findings).toEqual([
      {
        rule: 'trust.no-weakening',
        severity: 'warning',
        pointer: `/content/1/_meta/${KT}/sensitive`,
        message: expect.any(String),
      },
    ]);
  });

  it('does not report two block-level claims that disagree', () => {
    const block = {
      type: 'resource',
      resource: { uri: 'file:///a', text: 'a', _meta: { [K]: { sensitive: true } } },
      _meta: { [K]: { sensitive: false } },
    };
    const r = readTrust(result([block]));
    expect(r.blocks[0]!.sensitive).toBe(true);
    expect(r.findings).toEqual([]);
  });

  it('counts a malformed result-level flag as true for no-weakening too', () => {
    const r = readTrust(result([text({ untrusted: false })], { untrusted: 'yes' }));
    expect(rules(r)).toEqual(['trust.annotation.type', 'trust.no-weakening']);
    expect(r.blocks[0]!.untrusted).toBe(true);
  });
});

describe('readTrust: embedded resource _meta', () => {
  it('honours resource._meta on a resource block', () => {
    const block = { type: 'resource', resource: { uri: 'file:///a', text: 'a', _meta: { [K]: { untrusted: true } } } };
    const r = readTrust(result([block]));
    expect(r.blocks[0]!.untrusted).toBe(true);
    expect(r.blocks[0]!.sources.untrusted).toEqual([`/content/0/resource/_meta/${KT}/untrusted`]);
    expect(r.blocks[0]!.ownUnion).toEqual({ untrusted: true });
    expect(r.labels.untrusted).toBe(true);
  });

  it('unites the block _meta and the resource _meta, block first', () => {
    const block = {
      type: 'resource',
      _meta: { [K]: { sensitive: true, evidenceRef: { type: 't', digest: SHA, canonicalization: 'jcs/rfc8785' } } },
      resource: {
        uri: 'file:///a',
        blob: 'AA==',
        _meta: { [K]: { sensitive: true, evidenceRef: { type: 'u', digest: SHA, canonicalization: 'jcs/rfc8785' } } },
      },
    };
    const r = readTrust(result([block]));
    expect(r.blocks[0]!.sources.sensitive).toEqual([
      `/content/0/_meta/${KT}/sensitive`,
      `/content/0/resource/_meta/${KT}/sensitive`,
    ]);
    expect(r.evidence.map((e) => [e.pointer, e.scope])).toEqual([
      [`/content/0/_meta/${KT}/evidenceRef`, 0],
      [`/content/0/resource/_meta/${KT}/evidenceRef`, 0],
    ]);
    expect(r.blocks[0]!.evidence).toEqual(r.evidence);
  });

  it('ignores resource._meta on a block that is not of type resource', () => {
    const block = { type: 'text', text: 'x', resource: { _meta: { [K]: { sensitive: true } } } };
    const r = readTrust(result([block]));
    expect(r.blocks[0]!.sensitive).toBeNull();
  });

  it('reads nothing from a resource that is not an object or has a non-object _meta', () => {
    const r = readTrust(result([{ type: 'resource', resource: 'x' }, { type: 'resource', resource: { _meta: [] } }]));
    expect(r.blocks.map((b) => b.sensitive)).toEqual([null, null]);
    expect(r.findings).toEqual([]);
  });
});

describe('readTrust: misplaced claims in annotations', () => {
  it('honours a true flag inside annotations without reporting it again', () => {
    const r = readTrust(result([text(undefined, { annotations: { sensitive: true } })]));
    expect(r.blocks[0]!.sensitive).toBe(true);
    expect(r.blocks[0]!.sources.sensitive).toEqual(['/content/0/annotations/sensitive']);
    expect(r.blocks[0]!.ownUnion).toEqual({ sensitive: true });
    expect(r.labels.sensitive).toBe(true);
    expect(r.findings).toEqual([]);
  });

  it('honours a non-boolean flag inside annotations as true (fail closed)', () => {
    const r = readTrust(result([text(undefined, { annotations: { untrusted: 'yes' } })]));
    expect(r.blocks[0]!.untrusted).toBe(true);
    expect(r.findings).toEqual([]);
  });

  it('ignores a false flag inside annotations', () => {
    const r = readTrust(result([text(undefined, { annotations: { sensitive: false, untrusted: false } })]));
    expect(r.blocks[0]!).toMatchObject({ sensitive: null, untrusted: null, ownUnion: {} });
    expect(r.labels).toEqual({ sensitive: null, untrusted: null });
  });

  it('ignores annotations that are not an object', () => {
    const r = readTrust(result([text(undefined, { annotations: [true] })]));
    expect(r.blocks[0]!.sensitive).toBeNull();
  });
});

describe('readTrust: malformed claims', () => {
  for (const [label, value] of [
    ['"yes"', 'yes'],
    ['1', 1],
    ['null', null],
    ['an object', {}],
  ] as const) {
    it(`counts a flag of ${label} as true and reports trust.annotation.type`, () => {
      const r = readTrust(result([text({ sensitive: value })]));
      expect(r.blocks[0]!.sensitive).toBe(true);
      expect(r.labels.sensitive).toBe(true);
      expect(r.findings).toEqual([
        {
          rule: 'trust.annotation.type',
          severity: 'error',
          pointer: `/content/0/_meta/${KT}/sensitive`,
          message: expect.any(String),
        },
      ]);
    });
  }

  it('never quotes the offending value in messages', () => {
    const r = readTrust(result([text({ sensitive: 'SECRET-VALUE-123' })], 'SECRET-VALUE-456'));
    expect(r.findings).toHaveLength(2);
    for (const f of r.findings) expect(f.message).not.toMatch(/SECRET/);
  });

  for (const [label, value] of [
    ['a string', 'yes'],
    ['true', true],
    ['an array', [{ sensitive: true }]],
    ['null', null],
    ['a number', 3],
  ] as const) {
    it(`reports a claim that is ${label} and reads no claim from it`, () => {
      const r = readTrust(result([text(value)], value));
      expect(r.labels).toEqual({ sensitive: null, untrusted: null });
      expect(r.blocks[0]).toMatchObject({ sensitive: null, untrusted: null });
      expect(r.findings).toEqual([
        { rule: 'trust.annotation.type', severity: 'error', pointer: `/_meta/${KT}`, message: expect.any(String) },
        { rule: 'trust.annotation.type', severity: 'error', pointer: `/content/0/_meta/${KT}`, message: expect.any(String) },
      ]);
    });
  }

  it('reads nothing and reports nothing from a _meta that is not an object', () => {
    for (const meta of ['x', 1, null, [{ [K]: { sensitive: true } }], true]) {
      const r = readTrust({ _meta: meta, content: [{ type: 'text', text: 'x', _meta: meta }] });
      expect(r.labels).toEqual({ sensitive: null, untrusted: null });
      expect(r.blocks[0]!.sensitive).toBeNull();
      expect(r.findings).toEqual([]);
    }
  });

  it('ignores unknown members of a claim', () => {
    const r = readTrust(result([text({ sensitivity: true, 'x-extra': 1 })]));
    expect(r.blocks[0]!.sensitive).toBeNull();
    expect(r.findings).toEqual([]);
  });
});

describe('readTrust: inputs of any shape', () => {
  for (const input of [null, undefined, 0, 'text', true, [], [1, 2], {}, { content: 'x' }, { content: {} }, { content: null }]) {
    it(`does not throw for ${JSON.stringify(input) ?? 'undefined'}`, () => {
      const r = readTrust(input);
      expect(r.blocks).toEqual([]);
      expect(r.labels).toEqual({ sensitive: null, untrusted: null });
    });
  }

  it('keeps a result-level claim when content is not an array', () => {
    const r = readTrust({ content: 'x', _meta: { [K]: { sensitive: true } } });
    expect(r.blocks).toEqual([]);
    expect(r.labels.sensitive).toBe(true);
  });

  it('gives blocks that are not objects (or lack a string type) the type ""', () => {
    const r = readTrust(result([null, 1, 'x', [], { type: 5 }], { untrusted: true }));
    expect(r.blocks.map((b) => [b.index, b.type, b.untrusted])).toEqual([
      [0, '', true],
      [1, '', true],
      [2, '', true],
      [3, '', true],
      [4, '', true],
    ]);
  });
});

describe('readTrust: prototype keys are data', () => {
  it('neither pollutes nor reads through __proto__ and constructor', () => {
    const protoNames = Object.getOwnPropertyNames(Object.prototype).sort();
    const input: unknown = JSON.parse(
      JSON.stringify({
        content: [
          {
            type: 'text',
            text: 'x',
            _meta: { ['__proto__X']: 1, constructor: { [K]: { sensitive: true } } },
            annotations: { constructor: true },
          },
        ],
      }).replace('__proto__X', '__proto__'),
    );
    // Keys JSON.parse creates as own data properties.
    const polluting: unknown = JSON.parse(
      `{"_meta":{"__proto__":{"${K}":{"sensitive":true},"polluted":true},"${K}":{"__proto__":{"sensitive":true,"polluted":true},"constructor":{"prototype":{"polluted":true}},"evidenceRef":{"__proto__":{"type":"x"},"digest":"${SHA}","canonicalization":"jcs/rfc8785"}}},"content":[{"type":"resource","resource":{"_meta":{"__proto__":{"${K}":{"untrusted":true}}}},"_meta":{"${K}":{"__proto__":{"untrusted":true}}}}]}`,
    );
    for (const x of [input, polluting]) {
      const r = readTrust(x);
      expect(r.labels).toEqual({ sensitive: null, untrusted: null });
      expect(r.blocks[0]!.sensitive).toBeNull();
      expect(r.blocks[0]!.untrusted).toBeNull();
    }
    // `type` lives only under __proto__, so it is missing.
    expect(rules(readTrust(polluting))).toEqual(['trust.evidenceRef.shape']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(({} as Record<string, unknown>)['sensitive']).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoNames);
  });

  it('does not read flags a claim only inherits', () => {
    const claim = Object.create({ sensitive: true, evidenceRef: {} }) as Record<string, unknown>;
    const r = readTrust({ content: [], _meta: { [K]: claim } });
    expect(r.labels.sensitive).toBeNull();
    expect(r.evidence).toEqual([]);
  });
});

describe('readTrust: evidenceRef sites and shape', () => {
  const ref = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
    type: 'data-class.v1',
    digest: SHA,
    canonicalization: 'jcs/rfc8785',
    ...over,
  });

  it('collects every site in document order with its scope', () => {
    const r = readTrust(
      result([text({ evidenceRef: ref() }), text(), text({ evidenceRef: 'x' })], { evidenceRef: ref({ type: 'other' }) }),
    );
    expect(r.evidence.map((e) => [e.pointer, e.scope])).toEqual([
      [`/_meta/${KT}/evidenceRef`, 'result'],
      [`/content/0/_meta/${KT}/evidenceRef`, 0],
      [`/content/2/_meta/${KT}/evidenceRef`, 2],
    ]);
    expect(r.evidence[2]!.value).toBe('x');
    expect(r.blocks[0]!.evidence).toHaveLength(1);
    expect(r.blocks[1]!.evidence).toHaveLength(0);
    expect(r.blocks[2]!.evidence).toHaveLength(1);
  });

  it('accepts a well-formed evidenceRef, upper-case hex, unknown type and canonicalization', () => {
    for (const e of [ref(), ref({ digest: SHA.toUpperCase().replace('SHA256', 'sha256') }), ref({ type: 'x.v9', canonicalization: 'xml/c14n' })]) {
      expect(readTrust(result([], { evidenceRef: e })).findings).toEqual([]);
    }
  });

  it('does not treat an unknown digest algorithm as a shape error', () => {
    expect(readTrust(result([], { evidenceRef: ref({ digest: 'md5:00' }) })).findings).toEqual([]);
  });

  const P = `/_meta/${KT}/evidenceRef`;
  for (const [label, e, pointers] of [
    ['a string', 'sha256:00', [P]],
    ['null', null, [P]],
    ['an array', [ref()], [P]],
    ['missing type', ref({ type: undefined }), [P]],
    ['missing all fields', {}, [P, P, P]],
    ['a numeric digest', ref({ digest: 7 }), [`${P}/digest`]],
    ['a non-string canonicalization', ref({ canonicalization: ['jcs/rfc8785'] }), [`${P}/canonicalization`]],
    ['a digest without a colon', ref({ digest: 'ab'.repeat(32) }), [`${P}/digest`]],
    ['a digest of the wrong length', ref({ digest: 'sha256:abcd' }), [`${P}/digest`]],
    ['a digest that is not hex', ref({ digest: 'sha256:' + 'zz'.repeat(32) }), [`${P}/digest`]],
    ['a sha512 digest with a sha256 length', ref({ digest: 'sha512:' + 'ab'.repeat(32) }), [`${P}/digest`]],
  ] as const) {
    it(`reports trust.evidenceRef.shape for ${label}`, () => {
      const value = JSON.parse(JSON.stringify({ evidenceRef: e })) as Record<string, unknown>;
      const r = readTrust(result([], value));
      expect(r.findings.map((f) => [f.rule, f.severity, f.pointer])).toEqual(
        pointers.map((p) => ['trust.evidenceRef.shape', 'error', p]),
      );
      // The site is still collected: verification answers `malformed` for it.
      expect(r.evidence).toHaveLength(1);
    });
  }
});

describe('readTrust: sources', () => {
  it('names every claim that produced each effective value', () => {
    const r = readTrust(
      result(
        [
          text({ sensitive: true, untrusted: false }, { annotations: { untrusted: true } }),
          text({ untrusted: false }),
          text(),
        ],
        { sensitive: false },
      ),
    );
    expect(r.labelSources).toEqual({
      sensitive: [`/content/0/_meta/${KT}/sensitive`],
      untrusted: ['/content/0/annotations/untrusted'],
    });
    expect(r.resultClaimSources).toEqual({ sensitive: [`/_meta/${KT}/sensitive`], untrusted: [] });
    expect(r.blocks[0]!.sources).toEqual({
      sensitive: [`/content/0/_meta/${KT}/sensitive`],
      untrusted: ['/content/0/annotations/untrusted'],
    });
    expect(r.blocks[1]!.sources).toEqual({
      sensitive: [`/_meta/${KT}/sensitive`],
      untrusted: [`/content/1/_meta/${KT}/untrusted`],
    });
    expect(r.blocks[2]!.sources).toEqual({ sensitive: [`/_meta/${KT}/sensitive`], untrusted: [] });
  });

  it('lists result-level and block-level true claims together', () => {
    const r = readTrust(result([text({ sensitive: true })], { sensitive: true }));
    expect(r.blocks[0]!.sources.sensitive).toEqual([`/_meta/${KT}/sensitive`, `/content/0/_meta/${KT}/sensitive`]);
    expect(r.labelSources.sensitive).toEqual([`/_meta/${KT}/sensitive`, `/content/0/_meta/${KT}/sensitive`]);
  });
});

// ---------------------------------------------------------------------------
// Properties

const SEED = 20260728;
const flagValue = fc.constantFrom<unknown>(true, false, 'yes', 1, null);
const claimArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ sensitive: flagValue, untrusted: flagValue, note: fc.string() }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('x', null, [], 3) },
);
const metaArb = fc.option(fc.record({ [K]: claimArb }, { requiredKeys: [] }), { nil: undefined });
const blockArb = fc
  .record({
    type: fc.constantFrom('text', 'resource', 'image'),
    meta: metaArb,
    resourceMeta: metaArb,
    annotations: fc.option(fc.record({ sensitive: flagValue, untrusted: flagValue }, { requiredKeys: [] }), {
      nil: undefined,
    }),
  })
  .map(({ type, meta, resourceMeta, annotations }) => {
    const b: Record<string, unknown> = { type };
    if (meta !== undefined) b['_meta'] = meta;
    if (type === 'resource') b['resource'] = resourceMeta === undefined ? { uri: 'x:', text: '' } : { uri: 'x:', text: '', _meta: resourceMeta };
    if (annotations !== undefined) b['annotations'] = annotations;
    return b;
  });
const resultArb = fc.record({ content: fc.array(blockArb, { maxLength: 6 }), meta: metaArb }).map(({ content, meta }) => {
  const r: Record<string, unknown> = { content };
  if (meta !== undefined) r['_meta'] = meta;
  return r;
});

/** Rebuild every object with its keys in reverse order. */
function reverseKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reverseKeys);
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).reverse()) out[k] = reverseKeys((v as Record<string, unknown>)[k]);
  return out;
}

/** RFC 6901 resolution, for checking that a source names what it claims. */
function resolvePointer(doc: unknown, p: string): unknown {
  let cur = doc;
  for (const raw of p.split('/').slice(1)) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[token];
  }
  return cur;
}

const rank = (v: Tri): number => (v === null ? 0 : v ? 2 : 1);

describe('readTrust: properties', () => {
  it('permuting blocks permutes block results and keeps the labels', () => {
    fc.assert(
      fc.property(
        resultArb.chain((r) =>
          fc.tuple(fc.constant(r), fc.shuffledSubarray([...(r['content'] as unknown[]).keys()], {
            minLength: (r['content'] as unknown[]).length,
          })),
        ),
        ([r, perm]) => {
          const content = r['content'] as unknown[];
          const permuted = { ...r, content: perm.map((i) => content[i]) };
          const a = readTrust(r);
          const b = readTrust(permuted);
          expect(b.labels).toEqual(a.labels);
          expect(b.findings.length).toBe(a.findings.length);
          perm.forEach((from, to) => {
            const x = a.blocks[from]!;
            const y = b.blocks[to]!;
            expect([y.type, y.sensitive, y.untrusted, y.ownUnion, y.sources.sensitive.length]).toEqual([
              x.type,
              x.sensitive,
              x.untrusted,
              x.ownUnion,
              x.sources.sensitive.length,
            ]);
          });
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('does not depend on the key order of claims', () => {
    fc.assert(
      fc.property(resultArb, (r) => {
        expect(readTrust(reverseKeys(r))).toEqual(readTrust(r));
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('adding a true claim never lowers an effective flag', () => {
    fc.assert(
      fc.property(resultArb, fc.nat(), fc.constantFrom('sensitive', 'untrusted'), (r, where, flag) => {
        const before = readTrust(r);
        const content = (r['content'] as Array<Record<string, unknown>>).map((b) => ({ ...b }));
        const slot = where % (content.length + 1);
        const after = structuredClone({ ...r, content }) as Record<string, unknown>;
        const holder = slot === content.length ? after : (after['content'] as Array<Record<string, unknown>>)[slot]!;
        const meta = holder['_meta'];
        const claim = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[K] : undefined;
        holder['_meta'] = {
          ...(typeof meta === 'object' && meta !== null ? meta : {}),
          [K]: { ...(typeof claim === 'object' && claim !== null && !Array.isArray(claim) ? claim : {}), [flag]: true },
        };
        const next = readTrust(after);
        for (const f of ['sensitive', 'untrusted'] as const) {
          expect(rank(next.labels[f])).toBeGreaterThanOrEqual(rank(before.labels[f]));
          before.blocks.forEach((b, i) => expect(rank(next.blocks[i]![f])).toBeGreaterThanOrEqual(rank(b[f])));
        }
        const target = slot === content.length ? next.labels : next.blocks[slot]!;
        expect(target[flag]).toBe(true);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('an absent flag never reads as false: every false comes from a literal false', () => {
    fc.assert(
      fc.property(resultArb, (r) => {
        const t = readTrust(r);
        const scopes = [{ flags: t.labels, sources: t.labelSources }, ...t.blocks.map((b) => ({ flags: b, sources: b.sources }))];
        for (const { flags, sources } of scopes) {
          for (const f of ['sensitive', 'untrusted'] as const) {
            if (flags[f] === null) expect(sources[f]).toEqual([]);
            else {
              expect(sources[f].length).toBeGreaterThan(0);
              for (const p of sources[f]) {
                const v = resolvePointer(r, p);
                if (flags[f] === false) expect(v).toBe(false);
                else expect(v).not.toBe(false);
              }
            }
          }
        }
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('claims without any false never produce false', () => {
    const noFalse = fc.constantFrom<unknown>(true, 'yes', null);
    const claim = fc.record({ sensitive: noFalse, untrusted: noFalse }, { requiredKeys: [] });
    fc.assert(
      fc.property(fc.array(fc.option(claim, { nil: undefined }), { maxLength: 5 }), fc.option(claim, { nil: undefined }), (blocks, top) => {
        const t = readTrust(result(blocks.map((c) => text(c)), top));
        for (const f of ['sensitive', 'untrusted'] as const) {
          expect(t.labels[f]).not.toBe(false);
          for (const b of t.blocks) expect(b[f]).not.toBe(false);
        }
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});
