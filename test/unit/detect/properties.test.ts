/**
 * Properties of the section 16 effects over generated results:
 *
 * - masking never leaves a detected value anywhere in the forwarded result:
 *   text blocks, embedded text resources, textual blobs (decoded),
 *   `structuredContent`, whatever other effects apply beside the mask;
 * - labels never go down: whatever label rules and claims are combined,
 *   every flag that is `true` without the label rules stays `true` with
 *   them, every flag a label rule raised is `true` in the answer and in the
 *   forwarded claims;
 * - detection time is linear in the text: the time for 4n characters of a
 *   trigger-dense generated text is within a generous multiple of 4 times
 *   the time for n (a ratio measured in-process, never an absolute time).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideResult as decide } from '../../../src/decision/result.js';
import type { EvaluateRequest } from '../../../src/decision/types.js';
import { decodeTextBlob } from '../../../src/decision/forward/mime.js';
import { compilePolicyFiles, loadPolicyDir } from '../../../src/policy/load.js';
import { TrustgateError } from '../../../src/errors.js';
import { DetectionCache, scanPii, scanSecrets } from '../../../src/detect/index.js';
import { scanFormats, scanSecretsFully } from '../../../src/detect/secrets.js';
import { scanPiiFully } from '../../../src/detect/pii.js';
import { getCountries, getCountryCallingCode, isValidPhoneNumber } from 'libphonenumber-js/max';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';

const enc = new TextEncoder();
const set = (...docs: string[]) => compilePolicyFiles(docs.map((text, i) => ({ name: `p${i}.yaml`, bytes: enc.encode(text) })), 'policies');
const decideWith = (policies: ReturnType<typeof set>, req: EvaluateRequest) => decide(req, { policies, decisionId: 'd', boundary: 'b0', maxBlocks: 100, maxEvidence: 10 });

const SECRETS = [
  'AKIAIOSFODNN7EXAMPLE',
  'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8',
  'xoxb-2345678901-3456789012345-AbCdEfGhIjKl',
  'sk_live_51HqLyjWDarjtT1zdp7dcXyZ',
  'AIzaSyD-abcdefghijklmnopqrstuvwxyz12345',
  'npm_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl',
  'postgres://app:Xk9mQ2vL7pR@db.example.com',
  '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----',
];
const PII = ['jane.doe@example.com', '4111 1111 1111 1111', '378282246310005', 'DE89 3704 0044 0532 0130 00', '123-45-6789', '+1 650-253-0000', '+44 20 7946 0958'];
const VALUES = [...SECRETS, ...PII];
/** The part of a value that must never be forwarded (a connection string's password). */
const core = (v: string) => (v.startsWith('postgres://') ? 'Xk9mQ2vL7pR' : v);

const filler = fc.constantFrom('lorem', 'ipsum', 'the', 'report', 'id 42', '2026-12-01', 'ok.', 'table |', '"json": true,', 'x=1');
const sep = fc.constantFrom(' ', '\n', ' | ', ', ');
const textWith = fc.array(fc.oneof({ arbitrary: fc.constantFrom(...VALUES), weight: 1 }, { arbitrary: filler, weight: 3 }), { minLength: 1, maxLength: 8 }).chain((parts) =>
  fc.array(sep, { minLength: parts.length, maxLength: parts.length }).map((seps) => parts.map((p, i) => `${p}${seps[i]}`).join('')),
);
const block = fc.oneof(
  textWith.map((t) => ({ type: 'text', text: t })),
  textWith.map((t) => ({ type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: t } })),
  textWith.map((t) => ({ type: 'resource', resource: { uri: 'file:///a.json', mimeType: 'application/json', blob: Buffer.from(t).toString('base64') } })),
);
const structured = fc.option(fc.dictionary(fc.constantFrom('a', 'b', 'note'), textWith, { maxKeys: 3 }), { nil: undefined });

/** Every string a reader could get from the forwarded result (textual blobs decoded). */
function readable(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) readable(x, out);
  else if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      out.push(k);
      if (k === 'blob' && typeof o[k] === 'string') out.push(decodeTextBlob(o[k] as string, String(o.mimeType ?? 'text/plain')) ?? '');
      readable(o[k], out);
    }
  }
  return out;
}

