import { readFileSync, readdirSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CanonicalizationError,
  canonicalBytes,
  deriveDigest,
  jcsText,
  parseDigest,
  parseDigestFresh,
} from '../../../src/evidence/digest.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';
import { CANONICALIZATIONS, type Canonicalization } from '../../../src/evidence/algorithms.js';

const vectors = new URL('../../vectors/', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, vectors), 'utf8');

/** The double whose IEEE-754 bits are `hex` (leading zeros may be omitted). */
function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt('0x' + hex));
  return view.getFloat64(0);
}

const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

// ---------------------------------------------------------------------------
// Trust Annotations conformance pack

interface PackRef {
  id: string;
  record: unknown;
  digest: string;
  canonicalization: Canonicalization;
}

/** Every evidenceRef of the pack, with the record it names. */
function conformancePack(): PackRef[] {
  const pack = JSON.parse(read('trust-annotations/examples.json')) as {
    cases: Array<Record<string, unknown> & { id: string; record: unknown }>;
  };
  const out: PackRef[] = [];
  for (const c of pack.cases) {
    for (const key of ['wire', 'wire_jcs', 'wire_cbor']) {
      const wire = c[key] as Record<string, Record<string, Record<string, unknown>>> | undefined;
      if (wire === undefined) continue;
      const claim = (wire['_meta'] ?? wire['content_block_meta'])![TRUST_KEY]!;
      const ref = claim['evidenceRef'] as { digest: string; canonicalization: Canonicalization };
      out.push({ id: `${c.id} ${key}`, record: c.record, digest: ref.digest, canonicalization: ref.canonicalization });
    }
  }
  return out;
}

describe('conformance pack: every digest re-derives byte for byte', () => {
  const refs = conformancePack();

  it('holds nine digests', () => {
    expect(refs).toHaveLength(9);
    expect(refs.filter((r) => r.canonicalization === 'cbor/rfc8949')).toHaveLength(3);
  });

  for (const r of refs) {
    it(`${r.id} (${r.canonicalization})`, () => {
      expect(deriveDigest(r.record, r.canonicalization, 'sha256').digest).toBe(r.digest);
    });
  }

  it('B3: one record, two envelopes, two digests', () => {
    const b3 = refs.filter((r) => r.id.startsWith('B3'));
    expect(b3).toHaveLength(2);
    expect(b3[0]!.digest).not.toBe(b3[1]!.digest);
  });
});

// ---------------------------------------------------------------------------
// RFC 8785 vectors (cyberphone/json-canonicalization testdata)

describe('JCS: input -> output files', () => {
  const names = readdirSync(new URL('jcs/input/', vectors)).filter((n) => n.endsWith('.json'));

  it('has the six vector files', () => {
    expect(names.sort()).toEqual(['arrays.json', 'french.json', 'structures.json', 'unicode.json', 'values.json', 'weird.json']);
  });

  for (const name of names) {
    const stem = name.replace(/\.json$/, '');
    it(`${stem}: canonical text and bytes`, () => {
      const input: unknown = JSON.parse(read(`jcs/input/${name}`));
      const expectedText = read(`jcs/output/${name}`);
      const expectedHex = read(`jcs/outhex/${stem}.txt`).trim().split(/\s+/).join('');
      expect(jcsText(input)).toBe(expectedText);
      expect(toHex(canonicalBytes(input, 'jcs/rfc8785'))).toBe(expectedHex.toLowerCase());
      expect(toHex(Buffer.from(expectedText, 'utf8'))).toBe(expectedHex.toLowerCase());
    });
  }
});

describe('JCS: RFC 8785 Appendix B number serialization', () => {
  const rows = read('jcs/numbers/rfc8785-appendix-b.csv')
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [hex, expected, ...comment] = l.split(',');
      return { hex: hex!, expected: expected!, comment: comment.join(',') };
    });

  it('has every row of the appendix', () => {
    expect(rows).toHaveLength(26);
    expect(rows.filter((r) => r.expected === '')).toHaveLength(2);
  });

  for (const row of rows) {
    const label = `${row.hex} ${row.comment || row.expected}`;
    if (row.expected === '') {
      it(`${label}: rejected`, () => {
        const n = fromBits(row.hex);
        expect(Number.isFinite(n)).toBe(false);
        expect(() => jcsText(n)).toThrow(CanonicalizationError);
        expect(() => canonicalBytes({ n }, 'jcs/rfc8785')).toThrow(CanonicalizationError);
      });
    } else {
      it(`${label}`, () => {
        expect(jcsText(fromBits(row.hex))).toBe(row.expected);
        expect(jcsText([fromBits(row.hex)])).toBe(`[${row.expected}]`);
      });
    }
  }
});

describe('JCS: ES6 number serialization, first 10,000 lines of es6testfile', () => {
  it('serializes every line', () => {
    const lines = read('jcs/numbers/es6testfile-first10k.txt').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    expect(lines).toHaveLength(10_000);
    const failures: string[] = [];
    lines.forEach((line, i) => {
      const comma = line.indexOf(',');
      const hex = line.slice(0, comma);
      const expected = line.slice(comma + 1);
      let got: string;
      try {
        got = jcsText(fromBits(hex));
      } catch (err) {
        got = `threw ${(err as Error).message}`;
      }
      if (got !== expected) failures.push(`line ${i + 1}: ${hex} expected ${expected}, got ${got}`);
    });
    expect(failures.slice(0, 5)).toEqual([]);
  });
});

