/** Text as the detectors read it (src/detect/normalize.ts): what each normalization makes of a value, and where each character came from. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeForDetection } from '../../../src/detect/normalize.js';
import { DetectionCache } from '../../../src/detect/index.js';
import { IGNORABLES, inTags } from '../../helpers/unicode.js';
import credentials from '../../fixtures/secrets/credentials.json' with { type: 'json' };


const found = (kind: 'secrets' | 'pii', s: string) => new DetectionCache().spans(kind, s);
/** The corpus's credentials written on one line. */
const oneLine = credentials.credentials.filter((c) => !c.value.includes('\n') && /^[\x21-\x7e]+$/.test(c.value));
/** `s` with each span's characters replaced. */
const mask = (s: string, spans: readonly { start: number; end: number }[]) => spans.reduceRight((t, sp) => t.slice(0, sp.start) + '*'.repeat(sp.end - sp.start) + t.slice(sp.end), s);
/** Whether 8 characters of `value` past its first 8 (a provider's prefix) show in `text`. */
function leaks(text: string, value: string): boolean {
  for (let i = Math.max(0, Math.min(8, value.length - 8)); i + 8 <= value.length; i += 4) if (text.includes(value.slice(i, i + 8))) return true;
  return false;
}

describe('normalizeForDetection', () => {
  it('reads a value behind each normalization as the value', () => {
    const v = 'AKIAIOSFODNN7EXAMPLE';
    for (const written of ['AKIA\u200bIOSFODNN7EXAMPLE', 'AKIA\u00adIOSFODNN7EXAMPLE', '\uff21KIAIOSFODNN7EXAMPLE', 'AK\u0406AIOSFODNN7EXAMPLE', '%41KIAIOSFODNN7EXAMPLE', 'A%EF%BC%ABIAIOSFODNN7EXAMPLE', '&#65;KIAIOSFODNN7EXAMPLE', 'A&#x4b;IAIOSFODNN7EXAMPLE', '\\u0041KIAIOSFODNN7EXAMPLE', 'AK\\x49AIOSFODNN7EXAMPLE', 'A&#xFF2B;IAIOSFODNN7EXAMPLE']) {
      expect(normalizeForDetection(written)?.text, written).toBe(v);
    }
  });

  it('leaves plain ASCII alone, and maps every character back inside the input, in order', () => {
    expect(normalizeForDetection('plain ASCII, 100% sure')).toBeUndefined();
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(fc.constantFrom('a', '%', '4', '1', 'E', 'F', '\u200b', '\u00ad', '\u0301', '\u00e9', '\u1e31', '\u0430', '\uff21', 'ß', '\ufb01', '😀', '&', '#', ';', 'x', 'u', 'd8', 'dc', '\\', '&#', '\\u', '\u{e0041}', '\ufe0f', 'amp;', '\x1b', '[', ']', '31m', '\x07', '\x9b', '"', 'n', '001b'), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), maxLength: 60 }), (s) => {
        const n = normalizeForDetection(s);
        if (n === undefined) return;
        expect(n.from.length).toBe(n.text.length);
        for (let i = 0; i < n.text.length; i++) {
          expect(n.from[i]).toBeLessThan(n.to[i]!);
          expect(n.to[i]).toBeLessThanOrEqual(s.length);
          if (i > 0) expect(n.from[i]).toBeGreaterThanOrEqual(n.from[i - 1]!);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('gives a string read again, in any order among others, what it gave the first time', () => {
    // The detectors read every text of a decision in turn, and the second reads the first's normalization: a string
    // that normalizes to nothing new stays undefined, one that does gets the same text and maps.
    const unit = fc.oneof(fc.constantFrom('a', ' ', '%41', '\u200b', '\u0430', '\uff21', 'é', '&#65;', '\\x41'), fc.string({ minLength: 1, maxLength: 3 }));
    fc.assert(
      fc.property(fc.array(fc.string({ unit, maxLength: 30 }), { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 16 }), (strings, order) => {
        const first = strings.map((s) => normalizeForDetection(s));
        const firstCopy = first.map((n) => (n === undefined ? undefined : { text: n.text, from: [...n.from], to: [...n.to], tags: n.tags }));
        for (const k of order) {
          const i = k % strings.length;
          const again = normalizeForDetection(strings[i]!);
          const want = firstCopy[i];
          if (want === undefined) expect(again).toBeUndefined();
          else expect({ text: again!.text, from: [...again!.from], to: [...again!.to], tags: again!.tags }).toEqual(want);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reads a value with any character drawn as nothing inside it as the value, and masks all of it', () => {
    // Not only the zero-width space: a bidirectional mark, an invisible operator, a variation selector, a filler or a
    // tag character between two characters of a credential hides it from a scan of the text as written.
    expect(IGNORABLES.length).toBeGreaterThan(4000);
    const values = ['AKIAIOSFODNN7EXAMPLE', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'jane.doe@example.com'];
    fc.assert(
      fc.property(fc.constantFrom(...values), fc.array(fc.tuple(fc.nat(), fc.constantFrom(...IGNORABLES)), { minLength: 1, maxLength: 3 }), (v, cuts) => {
        // Inserted between two code points (never inside a surrogate pair an earlier one made), not at either end.
        const points = Array.from(v);
        for (const [at, cp] of cuts) points.splice(1 + (at % (points.length - 1)), 0, String.fromCodePoint(cp));
        const s = points.join('');
        const spans = found(v.includes('@') ? 'pii' : 'secrets', `value: ${s} ok`);
        expect(spans.length, JSON.stringify(s)).toBe(1);
        expect(`value: ${s} ok`.slice(spans[0]!.start, spans[0]!.end), JSON.stringify(s)).toBe(s);
      }),
      { numRuns: 1500 },
    );
  });

  it('reads every letter and digit written in any of its compatibility forms as itself, where the confusables table would give another of its family', () => {
    // Every code point (planes 0 and 1) whose NFKC form is one ASCII letter or digit: fullwidth, mathematical bold,
    // script, double-struck and monospace letters and digits, circled letters, the long s. The confusables table's
    // prototype of `𝐈`, `𝟏` and `l` is `l`, of `𝟎` and `O` is `O`: an AWS key in mathematical bold would read `AKlA`.
    const forms = new Map<string, string[]>();
    for (let cp = 0x80; cp < 0x20000; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      const k = c.normalize('NFKC');
      if (/^[A-Za-z0-9]$/.test(k)) forms.set(k, [...(forms.get(k) ?? []), c]);
    }
    expect(forms.size).toBe(62);
    const values = oneLine.map((c) => c.value).filter((v) => normalizeForDetection(v) === undefined && /[A-Za-z0-9]/.test(v));
    fc.assert(
      fc.property(fc.constantFrom(...values), fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 12 }), (v, picks) => {
        const points = Array.from(v);
        const alnum = points.flatMap((c, i) => (forms.has(c) ? [i] : []));
        for (const [at, which] of picks) {
          const i = alnum[at % alnum.length]!;
          const choices = forms.get(v[i]!)!;
          points[i] = choices[which % choices.length]!;
        }
        const written = points.join('');
        expect(normalizeForDetection(written)?.text, JSON.stringify(written)).toBe(v);
      }),
      { numRuns: 1500 },
    );
    // The whole value in mathematical bold is found and masked whole.
    const bold = (s: string) => Array.from(s, (c) => (/[A-Z]/.test(c) ? String.fromCodePoint(0x1d400 + c.charCodeAt(0) - 65) : /[a-z]/.test(c) ? String.fromCodePoint(0x1d41a + c.charCodeAt(0) - 97) : /[0-9]/.test(c) ? String.fromCodePoint(0x1d7ce + c.charCodeAt(0) - 48) : c)).join('');
    for (const v of ['AKIAIOSFODNN7EXAMPLE', 'sk-ant-api03-Ab3De5Fg7Hj9Kl1Mn3Pq5Rs7Tu9Vw1Xy3Za5Bc7De9Fg1Hj3Kl5Mn7Pq9Rs1Tu3Vw5Ab3De5Fg7Hj9Kl1Mn3Pq5Rs7-AbCdEfAA']) {
      const s = `output: ${bold(v)} end`;
      const spans = found('secrets', s);
      expect(spans.map((sp) => s.slice(sp.start, sp.end)), v).toEqual([bold(v)]);
    }
  });

  it('reads a value with marks drawn on its characters as the value, and masks all of it with its marks', () => {
    // Combining marks (an accent, a dot, an overlay) after any character of a credential, as written or composed into
    // the letter where Unicode has one (NFC): a model reads through them.
    const MARKS = ['\u0301', '\u0300', '\u0307', '\u0308', '\u0323', '\u0336', '\u0338', '\u20d7', '\u0483', '\ufe20'];
    const values = ['AKIAIOSFODNN7EXAMPLE', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'jane.doe@example.com'];
    fc.assert(
      fc.property(fc.constantFrom(...values), fc.array(fc.tuple(fc.nat(), fc.constantFrom(...MARKS)), { minLength: 1, maxLength: 40 }), fc.boolean(), (v, marks, composed) => {
        const points = Array.from(v).map((c) => [c]);
        for (const [at, m] of marks) points[at % points.length]!.push(m);
        const written = points.map((p) => p.join('')).join('');
        const s = composed ? written.normalize('NFC') : written;
        const spans = found(v.includes('@') ? 'pii' : 'secrets', `value: ${s} ok`);
        expect(spans.length, JSON.stringify(s)).toBe(1);
        expect(`value: ${s} ok`.slice(spans[0]!.start, spans[0]!.end), JSON.stringify(s)).toBe(s);
      }),
      { numRuns: 1500 },
    );
    // Marks on the letters of another script, and words of a language written with accents, leave a text read once
    // (as written); a word of them that holds a digit or an at-sign is read with its letters as their bases.
    expect(normalizeForDetection('\u0915\u093f\u0924\u093e\u092c')).toBeUndefined();
    expect(normalizeForDetection('Caf\u00e9 cr\u00e8me \u00dcberschreitungsm\u00f6glichkeiten 3\u00e8me')?.text).toBe('Cafe creme Uberschreitungsmoglichkeiten 3eme');
    expect(normalizeForDetection('Caf\u00e9 cr\u00e8me \u00dcberschreitungsm\u00f6glichkeiten r\u00e9sum\u00e9')).toBeUndefined();
    expect(normalizeForDetection('mail jos\u00e9@example.com')?.text).toBe('mail jose@example.com');
  });

  it('reads tag characters both as the ASCII they stand for and as nothing', () => {
    const v = 'AKIAIOSFODNN7EXAMPLE';
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.constantFrom('A', 'x', '7', ' ', 'Z'), (a, b, extra) => {
        const i = a % v.length;
        const j = i + 1 + (b % (v.length - i));
        // A stretch of the value hidden in tags: read as ASCII, it is the value.
        const hidden = v.slice(0, i) + inTags(v.slice(i, j)) + v.slice(j);
        expect(found('secrets', `k ${hidden} .`).length, JSON.stringify(hidden)).toBe(1);
        // A tag inserted into the value: read as nothing, it is the value (read as ASCII, it is not).
        const inserted = v.slice(0, j) + inTags(extra) + v.slice(j);
        expect(found('secrets', `k ${inserted} .`).length, JSON.stringify(inserted)).toBe(1);
      }),
      { numRuns: 400 },
    );
    expect(normalizeForDetection(`key ${inTags(v)}`)?.text).toBe(`key ${v}`);
    expect(normalizeForDetection(`key ${inTags(v)}`, undefined, 'drop')?.text).toBe('key ');
  });

  it("removes a terminal's escape sequences, written or escaped, and reads JSON's escapes after any run of backslashes", () => {
    const v = 'AKIAIOSFODNN7EXAMPLE';
    for (const written of [
      // grep --color=always marks a match so; a colour in the middle of the value; 256 colours; CSI as one character.
      `\x1b[01;31m\x1b[K${v}\x1b[m\x1b[K`,
      `AKIA\x1b[1;32mIOSF\x1b[0mODNN7EXAMPLE`,
      `\x1b[38;5;208mAKIAIOSFODNN\x1b[39m7EXAMPLE`,
      `\x9b1mAKIAIOSFODNN7EXAMPLE\x9b0m`,
      // A hyperlink (OSC 8), ended by BEL and by ESC backslash; a character set chosen.
      `\x1b]8;;https://cb.test/\x07${v}\x1b]8;;\x1b\\`,
      `\x1b(B${v}`,
      // The same in a JSON string: ESC escaped, the rest as written.
      `\\u001b[01;31mAKIA\\u001b[mIOSFODNN7EXAMPLE`,
      `\\u001b]8;;https://cb.test/\\u0007${v}`,
    ]) {
      expect(normalizeForDetection(written)?.text, JSON.stringify(written)).toBe(v);
    }
    // A file's lines in a JSON string, once, twice, three times: quotes and line breaks read as themselves.
    const file = 'DB_USER="app"\nDB_PASSWORD="Xk9mQ2vL7pR4tW8z"\n';
    let escaped = file;
    for (let round = 0; round < 3; round++) {
      escaped = JSON.stringify(escaped).slice(1, -1);
      expect(normalizeForDetection(escaped)?.text, escaped).toBe(file);
    }
    // A lone ESC, a sequence cut short, and backslashes before no escape are kept as written.
    expect(normalizeForDetection('a \x1b\nb')).toBeUndefined();
    expect(normalizeForDetection(`\x1b]${'a'.repeat(600)}`)).toBeUndefined();
    expect(normalizeForDetection('C:\\\\Users\\\\me')).toBeUndefined();
  });

  it('masks a credential coloured by a terminal, cut by its colours anywhere, or in a JSON string escaped up to three times, and the sequence before it with it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...oneLine), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 3 }), (c, a, b, rounds) => {
        const i = a % (c.value.length + 1);
        const sgr = ['\x1b[01;31m\x1b[K', '\x1b[1;32m', '\x1b[38;5;208m', '\x1b[0m', '\x9b7m', ''][b % 6]!;
        // (Or a hyperlink around it, ended by BEL and by ESC backslash: escaped, the backslash is escaped too.)
        const coloured = sgr === '' ? `\x1b]8;;https://cb.test/\x07${c.value}\x1b]8;;\x1b\\` : `${sgr}${c.value.slice(0, i)}${sgr}${c.value.slice(i)}\x1b[0m`;
        let text = `here it is:\n${c.text.replace(c.value, () => coloured)}\nok`;
        for (let r = 0; r < rounds; r++) text = JSON.stringify(text);
        const masked = mask(text, found('secrets', text));
        expect(leaks(masked, c.value), JSON.stringify(masked)).toBe(false);
      }),
      { numRuns: 400 },
    );
  });

  it('masks a credential percent-encoded once, twice or three times over, whole or in part, and reads `%25` before no escape as `%`', () => {
    // Each round escapes every `%` the round before wrote (`A` -> `%41` -> `%2541` -> `%252541`), as a link put in
    // another link's query is.
    const encode = (s: string, from: number, to: number) => s.slice(0, from) + Array.from(new TextEncoder().encode(s.slice(from, to)), (b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('') + s.slice(to);
    fc.assert(
      fc.property(fc.constantFrom(...oneLine), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 3 }), (c, a, b, rounds) => {
        const from = a % c.value.length;
        const to = from + 1 + (b % (c.value.length - from));
        let value = encode(c.value, from, to);
        for (let r = 1; r < rounds; r++) value = value.replaceAll('%', '%25');
        const text = `here it is:\n${c.text.replace(c.value, () => value)}\nok`;
        const masked = mask(text, found('secrets', text));
        // (Read as a reader decoding it would: every round of escapes undone.)
        let shown = masked;
        for (let r = 0; r < rounds; r++) shown = shown.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => { try { return decodeURIComponent(m); } catch { return m; } });
        expect(leaks(shown, c.value), JSON.stringify(masked)).toBe(false);
      }),
      { numRuns: 300 },
    );
    expect(normalizeForDetection('%2541KIAIOSFODNN7EXAMPLE')?.text).toBe('AKIAIOSFODNN7EXAMPLE');
    expect(normalizeForDetection('100%25 sure, %25zz, %2520')?.text).toBe('100% sure, %zz,  ');
  });

  it("reads HTML5's named references as the characters they stand for: one drawn as nothing inside a value, an address's marks written so", () => {
    // (`AKIAZ3MJ&shy;QX7T...`, `&ZeroWidthSpace;`, `alice&commat;example&period;com`: only six names were read, and a
    // page's references hid the value.)
    const invisible = ['&shy;', '&ZeroWidthSpace;', '&zwj;', '&zwnj;', '&NoBreak;', '&InvisibleTimes;', '&it;', '&ic;', '&af;', '&lrm;', '&rlm;', '&NegativeThinSpace;'];
    const bare = oneLine.filter((c) => c.value.length >= 16 && /^[A-Za-z0-9_-]+$/.test(c.value) && found('secrets', `here: ${c.value} ok`).length > 0);
    fc.assert(
      fc.property(fc.constantFrom(...bare), fc.nat(), fc.constantFrom(...invisible), (c, at, ref) => {
        const i = 1 + (at % (c.value.length - 1));
        const s = `here: ${c.value.slice(0, i)}${ref}${c.value.slice(i)} ok`;
        expect(leaks(mask(s, found('secrets', s)), c.value), `${c.provider}: ${s}`).toBe(false);
      }),
      { numRuns: 500 },
    );
    for (const s of ['mail alice&commat;example&period;com today', 'mail alice&#64;example&#x2E;com today', 'mail alice&commat;example.com today'])
      expect(found('pii', s).map((sp) => sp.kind), s).toEqual(['email']);
    // A name HTML5 does not define, or one that stands for two characters, is kept as written.
    expect(normalizeForDetection('a &nosuchname; b &NotEqualTilde; c')).toBeUndefined();
  });

  it('decodes one round of character references and escapes, and only what stands for a character', () => {
    expect(normalizeForDetection('a &amp;amp; b')?.text).toBe('a &amp; b');
    expect(normalizeForDetection('smile \\ud83d\\ude00 ok')?.text).toBe('smile \u{1f600} ok');
    // A lone surrogate, a NUL, a code point past Unicode and an unknown name stand for no character: kept as written.
    expect(normalizeForDetection('\\ud83d x &#0; &#x110000; &bogus; C:\\x')).toBeUndefined();
  });
});