const MASKERS = [
  set('id: m\nmode: enforce\nrules:\n  - id: all\n    scope: result\n    when: "true"\n    effect: mask\n    mask: [secrets, pii]\n'),
  set('id: m\nmode: enforce\nrules:\n  - id: per-block\n    when: size(secrets(block.text)) > 0 || size(pii(block.text)) > 0\n    effect: mask\n    mask: [secrets, pii]\n  - id: whole\n    scope: result\n    when: size(secrets(result.text)) > 0 || size(pii(result.text)) > 0\n    effect: mask\n    mask: [secrets, pii]\n'),
  set(
    'id: m\nmode: enforce\nrules:\n  - id: all\n    scope: result\n    when: "true"\n    effect: mask\n    mask: [secrets, pii]\n  - id: fence-odd\n    when: block.index % 2 == 1\n    effect: spotlight\n',
  ),
];

describe('masking never leaves a detected value in the forwarded result', () => {
  it('text, embedded resources, textual blobs and structuredContent', () => {
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 4 }), structured, fc.constantFrom(0, 1, 2), (content, sc, which) => {
        const result: Record<string, unknown> = { content };
        if (sc !== undefined) result.structuredContent = sc;
        const d = decideWith(MASKERS[which]!, { protocolVersion: '2025-06-18', result });
        const seen = readable(d.result).join('\u0000');
        for (const v of VALUES) expect(seen.includes(core(v)), v).toBe(false);
      }),
      { numRuns: 150, seed: 0x16 },
    );
  });
});

describe('masking when the decision runs out of time', () => {
  it('at any point of the rules or the masking: nothing throws, and no detected value is forwarded', () => {
    // Member names that are also whole texts of blocks: a name scanned in the rules, its value left for the masking.
    const names = ['a', 'note'];
    const nameBlock = fc.constantFrom(...names).map((t) => ({ type: 'text', text: t }));
    const long = textWith.map((t) => ({ type: 'text', text: `${'id 42, '.repeat(800)}${t}` }));
    const items = fc.array(fc.oneof(block, nameBlock, long), { minLength: 1, maxLength: 5 });
    const sc = fc.dictionary(fc.constantFrom(...names, 'b'), textWith, { minKeys: 1, maxKeys: 3 });
    fc.assert(
      fc.property(items, sc, fc.constantFrom(0, 1, 2), fc.nat(60), (content, structuredContent, which, asks) => {
        let left = asks;
        const budget = { exceeded: () => left-- <= 0, describe: `${asks} asks` };
        const d = decide({ protocolVersion: '2025-06-18', result: { content, structuredContent } }, { policies: MASKERS[which]!, decisionId: 'd', boundary: 'b0', maxBlocks: 100, maxEvidence: 10, budget });
        const seen = readable(d.result).join('\u0000');
        for (const v of VALUES) expect(seen.includes(core(v)), v).toBe(false);
      }),
      { numRuns: 400, seed: 0x17 },
    );
  });
});

describe('the shipped set on any result, under any budget', () => {
  it('any result, stopped at any point or not at all: a request error or a decision, never a throw, and no credential forwarded, member names and the envelope included', async () => {
    const policies = await loadPolicyDir(new URL('../../../policies', import.meta.url).pathname);
    const str = fc.oneof(
      fc.constantFrom(...VALUES, 'a://b', '%41KIA\u0430\u200b', 'note', 'text'),
      fc.string({ maxLength: 8 }),
      // Long enough that a scan asks the deadline inside it.
      fc.constantFrom(...VALUES, 'a://b', 'x = "Zx9Lm2Pq8Rt5Vw3Yb7Nc"').map((v) => `${v} `.repeat(200)),
    );
    const json = fc.letrec((tie) => ({
      v: fc.oneof({ depthSize: 'small' }, str, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(str, tie('v'), { maxKeys: 3 })),
    })).v;
    const item = fc.oneof(
      fc.record({ type: fc.constant('text'), text: str }),
      fc.record({ type: fc.constant('text'), text: str, _meta: fc.dictionary(str, json, { maxKeys: 2 }) }),
      fc.record({ type: fc.constant('resource'), resource: fc.record({ uri: str, mimeType: fc.constantFrom('text/plain', 'application/octet-stream'), text: str }) }),
      fc.record({ type: fc.constant('resource_link'), uri: str, name: str, description: str }),
      // A block of a type no revision defines: its `type` is any string the server chose.
      fc.record({ type: str, note: str }, { requiredKeys: ['type'] }),
      json,
    );
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 5 }),
        fc.option(fc.dictionary(str, json, { maxKeys: 4 }), { nil: undefined }),
        // The envelope's `_meta` and members of no MCP name: forwarded as they came when no block is rebuilt.
        fc.dictionary(str, json, { maxKeys: 2 }),
        fc.dictionary(str, json, { maxKeys: 2 }),
        fc.nat(80),
        fc.boolean(),
        (content, sc, meta, extra, asks, untrusted) => {
          // Odd: a budget never spent; even: spent after that many asks.
          let left = asks % 2 === 1 ? Infinity : asks;
          const budget = { exceeded: () => left-- <= 0, describe: `${asks} asks` };
          const result: Record<string, unknown> = { ...extra, content };
          if (sc !== undefined) result.structuredContent = sc;
          result._meta = untrusted ? { ...meta, [TRUST_KEY]: { untrusted: true } } : meta;
          let d;
          try {
            d = decide({ protocolVersion: '2025-06-18', result, tool: { name: 't' } }, { policies, decisionId: 'd', boundary: 'b0', maxBlocks: 100, maxEvidence: 10, budget });
          } catch (err) {
            expect(err).toBeInstanceOf(TrustgateError);
            return;
          }
          const seen = readable(d.result).join('\u0000');
          for (const v of SECRETS) expect(seen.includes(core(v)), v).toBe(false);
        },
      ),
      { numRuns: 300, seed: 0x18 },
    );
  });
});