describe('JCS: RFC 8785 section 3.2.3 sorting example', () => {
  it('emits properties in UTF-16 code unit order', () => {
    const v = JSON.parse(read('jcs/sorting-rfc8785.json')) as { input: string; expected_value_order: string[] };
    const text = jcsText(JSON.parse(v.input));
    // Object.values would put the integer-like key first, so read the text.
    const order = [...text.matchAll(/:"([^"]*)"/g)].map((m) => m[1]);
    expect(order).toEqual(v.expected_value_order);
  });
});

// ---------------------------------------------------------------------------

describe('parseDigest', () => {
  const h = (n: number): string => 'a1'.repeat(n / 2);

  it('answers what a fresh parse answers, for digests repeated, alternating or equal but built apart', () => {
    const hex = fc.array(fc.constantFrom(...'0123456789abcdefABCDEFxz'), { minLength: 60, maxLength: 130 }).map((a) => a.join(''));
    const digest = fc.oneof(
      fc.tuple(fc.constantFrom('sha256', 'sha384', 'sha512', 'SHA256', 'md5', ''), hex).map(([alg, v]) => `${alg}:${v}`),
      fc.constantFrom(`sha256:${h(64)}`, `sha256:${h(64).toUpperCase()}`, `sha384:${h(96)}`, `sha512:${h(128)}`, 'sha256:', ''),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(digest, fc.boolean()), { maxLength: 12 }), (seq) => {
        for (const [d, apart] of seq) {
          const text = apart ? [...d].join('') : d;
          expect(parseDigest(text)).toEqual(parseDigestFresh(d));
          // Asked again right away, as a decision does.
          expect(parseDigest(text)).toEqual(parseDigestFresh(d));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('parses each supported algorithm at its length', () => {
    expect(parseDigest(`sha256:${h(64)}`)).toEqual({ ok: true, alg: 'sha256', hex: h(64), normalized: `sha256:${h(64)}` });
    expect(parseDigest(`sha384:${h(96)}`)).toMatchObject({ ok: true, alg: 'sha384' });
    expect(parseDigest(`sha512:${h(128)}`)).toMatchObject({ ok: true, alg: 'sha512' });
  });

  it('normalises upper-case hex', () => {
    expect(parseDigest(`sha256:${h(64).toUpperCase()}`)).toMatchObject({ ok: true, hex: h(64), normalized: `sha256:${h(64)}` });
  });

  it('answers unsupported for an unknown algorithm, whatever the value', () => {
    for (const d of ['md5:00', `sha1:${h(40)}`, `sha3-256:${h(64)}`, `SHA256:${h(64)}`, 'sha256x:zz']) {
      expect(parseDigest(d)).toMatchObject({ ok: false, status: 'unsupported' });
    }
  });

  it('answers malformed for a digest that does not parse', () => {
    for (const d of [
      '',
      h(64),
      `:${h(64)}`,
      'sha256:',
      `sha256:${h(62)}`,
      `sha256:${h(66)}`,
      `sha256:${h(62)}zz`,
      `sha256:${h(62)} 0`,
      `sha384:${h(64)}`,
      `sha512:${h(96)}`,
      `sha256: ${h(64)}`,
    ]) {
      expect(parseDigest(d)).toMatchObject({ ok: false, status: 'malformed' });
    }
  });

  it('never quotes the digest in its messages', () => {
    const r = parseDigest('sha256:SECRET');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).not.toContain('SECRET');
  });
});

// ---------------------------------------------------------------------------
// Properties

const SEED = 8785;

/** Rebuild every object with its keys in a shuffled order (deterministic per `salt`). */
function shuffleKeys(v: unknown, salt: number): unknown {
  if (Array.isArray(v)) return v.map((x) => shuffleKeys(x, salt));
  if (typeof v !== 'object' || v === null) return v;
  const keys = Object.keys(v);
  // A cheap deterministic permutation: rotate and reverse by salt.
  const rot = keys.length === 0 ? 0 : salt % keys.length;
  const order = keys.slice(rot).concat(keys.slice(0, rot));
  if (salt % 2 === 1) order.reverse();
  const out: Record<string, unknown> = {};
  for (const k of order) Object.defineProperty(out, k, { value: shuffleKeys((v as Record<string, unknown>)[k], salt), enumerable: true, writable: true, configurable: true });
  return out;
}

/** JSON has no -0: it reads back as 0. */
function noNegativeZero(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(noNegativeZero);
  if (typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: noNegativeZero(x), enumerable: true, writable: true, configurable: true });
  return out;
}

const json = fc.jsonValue({ maxDepth: 4, stringUnit: 'grapheme' });

describe('digest properties', () => {
  for (const scheme of CANONICALIZATIONS) {
    it(`${scheme}: digests do not change when object keys are reordered`, () => {
      fc.assert(
        fc.property(json, fc.nat(), (value, salt) => {
          const a = deriveDigest(value, scheme, 'sha256').digest;
          const b = deriveDigest(shuffleKeys(value, salt), scheme, 'sha256').digest;
          expect(b).toBe(a);
        }),
        { seed: SEED, numRuns: 300 },
      );
    });
  }

  it('jcs/rfc8785: output parses back to a value equal to the input', () => {
    fc.assert(
      fc.property(json, (value) => {
        const v = noNegativeZero(value);
        expect(JSON.parse(jcsText(v))).toEqual(v);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});
