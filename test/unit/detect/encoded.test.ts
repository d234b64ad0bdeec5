/** Credentials written as the base64 or the hex of their text (src/detect/encoded.ts): read as what they encode, up to three rounds, and nothing else decoded. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import credentials from '../../fixtures/secrets/credentials.json' with { type: 'json' };
import { DetectionCache } from '../../../src/detect/index.js';
import { DECODE_ROUNDS, encodedRuns } from '../../../src/detect/encoded.js';
import { shannonEntropy } from '../../../src/detect/chars.js';

const secrets = (s: string) => new DetectionCache().spans('secrets', s);
/** One-line credentials the scan finds in their own line. */
const lines = credentials.credentials.filter((c) => !c.value.includes('\n')).map((c) => c.text);
/** One-line values that say what they are standing alone (a provider's prefix or shape). */
const oneLine = credentials.credentials.filter((c) => !c.value.includes('\n') && new DetectionCache().spans('secrets', `see ${c.value} ok`).length > 0).map((c) => c.value);

describe('base64 in a text', () => {
  it('reads no text where the bytes hold a sequence UTF-8 forbids (an overlong form, a surrogate, one past U+10FFFF), whatever stands around it', () => {
    // (Their continuation bytes are such: a decoder makes each byte a replacement character, and a repository's name read
    // as base64 under a secret's name, `git@github.com:aiogaibwga6/aaa0.git`, read so, joined with the plain text before it.)
    const forbidden = fc.oneof(
      fc.tuple(fc.constant(0xe0), fc.integer({ min: 0x80, max: 0x9f }), fc.integer({ min: 0x80, max: 0xbf })),
      fc.tuple(fc.constant(0xed), fc.integer({ min: 0xa0, max: 0xbf }), fc.integer({ min: 0x80, max: 0xbf })),
      fc.tuple(fc.constant(0xf0), fc.integer({ min: 0x80, max: 0x8f }), fc.integer({ min: 0x80, max: 0xbf }), fc.integer({ min: 0x80, max: 0xbf })),
      fc.tuple(fc.constant(0xf4), fc.integer({ min: 0x90, max: 0xbf }), fc.integer({ min: 0x80, max: 0xbf }), fc.integer({ min: 0x80, max: 0xbf })),
    );
    const ascii = fc.array(fc.integer({ min: 0x20, max: 0x7e }), { maxLength: 24 });
    fc.assert(
      fc.property(ascii, forbidden, ascii, fc.constantFrom<BufferEncoding>('base64', 'base64url', 'hex'), (a, f, b, enc) => {
        const run = Buffer.from([...a, ...f, ...b]).toString(enc);
        for (const r of encodedRuns(`token: ${run} ok`)) expect(r.text.includes('\ufffd'), JSON.stringify(r)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('a credential line written as base64, in either alphabet, or as hex, alone, after a name or in a data: URI, is found and the run masked whole', () => {
    fc.assert(
      fc.property(fc.constantFrom(...lines), fc.constantFrom<BufferEncoding>('base64', 'base64url', 'hex'), fc.constantFrom('', 'secret: ', 'icon data:text/plain;base64,', '"blob":"'), (line, enc, before) => {
        expect(secrets(line).length, line).toBeGreaterThan(0);
        const run = Buffer.from(line).toString(enc);
        const text = `${before}${run} ok`;
        const spans = secrets(text);
        expect(spans.length, text).toBeGreaterThan(0);
        // The whole run is inside what is masked.
        expect(spans.some((sp) => sp.start <= before.length && sp.end >= before.length + run.length), text).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("a credential's value written as base64 or hex in its line is found the same where the line stands in a JSON string, escaped once or twice (a tool's output as an object's member)", () => {
    const values = credentials.credentials.filter((c) => !c.value.includes('\n') && c.text.includes(c.value));
    fc.assert(
      fc.property(fc.constantFrom(...values), fc.constantFrom<BufferEncoding>('base64', 'hex'), fc.constantFrom(1, 2), (c, enc, times) => {
        const run = Buffer.from(c.value).toString(enc);
        const line = c.text.replace(c.value, () => run);
        // (Where the line as written reads it: the context a run is read with is its own measure.)
        fc.pre(secrets(line).some((sp) => sp.start <= line.indexOf(run) && sp.end >= line.indexOf(run) + run.length));
        let text = `here it is:\n${line}\nok`;
        for (let k = 0; k < times; k++) text = JSON.stringify({ stdout: text, code: 0 });
        const at = text.indexOf(run);
        expect(secrets(text).some((sp) => sp.start <= at && sp.end >= at + run.length), `${c.provider} ${enc} ${times}: ${text}`).toBe(true);
      }),
      { numRuns: 600 },
    );
  });

  it("reads a run after a JSON string's escaped line break from after the escape: a value printed on the line after its command, hex or base64, in a tool's output", () => {
    // The escape's `n` read with a hex run made a base64 run of the two, and what that decoded to hid the value.
    const value = fc.string({ minLength: 12, maxLength: 32, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789#+'.split('')) }).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3);
    const command = fc.constantFrom('$ bw get password "Prod DB"', '$ op read op://Private/GitHub/token', '$ echo $OPENAI_API_KEY', '$ pass show websites/github.com');
    fc.assert(
      fc.property(command, value, fc.constantFrom<BufferEncoding>('hex', 'base64'), fc.constantFrom(1, 2), (c, v, enc, times) => {
        const run = Buffer.from(v).toString(enc);
        let text = `here it is:\n${c}\n${run}\nok`;
        for (let k = 0; k < times; k++) text = JSON.stringify({ stdout: text, code: 0 });
        const at = text.indexOf(run);
        expect(secrets(text).some((sp) => sp.start <= at && sp.end >= at + run.length), text).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('reads what a run encodes for runs again, up to three rounds (base64 of base64, hex of base64, ...), and masks the outer run whole', () => {
    const encodings = fc.constantFrom<BufferEncoding>('base64', 'base64url', 'hex');
    fc.assert(
      fc.property(fc.constantFrom(...lines), fc.array(encodings, { minLength: 2, maxLength: DECODE_ROUNDS }), fc.constantFrom('', 'secret: ', 'data:text/plain;base64,'), (line, chain, before) => {
        const run = chain.reduce((acc, enc) => Buffer.from(acc).toString(enc), line);
        const text = `${before}${run} ok`;
        const spans = secrets(text);
        expect(spans.some((sp) => sp.start <= before.length && sp.end >= before.length + run.length), `${chain.join(' of ')}: ${text}`).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('reads a run wrapped at a width (`base64` at 76, `openssl` at 64, `xxd -p` at 60) as one, a credential across its lines included, and masks every line', () => {
    const wraps = fc.constantFrom<[BufferEncoding, number]>(['base64', 76], ['base64', 64], ['base64url', 76], ['hex', 60], ['hex', 32]);
    fc.assert(
      fc.property(fc.constantFrom(...lines), wraps, fc.nat(120), fc.constantFrom('\n', '\r\n'), fc.constantFrom('', 'cat .env | base64\n', 'blob:\n'), (line, [enc, width], filler, eol, before) => {
        // Text before the credential moves it across the lines' breaks.
        const encoded = Buffer.from(`# settings\n${'x'.repeat(filler)}\n${line}\nDEBUG=0\n`).toString(enc);
        const wrapped = encoded.match(new RegExp(`.{1,${width}}`, 'g'))!.join(eol);
        const text = `${before}${wrapped}${eol}done`;
        const spans = secrets(text);
        const at = before.length;
        expect(spans.some((sp) => sp.start <= at && sp.end >= at + wrapped.replace(/=+$/, '').length), `${enc}/${width}: ${text}`).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('reads the stretches of text among bytes that are none (a NUL or binary data after a credential), as a model that decodes the run would', () => {
    fc.assert(
      fc.property(fc.constantFrom(...lines), fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.constantFrom<BufferEncoding>('base64', 'hex'), (line, binary, enc) => {
        const run = Buffer.concat([Buffer.from(`${line}\n`), Buffer.from([0]), binary, Buffer.from('\nend of file\n')]).toString(enc);
        const spans = secrets(`blob ${run} ok`);
        expect(spans.some((sp) => sp.start <= 5 && sp.end >= 5 + run.replace(/=+$/, '').length), run).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('reads a stretch of text after bytes that are none apart from what stands before the run, and before bytes that are none apart from what stands after: no name, quote or operator joins it through them', () => {
    // A name before the run, then a stretch that would be a value after it were the bytes before it not there (the base64 of random bytes, one value in some thousands after `password <- `: `8AkKAAAAAidOXzVAZG0z`,
    // `\xf0\t\n\0\0\0\x02'N_5@dm3`).
    const value = fc.stringMatching(/^[A-Za-z0-9@_!]{8,14}$/).filter((v) => /[0-9]/.test(v) && /[A-Za-z]/.test(v) && new Set(v).size >= 7);
    // Bytes before it: a few that open text (a run whose first bytes are none is not decoded) and a control that is none.
    const notText = fc
      .tuple(fc.uint8Array({ min: 0x20, max: 0x7e, minLength: 3, maxLength: 6 }), fc.constantFrom(0, 1, 2, 6, 0x0b, 0x1a))
      .map(([b, control]) => Buffer.from([...b, control]));
    fc.assert(
      fc.property(
        // (Where the run as written is no value: R's `<-` unquoted assigns a variable, a path's last segment names a file.)
        fc.constantFrom('password <- ', 'api_key <- ', '/run/secrets/password ', '/run/secrets/db_password '),
        fc.constantFrom('', "'", '"', ':', '= '),
        value,
        notText,
        fc.constantFrom<BufferEncoding>('base64', 'hex'),
        fc.constantFrom(...lines),
        (before, opens, v, junk, enc, line) => {
          const bytes = Buffer.concat([junk, Buffer.from(`${opens}${v}`)]);
          const run = bytes.toString(enc);
          expect(secrets(`${before}${run}`), `${before}${run}`).toEqual([]);
          // What a stretch holds whole is read as it stands: a credential's line after the bytes that are none.
          const named = Buffer.concat([junk, Buffer.from(line)]).toString(enc);
          expect(secrets(`blob ${named} ok`).length, `${line}: ${named}`).toBeGreaterThan(0);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("reads bytes whose text opens with an assignment's operator apart from the name before the run: no operator joins it from inside the encoding", () => {
    // (The base64 of random bytes after `/run/secrets/password `, `PXAlPdyAaDAAAAAAAAAAAZ8AQx`, decodes to `=p%=܀h0` and
    // NULs: read joined, `password =p%=܀h0`, a password of six characters with a letter and a digit.)
    const value = fc.stringMatching(/^[A-Za-z0-9@_!%]{6,14}$/).filter((v) => /[0-9]/.test(v) && /[A-Za-z]/.test(v));
    fc.assert(
      fc.property(
        fc.constantFrom('/run/secrets/password ', '/run/secrets/db_password ', 'password <- ', 'api_key <- '),
        fc.constantFrom('=', ':', '= ', ': '),
        value,
        fc.uint8Array({ min: 0, max: 3, minLength: 0, maxLength: 12 }),
        fc.constantFrom<BufferEncoding>('base64', 'hex'),
        (before, op, v, tail, enc) => {
          const run = Buffer.concat([Buffer.from(`${op}${v}`), Buffer.from(tail)]).toString(enc);
          expect(secrets(`${before}${run}`), `${before}${run}`).toEqual([]);
        },
      ),
      { numRuns: 400, examples: [['/run/secrets/password ', '=', 'p%=\u0700h0', new Uint8Array([0, 0, 0, 0, 0, 0, 0, 1, 0x9f, 0, 0x43]), 'base64']] },
    );
  });

  it('reads an encoding glued to what stands before or after it (base64 after a URL path, hex after `bot` or a word ending in hex letters), and masks what it covers', () => {
    // `/` and letters are base64 characters, hex digits letters too: the run read starts before the encoding.
    // Base64 after a path's slash; hex after a word too (its last letters may be hex digits).
    const base64 = fc.tuple(fc.constantFrom<BufferEncoding[]>(['base64'], ['base64url'], ['hex', 'base64'], ['base64', 'base64']), fc.constantFrom('https://discord.com/api/webhooks/', 'GET /v1/keys/', 'cdn.example/a/b/c/', 'https://api.telegram.org/bot', 'token'));
    const hex = fc.tuple(fc.constantFrom<BufferEncoding[]>(['hex'], ['base64', 'hex']), fc.constantFrom('https://discord.com/api/webhooks/', 'https://api.telegram.org/bot', 'cafe', 'x'));
    fc.assert(
      fc.property(
        fc.constantFrom(...oneLine),
        fc.oneof(base64, hex),
        fc.constantFrom('', '/getMe', '/status.json', ' ok'),
        (value, [chain, before], after) => {
          const run = chain.reduce((acc, enc) => Buffer.from(acc).toString(enc), value);
          const text = `see ${before}${run}${after}`;
          const at = 4 + before.length;
          const spans = secrets(text);
          // Every character of the encoding past its first few (a glued letter may be read with it) is masked.
          expect(spans.some((sp) => sp.start <= at + 4 && sp.end >= at + run.replace(/=+$/, '').length), `${chain.join(' of ')}: ${text}`).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('hands over runs in order, apart from each other and inside the string, whatever the string (the decoded texts are read in their places)', () => {
    const b64 = (t: string) => Buffer.from(t).toString('base64');
    const piece = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'ABCDEFabcdef0123456789+/=-_ ./:'.split('')), maxLength: 60 }),
      fc.constantFrom(b64('api_key = "Zx9Lm2Pq8Rt5Vw3Yb7Nc"'), Buffer.from('ghp_16C7e42F292c6912E7710c838347Ae178B4a').toString('hex'), 'https://x.test/hooks/', 'bot', '/getMe'),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const s = pieces.join('');
        const runs = encodedRuns(s);
        for (let i = 0; i < runs.length; i++) {
          const r = runs[i]!;
          expect(r.start >= 0 && r.start < r.end && r.end <= s.length, JSON.stringify(s)).toBe(true);
          if (i > 0) expect(runs[i - 1]!.end <= r.start, JSON.stringify(s)).toBe(true);
        }
        // And the detectors read it without throwing.
        secrets(s);
      }),
      { numRuns: 500 },
    );
  });

  it('passes over what encodes no text', () => {
    // Random bytes in base64 or hex (a key, a digest, an id): no credential read in them, whatever they decode to.
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 8, maxLength: 400, size: 'max' }), fc.constantFrom<BufferEncoding>('base64', 'hex'), (bytes, enc) => {
        expect(secrets(`sum ${Buffer.from(bytes).toString(enc)} end`)).toEqual([]);
      }),
      { numRuns: 300 },
    );
    expect(encodedRuns('sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')).toEqual([]);
  });
});