const FLAGS = ['sensitive', 'untrusted'] as const;
const claim = fc.record({ sensitive: fc.option(fc.boolean(), { nil: undefined }), untrusted: fc.option(fc.boolean(), { nil: undefined }) }, { requiredKeys: [] }).map((c) =>
  Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)),
);
const CONDITIONS = ['true', 'false', 'result.untrusted', 'result.sensitive', 'block.index == 0', '!block.untrusted', 'block.sensitive'];
const labelRule = fc.record({
  scope: fc.constantFrom('block', 'result'),
  when: fc.constantFrom(...CONDITIONS),
  labels: fc.subarray([...FLAGS], { minLength: 1 }),
  mode: fc.constantFrom('enforce', 'audit'),
});

describe('the search for an anchor before the secret scan changes no answer', () => {
  it('the anchor search before the format scan changes no answer, on texts near every format', () => {
    // Every format whole, cut at any point, with one character changed, or beside its own pieces.
    const piece = fc.oneof(
      fc.constantFrom(...SECRETS),
      fc.constantFrom(...SECRETS).chain((v) => fc.nat(v.length).map((n) => v.slice(0, n))),
      fc.constantFrom(...SECRETS).chain((v) => fc.nat(v.length).map((n) => v.slice(n))),
      fc.tuple(fc.constantFrom(...SECRETS), fc.nat(), fc.constantFrom('_', '-', ':', '/', 'A', 'k', '.', ' ', '\n')).map(([v, i, c]) => {
        const at = i % v.length;
        return v.slice(0, at) + c + v.slice(at + 1);
      }),
      fc.constantFrom('AKI', 'A3', 'AIz', 'gh', 'ghp', 'github_pat', 'npm', 'xox', 'xoxb', 'xapp', 'sk_live', 'rk_test', 'k_live_', 'ey', 'eyJ', '-----', '-----BEGIN', '://', ':/', '@', '.'),
      // A password file line, whole or in pieces (its anchor is `:5432:` or `:*:`).
      fc.constantFrom('db.example.com:5432:orders:app:Xk9#mQ2vL7pR\n', '*:*:*:ops:9fQ2LmX7pA!z', ':5432:', ':*:', ':5432', '5432:', '*:', '\\n'),
      // Pieces of anchors without their `_`, `-`, `://` or `eyJ`, which the cheap search before the anchor search looks for.
      fc.constantFrom('A', 'KIA', 'Iza', '3T', 'yJ', 'e', 'note: ', '//', 'ghp', 'xoxb', 'sk', 'live', 'BEGIN', 'データ', 'café'),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (parts) => {
        const text = parts.join('');
        expect(scanFormats(text)).toEqual(scanSecretsFully(text));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('skipping to the next digit or @ that may start an address in the PII scan changes no answer', () => {
  it('scanPii finds what the scan of every character finds, near every kind and inside base64 runs', () => {
    const chars = (cs: string[], min: number, max: number) => fc.array(fc.constantFrom(...cs), { minLength: min, maxLength: max }).map((a) => a.join(''));
    const b64 = chars(['A', 'z', '0', '9', '+', '/', '='], 1, 90);
    const piece = fc.oneof(
      fc.constantFrom(...PII),
      fc.constantFrom(...PII).chain((v) => fc.nat(v.length).map((n) => v.slice(0, n))),
      fc.constantFrom(...PII).chain((v) => fc.nat(v.length).map((n) => v.slice(n))),
      fc.tuple(fc.constantFrom(...PII), fc.nat(), fc.constantFrom('@', '+', '-', ' ', '.', 'A', '0', '7', '=', '/', 'é')).map(([v, i, c]) => {
        const at = i % v.length;
        return v.slice(0, at) + c + v.slice(at + 1);
      }),
      b64,
      fc.tuple(chars(['A', 'z', '0', '9', '+', '/', '='], 60, 80), fc.constantFrom('/', '+', '=', ''), fc.constantFrom(...PII)).map((p) => p.join('')),
      fc.constantFrom('mailto:', 'https://u:p@h.io', 'GB', 'DE', 'DE8', '+', '+4', '@', 'x@y', ' ', '\n', 'データ', 'café'),
      // Digits, plus signs and country codes inside runs of letters and digits, which open nothing (the search passes over them).
      fc.constantFrom('Xy9', 'sha256', 'v4', 'x86_64', 'aDE89', 'a+44', '9+1', 'AB12', 'zGB82', 'GB8', '-GB82', '%41', 'é9', '9é'),
      // At-signs that may or may not start an address: the native search passes over the ones that cannot.
      fc.constantFrom('a@', '@a', 'x@y.z', '@ex.co', '@a.b.c.de', 'a.b@c.d.e@f.g', 'u@h-1.io', '@-a.io', '@a-.io', '@a.i0', '@a..io'),
      chars(['a', 'Z', '1', '@', '+', '-', ' ', '.', '=', '/', '\u00e9'], 0, 16),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), (parts) => {
        const text = parts.join('');
        expect(scanPii(text)).toEqual(scanPiiFully(text));
      }),
      { numRuns: 4000 },
    );
  });
});

describe('the phone scan reads a number once, as a value', () => {
  /** The definition: from a `+` no letter or digit precedes, each end after a digit group with 8 to 15 digits, the longest first, whose calling code exists and which libphonenumber finds valid. */
  const codes = new Set(getCountries().map((c) => String(getCountryCallingCode(c))));
  function phones(s: string): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let i = 0; i < s.length; i++) {
      // (After an operand, a letter, a digit, `_`, `$`, `)` or `]`, a `+` adds.)
      if (s[i] !== '+' || /[A-Za-z0-9_$)\]]/.test(s[i - 1] ?? '') || !/[0-9]/.test(s[i + 1] ?? '')) continue;
      const ends: number[] = [];
      let digits = 0;
      let seps = 0;
      for (let pos = i + 1; pos < s.length && pos - i < 32; pos++) {
        const c = s[pos]!;
        if (/[0-9]/.test(c)) {
          if (++digits > 15) break;
          seps = 0;
          if (!/[0-9]/.test(s[pos + 1] ?? '') && digits >= 8) ends.push(pos + 1);
        } else if (/[ ().-]/.test(c)) {
          if (++seps > 2) break;
        } else break;
      }
      const end = ends.reverse().find((e) => {
        if (/[A-Za-z0-9]/.test(s[e] ?? '')) return false;
        const d = s.slice(i, e).replace(/[^0-9]/g, '');
        return [1, 2, 3].some((k) => codes.has(d.slice(0, k))) && isValidPhoneNumber(s.slice(i, e));
      });
      if (end !== undefined) {
        out.push([i, end]);
        i = end - 1;
      } else if (ends.length > 0) i = ends[ends.length - 1]! - 1;
    }
    return out;
  }

  it('finds what libphonenumber finds valid, for numbers of any calling code, grouping and leading zero', () => {
    const group = fc.array(fc.constantFrom(...'0123456789'), { minLength: 1, maxLength: 5 }).map((a) => a.join(''));
    const number = fc
      .tuple(fc.constantFrom('+', '+0', '+1', '+7', '+44', '+353', '+49', '+86', '+999'), fc.array(fc.tuple(fc.constantFrom(' ', '-', '.', '(', ')', '', '  '), group), { minLength: 1, maxLength: 5 }))
      .map(([cc, gs]) => cc + gs.map(([sep, g]) => sep + g).join(''));
    // A leading zero is no calling code: `+044 20 7946 0958` is not the valid `+44 20 7946 0958`, though its digits have the same value.
    const piece = fc.oneof(number, fc.constantFrom('+1 650-253-0000', '+44 20 7946 0958', '+044 20 7946 0958', '+01 650-253-0000', ' ', 'a', 'call ', 'x', '\n'));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 6 }), (parts) => {
        const text = parts.join('');
        expect(scanPii(text).filter((f) => f.kind === 'phone').map((f) => [f.start, f.end])).toEqual(phones(text).filter(([a]) => !scanPii(text).some((f) => f.kind !== 'phone' && f.start <= a && a < f.end)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('the card search reads each candidate in constant time', () => {
  /** The definition the scan keeps to, read the slow way: per start group, the longest run of whole groups that is a card (no group of two digits or fewer among them). */
  function cardsByDefinition(token: string): Array<[number, number]> {
    const groups = [...token.matchAll(/[0-9]+/g)].map((m) => ({ start: m.index, end: m.index + m[0].length, digits: m[0] }));
    const luhn = (d: string) => [...d].reverse().reduce((sum, c, k) => sum + (k % 2 === 1 ? [0, 2, 4, 6, 8, 1, 3, 5, 7, 9][Number(c)]! : Number(c)), 0) % 10 === 0;
    // Industry 2 only as Mastercard's 22-27 and Mir's, of 16 digits or more.
    const card = (d: string) => d.length >= 13 && d.length <= 19 && d[0]! >= '2' && d[0]! <= '6' && (d[0] !== '2' || (d[1]! >= '2' && d[1]! <= '7' && d.length >= 16)) && !/^(\d)\1*$/.test(d) && luhn(d);
    const out: Array<[number, number]> = [];
    let g = 0;
    while (g < groups.length) {
      let d = '';
      let found = -1;
      for (let j = g; j < groups.length && d.length <= 19; j++) {
        if (groups[j]!.digits.length <= 2) break;
        d += groups[j]!.digits;
        if (card(d)) found = j;
      }
      if (found >= 0) {
        out.push([groups[g]!.start, groups[found]!.end]);
        g = found + 1;
      } else g++;
    }
    return out;
  }
  it('finds what the definition finds, in tokens of any grouping, cards among them', () => {
    const group = fc.oneof(fc.stringMatching(/^[0-9]{1,5}$/), fc.constantFrom('4111', '1111', '3782', '822463', '10005', '5', '0'));
    // Up to 200 groups, longer than the rings a token's groups are read in (64): a card late in a long token is read after
    // they wrapped. Mostly groups of three digits: a card then spans up to six groups, the most the rings must hold at
    // once (no card is written in groups of two digits or fewer: those among them end a run).
    const oneDigit = fc.oneof({ weight: 6, arbitrary: fc.stringMatching(/^[0-9]{3}$/) }, { weight: 2, arbitrary: fc.stringMatching(/^[0-9]{1,2}$/) }, { weight: 1, arbitrary: fc.constantFrom('4111', '1111', '3782') });
    const groups = (g: fc.Arbitrary<string>) => fc.array(fc.tuple(g, fc.constantFrom(' ', '-')), { minLength: 1, maxLength: 200, size: 'max' });
    const token = fc.oneof(groups(group), groups(oneDigit)).map((gs) => gs.map(([g, sep], i) => (i === 0 ? g : sep + g)).join(''));
    fc.assert(
      fc.property(token, fc.constantFrom('', ' ', '.', 'x', '9x'), (t, after) => {
        // SSN-shaped groups are read as SSNs first: left out of what is compared.
        fc.pre(!/(?:^| )[0-9]{3}-[0-9]{2}-[0-9]{4}(?![0-9])/.test(t));
        // So is a token that is a UUID (an id, passed over whole: below).
        fc.pre(!/^[0-9]{8}-[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{12}(?![0-9a-z])/.test(t + after));
        const found = scanPii(t + after).filter((sp) => sp.kind === 'credit-card').map((sp) => [sp.start, sp.end]);
        // A token a letter follows is no number: it holds no card, wherever in it one was read before its end.
        expect(found).toEqual(/[a-z]$/.test(after) ? [] : cardsByDefinition(t + after));
      }),
      { numRuns: 3000 },
    );
  });
  it('reads no card, SSN or phone in a UUID, whatever its hex digits (groups of digits alone pass Luhn as well as any)', () => {
    const hex = (n: number) => fc.oneof(fc.stringMatching(new RegExp(`^[0-9]{${n}}$`)), fc.stringMatching(new RegExp(`^[0-9a-fA-F]{${n}}$`)), fc.constantFrom('3'.repeat(n), '4'.repeat(n)));
    const uuid = fc.tuple(hex(8), hex(4), hex(4), hex(4), hex(12)).map((g) => g.join('-'));
    fc.assert(
      fc.property(uuid, fc.constantFrom('', 'id ', 'x-', '"', '/', 'card '), fc.constantFrom('', ' ', '.', '"', '/', ' and'), (u, before, after) => {
        expect(scanPii(before + u + after)).toEqual([]);
      }),
      { numRuns: 3000 },
    );
    // The draw: the last two groups of this one are sixteen digits that pass Luhn's check, read as a card before.
    expect(scanPii('az login -u 00000000-1111-2222-3333-444444444444 -p x')).toEqual([]);
    expect(scanPii('id abcdefab-1111-2222-3333-444444444444.')).toEqual([]);
    // A card alone after a dash and an id that is no UUID is still one.
    expect(scanPii('card 3333-444444444444 here').map((sp) => sp.kind)).toEqual(['credit-card']);
  });
});

describe('an SSN written without its dashes', () => {
  it('is read where a label just before it names one, nine digits or three, two and four apart; not unlabelled, not where the SSA issues none', () => {
    const label = fc.constantFrom('SSN: ', 'ssn ', 'SSN#', 'Social Security Number: ', 'social security no. ', 'ssn = "', 'Her SSN is ', 'SSN:\t');
    const other = fc.constantFrom('Order: ', 'id ', 'ZIP+4 ', 'account ', 'phone: ', '');
    const ssn = fc.tuple(fc.integer({ min: 1, max: 899 }), fc.integer({ min: 1, max: 99 }), fc.integer({ min: 1, max: 9999 })).filter(([a]) => a !== 666);
    const pad = (n: number, w: number) => String(n).padStart(w, '0');
    fc.assert(
      fc.property(label, other, ssn, fc.boolean(), fc.constantFrom('', '.', ' and', '"', ','), (l, o, [a, g, n], spaced, after) => {
        const digits = spaced ? `${pad(a, 3)} ${pad(g, 2)} ${pad(n, 4)}` : `${pad(a, 3)}${pad(g, 2)}${pad(n, 4)}`;
        const found = scanPii(l + digits + after);
        expect(found.map((sp) => [sp.kind, sp.start, sp.end])).toEqual([['us-ssn', l.length, l.length + digits.length]]);
        // (Unlabelled, nine digits are an id of any kind.)
        expect(scanPii(o + digits + after).filter((sp) => sp.kind === 'us-ssn')).toEqual([]);
        // (Nor where the SSA issues none: area 000, 666 or 9xx, group 00, serial 0000.)
        for (const bad of [`000${pad(g, 2)}${pad(n, 4)}`, `666${pad(g, 2)}${pad(n, 4)}`, `9${pad(a % 100, 2)}${pad(g, 2)}${pad(n, 4)}`, `${pad(a, 3)}00${pad(n, 4)}`, `${pad(a, 3)}${pad(g, 2)}0000`])
          expect(scanPii(l + bad + after).filter((sp) => sp.kind === 'us-ssn'), bad).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('labels never go down', () => {
  it('whatever label rules and claims are combined', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(claim, { nil: undefined }), { minLength: 1, maxLength: 3 }),
        fc.option(claim, { nil: undefined }),
        fc.array(labelRule, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('2025-03-26', '2025-06-18', '2025-11-25'),
        (blockClaims, resultClaim, rules, rev) => {
          const content = blockClaims.map((c, i) => ({ type: 'text', text: `t${i}`, ...(c && rev !== '2025-03-26' ? { _meta: { [TRUST_KEY]: c } } : {}) }));
          const result: Record<string, unknown> = { content };
          if (resultClaim) result._meta = { [TRUST_KEY]: resultClaim };
          const base = set('id: base\nmode: enforce\nrules:\n  - id: noop\n    when: "false"\n    effect: flag\n');
          const docs = rules.map(
            (r, i) => `id: l${i}\nmode: ${r.mode}\nrules:\n  - id: r\n    scope: ${r.scope}\n    when: ${JSON.stringify(r.scope === 'result' ? r.when.replace(/block\.[a-z]+( == 0)?/g, 'true') : r.when)}\n    effect: label\n    labels: { ${r.labels.map((l) => `${l}: true`).join(', ')} }\n`,
          );
          const req = { protocolVersion: rev, result } as EvaluateRequest;
          const without = decideWith(base, structuredClone(req));
          const withL = decideWith(set(...docs), structuredClone(req));
          for (const f of FLAGS) {
            if (without.labels[f] === true) expect(withL.labels[f]).toBe(true);
            without.blocks.forEach((b, i) => {
              if (b[f] === true) expect(withL.blocks[i]![f]).toBe(true);
            });
          }
          // Every applied label finding raised its flags, in the answer and in the forwarded claims.
          for (const fnd of withL.findings) {
            if (!fnd.applied) continue;
            const r = rules[Number(fnd.policy.slice(1))]!;
            for (const f of r.labels) {
              expect(withL.labels[f]).toBe(true);
              const fwd = withL.result as any;
              const onResult = fwd._meta?.[TRUST_KEY]?.[f] === true;
              if (fnd.scope === 'result') expect(onResult).toBe(true);
              else {
                const i = Number(fnd.pointer.split('/')[2]);
                expect(withL.blocks[i]![f]).toBe(true);
                expect(onResult || fwd.content[i]._meta?.[TRUST_KEY]?.[f] === true).toBe(true);
              }
            }
          }
        },
      ),
      { numRuns: 120, seed: 0x17 },
    );
  });
});

describe('detection is linear in the text', () => {
  /** How much longer `read` takes over 4n characters of `unit` repeated than over n (best of five each, warmed up). */
  const growth = (unit: string, read: (s: string) => void): number => {
    const text = (n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
    const time = (s: string) => {
      let best = Infinity;
      for (let r = 0; r < 5; r++) {
        const t0 = performance.now();
        read(s);
        best = Math.min(best, performance.now() - t0);
      }
      return best;
    };
    time(text(20_000)); // warm up
    const n = 100_000;
    return time(text(4 * n)) / time(text(n));
  };
  const wholeReading = (s: string) => new DetectionCache().spans('secrets', s);

  it('4n characters cost at most a generous multiple of 4 times n', () => {
    // Trigger-dense text: every scanner starts at almost every position.
    const unit = 'a@b.c +1 2 3 4111 1111 1111 AKIA eyJx.eyJ -----BEGIN PRIVATE KEY----- x://u:p@ ghp_ xoxb-1-2 DE89 123-45-678 ';
    // Linear gives 4; quadratic would give 16. The bound leaves room for a noisy machine.
    expect(
      growth(unit, (s) => {
        scanSecrets(s);
        scanPii(s);
      }),
    ).toBeLessThan(10);
  });

  it('so is the whole reading, on text dense with labels over values, rows alone, elements an attribute names and folded names', () => {
    // Every line a label (each read with the lines after it), a row alone (split into cells), an element whose
    // attribute names a secret (read back to its tag), an arrow, a Cyrillic name before a fullwidth colon.
    const unit = `API key\nXk9mQ2vL7pR4tW8zHq\nYour token:\n\n| password | Xk9mQ2vL7p |\n<string a="b" name="api_key">v</string> key \u21d2 x \u041f\u0410\u0420\u041e\u041b\u042c\uff1ay\n## Secret\n-----\n`;
    expect(growth(unit, wholeReading)).toBeLessThan(10);
  });

  it("so is the whole reading, on text dense with SQL INSERTs, prose that sets a secret, R's `<-` and names in other languages", () => {
    // Every `insert` a try (a table's name, a column list that names a secret, rows of strings, calls and brackets, a
    // string left open), every ` to ` a look back over the words before it, every `<-` and `clave` an operator.
    const unit = `insert insert into a.b.c (password, api_key) values ('Xk9mQ2vL7pR4tW8zHq', 'it''s'), (now(), (1, (2))), (E'a\\'b', 'x' insert into t (token) values ('${'y'.repeat(30)}'); Set the new admin password for prod to x to ${'w'.repeat(60)} to pw <- "v" clave: z chiave API: q `;
    expect(growth(unit, wholeReading)).toBeLessThan(10);
    // (A string left open in a row reads to the text's end once.)
    expect(growth(`INSERT INTO t (password) VALUES ('x', '${'z'.repeat(50)} insert into u (api_key) values (`, wholeReading)).toBeLessThan(10);
  });

  it("so is the whole reading, on text dense with values of punctuation, rows of names, qualified names and gitleaks' placements", () => {
    // Every quoted value read on past its marks to a quote a line away or none, every line's unquoted value read to
    // its token's end, every line a row's name and its cell, names with qualifiers, compound operators, Go's
    // declarations, elements on lines of their own, Kubernetes Secrets' data.
    const unit = `API_TOKEN_PROD_2 = "x;${';a'.repeat(40)}\nDB_PASSWORD=a;b<c}${',d'.repeat(30)}\napi_token,${'k;'.repeat(20)}\nvar apiToken string = \"v\" $secretToken .= 'w' make_TOKEN :::= z <apiToken>\n  q;r\n</apiToken> token_v2: ${'}'.repeat(40)} \nkind: Secret\ndata:\n  a: |\n    b\n  c: ${'d'.repeat(30)}\n---\n{"data": {"e": "f", "g": "h"}, "kind": "Secret"} `.replace(/\\n/g, '\n');
    expect(growth(unit, wholeReading)).toBeLessThan(10);
    // (A quoted value left open reads to the line's end once, however many marks it holds; a token before prose that
    // tells what it is, back 128 characters at most.)
    expect(growth(`password="${'a;'.repeat(200)}`, wholeReading)).toBeLessThan(10);
    expect(growth(`${'x9'.repeat(100)} is the password was my token `, wholeReading)).toBeLessThan(10);
  });

  it('so is the whole reading on one line with no break, dense with the words and names a blank alone makes an operator after', () => {
    // (Each a candidate that looks back for what stands before it: a command that sets a variable, `ENV`, `setenv`; a
    // look back to the line's start was a look back to the text's.)
    const unit = 'api key token secret password ENV API_TOKEN x setenv DB_PASS y set -gx SECRET_KEY_BASE z ApiKey w ';
    expect(growth(unit, wholeReading)).toBeLessThan(10);
  });

  it('no expression of the readings backtracks on runs of one kind of character: any text of such runs and the marks around them is read at once', () => {
    // (Runs of lower-case letters, capitals, blanks and digits between the marks that start a reading: an expression
    // with a quantifier inside a quantifier over one class, `(?:[A-Z]?[a-z]{2,})+`, took seconds on 40 letters.)
    const run = fc.tuple(fc.constantFrom('a', 'A', 'Ab', 'aB', ' ', '\t', '1', 'a1', '_'), fc.integer({ min: 20, max: 70 })).map(([c, k]) => c.repeat(k));
    const mark = fc.constantFrom(';', '<', ',', '=', ':', '\n', '- ', '.', '$', '@', '"', "'", '[', '}', 'kind: Secret\n', 'data:\n', 'PASSWORD=', 'api_token,', 'password: ', ' is the password', '{"kind": "Secret", "data": {"', '<apiToken>', 'var token string = ');
    fc.assert(
      fc.property(fc.array(fc.oneof(run, mark), { minLength: 1, maxLength: 24 }), (parts) => {
        const text = parts.join('');
        new DetectionCache().spans('secrets', text);
        new DetectionCache().spans('secrets', text.replace(/^/gm, '  '));
      }),
      { numRuns: 400 },
    );
    // And on long runs, twice as many characters cost about twice as much (growth over 4n against n below 10).
    expect(growth(`PASSWORD=${'a'.repeat(300)}1;x\n`, wholeReading)).toBeLessThan(10);
    // (One line of blanks as long as the text, before a Secret's kind and inside one of its entries.)
    expect(growth(' ', (b) => wholeReading(`kind: Secret\ndata:\n${b}x\n`))).toBeLessThan(10);
    expect(growth(' ', (b) => wholeReading(`kind: Secret\ndata:\n  a: b${b}c\n`))).toBeLessThan(10);
  }, 120_000);

  it('so is the whole reading, on text dense with markup, terminal sequences and escapes', () => {
    // Every secret's word followed by markup (each a stretch read again without it), tags cut short and glued inside
    // tokens, terminal sequences whole and cut short, escapes after runs of backslashes.
    const unit = `key\`a **token**: <code>Xk9mQ2vL7pR4tW8zHq</code> a<wbr>b<span class="s">c <b ${'x'.repeat(40)} \x1b[1;32mpassword\x1b[0m=\\\\\\"v\\n \x1b]8;;u \\u001b[31m `;
    expect(growth(unit, wholeReading)).toBeLessThan(10);
  });
});
