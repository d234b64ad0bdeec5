/**
 * The content detectors as data (contract section 16): every kind found in
 * prose, JSON text, .env lines, logs, tables, multi-line and JSON-escaped
 * PEM; near-misses of every kind found by nothing (checksums, lengths,
 * ranges, look-alikes such as UUIDs, git SHAs, digests and base64 data).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { detectKinds, DetectionCache, PII_KINDS, SECRET_KINDS, spansOf, withDetection } from '../../../src/detect/index.js';
import { SECRET_KINDS as OWN_SECRET_KINDS } from '../../../src/detect/secrets.js';

interface Case {
  name: string;
  text: string;
  secrets: string[];
  pii: string[];
  /** Substrings that must each lie inside a detected span. */
  values: string[];
}

const { cases } = JSON.parse(readFileSync(new URL('../../fixtures/detect/cases.json', import.meta.url), 'utf8')) as { cases: Case[] };
const ALL = new Set<string>([...SECRET_KINDS, ...PII_KINDS]);
/** The kinds of the hand-written formats and PII: each has a case here (gitleaks' rules are held to the credential corpus, test/corpus/secrets.test.ts). */
const OWN = new Set<string>([...OWN_SECRET_KINDS, ...PII_KINDS]);

describe('secrets() and pii() on the detector cases', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(detectKinds('secrets', c.text)).toEqual(c.secrets);
    expect(detectKinds('pii', c.text)).toEqual(c.pii);
    const spans = spansOf(new DetectionCache(), c.text, ALL);
    for (const v of c.values) {
      const at = c.text.indexOf(v);
      expect(at, v).toBeGreaterThanOrEqual(0);
      expect(
        spans.some((s) => s.start <= at && at + v.length <= s.end),
        `${JSON.stringify(v)} inside a span`,
      ).toBe(true);
    }
  });

  it('covers every kind the contract names with a positive and the near-miss classes it names', () => {
    const found = new Set(cases.flatMap((c) => [...c.secrets, ...c.pii]));
    expect([...OWN].filter((k) => !found.has(k))).toEqual([]);
    const misses = cases.filter((c) => c.secrets.length === 0 && c.pii.length === 0).map((c) => c.name);
    for (const m of ['luhn-invalid card', 'iban wrong check digit', 'ssn area 000', 'ssn area 666', 'ssn area 9xx', 'uuid', 'git sha', 'sha256 digest', 'base64 image data', 'aws key one char short', 'github token one char short']) {
      expect(misses).toContain(m);
    }
  });
});

describe('DetectionCache', () => {
  it('scans each string once per detector, and answers a joined text from its parts', () => {
    const cache = new DetectionCache();
    const parts = ['mail jane@example.com', 'key AKIAIOSFODNN7EXAMPLE'];
    const joined = cache.join(parts);
    expect(cache.kinds('pii', joined)).toEqual(['email']);
    expect(cache.kinds('secrets', joined)).toEqual(['aws-access-key-id']);
    cache.spans('pii', parts[0]!);
    cache.kinds('pii', parts[0]!);
    expect(cache.scans).toEqual({ secrets: 2, pii: 2 });
  });
});

describe('personal data kept packed', () => {
  const piece = fc.constantFrom('4111 1111 1111 1111', 'jane@corp.example', '+44 20 7946 0958', 'DE89 3704 0044 0532 0130 00', '123-45-6789', 'prose', '42', '\u200b');
  it('pii() answers the kinds of the spans, in order of first appearance, in a decision and out of one', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const text = pieces.join(' ');
        const spans = new DetectionCache().spans('pii', text);
        const kinds = [...new Set(spans.map((s) => s.kind))];
        expect(detectKinds('pii', text)).toEqual(kinds);
        const cache = new DetectionCache();
        expect(withDetection(cache, () => detectKinds('pii', text))).toEqual(kinds);
        // The spans made after the kinds were asked for are those of a fresh scan, and made once.
        expect(cache.spans('pii', text)).toEqual(spans);
        expect(cache.spans('pii', text)).toBe(cache.spans('pii', text));
      }),
      { numRuns: 300 },
    );
  });
});
