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
import { SECRET_KINDS as OWN_SECRET_KINDS, scanSecrets } from '../../../src/detect/secrets.js';
import { shannonEntropy, wordy } from '../../../src/detect/chars.js';
import { wordlist as BIP39 } from '@scure/bip39/wordlists/english.js';

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

/** Whether one span of what the secrets detector finds in `text` holds the whole of `value` (at its first place there). */
function masksWhole(text: string, value: string): boolean {
  const at = text.indexOf(value);
  return spansOf(new DetectionCache(), text, new Set(SECRET_KINDS)).some((s) => s.start <= at && at + value.length <= s.end);
}
/** A value random to look at: 16 to 28 of base62, 12 distinct characters or more at 3.3 bits each, not words in every part. */
const RANDOM_VALUE = fc.stringMatching(/^[A-Za-z0-9]{16,28}$/).filter((v) => /[a-z]/.test(v) && /[A-Z]/.test(v) && /[0-9]/.test(v) && new Set(v).size >= 12 && shannonEntropy(v) >= 3.3 && !wordy(v, true));

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

describe('a file name that holds an at-sign', () => {
  it("is no email (an app's images at a scale, `icon@2x.png`), where an address at a domain of the same letters and one whose top-level domain is also a file type is one", () => {
    const word = fc.stringMatching(/^[a-z][a-z0-9_-]{0,11}$/);
    fc.assert(
      fc.property(
        word,
        fc.oneof(fc.constantFrom('2x', '3x', '1.5x', 'home', 'dark'), fc.stringMatching(/^[a-z][a-z0-9]{0,11}$/)),
        fc.constantFrom('png', 'JPG', 'svg', 'webp', 'pdf', 'json', 'txt', 'tsx', 'lock', 'docx'),
        fc.constantFrom('', '/usr/src/app/assets/', '- ', '"', '[FILE] '),
        (name, middle, ext, before) => {
          expect(detectKinds('pii', `${before}${name}@${middle}.${ext}`)).toEqual([]);
          // (A top-level domain that a file type also names, `.zip`, `.mov`, `.py`, `.md`: an address; not after a
          // path's `/`, where what reads as one is a URL's user info.)
          const lead = before.endsWith('/') ? '' : before;
          for (const tld of ['com', 'zip', 'py', 'md']) expect(detectKinds('pii', `${lead}${name}@${middle.replace(/^[0-9.]+x$/, 'mail')}.${tld}`)).toEqual(['email']);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("a wallet's recovery phrase", () => {
  const masked = (s: string) => spansOf(new DetectionCache(), s, ALL).reduceRight((t, sp) => t.slice(0, sp.start) + '*'.repeat(sp.end - sp.start) + t.slice(sp.end), s);
  const names = ['Secret Recovery Phrase:', 'Recovery phrase:', 'Recovery words:', 'seed:', 'Seed words =', 'mnemonic:', 'Backup phrase:', 'wallet words:', 'The seed phrase is', 'MNEMONIC=', 'seed_phrase: '];
  const parted = [' ', '\n', ', ', '\r\n', '  '];

  it("finds and masks 12 to 24 of BIP-39's words after a name or prose that says what they are, on one line, a word to a line or parted by commas, one phrase or two in a row", () => {
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.constantFrom(...parted), fc.constantFrom(12, 15, 18, 21, 24), fc.array(fc.nat({ max: BIP39.length - 1 }), { minLength: 24, maxLength: 24 }), fc.boolean(), (name, sep, n, picks, twice) => {
        const words = picks.slice(0, n).map((i) => BIP39[i]!).filter((w) => w.length >= 3);
        fc.pre(words.length >= 12);
        const phrase = words.join(sep);
        const line = `${name}${sep.includes('\n') ? '\n' : ' '}${phrase}`;
        const text = `Your wallet is ready.\n${twice ? `${line} ${line}` : line}\nKeep it offline.`;
        const out = masked(text);
        // No three of its words in a row show.
        for (let i = 0; i + 3 <= words.length; i++) expect(out.includes(words.slice(i, i + 3).join(sep)), JSON.stringify(out)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('finds none where a word after the name is not on the list: prose about the phrase', () => {
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.array(fc.nat({ max: BIP39.length - 1 }), { minLength: 12, maxLength: 20 }), fc.nat(), fc.constantFrom('your', 'words', 'anyone', 'every', 'these', 'with', 'down', 'them', 'offline'), (name, picks, at, prose) => {
        expect(BIP39.includes(prose)).toBe(false);
        const words = picks.map((i) => BIP39[i]!).filter((w) => w.length >= 3);
        // One word off the list among the first twelve: no phrase of twelve listed words starts the run.
        words.splice(at % Math.min(12, words.length), 0, prose);
        const text = `${name} ${words.join(' ')}`;
        expect(spansOf(new DetectionCache(), text, new Set(['seed-phrase-words']))).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('generic assignments: a secret under a secret name, not where a secret is or what it is called', () => {
  const secretName = fc.constantFrom('API_KEY', 'client_secret', 'DB_PASSWORD', 'auth_token', 'GOOGLE_APPLICATION_CREDENTIALS', 'ssl_key', 'private_key', 'credentials', 'secretKey');
  const written = (name: string, value: string, form: number): string => [`${name}=${value}`, `${name}: ${value}`, `"${name}": "${value}"`][form]!;
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const random = fc.array(fc.constantFrom(...B64), { minLength: 20, maxLength: 48 }).map((cs) => cs.join(''));

  it('finds and masks a random value (mixed case inside a word, as tokens are), whatever slashes it holds', () => {
    fc.assert(
      fc.property(secretName, random, fc.integer({ min: 0, max: 2 }), (name, value, form) => {
        fc.pre(/[A-Z][A-Z]|[a-z0-9][A-Z]/.test(value) && /[a-z]/.test(value) && /[0-9]/.test(value) && new Set(value).size >= 12);
        const text = written(name, value, form);
        expect(detectKinds('secrets', text)).not.toEqual([]);
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds and masks a random value whose slashes cut it where each piece reads as a path's segment (a capital, then lower-case letters and digits switching between them), and no relative path of words, versions or architectures", () => {
    const piece = fc
      .tuple(fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'), fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'), { minLength: 7, maxLength: 12 }))
      .map(([c, cs]) => c + cs.join(''));
    fc.assert(
      fc.property(secretName, fc.array(piece, { minLength: 2, maxLength: 3 }), fc.integer({ min: 0, max: 2 }), (name, pieces, form) => {
        const value = pieces.join('/');
        // (A random value: its pieces switch between letters and digits, as no segment of a path of words does.)
        fc.pre(pieces.every((p) => /[a-z][0-9]+[a-z]+[0-9]|[0-9][a-z]+[0-9]+[a-z]/.test(p)) && new Set(value).size >= 12 && !wordy(value));
        const text = written(name, value, form);
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end), text).toBe(true);
      }),
      { numRuns: 500 },
    );
    for (const path of ['k8s/prod/api-key', 'certs/ed25519', 'secrets/x86_64/key', 'Prod/Db2/credentials-v2']) expect(detectKinds('secrets', `API_KEY=${path}`), path).toEqual([]);
  });

  it('finds and masks a random value of letters alone (a sixteenth of random values of 16 characters hold no digit), in any of the shapes an assignment takes', () => {
    const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const letters = (min: number, max: number) => fc.array(fc.constantFrom(...LETTERS), { minLength: min, maxLength: max }).map((cs) => cs.join(''));
    const keyValue = fc.tuple(fc.constantFrom('API_KEY', 'client_secret', 'auth_token', 'STRIPE_SECRET', 'secretKey'), letters(20, 40));
    const passwordValue = fc.tuple(fc.constantFrom('DB_PASSWORD', 'password', 'Password', 'passwd'), letters(14, 24));
    // An assignment's shapes: a line, a member, an element, a quoted pair opening a call, a pair's value after its
    // name (an env list, an ECS task, .NET's appSettings), a subscript, a command's flag.
    const shapes = [
      (n: string, v: string) => `${n}=${v}`,
      (n: string, v: string) => `{"${n}": "${v}"}`,
      (n: string, v: string) => `<${n}>${v}</${n}>`,
      (n: string, v: string) => `define('${n}', '${v}');`,
      (n: string, v: string) => `env:\n  - name: ${n}\n    value: "${v}"`,
      (n: string, v: string) => `[{"name": "${n}", "value": "${v}"}]`,
      (n: string, v: string) => `<add key="${n}" value="${v}" />`,
      (n: string, v: string) => `os.environ["${n}"] = "${v}"`,
      (n: string, v: string) => `tool sync --${n.toLowerCase().replace(/_/g, '-')} ${v} --verbose`,
      // A YAML block scalar; aligned output; a table aligned with blanks under dashes (Vault's `kv get`).
      (n: string, v: string) => `config:\n  ${n}: >-\n    ${v}\n  region: eu`,
      (n: string, v: string) => `Fields:\n  username:       admin\n  ${n}:       ${v}`,
      (n: string, v: string) => `====== Data ======\nKey           Value\n---           -----\n${n}      ${v}\nusername      app`,
    ];
    fc.assert(
      fc.property(fc.oneof(keyValue, passwordValue), fc.integer({ min: 0, max: shapes.length - 1 }), ([name, value], shape) => {
        // (Random letters that happen to be words, camel case, capitalized or a run of few letters read as a name: see
        // secrets.ts.)
        fc.pre(/[a-z]/.test(value) && /.[A-Z]/.test(value) && !wordy(value) && !/^[A-Za-z][a-z]*(?:[A-Z][a-z]+)+$/.test(value) && !(!/pass/i.test(name) && /^[A-Z]{2,4}(?:[A-Z][a-z]+)+$/.test(value)) && new Set(value).size >= value.length * 0.75);
        const text = shapes[shape]!(name, value);
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end), text).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a password or a key told in prose, and nothing in prose that tells of one', () => {
    const who = fc.constantFrom('The', 'the staging', 'Your new', 'our admin', 'The database');
    const name = fc.constantFrom('password', 'API key', 'secret', 'access token', 'passphrase');
    // (Whose it is, between the name and the verb: `the root password for the staging box is now ...`.)
    const owner = fc.constantFrom('', ' for the staging box', ' of the deploy bot', ' for user admin', ' on prod-db-01', ' to the shared inbox');
    const verb = fc.constantFrom('is', 'was', 'is:', 'is now', 'is still', 'was changed to', 'has been reset to', 'is set to', '-', '\u2192', '\u2014', '-->', '\u21d2', '\u279c', '\u27a1');
    const after = fc.constantFrom('.', ', keep it safe.', '!', '', ' (rotate it).');
    const words = fc.constantFrom('incorrect', 'stored in Vault', 'rotated every 90 days', 'required', 'too short', 'the same as before', 'changed yesterday', '12 characters long');
    fc.assert(
      fc.property(who, name, owner, verb, random, after, words, fc.constantFrom('cache', 'primary', 'sort', 'partition', 'idempotency', 'public'), (w, n, o, v, value, end, prose, lookup) => {
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 12);
        const text = `${w} ${n}${o} ${v} ${value}${end}`;
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end), text).toBe(true);
        expect(detectKinds('secrets', `${w} ${n}${o} ${v.replace(':', '')} ${prose}${end}`)).toEqual([]);
        // (The word before the name says what it names: a key that looks a record up, a public one.)
        expect(detectKinds('secrets', `The ${lookup} key${o} ${v} ${value}${end}`)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds and masks a value prose sets a secret to (`set the password to ...`) or R's `<-` assigns, and nothing set to words or a lookup key", () => {
    const setter = fc.constantFrom('Set', 'set', 'Please change', 'Reset', 'I updated', 'SET', 'Then set');
    const whose = fc.constantFrom('', 'the ', 'your ', 'our ', 'the new ');
    const name = fc.constantFrom('password', 'API key', 'admin password', 'access token', 'passphrase', 'DB_PASSWORD', 'secret');
    const owner = fc.constantFrom('', ' for prod', ' of the deploy bot', ' on db-01');
    const after = fc.constantFrom('', '.', ' and restart.', ' (rotate it).');
    const words = fc.constantFrom('something memorable', 'the new one', 'expire in 30 days', 'the value in Vault', 'null', 'your own');
    fc.assert(
      fc.property(setter, whose, name, owner, random, after, words, fc.boolean(), (set, w, n, o, value, end, prose, quote) => {
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 12 && shannonEntropy(value) >= 3);
        const q = quote ? '"' : '';
        for (const text of [`${set} ${w}${n}${o} to ${q}${value}${q}${end}`, `${n.replace(/ /g, '_')} <- "${value}"`]) {
          const at = text.indexOf(value);
          expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end), text).toBe(true);
        }
        expect(detectKinds('secrets', `${set} ${w}${n}${o} to ${prose}${end}`)).toEqual([]);
        // (Unquoted after `<-`, a program's variable.)
        expect(detectKinds('secrets', `${n.replace(/ /g, '_')} <- ${prose.replace(/ /g, '_')}`)).toEqual([]);
        expect(detectKinds('secrets', `${n.replace(/ /g, '_')} <- ${value}`)).toEqual([]);
        // (The word before the name says what it names: a key that looks a record up.)
        expect(detectKinds('secrets', `${set} the cache key${o} to ${value}${end}`)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a value after a name and its type (Python, TypeScript) or a prose name and whose it is or a remark in brackets before a colon, and no expression, word or other name there', () => {
    const name = fc.constantFrom('api_key', 'DB_PASSWORD', 'secret_key', 'apiKey', 'auth_token');
    const type = fc.constantFrom('str', 'string', 'Optional[str]', 'typing.Optional[str]', 'str | None', 'SecretStr', 'dict[str, str] | None');
    const expression = fc.constantFrom('os.environ["API_KEY"]', 'Field(default=None)', 'None', 'settings.api_key', 'env("API_KEY")', '""');
    const who = fc.constantFrom('The', 'Your', 'The staging');
    const prose = fc.constantFrom('password', 'API key', 'access token', 'secret');
    const owner = fc.constantFrom(' for prod', ' for the staging box', ' of the deploy bot', ' on db-01');
    const words = fc.constantFrom('see the dashboard', 'stored in Vault', 'not set', 'rotated monthly');
    // (A remark in brackets between the name and its colon: `Password (temporary): ...`.)
    const remark = fc.constantFrom('temporary', 'production', 'prod, read-only', 'expires 2025-01-31', 'str', 'optional');
    fc.assert(
      fc.property(name, type, expression, random, who, prose, owner, words, remark, (n, t, e, value, w, p, o, said, r) => {
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 12);
        for (const text of [`${n}: ${t} = "${value}"`, `    ${n}: ${t} = '${value}'  # from the vault`, `${w} ${p}${o}: ${value}`, `${p} (${r}): ${value}`, `${n} (${r}): ${value}`]) {
          const at = text.indexOf(value);
          expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end), text).toBe(true);
        }
        expect(detectKinds('secrets', `${n}: ${t} = ${e}`)).toEqual([]);
        // (The name before the type names the value; a type that names a secret, `SecretStr`, would name it too.)
        expect(detectKinds('secrets', `name: ${t.replace('SecretStr', 'Str')} = "${value}"`)).toEqual([]);
        expect(detectKinds('secrets', `${w} ${p}${o}: ${said}`)).toEqual([]);
        // (A docstring's argument, its type in brackets, then words.)
        expect(detectKinds('secrets', `    ${n} (${t}): ${said}.`)).toEqual([]);
        expect(detectKinds('secrets', `${p} (${r}): ${said}`)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a password, a token or a key after its word and a blank alone, and no word or phrase after it', () => {
    const before = fc.constantFrom('Log in as admin and', 'Use user deploy with', 'machine ci.example.com login bot', 'Then type the', '');
    // (Also a name that ends in one of those words: a Dockerfile's `ENV API_KEY value`, a properties file's line, a
    // name in camel case.)
    const word = fc.constantFrom('password', 'Password', 'PASSWORD', 'passwd', 'passphrase', 'token', 'API key', 'secret', 'ENV API_KEY', 'smtp_password', 'spring.datasource.password', 'access-token', 'ApiKey', 'clientSecret', 'authToken', 'dbPassword');
    const words = fc.constantFrom('reset', 'manager', 'authentication', 'hash is bcrypt', 'field', 'less login', 'policy', '********', '12345678', '$DB_PASSWORD', '<your password>', '%s');
    fc.assert(
      fc.property(before, word, random, words, fc.constantFrom('', '.', ' to sign in.', ', then press enter.'), (b, w, value, prose, end) => {
        // (After a token's, a key's or a secret's word, a value random to look at: 3.5 bits a character, as 16 distinct
        // characters of 20 or more hold.)
        // (A value that starts with `/` before a path's segment, `/Aai9jodejri3k6784e8`, reads as a path: none.)
        // (A draw biased to one character, `3+A0ATAgAAAAAAAAAAAAYWuSkm`, holds 2.4 bits a character: no password's (and a token's, a key's or a secret's value after its word alone holds 3.5).)
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= (/pass/i.test(w) ? 12 : 16) && shannonEntropy(value) >= (/pass/i.test(w) ? 2.5 : 3.5) && !/^\/[A-Z]?[a-z0-9]/.test(value));
        const text = `${b} ${w} ${value}${end}`.trim();
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= at && at + value.length <= s.end), text).toBe(true);
        // (In a .netrc's line the password's field is a password, whatever it holds.)
        if (!b.startsWith('machine')) expect(detectKinds('secrets', `${b} ${w} ${prose}${end}`.trim())).toEqual([]);
        // (A path's last segment names a file, not the word after it: `/run/secrets/db_password postgres:16`.)
        expect(detectKinds('secrets', `docker run -e DB_PASSWORD_FILE=/run/secrets/${w.replace(/ /g, '_')} ${value}`)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
    // (A name in camel case then its type is a declaration's.)
    for (const code of ['APIKey string `json:"api_key"`', 'ApiKey string `json:"api_key"`', 'func New(apiKey string, secretKey string) *Client', 'public string ApiKey { get; set; }', 'AuthToken *string', 'the monkey business'])
      expect(detectKinds('secrets', code), code).toEqual([]);
  });

  it("finds and masks a password of 8 or 9 letters of both cases that read as no word, under a password's name, and no word or name there", () => {
    // (A meeting's passcode, `581930`, written in base64 is `NTgxOTMw`, letters alone: a password's value of letters
    // asked 10 of them, and it went out. The base64 of a six-digit passcode is 8 characters, too short a run to decode.)
    const named = fc.constantFrom('password: ', 'Passcode: ', 'DB_PASSWORD=', '"password": "', 'export PGPASSWORD=', '<password>');
    fc.assert(
      fc.property(named, fc.uniqueArray(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), { minLength: 8, maxLength: 9 }), fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }), (name, picked, upper) => {
        // (Two capitals side by side after a small letter: no camel case, whose parts may read as words.)
        const v = picked.map((c, k) => (k === 1 || k === 2 || (k > 2 && upper[k]) ? c.toUpperCase() : c)).join('');
        const text = `${name}${v}${name.startsWith('"') ? '"' : name.startsWith('<') ? '</password>' : ''}\n`;
        expect(masksWhole(text, v), text).toBe(true);
      }),
      { numRuns: 500 },
    );
    expect(masksWhole(`Passcode: ${Buffer.from('581930').toString('base64')}\n`, 'NTgxOTMw')).toBe(true);
    for (const text of ['password: PassWord', 'password: changeMe', 'Passcode: Required', 'DB_PASSWORD=MyDbPass', 'password: JavaScript', 'password: pa$$word', 'password: secrets.*', 'password: aaaaBBBB'])
      expect(detectKinds('secrets', text), text).toEqual([]);
  });

  it('finds and masks the value a command sets a variable to after a blank, where its name goes on after the secret\'s word, and no variable, path or placeholder there', () => {
    // (`ENV SECRET_KEY_BASE ...`, a Rails app's Dockerfile in the older form: a name read after a blank only where it
    // ends in the secret's word.)
    const command = fc.constantFrom('ENV', 'setenv', 'SetEnv', 'setx', 'RUN true && ENV');
    const name = fc.tuple(fc.constantFrom('', 'DB_', 'RAILS_', 'APP_', 'GITHUB_'), fc.constantFrom('SECRET_KEY', 'PASSWORD', 'TOKEN', 'API_KEY', 'MASTER_KEY', 'secret_key', 'AccessKey'), fc.constantFrom('_BASE', '_BASE64', '_B64', '_PROD', '_V2', '_VALUE', '_live')).map(([a, b, c]) => a + b + c);
    fc.assert(
      fc.property(command, name, RANDOM_VALUE, fc.constantFrom('', '"'), fc.constantFrom('', '\nCOPY . .'), (cmd, n, v, q, after) => {
        const text = `FROM ruby:3.3\n${cmd} ${n} ${q}${v}${q}${after}`;
        expect(masksWhole(text, v), text).toBe(true);
        for (const none of ['$SECRET', '${SECRET}', '%SECRET%', '/run/secrets/key_base', 'changeme-please-123', '<your-key-here>', 'sk_live_...'])
          expect(detectKinds('secrets', `${cmd} ${n} ${none}`), `${cmd} ${n} ${none}`).toEqual([]);
      }),
      { numRuns: 300 },
    );
    for (const text of ['ENV SECRET_KEY_BASE_FILE /run/secrets/skb', 'ENV PASSWORD_MIN_LENGTH 12', 'ENV TOKEN_TTL_PROD 3600', 'env API_TOKEN_PROD=x ./run.sh', 'the environment variable SECRET_KEY_BASE is set'])
      expect(detectKinds('secrets', text), text).toEqual([]);
  });

  it("finds nothing in words a URL's query joins with percent-escapes under `key` or `auth` alone, and masks a random value escaped so", () => {
    // (`x:/resource?key=value%23still-query#...`, a URL library's test: the escape's digits glued to a word made the
    // value read as no words.)
    const words = fc.array(fc.constantFrom('value', 'still', 'query', 'fragment', 'first', 'search', 'term', 'hello', 'world', 'api', 'docs'), { minLength: 2, maxLength: 4 });
    fc.assert(
      fc.property(fc.constantFrom('key', 'auth', 'Key'), words, fc.array(fc.constantFrom('%23', '%20', '%2F', '%2C', '%3A', '-', '_'), { minLength: 3, maxLength: 3 }), (n, ws, seps) => {
        fc.pre(seps.some((x) => x.startsWith('%')));
        const value = ws.map((w, i) => (i === 0 ? w : seps[(i - 1) % seps.length] + w)).join('');
        const text = `GET https://api.example.com/v1/search?${n}=${value}&page=2`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(RANDOM_VALUE, fc.constantFrom('%2B', '%2F', '%3D'), (v, esc) => {
        const value = `${v.slice(0, 6)}${esc}${v.slice(6)}${esc}`;
        expect(masksWhole(`GET https://api.example.com/v1/x?key=${value}&page=2`, value), value).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('finds and masks a password a security tool is given to log in or to try, and no file of passwords, variable, placeholder or word there', () => {
    // (`hydra -l admin -p ... ssh://...`: an agent's pentest session; the tool's `-p` was no client's flag the rules knew.)
    const tool = fc.constantFrom('hydra -l admin', 'medusa -h 10.0.0.5 -u admin', 'crackmapexec smb 10.0.0.0/24 -u administrator', 'nxc winrm 10.0.0.5 -u svc', 'netexec ldap dc01 -u j.doe', 'evil-winrm -i 10.0.0.5 -u Administrator', 'smbmap -H 10.0.0.5 -u guest', 'enum4linux -u admin');
    const value = fc.tuple(RANDOM_VALUE, fc.constantFrom('', '!', '#42', '@1')).map(([v, t]) => (v + t).slice(0, 24));
    fc.assert(
      fc.property(tool, value, fc.constantFrom('', ' ssh://10.0.0.5', ' -M mimikatz', ' --local-auth'), (t, v, after) => {
        const text = `$ ${t} -p ${v}${after}`;
        expect(masksWhole(text, v), text).toBe(true);
        for (const none of ['passwords.txt', '$PASS', 'PASSWORD', '<password>', 'Summer'])
          expect(detectKinds('secrets', `$ ${t} -p ${none}${after}`), `${t} -p ${none}`).toEqual([]);
      }),
      { numRuns: 300 },
    );
    for (const text of ['hydra -l admin -P /usr/share/wordlists/rockyou.txt ssh://10.0.0.5', 'the acme -p flag is set', 'medusa -h host -U users.txt -P pass.lst -M ssh'])
      expect(detectKinds('secrets', text), text).toEqual([]);
  });

  it("finds and masks a row's value of comma-separated values after a first cell that names a secret, as random as an assignment's value must be (four fifths of the entropy its length allows), and no word or name there", () => {
    const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    // (Drawn from a few characters, so that many values are near the bar: `aaayg3IwygaGcmjK`, 3.25 bits.)
    const value = fc
      .shuffledSubarray([...ALNUM], { minLength: 6, maxLength: 14 })
      .chain((few) => fc.array(fc.constantFrom(...few), { minLength: 16, maxLength: 19 }))
      .map((cs) => cs.join(''));
    fc.assert(
      fc.property(fc.constantFrom('api_token', 'genericToken', 'password', 'client_secret'), value, fc.constantFrom(',', ',2024-01-02', ''), (name, v, after) => {
        fc.pre(/[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && !wordy(v));
        const text = `${name},${v}${after}`;
        const found = spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= name.length + 1 && name.length + 1 + v.length <= s.end);
        expect(found, text).toBe(shannonEntropy(v) >= 0.8 * Math.log2(v.length));
      }),
      { numRuns: 1000 },
    );
    expect(detectKinds('secrets', 'api_token,ReadOnlyAccessKey,')).toEqual([]);
  });

  it('finds and masks a random value in a table column whose header names a secret (Markdown, CSV, TSV, psql, the MySQL client, sqlite3, names and values), at any row, and nothing under a header that names none or in a cell of words', () => {
    const header = fc.constantFrom('token', 'API key', 'api_key', 'password', 'Secret', 'client_secret', 'DB_PASSWORD', 'Access Token');
    const other = fc.constantFrom('service', 'owner', 'region', 'created', 'Name', 'status');
    const filler = fc.constantFrom('deploy', 'ops', 'eu-west-1', '2024-01-02', 'ok', 'web app');
    const notSecret = fc.constantFrom('not set', '(none)', '${WEB_TOKEN}', 'prod/db/password', 'REDACTED', '********', 'rotated monthly', 'string');
    const shape = fc.constantFrom('markdown', 'markdown-bare', 'csv', 'tsv', 'pairs', 'psql', 'mysql', 'sqlite');
    const table = (sh: string, head: string[], rows: string[][]): string => {
      if (sh === 'csv') return [head, ...rows].map((r) => r.join(',')).join('\n');
      // (sqlite3's output with `-header`: cells between `|`s and no rule under the header.)
      if (sh === 'sqlite') return [head, ...rows].map((r) => r.join('|')).join('\n');
      if (sh === 'tsv') return [head, ...rows].map((r) => r.join('\t')).join('\n');
      // (A database client's: its cells padded to the column's width, the rule's cells joined by `+`.)
      const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
      const pad = (r: string[]) => r.map((x, c) => ` ${x.padEnd(widths[c]!)} `);
      const dashes = widths.map((w) => '-'.repeat(w + 2));
      if (sh === 'psql') return [pad(head).join('|'), dashes.join('+'), ...rows.map((r) => pad(r).join('|')), `(${rows.length} rows)`].join('\n');
      if (sh === 'mysql') {
        const border = `+${dashes.join('+')}+`;
        return [border, `|${pad(head).join('|')}|`, border, ...rows.map((r) => `|${pad(r).join('|')}|`), border, `${rows.length} rows in set (0.00 sec)`].join('\n');
      }
      const line = (r: string[]) => (sh === 'markdown-bare' ? r.join(' | ') : `| ${r.join(' | ')} |`);
      return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
    };
    fc.assert(
      fc.property(
        shape,
        header,
        fc.array(other, { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat(),
        random,
        filler,
        notSecret,
        fc.constantFrom('', 'Here they are:\n', 'Result of the query, 3 rows:\n'),
        (sh, h, others, col, n, row, value, fill, none, before) => {
          fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && !/[+/]/.test(value) && new Set(value).size >= 12);
          const pairs = sh === 'pairs';
          const at = Math.min(col, others.length);
          const head = pairs ? ['Variable', 'Value'] : [...others.slice(0, at), h, ...others.slice(at)];
          const secretCol = pairs ? 1 : at;
          const rowsOf = (cell: string) =>
            Array.from({ length: n }, (_, i) => (pairs ? (i === row % n ? [h, cell] : ['LOG_LEVEL', fill]) : head.map((_, c) => (c === secretCol ? (i === row % n ? cell : 'not set') : fill))));
          const text = before + table(pairs ? 'markdown' : sh, head, rowsOf(value));
          const i = text.indexOf(value);
          expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= i && i + value.length <= s.end), text).toBe(true);
          // A cell of words or names under the same header, and the value under a header that names no secret.
          expect(detectKinds('secrets', before + table(pairs ? 'markdown' : sh, head, rowsOf(none)))).toEqual([]);
          if (!pairs) expect(detectKinds('secrets', before + table(sh, head.map((c, k) => (k === secretCol ? 'commit' : c)), rowsOf(value)))).toEqual([]);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a secret written as base64, hex or hex of base64 in a table column whose header names a secret, however many rows below the header', () => {
    const header = fc.constantFrom('token', 'api_key', 'password', 'client_secret', 'Access Token');
    const shape = fc.constantFrom('markdown', 'csv', 'tsv');
    const encode = (v: string, how: string): string => {
      if (how === 'base64') return Buffer.from(v).toString('base64');
      if (how === 'hex') return Buffer.from(v).toString('hex');
      return Buffer.from(Buffer.from(v).toString('base64')).toString('hex');
    };
    const table = (sh: string, rows: string[][]): string => {
      if (sh === 'csv') return rows.map((r) => r.join(',')).join('\n');
      if (sh === 'tsv') return rows.map((r) => r.join('\t')).join('\n');
      return [rows[0]!, rows[0]!.map(() => '---'), ...rows.slice(1)].map((r) => `| ${r.join(' | ')} |`).join('\n');
    };
    fc.assert(
      fc.property(
        shape,
        header,
        // A key of hex digits: hex of its text is digits but for one in four, which reads as no random value as written.
        fc.oneof(fc.stringMatching(/^[0-9a-f]{32,40}$/), random),
        fc.constantFrom('base64', 'hex', 'hex-of-base64'),
        fc.integer({ min: 0, max: 12 }),
        (sh, h, value, how, above) => {
          // (A value read as a secret where it stands as written under the name.)
          fc.pre(detectKinds('secrets', `${h.replace(/ /g, '_')}=${value}`).length > 0);
          const cell = encode(value, how);
          const rows = [['service', h, 'created'], ...Array.from({ length: above }, (_, i) => [`svc-${i}`, 'not set', '2024-01-02']), ['prod', cell, '2024-01-02']];
          const text = table(sh, rows);
          const i = text.indexOf(cell);
          expect(spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= i && i + cell.length <= s.end), text).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("finds and masks a program's fallback literal, a Terraform variable's default, a verbatim or a borrowed string, an authorization's value, and nothing under another name or in words there", () => {
    const name = fc.constantFrom('API_KEY', 'db_password', 'clientSecret', 'AUTH_TOKEN', 'stripe_secret_key');
    const other = fc.constantFrom('REGION', 'log_level', 'baseUrl', 'user_name');
    const words = fc.constantFrom('demo', 'changeme', '', 'not-set', 'your-api-key-here');
    const shape = fc.constantFrom('or', '||', '??', 'terraform', 'verbatim', 'borrowed', 'static', 'authorization', 'authorization-json');
    const write = (how: string, n: string, v: string): string => {
      if (how === 'or') return `${n} = os.environ.get("${n}") or "${v}"`;
      if (how === '||') return `const ${n} = process.env.${n} || "${v}";`;
      if (how === '??') return `  ${n}: config.get('${n}') ?? '${v}',`;
      if (how === 'terraform') return `variable "${n}" {\n  description = "What the service calls with"\n  type        = string\n  sensitive   = true\n  default     = "${v}"\n}`;
      if (how === 'verbatim') return `string ${n} = @"${v}";`;
      if (how === 'borrowed') return `static ${n.toUpperCase()}: &str = "${v}";`;
      if (how === 'static') return `const ${n.toUpperCase()}: &'static str = "${v}";`;
      if (how === 'authorization') return `authorization=${v}`;
      return `{"${n === 'API_KEY' ? 'Authorization' : 'authorization'}": "${v}"}`;
    };
    fc.assert(
      fc.property(shape, name, other, words, random, (how, n, o, w, value) => {
        // (Nor one that reads as words, which a program's literal is read as a name: `/AezhkAoqzAecAA2Avdb`, some 0.003 %
        // of random base64 ones.)
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 12 && shannonEntropy(value) >= 3 && !wordy(value));
        const text = write(how, n, value);
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((x) => x.start <= at && at + value.length <= x.end), JSON.stringify(text)).toBe(true);
        if (!how.startsWith('authorization')) expect(detectKinds('secrets', write(how, o, value)), JSON.stringify(write(how, o, value))).toEqual([]);
        expect(detectKinds('secrets', write(how, n, w)), JSON.stringify(write(how, n, w))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a literal an equality compares a secret with, in any language\'s spelling, and nothing compared with a variable or words, ordered, or under another name', () => {
    const name = fc.constantFrom('password', 'apiKey', 'token', 'API_KEY', 'req.headers["x-api-key"]', 'self.secret', 'client_secret');
    const other = fc.constantFrom('region', 'e.code', 'user_name', 'mode');
    const eq = fc.constantFrom('==', '===', '!=', '!==', ' == ', ' === ', ' != ', ' !== ');
    const quote = fc.constantFrom('"', "'", '`');
    const shape = fc.constantFrom('if (%) {', 'if %:', 'assert %', 'return %;', 'unless %', 'WHERE % AND x', '  %');
    // (Camel case after an acronym, a keyboard's `UIKeyInputUpArrow`, names a constant under any name but a password's.)
    const words = fc.constantFrom('ArrowDown', 'UIKeyInputUpArrow', 'HTMLInputElement', 'URLSearchParams', '', 'changeme', 'Bearer', 'not-set');
    fc.assert(
      fc.property(shape, name, other, eq, quote, words, random, (how, n, o, op, q, w, value) => {
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 12 && shannonEntropy(value) >= 3 && !wordy(value));
        const write = (left: string, right: string, cmp: string = op) => how.replace('%', `${left}${cmp}${right}`);
        const text = write(n, q + value + q);
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((x) => x.start <= at && at + value.length <= x.end), JSON.stringify(text)).toBe(true);
        const acronym = /^[A-Z]{2}/.test(w) && n === 'password';
        for (const none of [write(o, q + value + q), ...(acronym ? [] : [write(n, q + w + q)]), write(n, 'expected_value'), write(n, q + value + q, op.replace(/!?==?=?/, '<=')), write(n, q + value + q, op.replace(/!?==?=?/, '>='))])
          expect(detectKinds('secrets', none), JSON.stringify(none)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('withholds every literal a concatenation joins to a secret written out, whatever the operator, and nothing past a variable', () => {
    const name = fc.constantFrom('password', 'api_key', 'DB_PASSWORD', 'client_secret', '$token', 'local secret');
    const join = fc.constantFrom(' + ', '+', ' . ', '.', ' .. ', ' || ', ' & ', ' ');
    const quote = fc.constantFrom('"', "'");
    fc.assert(
      fc.property(name, join, quote, random, fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 3 }), fc.constantFrom('', ';', ' + suffix', ')'), (n, op, q, value, cuts, end) => {
        // What is found written whole is found joined: each literal withheld, cut anywhere.
        fc.pre(spansOf(new DetectionCache(), `${n} = ${q}${value}${q}`, ALL).length > 0);
        const pieces = [value.slice(0, cuts[0]!)];
        let at = cuts[0]!;
        for (const c of cuts.slice(1)) {
          if (at >= value.length) break;
          pieces.push(value.slice(at, at + c));
          at += c;
        }
        if (at < value.length) pieces.push(value.slice(at));
        const text = `${n} = ${pieces.map((p) => q + p + q).join(op)}${end}`;
        const spans = spansOf(new DetectionCache(), text, ALL);
        let i = n.length + 3;
        for (const p of pieces) {
          expect(spans.some((x) => x.start <= i + 1 && i + 1 + p.length <= x.end), `${JSON.stringify(p)} of ${JSON.stringify(text)}`).toBe(true);
          i += p.length + 2 + op.length;
        }
        // What follows the last literal is no part of the value.
        if (end === ' + suffix') expect(spans.every((x) => x.end <= text.indexOf(' + suffix')), JSON.stringify(text)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds and masks a value in an SQL INSERT's column that names a secret, in any row, however its names are quoted and the statement laid out, and nothing in another column or in words there", () => {
    const secret = fc.constantFrom('password', 'api_key', 'db_password', 'access_token', 'client_secret', 'AuthToken');
    const other = fc.constantFrom('id', 'email', 'name', 'created_at', 'region', 'note');
    const cellOf = fc.constantFrom("'alice'", '42', 'NULL', 'now()', "'it''s, (fine)'", "COALESCE(NULL, 'x')", "'2024-01-02 10:00:00'", 'TRUE', "E'a\\'b'", '-1.5');
    const quote = fc.constantFrom<readonly string[]>(['', ''], ['"', '"'], ['`', '`'], ['[', ']']);
    const layout = fc.constantFrom('one', 'lines', 'dump');
    const statement = (table: string, cols: string[], rows: string[][], q: readonly string[], how: string, lower: boolean): string => {
      const head = `${lower ? 'insert into' : 'INSERT INTO'} ${table} (${cols.map((c) => q[0] + c + q[1]).join(', ')})`;
      const values = rows.map((r) => `(${r.join(how === 'dump' ? ',' : ', ')})`);
      const kw = lower ? 'values' : 'VALUES';
      if (how === 'one') return `${head} ${kw} ${values.join(', ')};`;
      if (how === 'lines') return `${head}\n${kw}\n  ${values.join(',\n  ')};\n`;
      return `-- Data for Name: users\n${head} ${kw} ${values.join(',')};\n`;
    };
    fc.assert(
      fc.property(
        secret,
        fc.array(other, { minLength: 1, maxLength: 4 }),
        fc.nat(4),
        fc.array(fc.tuple(random, fc.array(cellOf, { minLength: 4, maxLength: 4 })), { minLength: 1, maxLength: 4 }),
        quote,
        layout,
        fc.boolean(),
        fc.constantFrom('users', 'public.accounts', '`svc_keys`', '"Users"'),
        (n, others, p, rows, q, how, lower, table) => {
          // (Each a value read as a secret where it stands as written under the name: not one that reads as a path.)
          fc.pre(rows.every(([v]) => detectKinds('secrets', `${n}=${v}`).length > 0));
          const at = Math.min(p, others.length);
          const cols = [...others.slice(0, at), n, ...others.slice(at)];
          const cells = rows.map(([v, o]) => [...o.slice(0, at), `'${v}'`, ...o.slice(at, others.length)]);
          const text = statement(table, cols, cells, q, how, lower);
          const spans = spansOf(new DetectionCache(), text, ALL);
          for (const [v] of rows) {
            const i = text.indexOf(v);
            expect(spans.some((x) => x.start <= i && i + v.length <= x.end), `${v} in ${JSON.stringify(text)}`).toBe(true);
          }
          // (Under a column that names no secret, or as words, nothing.)
          const renamed = [...others.slice(0, at), 'label', ...others.slice(at)];
          expect(detectKinds('secrets', statement(table, renamed, cells, q, how, lower)), 'renamed').toEqual([]);
          const worded = rows.map(([, o]) => [...o.slice(0, at), "'not set'", ...o.slice(at, others.length)]);
          expect(detectKinds('secrets', statement(table, cols, worded, q, how, lower)), 'words').toEqual([]);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("finds and masks a random value in a Markdown table's row alone, on the line after its label, or in an element an attribute names, and nothing under another name or in words there", () => {
    const name = fc.constantFrom('password', 'API key', 'api_key', 'DB_PASSWORD', 'Access Token', 'client_secret', 'spring.datasource.password');
    const other = fc.constantFrom('commit', 'Region', 'request id', 'app_name', 'build.number');
    const words = fc.constantFrom('not set', 'required', 'rotated monthly', 'see the vault', '********', '${API_KEY}', 'string');
    const placed = fc.constantFrom('row', 'row-tight', 'label', 'label-colon', 'label-heading', 'label-rule', 'label-gap', 'string', 'entry', 'property');
    const write = (how: string, n: string, v: string): string => {
      if (how === 'row') return `| ${n} | ${v} |`;
      if (how === 'row-tight') return `|${n}|${v}|`;
      if (how === 'label') return `${n}\n${v}`;
      if (how === 'label-colon') return `Your ${n}:\n\n    ${v}\n`;
      if (how === 'label-heading') return `## ${n}\n\n${v}\n`;
      if (how === 'label-rule') return `${n}\n${'-'.repeat(n.length)}\n${v}`;
      if (how === 'label-gap') return `${n}:\n\n${v}`;
      const tag = how === 'string' ? 'string' : how;
      const attribute = how === 'entry' ? 'key' : 'name';
      return `<${tag} ${attribute}="${n.replace(/ /g, '_')}">${v}</${tag}>`;
    };
    fc.assert(
      fc.property(placed, name, other, words, random, fc.constantFrom('', 'Created.\n', '<resources>\n  ', '| Setting | Value |\n|---|---|\n'), (how, n, o, w, value, before) => {
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 12 && shannonEntropy(value) >= 3);
        // (Under a label with no colon, and in a row alone under a name other than a password's, a value random to look
        // at, as after a word and a blank: letters of both cases, digits, `_` and `-`, 3.5 bits a character.)
        // (Nor one that reads as words, some 0.02 % of random ones: `Arn3AymAaybAjdepdb0U`.)
        if (['label', 'label-heading', 'label-rule'].includes(how) || (how.startsWith('row') && !/pass/i.test(n))) fc.pre(/^[\w-]{16,}$/.test(value) && /[a-z]/.test(value) && /[A-Z]/.test(value) && shannonEntropy(value) >= 3.5 && !wordy(value));
        // (A row under a header that names neither column is read alone as well.)
        if (before.startsWith('|') && !how.startsWith('row')) before = '';
        const text = before + write(how, n, value);
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((x) => x.start <= at && at + value.length <= x.end), JSON.stringify(text)).toBe(true);
        expect(detectKinds('secrets', before + write(how, o, value)), JSON.stringify(before + write(how, o, value))).toEqual([]);
        expect(detectKinds('secrets', before + write(how, n, w)), JSON.stringify(before + write(how, n, w))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds nothing in a repository's address as git writes it, or a path that ends a sentence, under a secret's name", () => {
    const segment = fc.stringMatching(/^[a-z]{2,10}(?:-[a-z]{2,8})?[0-9]$/);
    fc.assert(
      fc.property(secretName, segment, segment, fc.constantFrom('github.com', 'gitlab.example.org', 'bitbucket.org'), (name, a, b, host) => {
        for (const value of [`git@${host}:${a}/${b}.git`, `deploy@${host}:~/${a}`, `${a}/${b}.`, `~/.config/${a}/${b}.`]) {
          expect(detectKinds('secrets', `${name}: ${value}`), `${name}: ${value}`).toEqual([]);
        }
      }),
      // (A repository's name whose base64 reading holds an overlong sequence, read so after the address's `:`.)
      // (And one whose base64 reading decodes to letters of another script there, `asaaagoga0/aaaa0` as `jƚj`.)
      { numRuns: 300, examples: [['API_KEY', 'aiogaibwga6', 'aaa0', 'github.com'], ['API_KEY', 'asaaagoga0', 'aaaa0', 'github.com']] },
    );
  });

  it('finds nothing in a path to a key file, or in a name of a secret under a name that says so', () => {
    const word = fc.tuple(fc.constantFrom('home', 'etc', 'keys', 'secrets', 'run', 'ssl', 'private', 'config', 'prod', 'app', 'db', 'service', 'account', 'id', 'credentials'), fc.constantFrom('', '2', '2025', '_rsa', '-v2', '_ed25519'));
    const path = fc.tuple(fc.constantFrom('/', '~/', './', '../', ''), fc.array(word, { minLength: 2, maxLength: 5 }), fc.constantFrom('', '.json', '.pem', '.key', '.yaml', '.txt')).map(([root, words, ext]) => root + words.map(([w, t]) => w + t).join('/') + ext);
    const referenceName = fc.tuple(fc.constantFrom('api_key', 'SECRET', 'db_password', 'privateKey', 'CLIENT_SECRET'), fc.constantFrom('_file', '_path', '_name', '_header', 'Ref', '_ARN', '_env')).map(([a, b]) => a + b);
    const identifier = fc.tuple(fc.array(word, { minLength: 2, maxLength: 4 }), fc.constantFrom('-', '_')).map(([words, sep]) => words.map(([w, t]) => w + t.replace(/^[-_]/, '')).join(sep));
    fc.assert(
      fc.property(fc.oneof(secretName, referenceName), path, referenceName, identifier, fc.integer({ min: 0, max: 2 }), (name, p, ref, id, form) => {
        expect(detectKinds('secrets', written(name, p, form))).toEqual([]);
        expect(detectKinds('secrets', written(ref, id + 'Xk9', form))).toEqual([]);
        if (!/pass/i.test(name)) expect(detectKinds('secrets', written(name, id, form))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds nothing in a program's expressions, types and names, and finds what it writes out in quotes", () => {
    const name = fc.constantFrom('key', 'token', 'apiKey', 'password', 'secretKey', 'authToken', 'cacheKey', 'objectKey', 'userPassword');
    // (A cache's or an object's key looks a record up: what is written under it is no secret.)
    const secretName = fc.constantFrom('key', 'token', 'apiKey', 'password', 'secretKey', 'authToken', 'userPassword');
    const word = fc.constantFrom('all', 'sorted', 'object', 'progress', 'schema', 'token', 'keys', 'list', 'value', 'model', 'context', 'protocol', 'client', 'info', 'entry');
    const camel = fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => ws.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join(''));
    const type = fc.constantFrom('Uint8Array', 'ProgressTokenSchema$1', 'KeyObject', 'SecretValue');
    const program = fc.oneof(
      fc.tuple(name, camel, fc.constantFrom('i', 'j', '0', 'index')).map(([n, a, i]) => `const ${n} = ${a}[${i}];`),
      fc.tuple(name, camel, camel).map(([n, a, b]) => `let ${n} = ${a}.${b};`),
      fc.tuple(name, type, type).map(([n, t, u]) => `function check(${n}: ${t}, other: ${u}): boolean;`),
      fc.tuple(name, type).map(([n, t]) => `  ${n}: ${t};`),
      fc.tuple(camel, name, camel, camel).map(([o, n, a, b]) => `${o}.${n}=${a}.${b}||null;`),
      fc.tuple(camel, name, camel).map(([a, n, b]) => `if (${a}.${n}==${b}) return;`),
      fc.tuple(fc.constantFrom('PROTOCOL_VERSION_META_KEY', 'CACHE_KEY', 'CLIENT_INFO_KEY', 'ROUTE_TOKEN'), fc.array(camel, { minLength: 2, maxLength: 3 }), fc.constantFrom('/', '.')).map(([n, ws, sep]) => `const ${n} = "io.${ws.join(sep)}";`),
      fc.tuple(camel).map(([a]) => `}},{key:"_get${a[0]!.toUpperCase()}${a.slice(1)}Value",value:function(){return 1}}`),
    );
    // Hex in either case and base32: machine-made, not words.
    const written = fc.oneof(fc.stringMatching(/^[0-9a-f]{24,40}$/), fc.stringMatching(/^[0-9A-F]{24,40}$/), fc.stringMatching(/^[A-Z2-7]{24,40}$/));
    const out = fc.oneof(
      fc.tuple(secretName, fc.constantFrom('const', 'let', 'private readonly')).map(([n, d]) => (v: string) => `${d} ${n} = "${v}";`),
      fc.tuple(secretName).map(([n]) => (v: string) => `const options = { ${n}: '${v}', retries: 3 };`),
      fc.tuple(fc.constantFrom('config', 'settings', 'this.options', 'client'), secretName).map(([o, n]) => (v: string) => `${o}.${n} = "${v}";`),
    );
    fc.assert(
      fc.property(program, out, written, (code, write, value) => {
        fc.pre(/[0-9]/.test(value) && /[A-Za-z]/.test(value) && new Set(value).size >= 8);
        expect(detectKinds('secrets', code), code).toEqual([]);
        const text = `${code}\n${write(value)}`;
        const at = text.indexOf(value);
        expect(spansOf(new DetectionCache(), text, ALL).some((sp) => sp.start <= at && at + value.length <= sp.end), text).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("a URL's user that is a token", () => {
  // (As random as a token is: letters of both cases and digits, 3.8 bits a character or more.)
  const TOKEN = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
  const random = fc
    .array(fc.constantFrom(...TOKEN), { minLength: 20, maxLength: 48 })
    .map((cs) => cs.join(''))
    .filter((v) => /[a-z]/.test(v) && /[A-Z]/.test(v) && /[0-9]/.test(v) && shannonEntropy(v) >= 3.8);
  // (As random as a token's 40 hex digits are: 3.5 bits a digit or more.)
  const hex40 = fc.array(fc.constantFrom(...'0123456789abcdef'), { minLength: 40, maxLength: 40 }).map((cs) => cs.join('')).filter((v) => shannonEntropy(v) >= 3.5);
  const url = fc.constantFrom('https://@github.com/acme/app.git', 'http://@gitlab.internal:8080/g/r', 'git+https://@bitbucket.org/a/b', 'https://@api.example.com/v1/items?page=2', 'ssh://@git.example.com/repo');

  it('finds and masks a token written as a URL\'s user with no password (`https://<token>@github.com/...`), in prose, a command or a config', () => {
    fc.assert(
      fc.property(fc.oneof(random, hex40), url, fc.constantFrom('git clone ', 'url = ', '"', 'remote: ', ''), (token, u, before) => {
        const text = `${before}${u.replace('//@', `//${token}@`)}${before === '"' ? '"' : ''}\n`;
        const at = text.indexOf(token);
        expect(spansOf(new DetectionCache(), text, new Set(SECRET_KINDS)).some((x) => x.start <= at && at + token.length <= x.end), text).toBe(true);
      }),
      // (Drawn at ten times the runs: random tokens whose parts but one read as words, `micla`, `Dvyeht`, `Otnfr`.)
      { numRuns: 500, examples: [['LSW0miclaDvyehtOtnfr', 'https://@github.com/acme/app.git', 'git clone '], ['AguAA8vkzdicsEdtAonr', 'ssh://@git.example.com/repo', 'remote: ']] },
    );
  });

  it('finds nothing where the user is a name, a word, a key id or an email, or the host holds the token', () => {
    for (const user of ['git', 'x-access-token', 'oauth2', 'bob.smith', 'APKAEIBAERJR2EXAMPLE', 'deploy-bot-2024', 'ci_runner_staging_01', 'anonymous', 'svc-account-readonly']) {
      for (const u of ['https://@github.com/acme/app.git', 'ssh://@git-codecommit.us-east-2.amazonaws.com/v1/repos/r', 'ftp://@ftp.example.com/pub']) {
        const text = u.replace('//@', `//${user}@`);
        expect(detectKinds('secrets', text), text).toEqual([]);
      }
    }
  });
});

describe("a password's, an API key's or a token's name in another language", () => {
  const NAMES = ['Passwort', 'Kennwort', 'wachtwoord', 'senha', 'heslo', 'salasana', 'passord', 'lösenord', 'hasło', 'şifre', 'jelszó', 'contraseña', 'mot de passe', 'kata sandi', 'mật khẩu', 'пароль', 'Пароль', 'κωδικός', '密码', '密碼', 'パスワード', '비밀번호', 'รหัสผ่าน', 'كلمة المرور', 'סיסמה', 'पासवर्ड', 'API-Schlüssel', 'clé API', 'clave de API', 'chave de API', 'ключ API', 'токен', 'APIキー', 'トークン', 'API 密钥', 'API 키', '토큰', 'clave', 'Clave', 'contrasenya', 'parola', "parola d'ordine", 'parolă', 'kodeord', 'parool', 'lozinka', 'slaptažodis', 'chiave API', "chiave dell'API", 'API-kulcs', 'API-avain', 'API-nøgle', 'API-nøkkel', 'klíč API', 'API anahtarı', 'khóa API', 'kunci API'];
  const WORDS = ['obrigatória', 'vergessen', 'Größenordnung', 'неверный', 'oublié', 'vaihdettu', 'Şifrenizi', 'zmienione', 'demasiado', 'required', '请输入您的登录密码以继续访问系统', 'パスワードを入力してください今すぐ', 'الرجاءإدخالكلمةالمرورللمتابعة', 'אנאהזןאתהסיסמהשלךכדילהמשיך', 'obbligatoria', 'requerida', 'dimenticata', 'olvidada', 'obligatorie'];
  // (Random as a key's or a token's value is: 16 characters or more, of many distinct ones, 3.3 bits a character or
  // more: a drawn `aaaaAab01Bfgehij` is none; and not words in every part, which after a `:` read as a type's or a
  // variable's name, `cdaaabfa0Agbhiej`.)
  const random = RANDOM_VALUE;
  const op = fc.constantFrom(': ', ' : ', '=', ' = ', '：', ': "');

  it("finds and masks a random value after it, in any case, after any operator, at a line start, after a word, or as an environment variable's last word", () => {
    fc.assert(
      fc.property(fc.constantFrom(...NAMES), fc.boolean(), op, random, fc.constantFrom('', 'Neues ', '- ', '| ', 'DB_'), (name, upper, o, v, before) => {
        const text = `${before}${upper ? name.toUpperCase() : name}${before === 'DB_' ? '' : o}${before === 'DB_' ? '=' : ''}${before === 'DB_' ? v : `${v}${o.endsWith('"') ? '"' : ''}`}\n`;
        if (before === 'DB_' && / /.test(name)) return;
        // (A fullwidth colon is read normalized, where the confusables fold letters of Cyrillic, Greek, Hebrew and
        // Arabic to ASCII ones: those names are read folded there too.)
        if (before === 'DB_' && !/^[A-Za-z]+$/.test(name)) return;
        expect(masksWhole(text, v), JSON.stringify(text)).toBe(true);
      }),
      { numRuns: 600 },
    );
  });

  it("finds nothing in a word of a language after it, nor in the name glued to another word's end", () => {
    fc.assert(
      fc.property(fc.constantFrom(...NAMES), op, fc.constantFrom(...WORDS), random, (name, o, w, v) => {
        expect(detectKinds('secrets', `${name}${o}${w}${o.endsWith('"') ? '"' : ''}\n`)).toEqual([]);
        // (A longer word that ends like one of the names is none of them.)
        if (/^[a-z]+$/.test(name)) expect(detectKinds('secrets', `zz${name}: ${v}\n`)).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });
});

describe("a secret's name in another language and that language's `is`", () => {
  const PAIRS: [string, string][] = [['Passwort', 'ist'], ['Kennwort', 'ist'], ['API-Schlüssel', 'ist'], ['mot de passe', 'est'], ['clé API', 'est'], ['contraseña', 'es'], ['clave de API', 'es'], ['token', 'es'], ['senha', 'é'], ['chave de API', 'é'], ['password', 'è'], ['chiave API', 'è'], ['passord', 'er'], ['passordet', 'er'], ['adgangskoden', 'er'], ['lösenordet', 'är'], ['hasło', 'jest'], ['heslo', 'je'], ['lozinka', 'je'], ['parola', 'este'], ['slaptažodis', 'yra'], ['kata sandi', 'adalah'], ['mật khẩu', 'là'], ['κωδικός', 'είναι'], ['wachtwoord', 'is']];
  const OTHER: [string, string][] = [['Datum', 'ist'], ['code', 'est'], ['número', 'es'], ['nome', 'é'], ['numero', 'è'], ['navnet', 'er'], ['numer', 'jest'], ['kód', 'je']];
  const WORDS = ['falsch', 'incorrect', 'incorrecta', 'obrigatória', 'sbagliata', 'feil', 'fel', 'nieprawidłowe', 'špatné', 'greșită', 'neteisingas', 'salah', 'sai', 'λάθος', 'onjuist'];
  const random = RANDOM_VALUE;
  const lead = fc.constantFrom('', 'Das ', 'Le ', 'La ', 'El ', 'Mein ', '- ', 'Hi, ');

  it('finds and masks a value random to look at after the name and the verb, in prose', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PAIRS), lead, random, fc.constantFrom('', '.', ' (temporär)', '\n'), ([name, is], l, v, end) => {
        const text = `${l}${name} ${is} ${v}${end}`;
        expect(masksWhole(text, v), JSON.stringify(text)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('finds nothing where a word follows the verb, or a name that names no secret stands before it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PAIRS), fc.constantFrom(...OTHER), fc.constantFrom(...WORDS), lead, random, ([name, is], [other, is2], w, l, v) => {
        expect(detectKinds('secrets', `${l}${name} ${is} ${w}.`)).toEqual([]);
        expect(detectKinds('secrets', `${l}${other} ${is2} ${v}`)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a secret written into a file named for one, given to a PowerShell parameter, or the password of a user and password pair prose names a login', () => {
  const CHARS = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%*@^~_-+.';
  // (A value that starts with a mark reads as something else in places, a placeholder `%s`, a flag `-p`, splatted
  // `@params`: the values here start with a letter or a digit.)
  const password = fc
    .tuple(fc.constantFrom(...CHARS.slice(0, 56)), fc.array(fc.constantFrom(...CHARS), { minLength: 9, maxLength: 39 }))
    .map(([c, cs]) => c + cs.join(''))
    // (Nor with a version's numbers, `8.7.AAAXMXZ5t`: a version and its label are none in a pair.)
    .filter((v) => /[A-Z]/.test(v) && /[a-z]/.test(v) && /[0-9]/.test(v) && /[A-Za-z0-9]$/.test(v) && shannonEntropy(v) > 3 && !/your|xxxx/i.test(v) && !/^v?[0-9]+(?:\.[0-9]+)+(?:[-+.]|$)/.test(v));
  const at = (text: string, value: string) => {
    const i = text.lastIndexOf(value);
    return spansOf(new DetectionCache(), text, ALL).some((s) => s.start <= i && i + value.length <= s.end);
  };

  it('finds and masks an OAuth authorization code in the redirect back to a client, and no other code a query holds', () => {
    const code = fc
      .tuple(fc.constantFrom('', '4/0A', 'M.R3_BAY.', '0.AX'), fc.string({ minLength: 20, maxLength: 60, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789-_') }))
      .map(([p, r]) => p + r)
      .filter((v) => shannonEntropy(v) > 3.5);
    const redirect = fc.constantFrom(
      (c: string) => `GET /auth/github/callback?code=${c}&state=af0ifjsldkj HTTP/1.1`,
      (c: string) => `https://app.example.com/oauth2/redirect?code=${c}`,
      (c: string) => `Location: https://client.example.org/cb?state=xyz123&code=${c}`,
      (c: string) => `Redirected to http://127.0.0.1:8080/?code=${c}&state=12345`,
      (c: string) => `{"url": "https://app.example.com/login/callback?session_state=s1&state=s2&code=${c}&scope=email"}`,
    );
    const other = fc.constantFrom(
      'https://shop.example.com/checkout?code=SUMMER2024SALE50OFF',
      'https://example.com/verify?code=123456&email=a%40b.c',
      'https://github.com/login/oauth/authorize?client_id=Iv1.8a61f9b3a7aba766&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&state=abc',
      'GET /callback?error=access_denied&state=af0ifjsldkj',
      '<a href="/docs?lang=en&code=python">code=python</a>',
    );
    fc.assert(
      fc.property(code, redirect, other, (c, r, o) => {
        const text = r(c);
        expect(at(text, c), text).toBe(true);
        expect(detectKinds('secrets', o), o).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('finds and masks a value one object or more below a name that names secrets (a map\'s member, a list\'s item; YAML, JSON, HCL), and no field, reference, name, pattern, time or placeholder there', () => {
    const parent = fc.constantFrom('passwords', 'password', 'secrets', 'credentials', 'api_keys', 'tokens', 'DB_PASSWORDS', 'apiKeys');
    const member = fc.constantFrom('postgres', 'admin', 'prod', 'stripe', 'ci-deploy', 'db.main');
    const quote = fc.constantFrom('', '"', "'");
    const shape = fc.constantFrom(
      (p: string, m: string, v: string, q: string) => `${p}:\n  ${m}: ${q}${v}${q}\n  other: 1\n`,
      (p: string, m: string, v: string, q: string) => `app:\n  ${p}:   # kept here\n\n    ${m}: ${q}${v}${q}\nnext: 2`,
      (p: string, _m: string, v: string, q: string) => `${p}:\n  - ${q}${v}${q}\n  - x`,
      (p: string, _m: string, v: string, q: string) => `${p}:\n- ${q}${v}${q}\nother: 1`,
      (p: string, m: string, v: string) => `{"${p}": {"${m}": "${v}", "note": "rotated"}}`,
      (p: string, m: string, v: string) => `{"${p}":{"a":"x","${m}":"${v}"}}`,
      (p: string, _m: string, v: string) => `{"${p}": ["${v}"]}`,
      (p: string, m: string, v: string) => `${p} = {\n  ${m} = "${v}"\n}`,
      (p: string, m: string, v: string, q: string) => `${p}: {${m}: ${q}${v}${q}}`,
      (p: string, _m: string, v: string, q: string) => `${p}: [${q}${v}${q}, other]`,
      // (Two objects and more below the name: an environment's map, a flow collection in a block, a list of maps.)
      (p: string, m: string, v: string, q: string) => `${p}:\n  prod:\n    ${m}: ${q}${v}${q}\n  staging:\n    other: 1\n`,
      (p: string, m: string, v: string, q: string) => `${p}:\n  eu:\n    prod:\n      ${m}: ${q}${v}${q}\n`,
      (p: string, m: string, v: string) => `{"${p}": {"prod": {"${m}": "${v}"}, "note": "rotated"}}`,
      (p: string, m: string, v: string) => `{"${p}": [{"id": 1}, {"${m}": "${v}"}]}`,
      (p: string, m: string, v: string, q: string) => `${p}:\n  prod: {${m}: ${q}${v}${q}}\n  x: 1\n`,
      (p: string, m: string, v: string) => `${p} = {\n  prod = {\n    ${m} = "${v}"\n  }\n}`,
      // (A flow collection as a list's item: `- {db: ...}`, `- [...]`.)
      (p: string, m: string, v: string, q: string) => `${p}:\n  - {${m}: ${q}${v}${q}}\n  - {other: 1}\n`,
      (p: string, _m: string, v: string, q: string) => `${p}:\n- [x, ${q}${v}${q}]\nnext: 2`,
    );
    const other = fc.constantFrom(
      'secrets:\n  db_password:\n    file: ./secrets/db_password.txt\n',
      'secrets:\n  - db_password\n  - source: api_key\n    target: api_key_v2\n',
      '"secrets": ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]',
      '    secrets:\n      NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n',
      'credentials:\n  username: deploy42\n  host: db-01.internal\n  port: 5432\n  region: eu-west-1\n',
      'const LIVING_KEYS = ["XMLHttpRequestUpload", "HTMLInputElement", "CSSStyleDeclaration"];',
      'tokens: ["\\\\bperformant\\\\b", "\\\\butilize\\\\b"]',
      '"keys": [{"kty": "RSA", "kid": "2024-01-15-rotation"}]',
      'passwords:\n  minLength: 12\n  requireSymbols: true\n',
      '"tokens": {"color-primary": "#0a84ff", "spacing-lg": "24px", "font-body": "Inter, sans-serif"}',
      'passwords:\n  admin: ${ADMIN_PASSWORD}\n  root: <change-me>\n  ops: changeme\n',
      'api_keys:\n  - name: ci-deploy\n    created: 2024-01-15T10:00:00Z\n',
      'secrets:\n  - {name: db_password, created_at: 2024-01-15T10:00:00Z}\n  - [api_key, ${API_KEY}]\n',
      '"credentials": {"type": "service_account", "project_id": "my-proj-123", "client_email": "svc-42@my-proj-123.iam.gserviceaccount.com", "client_id": "112233445566778899001"}',
      'secrets = ["projects/my-proj/secrets/db-password/versions/3", "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf"]',
      '"node_modules/js-tokens": {\n  "version": "4.0.0",\n  "integrity": "sha512-RdJUflcE3cUzKiMqQgsCu06FPu9UdIJO0beYbPhHN4k6apgJtifcoCtT9bcxOpYBtpD2kCM6",\n  "license": "BlueOak-1.0.0"\n}',
      '"js-tokens": {"version": "4.0.0", "resolved": "https://registry.npmjs.org/js-tokens/-/js-tokens-4.0.0.tgz", "integrity": "sha512-RdJUflcE3cUzKiMqQgsCu06FPu9UdIJO0beYbPhHN4k6apgJtifcoCtT9bcxOpYBtpD2kCM6", "dev": true}',
      'minipass:\n  version: 7.1.3x9\n  sha: 4f9a1c2e8d7b',
      '{"keys": ["6ba7b810-9dad-11d1-80b4-00c04fd430c8", "2024-01-15T10:00:00Z", "978-3-16-148410-0"]}',
      'ssh_keys:\n  - AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n',
      'on:\n  workflow_call:\n    secrets:\n      NPM_TOKEN:\n        required: true\n        description: "The token npm publishes with"\n',
      '{"tokens": {"color": {"primary": {"value": "#0a84ff", "type": "color"}}, "space": {"lg": {"value": "24px"}}}}',
      '{"tokens": {"type": "object", "properties": {"access": {"type": "string", "pattern": "^[A-Za-z0-9]+$", "minLength": 32}}}}',
      '{"passwords": {"reset": {"title": "Reset your password", "sent": "WeHaveEmailedYourPasswordResetLink"}}}',
      'credentials:\n  github.com:\n    user: octocat\n    protocol: https\n',
      '{"credentials": [{"id": "cred-7f3a9c2e", "created_at": "2024-01-15T10:00:00Z", "last_used": "2024-03-02T08:15:00Z"}]}',
      'secrets:\n  app_cert:\n    external: true\n    name: my_cert_v2\n  database:\n    existingSecret: pg-credentials-v2\n    secretKeys:\n      adminPasswordKey: postgres-password\n',
      '{"credentials": {"type": "service_account", "scopes": {"drive": "https://www.googleapis.com/auth/drive.readonly"}}}',
    );
    fc.assert(
      fc.property(parent, member, password, quote, shape, other, (p, m, v, q, sh, o) => {
        // (Each value an assignment to the collection's name finds, its plural read as one: `api_key=...`.)
        const single = /s$/i.test(p) ? p.slice(0, -1) : p;
        const text = sh(p, m, v, q);
        const line = `${single}=${v}`;
        if (scanSecrets(line).some((x) => x.start === single.length + 1 && x.end === line.length)) expect(at(text, v), JSON.stringify(text)).toBe(true);
        expect(detectKinds('secrets', o), JSON.stringify(o)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a value echo or printf writes into a file whose name says it holds a secret, and no variable, word, number or message, nor a value written elsewhere', () => {
    const write = fc.constantFrom(
      (v: string) => `echo "${v}" >`,
      (v: string) => `echo ${v} >>`,
      (v: string) => `printf '%s' "${v}" >`,
      (v: string) => `printf '%s\\n' ${v} >`,
      (v: string) => `echo -n '${v}' |tee`,
      (v: string) => `echo ${v} | sudo tee -a`,
    );
    const file = fc.constantFrom('~/.vault-token', '/run/secrets/db_password', '~/.config/gh/token', '"$HOME/.credentials"', 'secrets/API_KEY', '.netrc', '/etc/app/private_key');
    const other = fc.constantFrom('notes.txt', '/tmp/out', '~/.bashrc', 'version.txt', '"$LOG"');
    const said = fc.constantFrom('"$TOKEN"', '"${{ secrets.NPM_TOKEN }}"', 'done', 'production', '12345678', '"Saved the token"', '$(pass show deploy)', '"<your token>"');
    fc.assert(
      fc.property(password, write, file, other, said, fc.constantFrom('', '\n', ' && chmod 600 ~/.vault-token'), (v, w, f, o, s, end) => {
        const text = `${w(v)} ${f}${end}`;
        expect(at(text, v), text).toBe(true);
        expect(detectKinds('secrets', `${w(v)} ${o}${end}`)).toEqual([]);
        expect(detectKinds('secrets', `${w(s)} ${f}`)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('finds and masks a secret given to a PowerShell parameter named for one or made a SecureString from plain text, and no variable, prompt, switch or name there', () => {
    const cmdlet = fc.constantFrom('Connect-AzAccount -ServicePrincipal', 'Publish-Module -Name Tools', 'New-LocalUser -Name bob', 'Invoke-Deploy', 'nuget push pkg.nupkg', '& ./deploy.ps1 -Env prod');
    const param = fc.constantFrom('-ClientSecret', '-Password', '-NuGetApiKey', '-ApiKey', '-AccessToken', '-StorageAccountKey', '-Secret', '-Token');
    const quote = fc.constantFrom('', '"', "'");
    const securestring = fc.constantFrom(
      (v: string, q: string) => `$pw = ConvertTo-SecureString ${q || '"'}${v}${q || '"'} -AsPlainText -Force`,
      (v: string, q: string) => `ConvertTo-SecureString -String ${q}${v}${q} -AsPlainText -Force`,
      (v: string, q: string) => `(ConvertTo-SecureString -AsPlainText -Force ${q}${v}${q})`,
    );
    const other = fc.constantFrom('$value', '$env:CLIENT_SECRET', '(Read-Host -AsSecureString)', '-Force', '$(Get-Secret -Name api -AsPlainText)', '@params');
    fc.assert(
      // (Values of 16 characters or more, as a key's or a token's name asks, without `**` or `...`, which read as a value
      // shown in part or cut short, or `%`, a placeholder's mark, to the generic reading.)
      fc.property(cmdlet, param, quote, password.filter((v) => v.length >= 16 && !/\*\*|\.\.\.|%/.test(v)), securestring, other, (c, p, q, v, ss, o) => {
        // (Unquoted, a value that holds `.` reads as a member of an object, `cfg.Secret`, as any unquoted value does.)
        fc.pre(q !== '' || !v.includes('.'));
        for (const text of [`${c} ${p} ${q}${v}${q}`, `${c} ${p} ${q}${v}${q} -Verbose`, ss(v, q)]) expect(at(text, v), text).toBe(true);
        expect(detectKinds('secrets', `${c} ${p} ${o}`)).toEqual([]);
        expect(detectKinds('secrets', `${c} -Name ${p.slice(1)} ${o}`)).toEqual([]);
        expect(detectKinds('secrets', `$s = ConvertTo-SecureString ${o} -AsPlainText -Force`)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it("finds and masks a password given on its command line to a client's own flag or after the user, and no variable, placeholder, prompt or file there", () => {
    // (What the client is, what stands between it and the flag, and how the value is written there.)
    const given = fc.constantFrom(
      (v: string) => `mysql -h db -u root -p'${v}' shop`,
      (v: string) => `mongosh "mongodb://db.internal:27017/app" -u admin -p ${v}`,
      (v: string) => `mongodump --host db -u backup -p '${v}' --out /backups`,
      (v: string) => `sqlcmd -S db-prod -d Billing -U sa -P ${v} -Q "SELECT 1"`,
      (v: string) => `bcp Sales.dbo.Orders out orders.dat -S db -U loader -P "${v}" -c`,
      (v: string) => `zip -r -P ${v} backup.zip ./data`,
      (v: string) => `unzip -o -P ${v} release.zip -d out/`,
      (v: string) => `7z x archive.7z -p${v} -oout`,
      (v: string) => `openssl enc -aes-256-cbc -salt -k ${v} -in db.sql -out db.sql.enc`,
      (v: string) => `ldapsearch -x -H ldap://dc1 -D "cn=admin,dc=corp,dc=io" -w ${v} -b "dc=corp,dc=io"`,
      (v: string) => `keytool -importkeystore -srckeystore a.jks -destkeystore b.p12 -srcstorepass ${v} -deststorepass changeit`,
      (v: string) => `jarsigner -keystore release.jks -storepass ${v} -keypass ${v} app.apk release`,
      (v: string) => `htpasswd -bc /etc/nginx/.htpasswd admin ${v}`,
      (v: string) => `net user svc_backup ${v} /add /domain`,
      (v: string) => `influx -host db -username admin -password ${v} -execute 'SHOW DATABASES'`,
      (v: string) => `consul kv get -token ${v} app/config`,
      (v: string) => `smbclient //fs01/share -U backup%${v} -c 'ls'`,
      (v: string) => `lftp -u backup,${v} -e 'mirror; quit' ftp.partner.example`,
      (v: string) => `http -a bob:${v} GET https://api.example.com/me`,
      (v: string) => `java -jar jenkins-cli.jar -s https://ci -auth bob:${v} build deploy`,
      (v: string) => `echo 'deploy:${v}' | sudo chpasswd`,
      (v: string) => `ssh-keygen -t ed25519 -C deploy -N '${v}' -f ~/.ssh/id_deploy`,
      (v: string) => `ssh-keygen -p -f ~/.ssh/id_rsa -P ${v} -N ''`,
      (v: string) => `rabbitmqctl add_user deploy ${v}`,
      (v: string) => `rabbitmqctl -n rabbit@mq1 change_password admin '${v}'`,
      (v: string) => `mc alias set backup https://minio.internal:9000 AKIAIOSFODNN7 ${v}`,
    );
    const other = fc.constantFrom('$DB_PASS', '${MONGO_PASSWORD}', '<password>', 'PASSWORD', '%SA_PASSWORD%', 'secret', '*', 'changeme', '@/run/secrets/pw');
    fc.assert(
      fc.property(given, password.filter((v) => !/\*\*|\.\.\.|%/.test(v)), other, (g, v, o) => {
        // (Unquoted, a value that holds `.` reads as a member of an object, as any unquoted value does.)
        const quoted = /['"]\$\{/.test(g('${'));
        fc.pre(quoted || !v.includes('.'));
        const text = g(v);
        expect(at(text, v), text).toBe(true);
        expect(detectKinds('secrets', g(o)), g(o)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks a password a script sends or types where one is asked for (expect, pexpect, a browser test) or a connection string holds in braces, and no variable, fixture or placeholder there', () => {
    const given = fc.constantFrom(
      (v: string) => `spawn ssh admin@10.0.0.5\nexpect "*assword:"\nsend "${v}\\r"\ninteract`,
      (v: string) => `expect -exact "Enter passphrase for key '/root/.ssh/id_rsa': "\nsend -- "${v}\\r"`,
      (v: string) => `expect "Password:" { send "${v}\\r" }`,
      (v: string) => `expect {\n  "*yes/no*" { send "yes\\r"; exp_continue }\n  "*assword:" { send "${v}\\r" }\n}`,
      (v: string) => `child = pexpect.spawn("ssh deploy@host")\nchild.expect("Password:")\nchild.sendline("${v}")`,
      (v: string) => `await page.fill('#password', '${v}');`,
      (v: string) => `await page.getByLabel('Password').fill('${v}');`,
      (v: string) => `await page.locator('input[name="password"]').fill("${v}")`,
      (v: string) => `cy.get('[data-test=password]').type('${v}', { log: false })`,
      (v: string) => `driver.find_element(By.ID, "password").send_keys("${v}")`,
      (v: string) => `Server=tcp:db.database.windows.net,1433;Initial Catalog=shop;User ID=app;Password={${v}};Encrypt=True;`,
      (v: string) => `Driver={ODBC Driver 18 for SQL Server};Server=db;Uid=app;Pwd={${v}};`,
    );
    const other = fc.constantFrom(
      'expect "password:"\nsend "$env(PASSWORD)\\r"',
      'expect "*assword:" { send "$password\\r" }',
      'child.expect("Password:")\nchild.sendline(os.environ["PW"])',
      "await page.fill('#password', process.env.E2E_PASSWORD!);",
      "await page.getByLabel('Password').fill(user.password);",
      "cy.get('#password').type(Cypress.env('password'), { log: false })",
      "await page.fill('#password', 'password123');",
      "await page.fill('#email', 'jane.doe42@example.com');",
      'Server=tcp:db.database.windows.net,1433;User ID=app;Password={your_password};Encrypt=True;',
      'Driver={ODBC Driver 18 for SQL Server};Server=db;Uid=app;Pwd={PASSWORD};',
    );
    fc.assert(
      fc.property(given, password, other, (g, v, o) => {
        const text = g(v);
        expect(at(text, v), text).toBe(true);
        expect(detectKinds('secrets', o), o).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds and masks a secret where a system's own file or output keeps it (the registry, a Wi-Fi profile, Redis, LDIF, cookies.txt, HAR), and no placeholder, default or other field there", () => {
    const kept = fc.constantFrom(
      (v: string) => `HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon\r\n    DefaultUserName    REG_SZ    kiosk\r\n    DefaultPassword    REG_SZ    ${v}\r\n`,
      (v: string) => `    ServiceApiKey    REG_SZ    ${v}`,
      (v: string) => `Security settings\n    Security key           : Present\n    Key Content            : ${v}\n\nCost settings`,
      (v: string) => `<sharedKey>\n<keyType>passPhrase</keyType>\n<protected>false</protected>\n<keyMaterial>${v}</keyMaterial>\n</sharedKey>`,
      (v: string) => `# requirepass foobared\nrequirepass ${v}\nmaxmemory 256mb`,
      (v: string) => `redis-cli CONFIG SET masterauth "${v}"`,
      (v: string) => `dn: uid=jdoe,ou=people,dc=corp\nuserPassword:: ${Buffer.from(v).toString('base64')}\n`,
      (v: string) => `# Netscape HTTP Cookie File\n#HttpOnly_.app.example.com\tTRUE\t/\tTRUE\t1767225600\tsessionid\t${v}\n`,
      (v: string) => `{"name": "Authorization", "value": "Bearer ${v}"}`,
      (v: string) => `"headers": [\n  {\n    "name": "X-Api-Key",\n    "value": "${v}"\n  }\n]`,
      (v: string) => `"cookies": [{"name": "PHPSESSID", "value": "${v}", "path": "/"}]`,
    );
    const other = fc.constantFrom(
      '    DefaultUserName    REG_SZ    kiosk',
      '    DefaultPassword    REG_SZ    %PASSWORD%',
      '    Security key           : Absent',
      '# requirepass foobared',
      'requirepass ${REDIS_PASSWORD}',
      '.example.com\tTRUE\t/\tFALSE\t0\ttheme\tdark',
      // (A table's random values, one of which happens to hold a session's word, are no cookie's name and value.)
      'owner\tkey_id\tnote\nweb\tHAXiG6QTAm2v76xMYleejdwJEIDJWT\txCkgYx6SsT9gsMN8CiM9',
      '{"name": "Accept", "value": "application/json, text/plain, */*"}',
      '{"name": "Authorization", "value": "Bearer {{token}}"}',
      '{"name": "session_timeout", "value": "1800"}',
      'userPassword: {SSHA}',
    );
    fc.assert(
      // (The value's `.` reads as no member or sentence here; `%` starts no placeholder.)
      fc.property(kept, password, other, (k, v, o) => {
        const text = k(v);
        const at = text.indexOf(v);
        const b64 = Buffer.from(v).toString('base64');
        if (at >= 0) expect(spansOf(new DetectionCache(), text, ALL).some((x) => x.start <= at && at + v.length <= x.end), JSON.stringify(text)).toBe(true);
        else expect(spansOf(new DetectionCache(), text, ALL).some((x) => x.start <= text.indexOf(b64) && text.indexOf(b64) + b64.length <= x.end), JSON.stringify(text)).toBe(true);
        expect(detectKinds('secrets', o), JSON.stringify(o)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('finds and masks the password of a pair that prose names credentials or a login, and no name, path, expression, time or placeholder in that place', () => {
    const named = fc.constantFrom('Credentials:', 'Default credentials:', 'creds', 'Login:', 'login', 'Log in with', 'Sign in as', 'Sign-in:', 'Login credentials are');
    const user = fc.constantFrom('admin', 'root', 'deploy', 'ops.bot', 'jane@example.com');
    const sep = fc.constantFrom(' / ', ':', ' : ', '  /  ');
    const end = fc.constantFrom('', '.', ' on the console', ' (change it after)', '\n');
    const other = fc.constantFrom('Google / Microsoft365', 'SSO / Okta', 'admin / admin123', 'user:password', '${USER}:${PASS}', 'git@github.com:owner1234/repo.git', 'Mon Dec  6 19:36:13 2026', 'aws/iam-role-prod1', 'root:root', '`include`:e.mode===`x`', '<user>:<password>', 'home/id2025.key', 'auth: oauth2-client', 'oauth2-client-credentials sha256:442a924d5985323198972e23975804441995cba916485e6eea150b3963d2cb46');
    fc.assert(
      fc.property(named, user, sep, password, end, other, (n, u, s, v, e, o) => {
        for (const text of [`${n} ${u}${s}${v}${e}`, `"login": "${u}:${v}"`]) expect(at(text, v), text).toBe(true);
        expect(detectKinds('secrets', `${n} ${o}${e}`)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});

describe("a program's names under a secret's name", () => {
  // Code a filesystem server returns names its members and methods under names that end in a secret's word: an
  // identifier there is a name, a variable or a type, no secret (what it held went out masked, a method's name among
  // it); the same places holding a value random to look at, quoted, are a secret's.
  const words = ['get', 'set', 'national', 'prefix', 'optional', 'when', 'formatting', 'value', 'account', 'session', 'cookie', 'keys', 'functions', 'credential', 'configuration', 'issue', 'request', 'string', 'number'];
  const small = ['Is', 'To', 'By', 'Of', 'On', 'In', 'At', 'Or', 'As', 'If', 'Id'];
  const abbreviations = ['Mngr', 'Sec', 'Xml', 'Ctx', 'Cfg', 'Svc', 'Mgr'];
  const cap = (w: string) => w[0]!.toUpperCase() + w.slice(1);
  // A camel-case name of words, English's short ones and abbreviations among them (`_getNationalPrefixIsOptionalWhenFormatting`).
  // (English's short words among three longer ones at least, as a method's name holds them.)
  const camel = fc
    .tuple(fc.constantFrom('', '_'), fc.constantFrom(...words), fc.array(fc.constantFrom(...words).map(cap), { minLength: 2, maxLength: 5 }), fc.array(fc.constantFrom(...small), { maxLength: 2 }))
    .map(([u, first, longer, shortOnes]) => `${u}${first}${longer[0]}${shortOnes.join('')}${longer.slice(1).join('')}`);
  const withAbbreviations = fc
    .tuple(fc.constantFrom(...words), fc.array(fc.oneof(fc.constantFrom(...words).map(cap), fc.constantFrom(...abbreviations)), { minLength: 2, maxLength: 5 }))
    .map(([first, rest]) => `${first}${rest.join('')}`);
  const acronymType = fc.tuple(fc.constantFrom('Open', 'Http', 'Web'), fc.constantFrom('ID4VCI', 'OAuth2', 'JWKS', 'X509'), fc.constantFrom(...words).map(cap), fc.constantFrom('Configuration', 'Options', 'Settings', 'Schema')).map((p) => p.join(''));
  // (A value in words is a name anywhere in a program, and under a name whose only secret word is `key` in an object's
  // line too, `key: "..."`: a value of words under `token:` on a config's line may be a password.)
  const weak = fc.constantFrom('key', 'getKey', 'functionsByKey', 'ssrImportKey');
  const strong = fc.constantFrom('apiKey', 'token', 'authToken', 'secretKey', 'password');
  const random = fc.string({ minLength: 20, maxLength: 32, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) >= 3.5 && !wordy(v));
  const places = (n: string) => [
    (v: string) => `  ${n}: "${v}",`,
    (v: string) => `    mngr->${n} = ${v};`,
    (v: string) => `      this.#${n} = parent.#${v}`,
    (v: string) => `    self.${n} = ${v}`,
    (v: string) => `const hidden${cap(n)} = { hide: true, security: ${v} };`,
  ];

  it('is none: a name in words, an abbreviation, a private member, a type an acronym starts, one word between marks', () => {
    fc.assert(
      fc.property(weak, strong, fc.nat(4), camel, withAbbreviations, acronymType, fc.constantFrom('__Secure-', '__Host-', '_private_', 'session.'), (w, st, p, c, a, t, one) => {
        const n = p === 0 ? w : st;
        // (An abbreviation's name is read as a program's only unquoted: quoted under `key:`, `MngrMngr` is no word.)
        for (const v of p === 0 ? [c] : [c, a]) expect(detectKinds('secrets', places(n)[p]!(v)), places(n)[p]!(v)).toEqual([]);
        expect(detectKinds('secrets', `    credentialConfiguration: ${t};`)).toEqual([]);
        expect(detectKinds('secrets', `\t\tif (prefix === "secure") final${cap(w)} = "${one}" + key;`)).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });

  it('finds and masks a value random to look at in the same places, quoted', () => {
    fc.assert(
      fc.property(strong, fc.nat(4), random, (n, p, r) => {
        const text = [`  ${n}: "${r}",`, `    mngr->${n} = "${r}";`, `      this.#${n} = "${r}"`, `    self.${n} = "${r}"`, `const hidden${cap(n)} = { hide: true, security: "${r}" };`][p]!;
        const spans = spansOf(new DetectionCache(), text, new Set(SECRET_KINDS));
        const at = text.indexOf(r);
        expect(spans.some((s) => s.start <= at && at + r.length <= s.end), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('what a README or a module shows in the open', () => {
  const hex = (n: number, upper: boolean) => fc.string({ minLength: n, maxLength: n, unit: fc.constantFrom(...(upper ? '0123456789ABCDEF' : '0123456789abcdef').split('')) });
  // Real fingerprints, the release keys the Node.js README and readable-stream's list (a digest's hex: a run of zeros a
  // generator favours decodes to bytes that hold text, which no fingerprint does), whole or their long ids, either case.
  const fingerprints = ['4ED778F539E3634C779C87C6D7062848A1AB005C', '141F07595B7B3FFE74309A937405533BE57C7D57', '74F12602B6F1C4E913FAA37AD3A89613643B6201', 'DD792F5973C6DE52C432CBDAC77ABFA00DDBF2B7', 'CC68F5A3106FF448322E48ED27F5E38D5B0A215F', '8FCCA13FEF1D0C2E91008E09770F7A9A5AE15600', 'C4F0DFFF4E8C1A8236409D08E73BC641CC11F4C8', '890C08DB8579162FEE0DF9DB8BEAB4DFCF555EF4', 'C82FA3AE1CBEDC6BE46B9360C43CEC45C17AB93C', '108F52B48DB57BB0CC439B2997B01419BD92F80A', 'A363A499291CBBC940DD62E41F10027AF002F8B0', 'F3EF5F62A87FC27A22E643F714CE4FF5015AA242', '3ABC01543F22DD2239285CDD818674489FBC127E', '9554F04D7259F04124DE6B476D5A82AC7E37093B', 'DD8F2338BAE7501E3DD5AC78C273792F7D83545D'];
  const fingerprint = fc.tuple(fc.constantFrom(...fingerprints), fc.boolean(), fc.boolean()).map(([f, id, lower]) => (lower ? f.toLowerCase() : f).slice(id ? 24 : 0));
  const token = fc.string({ minLength: 10, maxLength: 24, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && /[A-Z].*[A-Z]/.test(v) && shannonEntropy(v) >= 3);
  // (Words of a name, one abbreviation among them at most, as a program's constants name things: `__vite_ssr_exportAll__`.)
  const words = fc.uniqueArray(fc.constantFrom('vite', 'ssr', 'dynamic', 'import', 'export', 'meta', 'module', 'helpers'), { minLength: 2, maxLength: 4 });
  const camel = fc.array(fc.constantFrom('to', 'property', 'key', 'class', 'private', 'field', 'loose', 'primitive'), { minLength: 2, maxLength: 4 }).map((ws) => ws.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join(''));

  it("is none: a Codecov badge's token, a GPG key's fingerprint or id, a module's path in camel case, a declaration list's names", () => {
    fc.assert(
      fc.property(token, fingerprint, words, camel, fc.constantFrom('esm', 'cjs', 'lib'), (t, fp, ws, c, dir) => {
        for (const text of [
          `[![codecov](https://codecov.io/gh/acme/lib/branch/main/graph/badge.svg?token=${t})](https://codecov.io/gh/acme/lib)`,
          `<img src="https://codecov.io/gh/acme/lib/graph/badge.svg?branch=main&token=${t}" alt="Coverage">`,
          `  - Release GPG key: ${fp}`,
          `GPG_KEY_FINGERPRINT=${fp}`,
          `"./helpers/${c}": [{ "import": "./helpers/${dir}/${c}.js" }, "./helpers/${c}.js"],`,
          `const ssrModuleKey = "__${ws.join('_')}__", ssrImportKey = "__${ws.join('_')}_x__", ssrOtherKey = "__${ws.join('_')}Name__", x = 1;`,
        ])
          expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it("finds the same values where no badge, no GPG key and no module's path says so", () => {
    fc.assert(
      fc.property(token, hex(40, true), (t, fp) => {
        for (const text of [`curl -X POST "https://codecov.io/upload/v4?token=${t}1x"`, `https://example.com/badge.svg?token=${t}1x`, `gpg_passphrase: ${fp}`, `api_key: ${fp}`])
          expect(detectKinds('secrets', text), text).not.toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

describe("a URL in a program's string", () => {
  it('is no connection string with what stands after its closing quote, up to an @ further on; a user and password inside it are found', () => {
    const host = fc.constantFrom('dotenvx.com', 'example.org', 'registry.npmjs.org');
    const between = fc.array(fc.constantFrom('keywords:["dotenv","env"]', 'license:"BSD-2-Clause"', 'devDependencies:{', '"@types/node":"^18"', ',', ' ', 'x:1'), { minLength: 1, maxLength: 6 });
    // (A password in brackets whole, `[AAAdLSUf6]`, reads as a placeholder, `[password]`.)
    const password = fc.string({ minLength: 10, maxLength: 20, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789[]!'.split('')) }).filter((p) => /[0-9]/.test(p) && /[a-z]/.test(p) && /[A-Z]/.test(p) && shannonEntropy(p) >= 3 && !/^\[[^\]]*\]$/.test(p));
    fc.assert(
      fc.property(host, between, fc.constantFrom('"', "'", '`'), password, (h, rest, q, p) => {
        const text = `funding:${q}https://${h}${q},${rest.join('')}`;
        expect(scanSecrets(text).filter((sp) => sp.kind === 'connection-string'), text).toEqual([]);
        const url = `url:${q}postgres://app:${p}@${h}:5432/db${q},${rest.join('')}`;
        const at = url.indexOf(p);
        expect(scanSecrets(url).some((sp) => sp.kind === 'connection-string' && sp.start <= at && at + p.length <= sp.end), url).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('pairs a line lists after a comma', () => {
  // `user: admin, password: ...` in prose, a chat or a config's line is the same pair as `password: ...` on a line of
  // its own; after a `{` or a call's `(` left open on the line the same names are a program's (an object's members,
  // a function's parameters), and what follows them is an expression or a type.
  const pwName = fc.constantFrom('password', 'pass', 'Password', 'pwd', 'passphrase', 'api_key', 'token');
  const user = fc.constantFrom('admin', 'root', 'deploy', 'svc-backup', 'jane.doe');
  // (A value that starts with `%` reads as a format's placeholder after a name, `password: %s`; one every part of which
  // reads as a word, as a type's name after `:` and before `,`, `password: Aago4Jfevo, thanks`.)
  const password = fc.string({ minLength: 10, maxLength: 20, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%*-_'.split('')) }).filter((p) => /^[A-Za-z0-9]/.test(p) && /[0-9]/.test(p) && /[a-z]/.test(p) && /[A-Z]/.test(p) && shannonEntropy(p) >= 3 && !wordy(p, true));
  const prose = fc.constantFrom((p: string) => p, (p: string) => `Log in (${p}) to the console.`, (p: string) => `Credentials - ${p}`, (p: string) => `- staging: ${p}`, (p: string) => `hi, the new box is up, ${p}, thanks`);

  it('finds and masks the second pair wherever the first is found on a line of its own, with no bracket a program opens before it', () => {
    fc.assert(
      fc.property(pwName, user, password, prose, fc.constantFrom(': ', '=', ' = '), (n, u, p, wrap, op) => {
        fc.pre(detectKinds('secrets', `${n}${op}${p}`).length > 0);
        const text = wrap(`user${op}${u}, ${n}${op}${p}`);
        expect(masksWhole(text, p), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("is none in a program's object or parameter list: what follows the name there is an expression or a type", () => {
    const words = ['hash', 'secret', 'value', 'user', 'opts', 'pw', 'sha', 'base'];
    const ident = fc.oneof(
      fc.tuple(fc.constantFrom(...words), fc.constantFrom('2', '8', '64', '256'), fc.constantFrom(...words)).map(([a, d, b]) => `${a}${d}${b[0]!.toUpperCase()}${b.slice(1)}`),
      fc.constantFrom('Uint8Array', 'Buffer', 'string', 'Pw2Type', 'opts.password', 'process.env.DB_PASSWORD'),
    );
    const program = fc.constantFrom(
      (u: string, n: string, v: string) => `function login(${u}: string, ${n}: ${v}) {`,
      (u: string, n: string, v: string) => `const f = async (${u}: User, ${n}: ${v}) => {`,
      (u: string, n: string, v: string) => `  await login({${u}: admin, ${n}: ${v}});`,
      (u: string, n: string, v: string) => `x = {${u}: admin, ${n}: ${v}}`,
      (u: string, n: string, v: string) => `  connect(host, ${u}: admin, ${n}: ${v})`,
      (u: string, n: string, v: string) => `const f = (${u}: User, ${n}: ${v}) => {`,
    );
    fc.assert(
      fc.property(fc.constantFrom('password', 'pass', 'secret', 'token'), fc.constantFrom('user', 'username', 'login'), ident, program, (n, u, v, write) => {
        const text = write(u, n, v);
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a URL query's parameter", () => {
  const random = fc.string({ minLength: 20, maxLength: 32, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) >= 3.5 && !wordy(v));
  const name = fc.constantFrom('apikey', 'api_key', 'token', 'access_token', 'secret', 'password');
  const next = fc.constantFrom('format=json', 'id=abc', 'page=2', 'lang=en-US', 'callback=cb1');

  it("is masked to the next parameter's start and no further, however many `&` stand between, and whole where a `&` no name follows stands in it", () => {
    fc.assert(
      fc.property(name, random, next, fc.integer({ min: 1, max: 4 }), fc.constantFrom('?', '?a=1&'), (n, v, rest, amps, lead) => {
        const text = `GET https://api.example.com/v1/data${lead}${n}=${v}${'&'.repeat(amps)}${rest} HTTP/1.1`;
        const spans = spansOf(new DetectionCache(), text, new Set(SECRET_KINDS));
        const at = text.indexOf(v);
        expect(spans.some((s) => s.start <= at && at + v.length <= s.end), text).toBe(true);
        const after = text.indexOf(rest, at + v.length);
        expect(spans.some((s) => s.end > after), text).toBe(false);
        // (A `&` in a value is written `%26`; one that no `name=` follows is no parameter's start, and stays in it.)
        const cut = 8 + (v.length % 8);
        const glued = `https://x.example.com/?${n}=${v.slice(0, cut)}&${v.slice(cut)}`;
        const g = spansOf(new DetectionCache(), glued, new Set(SECRET_KINDS));
        expect(g.some((s) => s.start <= glued.indexOf(v.slice(0, cut)) && s.end >= glued.length), glued).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a quoted cell of comma-separated values', () => {
  // A password manager's export quotes a cell that holds the separator (`"p@ss,w0rd"`, a quote in it doubled): the
  // cell is read whole, and the columns after it keep their places.
  const CHARS = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%*@^~_-+,"';
  const password = fc
    .tuple(fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'), fc.array(fc.constantFrom(...CHARS), { minLength: 9, maxLength: 24 }), fc.constantFrom(...'abcdefghijkmnopqrstuvwxyz23456789'))
    .map(([a, cs, z]) => a + cs.join('') + z)
    .filter((v) => v.includes(',') && /[A-Z]/.test(v) && /[a-z]/.test(v) && /[0-9]/.test(v) && shannonEntropy(v) > 3 && !/\.\.\.|\*\*\*/.test(v));
  const note = fc.constantFrom('personal', 'work account', 'shared with ops', '');
  const title = fc.constantFrom('GitHub', 'Acme, Inc.', 'Mail "work"', 'Bank');

  it('finds and masks the password whole, whatever it holds, and nothing in the note after it', () => {
    fc.assert(
      fc.property(password, note, title, fc.boolean(), (p, n, t, cut) => {
        const quote = (v: string) => `"${v.replaceAll('"', '""')}"`;
        const row = `${quote(t)},https://example.com/login,alice,${quote(p)}`;
        // (Cut where a block ends, right after the password: the row's closing quote in the next block.)
        const text = `name,url,username,password,note\n${cut ? row.slice(0, -1) : `${row},${n}\n`}`;
        const written = p.replaceAll('"', '""');
        const at = text.indexOf(written);
        const spans = spansOf(new DetectionCache(), text, new Set(SECRET_KINDS));
        expect(spans.some((s) => s.start <= at && at + written.length <= s.end), JSON.stringify(text)).toBe(true);
        if (!cut && n !== '') expect(spans.some((s) => s.end > text.lastIndexOf(n)), JSON.stringify(text)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a variable a command sets with a blank, and a heredoc after `=`', () => {
  // A Dockerfile's older `ENV NAME value`, csh's `setenv`, Apache's `SetEnv`, Windows' `setx` and fish's `set -x` set
  // a variable as `NAME=value` does: a name that ends in a secret's word and its value are read as before `=`. HCL's
  // and Ruby's heredoc after `=` holds its value on the next line.
  const secretName = fc.constantFrom('API_TOKEN', 'DB_PASS', 'RAILS_MASTER_KEY', 'STRIPE_SECRET', 'MYSQL_PWD', 'GITHUB_TOKEN', 'client_secret', 'db_password');
  const command = fc.constantFrom('ENV', 'setenv', 'SetEnv', 'setx', 'set -x', 'set -gx', 'set -Ux', 'set --export');
  const lead = fc.constantFrom('', '  ', 'FROM node:20\n', 'cd /srv/app && ', '(', 'RUN true; ');
  const value = fc.string({ minLength: 8, maxLength: 15, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) >= 2.8 && !wordy(v, true));

  it('finds and masks the value of a secret the command sets, quoted or not, of fewer than 16 characters too', () => {
    fc.assert(
      fc.property(secretName, command, lead, value, fc.constantFrom('', '"'), (n, c, l, v, q) => {
        fc.pre(detectKinds('secrets', `${n}=${v}`).length > 0);
        const text = `${l}${c} ${n} ${q}${v}${q}\n${c} PORT 8080`;
        expect(masksWhole(text, v), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("is none where the variable names no secret, or its value is a reference, a path, a number or a placeholder", () => {
    const other = fc.constantFrom('PASSWORD_MIN_LENGTH', 'TOKEN_FILE', 'KEY_ALGORITHM', 'SECRET_NAME', 'API_KEY_PATH', 'PORT', 'NODE_ENV');
    const benign = fc.constantFrom('$API_KEY', '${API_TOKEN}', '/run/secrets/token', '12', 'production', 'your-api-key-here', 'changeme', '%API_KEY%');
    fc.assert(
      fc.property(fc.oneof(secretName, other), command, lead, benign, (n, c, l, v) => {
        const text = `${l}${c} ${n} ${v}`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(other, command, value, (n, c, v) => {
        const text = `${c} ${n} ${v}`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("finds and masks a heredoc's first line after a secret's name and `=`, and nothing in one that holds no secret", () => {
    const opener = fc.constantFrom('<<EOF', '<<-EOT', '<<~EOS', "<<'PW'", '<<"END"');
    fc.assert(
      fc.property(fc.constantFrom('password', 'master_password', 'API_TOKEN', 'client_secret'), opener, value, fc.constantFrom('', '    '), (n, o, v, indent) => {
        const end = /\w+/.exec(o.slice(2))![0];
        const text = `resource "x" "y" {\n  ${n} = ${o}\n${indent}${v}\n${indent}${end}\n}`;
        expect(masksWhole(text, v), text).toBe(true);
        const policy = `  ${n} = ${o}\n${indent}{\n${indent}  "Version": "2012-10-17"\n${indent}}\n${indent}${end}`;
        expect(detectKinds('secrets', policy), policy).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a secret a program's call takes as a literal, and a note's shorthand", () => {
  const password = fc.string({ minLength: 8, maxLength: 24, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%*@^~_-+'.split('')) }).filter((v) => /^[A-Za-z0-9]/.test(v) && /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3 && !wordy(v, true) && !/\.\.\.|\*\*\*/.test(v) && !/your|example|placeholder|changeme|redacted|xxxx/i.test(v));

  it("finds and masks the literal a setter, a builder or a client's auth takes, in any program's quotes", () => {
    const call = fc.constantFrom('ds.setPassword', 'user.set_password', 'cfg.SetApiKey', 'container.withPassword', 'client.setClientSecret', 'builder.password', 'b.accessToken', 'redis.auth', 'conn.set_auth_token', 'opts.withSecretKey');
    fc.assert(
      fc.property(call, password, fc.constantFrom('"', "'"), fc.constantFrom('', ' '), fc.constantFrom(';', '', '.build();', ')'), (c, p, q, sp, tail) => {
        const text = `${c}(${sp}${q}${p}${q}${sp})${tail}`;
        expect(masksWhole(text, p), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("is none in a getter's, a lookup's or a check's call, nor where the literal is a name, a path, a reference or a placeholder", () => {
    const call = fc.constantFrom('getToken', 'client.getSecret', 'readSecret', 'vault.read_secret', 'verify_password', 'revokeToken', 'decodeToken', 'i18n.t', 'setTokenType', 'k8s.secret', 'new Secret');
    const literal = fc.constantFrom('refresh', 'prod/db/password', 'my-app-secret', 'STRIPE_SECRET_KEY', '${DB_PASSWORD}', 'arn:aws:secretsmanager:us-east-1:123456789012:secret:prod', 'auth.forgot_password', 'Bearer', '<your-token>', 'secrets/api_key.txt');
    fc.assert(
      fc.property(call, literal, fc.constantFrom('"', "'"), (c, l, q) => {
        const text = `${c}(${q}${l}${q});`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("finds and masks the password after a user in a note's shorthand, and none where prose names them with no password", () => {
    const form = fc.constantFrom(
      (u: string, p: string) => `u: ${u} p: ${p}`,
      (u: string, p: string) => `U: ${u}\nP: ${p}`,
      (u: string, p: string) => `u: ${u}, p: ${p}`,
      (u: string, p: string) => `user ${u} pass ${p}`,
      (u: string, p: string) => `username ${u} password ${p}`,
      (u: string, p: string) => `Login/password: ${u} / ${p}`,
    );
    fc.assert(
      fc.property(form, fc.constantFrom('admin', 'root', 'deploy', 'jane.doe', 'svc_backup'), password, fc.constantFrom('', 'staging box:\n', '- prod: '), (f, u, p, lead) => {
        const text = `${lead}${f(u, p)}`;
        expect(masksWhole(text, p), text).toBe(true);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.constantFrom('the user admin password reset worked', 'user alice password changed successfully', 'menu: file p: 3', 'u: root\np: 1234', 'setting u: 0.5 p: 0.25', 'username alice password ${PASSWORD}', 'The user john password policy requires 12 characters', 'user admin pass through'), (text) => {
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
    );
  });
});

describe('a secret an agent prints', () => {
  // An agent checks that a variable is set by printing it (`echo $OPENAI_API_KEY`), reads a file named for a secret
  // (`cat config/master.key`), or asks a password manager or a registry for one: the value comes back alone on the
  // line after the command, with no name of its own.
  const value = fc.string({ minLength: 10, maxLength: 40, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789#%+/=_-'.split('')) }).filter((v) => /^[A-Za-z0-9]/.test(v) && /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3 && !wordy(v, true));
  const name = fc.constantFrom('DB_PASSWORD', 'OPENAI_API_KEY', 'GITHUB_TOKEN', 'STRIPE_SECRET', 'MYSQL_PWD', 'aws_secret_access_key', 'SMTP_PASS', 'SECRET_KEY_BASE', 'API_TOKEN_PROD');
  const printing = fc.constantFrom(
    (n: string) => `$ echo $${n}`,
    (n: string) => `$ echo "\${${n}}"`,
    (n: string) => `$ echo -n $${n}`,
    (n: string) => `$ printenv ${n}`,
    (n: string) => `PS C:\\> $env:${n}`,
    (n: string) => `C:\\> echo %${n}%`,
    (n: string) => `$ cat /run/secrets/${n.toLowerCase()}`,
    (n: string) => `$ cat ./${n.toLowerCase()}.txt`,
    (n: string) => `PS> Get-Content .\\${n.toLowerCase()}.txt`,
    (n: string) => `$ bw get password "${n}"`,
    (n: string) => `$ lpass show --password ${n}`,
    (n: string) => `$ doppler secrets get ${n} --plain`,
    (n: string) => `$ heroku config:get ${n} -a acme-web`,
    (n: string) => `$ dokku config:get shop ${n}`,
    (n: string) => `$ gopass show -o websites/${n.toLowerCase()}`,
    (n: string) => `$ keepassxc-cli show -a Password ~/vault.kdbx ${n}`,
  );

  it('finds and masks the value on the line after the command, with what follows it', () => {
    fc.assert(
      fc.property(printing, name, value, fc.constantFrom('', '\n$ ls', '\r\n'), (p, n, v, after) => {
        const text = `${p(n)}\n${v}${after}`;
        expect(masksWhole(text, v), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("is none where the variable or the file names no secret, names a public key, or what comes back is a name, a count or lines of prose", () => {
    const other = fc.constantFrom('HOME', 'PATH', 'NODE_ENV', 'PUBLIC_KEY', 'STRIPE_PUBLISHABLE_KEY', 'TOKEN_PATH', 'KEY_ID_FILE');
    const back = fc.constantFrom('$API_KEY', '13', '/run/secrets/token2', 'ghp_****abcd', 'first line 1\nsecond line', '', 'not set', 'unset 404');
    fc.assert(
      fc.property(printing, other, value, (p, n, v) => {
        // (A password manager prints the password whatever its item is called; a file named `token_path.txt` is named
        // for a token, whatever the variable would be.)
        fc.pre(!/\b(?:bw|lpass|doppler|gopass|keepassxc-cli|cat|Get-Content)\b/.test(p('X')));
        const text = `${p(n)}\n${v}`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(printing, name, back, (p, n, b) => {
        // (What a password manager prints is the password, whatever it looks like.)
        fc.pre(!/\b(?:bw|lpass|doppler|gopass|keepassxc-cli)\b/.test(p('X')));
        const text = `${p(n)}\n${b}`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a key as a byte array, in a node provider\'s or a function\'s URL, and an element named by its tag', () => {
  const byte = fc.integer({ min: 0, max: 255 });
  const bytes = fc.array(byte, { minLength: 32, maxLength: 64 }).filter((b) => b.some((x) => x !== 0) && new Set(b).size > 8);
  const sep = fc.constantFrom(',', ', ', ',\n  ');
  const array = fc.tuple(bytes, sep).map(([b, s]) => (s.includes('\n') ? `[\n  ${b.join(s)}\n]` : `[${b.join(s)}]`));
  const naming = fc.constantFrom(
    (a: string) => `$ cat ~/.config/solana/id.json\n${a}`,
    (a: string) => `Wrote new keypair to ./deployer-keypair.json\n$ cat deployer-keypair.json\n${a}`,
    (a: string) => `const payer = Keypair.fromSecretKey(new Uint8Array(${a}));`,
    (a: string) => `{"secretKey": ${a}}`,
    (a: string) => `SOLANA_PRIVATE_KEY=${a}`,
    (a: string) => `private_key: ${a}`,
    (a: string) => `$ cat wallet.json\n${a}`,
  );

  it('finds and masks a byte array under a name or a file that says it is a private key', () => {
    fc.assert(
      fc.property(naming, array, (n, a) => {
        const text = n(a);
        expect(masksWhole(text, a), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('masks every piece of one written without blanks and cut into two or three blocks anywhere', () => {
    const compact = bytes.map((b) => `[${b.join(',')}]`);
    const named = fc.constantFrom((a: string) => `SOLANA_PRIVATE_KEY=${a}`, (a: string) => `{"secretKey":${a}}`, (a: string) => `$ cat ~/.config/solana/id.json\n${a}`);
    fc.assert(
      fc.property(named, compact, fc.uniqueArray(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), { minLength: 1, maxLength: 2 }), (n, a, at) => {
        const text = n(a);
        const start = text.indexOf(a);
        // (Cuts inside the array: its name and its bytes each whole on one side of a cut or the other.)
        const cuts = [...new Set(at.map((x) => start + 1 + Math.floor(x * (a.length - 1))))].sort((x, y) => x - y);
        const parts = cuts.map((c, i) => text.slice(i === 0 ? 0 : cuts[i - 1], c)).concat(text.slice(cuts[cuts.length - 1]));
        const cache = new DetectionCache();
        cache.joinLazily(parts);
        const shown = parts.map((p) => {
          let out = p;
          for (const sp of [...cache.spans('secrets', p)].sort((x, y) => y.start - x.start)) out = `${out.slice(0, sp.start)}#${out.slice(sp.end)}`;
          return out;
        });
        // Of the bytes, no run of three (a comma between each) reaches the host.
        for (const s of shown) expect(/\d{1,3},\d{1,3},\d{1,3}/.test(s), JSON.stringify({ parts, shown })).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("is none where no such name stands before it, a public key's name does, or it holds too few bytes or zeros alone", () => {
    const other = fc.constantFrom(
      (a: string) => `sha512 digest bytes: ${a}`,
      (a: string) => `keypair.publicKey.toBytes(): ${a}`,
      (a: string) => `const table = new Uint8Array(${a});`,
      (a: string) => `$ cat data.json\n${a}`,
    );
    fc.assert(
      fc.property(other, array, (n, a) => {
        const text = n(a);
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(naming, fc.array(byte, { minLength: 1, maxLength: 31 }), fc.integer({ min: 32, max: 64 }), (n, few, zeros) => {
        for (const a of [`[${few.join(',')}]`, `[${Array(zeros).fill(0).join(',')}]`]) {
          const text = n(a);
          expect(detectKinds('secrets', text).filter((k) => k === 'byte-array-private-key'), text).toEqual([]);
        }
      }),
      { numRuns: 200 },
    );
  });

  const hex = (n: number) => fc.string({ minLength: n, maxLength: n, unit: fc.constantFrom(...'0123456789abcdef'.split('')) }).filter((v) => shannonEntropy(v) > 3);
  const base64url = (n: number) => fc.string({ minLength: n, maxLength: n, unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'.split('')) }).filter((v) => shannonEntropy(v) > 4);

  it("finds and masks the key of a node provider's RPC URL and of an Azure function's URL or header", () => {
    const urls = fc.oneof(
      hex(32).map((k) => [k, `ETH_RPC_URL=https://mainnet.infura.io/v3/${k}`] as const),
      hex(32).map((k) => [k, `wss://polygon-mainnet.infura.io/ws/v3/${k}`] as const),
      base64url(32).map((k) => [k, `new JsonRpcProvider("https://eth-mainnet.g.alchemy.com/v2/${k}")`] as const),
      hex(40).map((k) => [k, `url: "https://solemn-frosty-pond.quiknode.pro/${k}/"`] as const),
      hex(64).map((k) => [k, `https://rpc.ankr.com/eth/${k}`] as const),
      base64url(54).map((k) => [`${k}==`, `POST https://acme.azurewebsites.net/api/ProcessOrder?code=${k}==`] as const),
      base64url(54).map((k) => [`${k}==`, `GET https://acme.azurewebsites.net/api/Items?page=2&code=${k}==&x=1`] as const),
      base64url(54).map((k) => [`${k}==`, `curl -H "x-functions-key: ${k}==" https://acme.azurewebsites.net/api/Health`] as const),
    );
    fc.assert(
      fc.property(urls, ([k, text]) => {
        expect(masksWhole(text, k), text).toBe(true);
      }),
      { numRuns: 300 },
    );
    // (A URL wrapped after its path's last `/`, the key on the next line: read through.)
    expect(masksWhole('url: https://mainnet.infura.io/v3/\n6c03c21bb00fa9ea3fe546dae72c1651', '6c03c21bb00fa9ea3fe546dae72c1651')).toBe(true);
    for (const text of ['https://mainnet.infura.io/v3/', 'https://docs.infura.io/api/networks/ethereum', 'https://acme.azurewebsites.net/api/Health', 'https://acme.azurewebsites.net/api/Items?code=12345']) {
      expect(detectKinds('secrets', text), text).toEqual([]);
    }
  });

  it("finds and masks an Azure Key Vault secret's value, whatever the secret is called and holds, as the CLI and the REST API print it", () => {
    const vault = fc.stringMatching(/^[a-z][a-z0-9-]{2,22}$/);
    const secretName = fc.constantFrom('orders-db-conn', 'stripe', 'app-settings', 'feature-flags');
    // (A secret may hold words, a connection string, escaped JSON: the vault says it is one.)
    const value = fc.oneof(
      fc.string({ minLength: 4, maxLength: 64, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789 ;=-_.~'.split('')) }).filter((v) => v.trim() === v && new Set(v.toLowerCase()).size > 2),
      fc.constant('{\\"user\\": \\"app\\", \\"password\\": \\"x\\"}'),
    );
    const printed = fc.constantFrom(
      (v: string, n: string, u: string) => `{\n  "attributes": {\n    "enabled": true\n  },\n  "contentType": null,\n  "id": "${u}",\n  "kid": null,\n  "managed": null,\n  "name": "${n}",\n  "tags": {\n    "env": "prod"\n  },\n  "value": "${v}"\n}`,
      (v: string, _n: string, u: string) => `{"value":"${v}","id":"${u}","attributes":{"enabled":true}}`,
      (v: string, _n: string, u: string) => `{"value": "${v}", "contentType": "text/plain", "id": "${u}"}`,
    );
    fc.assert(
      fc.property(printed, vault, secretName, value, (p, vn, n, v) => {
        const text = p(v, n, `https://${vn}.vault.azure.net/secrets/${n}/0f1e2d3c4b5a69788796a5b4c3d2e1f0`);
        const spans = spansOf(new DetectionCache(), text, new Set(SECRET_KINDS));
        // (The value's place after its member's name: a value may read as another member's name, `"name"`.)
        const at = text.indexOf(`"${v}"`, text.indexOf('"value"') + 7) + 1;
        expect(spans.some((sp) => sp.start <= at && sp.end >= at + v.length), text).toBe(true);
        // (The secret's name and the vault's URL stay.)
        expect(spans.some((sp) => sp.start < text.indexOf('https://') + 8 && sp.end > text.indexOf('https://')), text).toBe(false);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(vault, secretName, (vn, n) => {
        for (const text of [
          `{"id": "https://${vn}.vault.azure.net/secrets/${n}", "attributes": {"enabled": true}, "name": "${n}"}`,
          `{"kid": "https://${vn}.vault.azure.net/keys/${n}/abc", "value": "ok"}`,
          `{"id": "https://${vn}.vault.azure.net/certificates/${n}", "value": "ok"}`,
        ]) expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('reads an element whose attributes do not name it by its tag', () => {
    // (Not a value that reads as a relative path, segments of lower-case letters and digits with a capital first at most,
    // `A6/Aonstru`: where a secret is kept, none under any name.)
    const value = fc.string({ minLength: 10, maxLength: 40, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789+/='.split('')) }).filter((v) => /^[A-Za-z0-9]/.test(v) && /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3 && !wordy(v, true) && !(v.includes('/') && v.split('/').every((seg) => /^[A-Z]?[a-z0-9]*$/.test(seg))));
    const tag = fc.constantFrom('Pass', 'password', 'Password', 'apiToken', 'secret', 'ClientSecret');
    const attributes = fc.constantFrom(' encoding="base64"', " type='plain'", ' encoding="base64" xml:space="preserve"');
    fc.assert(
      fc.property(tag, attributes, value, (t, a, v) => {
        const text = `<Server>\n  <User>deploy</User>\n  <${t}${a}>${v}</${t}>\n</Server>`;
        expect(masksWhole(text, v), text).toBe(true);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.constantFrom('a', 'div', 'span', 'Host', 'title'), attributes, value, (t, a, v) => {
        const text = `<${t}${a}>${v}</${t}>`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });
});

describe("a value cmd's set glues && to, a Ruby symbol's subscript, a property list's key, heroku auth:token", () => {
  const value = fc.string({ minLength: 12, maxLength: 32, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3 && !wordy(v, true));
  const name = fc.constantFrom('PGPASSWORD', 'API_TOKEN', 'db_password', 'ClientSecret', 'api_key');

  it('finds and masks each whole, and no list operator, reference or other key with it', () => {
    const placed = fc.constantFrom(
      (n: string, v: string) => `set ${n}=${v}&& psql -U app`,
      (n: string, v: string) => `${n}=${v}&& npm start`,
      (n: string, v: string) => `${n}=${v}|| exit 1`,
      (n: string, v: string) => `config[:${n.toLowerCase()}] = '${v}'`,
      (n: string, v: string) => `settings[:${n.toLowerCase()}] = "${v}"`,
      (n: string, v: string) => `<dict>\n\t<key>${n}</key>\n\t<string>${v}</string>\n</dict>`,
      (n: string, v: string) => `<key>${n}</key><data>${v}</data>`,
    );
    fc.assert(
      fc.property(placed, name, value, (p, n, v) => {
        const text = p(n, v);
        const spans = spansOf(new DetectionCache(), text, new Set(SECRET_KINDS));
        const at = text.indexOf(v);
        expect(spans.some((sp) => sp.start <= at && sp.end >= at + v.length), text).toBe(true);
        // (The operator after it stays: the command after it is no secret.)
        expect(spans.some((sp) => text.slice(sp.start, sp.end).includes('&&') || text.slice(sp.start, sp.end).includes('||')), text).toBe(false);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.uuid().filter((u) => shannonEntropy(u.replace(/-/g, '')) > 3), fc.constantFrom('', '\n \u203a   Warning: token will expire today', '\n \u203a   Warning: token will expire today\n \u203a   Use heroku authorizations:create to generate a long-term token'), (u, warning) => {
        const text = `$ heroku auth:token${warning}\n${u}`;
        expect(masksWhole(text, u), text).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("is none under a key that names no secret, for a build setting's reference, an index by a variable, or another heroku command's output", () => {
    fc.assert(
      fc.property(fc.constantFrom('PasswordPolicy', 'AccessTokenExpiry', 'SSID_STR', 'CFBundleName'), value, (k, v) => {
        const text = `<key>${k}</key><string>${v}</string>`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 100 },
    );
    for (const text of ['<key>API_KEY</key>\n<string>$(API_KEY)</string>', '<key>Password</key><string>${PASSWORD}</string>', 'h[:password] = params[:password]', '$ heroku auth:whoami\nalice', 'set PGPASSWORD=%PGPASS%&& psql']) {
      expect(detectKinds('secrets', text), text).toEqual([]);
    }
  });
});

describe("a value a GitHub Actions workflow masks, and a live stream's key", () => {
  const value = fc.string({ minLength: 16, maxLength: 40, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && shannonEntropy(v) > 3);
  const lower = fc.string({ minLength: 4, maxLength: 4, unit: fc.constantFrom(...'abcdefghijkmnopqrstuvwxyz0123456789'.split('')) });

  it('finds and masks each whole', () => {
    const keys = fc.oneof(
      value.map((v) => [v, `echo "::add-mask::${v}"`] as const),
      value.map((v) => [v, `::add-mask::${v}\n::set-output name=token::***`] as const),
      fc.array(lower, { minLength: 5, maxLength: 5 }).filter((a) => shannonEntropy(a.join('')) > 3).map((a) => [a.join('-'), `ffmpeg -re -i in.mp4 -f flv rtmp://a.rtmp.youtube.com/live2/${a.join('-')}`] as const),
      fc.tuple(fc.integer({ min: 100000, max: 999999999 }), value.filter((v) => v.length >= 30).map((v) => v.slice(0, 30))).map(([n, v]) => [`live_${n}_${v}`, `Stream key: live_${n}_${v}`] as const),
      value.map((v) => [v, `rtmps://live-api-s.facebook.com:443/rtmp/FB-${v}`] as const),
    );
    fc.assert(
      fc.property(keys, ([k, text]) => {
        expect(masksWhole(text, k), text).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('is none for a variable or an expression masked, an ingest URL with no key, an identifier that starts with live_', () => {
    fc.assert(
      fc.property(fc.constantFrom('$TOKEN', '${{ secrets.DEPLOY_TOKEN }}', '"$API_KEY"', '***'), fc.constantFrom('live_mode', 'live_2024_results', 'rtmp://live.twitch.tv/app/', 'rtmp://localhost/live/stream'), (masked, other) => {
        const text = `echo "::add-mask::${masked}"\n${other}`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 50 },
    );
  });
});

describe('a row read as a header', () => {
  it("names no column by a cell random to look at, whatever word it ends in: rows of random values under no secret's header find nothing", () => {
    // (A row's random value that ended in `pwd`, `...PmtwppWd`, named its column a password's, and the next row's value
    // under it was masked.)
    const random = fc.string({ minLength: 16, maxLength: 32, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'.split('')) }).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3.5 && !wordy(v, true));
    const word = fc.constantFrom('pwd', 'Wd', 'Key', 'key', 'Token', 'secret', 'Pass');
    const sep = fc.constantFrom('\t', ',');
    fc.assert(
      fc.property(random, word, random, sep, (a, w, b, t) => {
        // (A cell in words, the word glued to a random run read as one, is left to the header's own reading.)
        fc.pre(!wordy(a + w, false));
        const text = `service${t}owner\ndeploy${t}${a}${w}\ndeploy${t}${b}`;
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a Twilio auth token by its place", () => {
  const hex = (n: number) => fc.string({ minLength: n, maxLength: n, unit: fc.constantFrom(...'0123456789abcdef'.split('')) }).filter((v) => shannonEntropy(v) > 3);
  it("finds and masks the token after the account's SID in the client's constructor, and nothing where variables stand there", () => {
    const call = fc.constantFrom('Client', 'twilio', 'Twilio.init', 'TwilioClient.Init', 'new Twilio');
    fc.assert(
      fc.property(call, hex(32), hex(32), fc.constantFrom('"', "'"), (c, sid, token, q) => {
        const text = `client = ${c}(${q}AC${sid}${q}, ${q}${token}${q})`;
        expect(masksWhole(text, token), text).toBe(true);
        expect(detectKinds('secrets', `client = ${c}(accountSid, authToken)`)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});

describe("a Langfuse secret key, a W&B key given to its CLI's login", () => {
  const hex = (n: number) => fc.string({ minLength: n, maxLength: n, unit: fc.constantFrom(...'0123456789abcdef'.split('')) }).filter((v) => shannonEntropy(v) > 3);
  it('finds and masks each, and not the public key or a login with no key', () => {
    fc.assert(
      fc.property(fc.uuid().filter((u) => shannonEntropy(u.replace(/-/g, '')) > 3), hex(40), fc.constantFrom('', ' --relogin', ' --host https://wandb.acme.io'), (u, k, flags) => {
        const lf = `sk-lf-${u}`;
        expect(masksWhole(`LANGFUSE_SECRET_KEY="${lf}"`, lf)).toBe(true);
        expect(masksWhole(`langfuse key ${lf} rotated`, lf)).toBe(true);
        const login = `$ wandb login${flags} ${k}`;
        expect(masksWhole(login, k), login).toBe(true);
        expect(detectKinds('secrets', `pk-lf-${u}\n$ wandb login${flags}\nwandb: Logged in`)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});
