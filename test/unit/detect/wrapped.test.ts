/**
 * A token cut by a line break (src/detect/wrapped.ts): a terminal's or a tool's output wrapped at its width, a value
 * hard-wrapped in a document, a shell's `\` continuation. The host shows the lines one under the other and a model
 * reads the token whole: none of it may stay.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DetectionCache, SECRET_KINDS, spansOf } from '../../../src/detect/index.js';
import { scanSecrets } from '../../../src/detect/secrets.js';
import { unwrappedStretches } from '../../../src/detect/wrapped.js';
import credentials from '../../fixtures/secrets/credentials.json' with { type: 'json' };
import benign from '../../fixtures/secrets/benign.json' with { type: 'json' };

const KINDS = new Set<string>(SECRET_KINDS);
/** One-line credentials whose value alone says what it is (a provider's prefix or shape), 16 characters or more. */
const bare = credentials.credentials.filter((c) => !c.value.includes('\n') && /^[\x21-\x7e]+$/.test(c.value) && c.value.length >= 16 && scanSecrets(c.value).length > 0);

/** `s` with every span found replaced by `#`. */
function masked(s: string): string {
  const spans = spansOf(new DetectionCache(), s, KINDS);
  return spans.reduceRight((t, sp) => t.slice(0, sp.start) + '#'.repeat(sp.end - sp.start) + t.slice(sp.end), s);
}

/** Whether 8 characters of `value` past its first 8 (a provider's prefix) show in the lines of `text` read one after the other. */
function leaks(text: string, value: string): boolean {
  const joined = text.replace(/\\?\r?\n/g, '');
  for (let i = Math.max(0, Math.min(8, value.length - 8)); i + 8 <= value.length; i += 2) if (joined.includes(value.slice(i, i + 8))) return true;
  return false;
}

/** `v` cut at each place of `cuts` (sorted, inside it) by `br`. */
function cut(v: string, cuts: readonly number[], br: string): string {
  let out = '';
  let at = 0;
  for (const c of cuts) {
    out += v.slice(at, c) + br;
    at = c;
  }
  return out + v.slice(at);
}

describe('a token cut by a line break', () => {
  expect(bare.length).toBeGreaterThan(80);

  it('is masked whole, cut once or more anywhere, by a line feed, a carriage return and a line feed or a continuation, with what names it before and a line after', () => {
    const before = ['', 'export API_TOKEN=', 'token: ', '$ cat creds\n', '  "key": "'];
    const after = ['', '\n', '\nnext line', '\n$ ls -la', '\n\nDone.', '"\n}'];
    fc.assert(
      fc.property(fc.constantFrom(...bare), fc.uniqueArray(fc.nat(), { minLength: 1, maxLength: 4 }), fc.constantFrom('\n', '\r\n', '\\\n'), fc.constantFrom(...before), fc.constantFrom(...after), (c, at, br, b, a) => {
        const v = c.value;
        const cuts = [...new Set(at.map((x) => 1 + (x % (v.length - 1))))].sort((x, y) => x - y);
        const s = b + cut(v, cuts, br) + a;
        const m = masked(s);
        expect(leaks(m, v), `${c.provider}: ${JSON.stringify(s)} -> ${JSON.stringify(m)}`).toBe(false);
      }),
      { numRuns: 1500 },
    );
  });

  it("is masked whole where a continuation cuts it after a host's `:`, which reads as no config's next entry", () => {
    // (A draw of the property above, postgres-url cut after its `@` and its host's `:`: the line `db.internal:\` read
    // as a YAML entry's name, and the reading across the breaks skipped.)
    const url = 'postgres://app:quKCZcyBYQjHsWB0@db.internal:5432/app';
    const at = [url.indexOf('@') + 1, url.indexOf(':5432') + 1];
    for (const s of [`DATABASE_URL=${cut(url, at, '\\\n')}`, `${cut(url, at, '\\\n')}\nnext line`]) expect(leaks(masked(s), url), JSON.stringify(masked(s))).toBe(false);
  });

  it('is masked whole, wrapped at any width from 8 to 120, whatever follows its last line', () => {
    fc.assert(
      fc.property(fc.constantFrom(...bare), fc.integer({ min: 8, max: 120 }), fc.constantFrom('', '\nnext line', '\nok', '\n$ ', '\nAKIA'), (c, width, a) => {
        const line = `export SECRET=${c.value}`;
        const lines: string[] = [];
        for (let i = 0; i < line.length; i += width) lines.push(line.slice(i, i + width));
        const s = `$ env | grep SECRET\n${lines.join('\n')}${a}`;
        const m = masked(s);
        expect(leaks(m, c.value), `${c.provider}: ${JSON.stringify(s)} -> ${JSON.stringify(m)}`).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it("keeps the next line's first word and the line break before it, after a value a rule of no fixed length reads to its line's end", () => {
    // (`::add-mask::...` then `set PGPASSWORD=...&& psql`: the reading across the break took `set`, and the line break
    // with it, into the value's mask; so did an OpenAI project key printed before `echo ok`, and a stream's key before
    // the `ffmpeg` line that sends to it.)
    const chars = [...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'];
    const lines = [(v: string) => `::add-mask::${v}`, (v: string) => `OPENAI_API_KEY: sk-proj-${v}${v}`, (v: string) => `rtmp://a.rtmp.youtube.com/live2/${v}`];
    const word = fc.oneof(fc.stringMatching(/^[a-z]{2,10}$/), fc.stringMatching(/^[A-Z][a-z]{1,9}$/), fc.constantFrom('set', 'echo', 'export', 'psql', 'npm', 'ffmpeg', 'Done'));
    fc.assert(
      fc.property(fc.uniqueArray(fc.constantFrom(...chars), { minLength: 24, maxLength: 40 }), fc.constantFrom(...lines), word, fc.constantFrom('', '.', ' -h db', ' PGPASSWORD=x&& psql', ' ok\nnext line'), (picked, line, w, rest) => {
        const v = picked.join('');
        const s = `$ make deploy\n${line(v)}\n${w}${rest}`;
        const m = masked(s);
        expect(m, JSON.stringify(s)).not.toContain(v.slice(4, 12));
        expect(m, JSON.stringify(s)).toContain(`\n${w}${rest}`);
      }),
      { numRuns: 600 },
    );
  });

  it("is masked whole where a program's string literals a concatenation joins hold it, cut anywhere into two to four", () => {
    // (`const k = "ghp_" + "R8kL..."`: each literal alone holds no token, and the generic assignment joins literals
    // only to a value that reads as one.)
    const literal = bare.filter((c) => !/[\s"'`\\]/.test(c.value));
    const joins = [' + ', '+', ' . ', ' .. ', ' || ', ' & ', ' ', ' +\n    ', '\n  + '];
    const lead = ['const k = ', '$key = ', 'local t = ', 'SELECT ', 'x = f(', 'print(', ''];
    fc.assert(
      fc.property(fc.constantFrom(...literal), fc.uniqueArray(fc.nat(), { minLength: 1, maxLength: 3 }), fc.constantFrom(...joins), fc.constantFrom('"', "'", '`'), fc.constantFrom(...lead), (c, at, op, q, l) => {
        const v = c.value;
        const cuts = [...new Set(at.map((x) => 1 + (x % (v.length - 1))))].sort((x, y) => x - y);
        const pieces: string[] = [];
        let from = 0;
        for (const k of [...cuts, v.length]) {
          pieces.push(v.slice(from, k));
          from = k;
        }
        const s = `${l}${pieces.map((p) => q + p + q).join(op)}${l.endsWith('(') ? ')' : ''};\n`;
        // (As a model reads the program: the junctions gone.)
        const m = masked(s).replace(/["'`][ \t]*(?:\r?\n[ \t]*)?(?:\+|\.\.?|\|\||&)?[ \t]*(?:\r?\n[ \t]*)?["'`]/g, '');
        expect(leaks(m, v), `${c.provider}: ${JSON.stringify(s)} -> ${JSON.stringify(masked(s))}`).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('is masked whole where it is spelled out a character at a time, a space or a no-break space between each two', () => {
    // (`A K I A Z 3 M J ...`: a model asked to write a value so that no filter reads it writes it so, and reads it whole.)
    const spelled = bare.filter((c) => c.value.length >= 16 && !/\s/.test(c.value));
    fc.assert(
      fc.property(fc.constantFrom(...spelled), fc.constantFrom(' ', '\u00a0'), fc.constantFrom('', 'here it is: ', 'The key, spelled out: '), fc.constantFrom('', ' ok', '.\nDone.'), (c, sep, before, after) => {
        const s = `${before}${[...c.value].join(sep)}${after}`;
        // (As a model reads it: the blanks between single characters gone.)
        const m = masked(s).replace(/(?<=\S)[ \u00a0](?=\S(?:[ \u00a0]|$))/g, '');
        expect(leaks(m, c.value), `${c.provider}: ${JSON.stringify(s)} -> ${JSON.stringify(masked(s))}`).toBe(false);
      }),
      { numRuns: 600 },
    );
  });

  it("finds no provider's credential in the benign corpus's items or in prose spelled out a character at a time", () => {
    const items = benign.items.map((i) => i.text).filter((t) => !/\s/.test(t));
    const providers = new Set([...KINDS].filter((k) => k !== 'secret-assignment' && k !== 'pgpass-password'));
    fc.assert(
      fc.property(fc.constantFrom(...items), (item) => {
        const s = `id: ${[...item].join(' ')}`;
        expect(spansOf(new DetectionCache(), s, providers), s).toEqual([]);
      }),
      { numRuns: 400 },
    );
    for (const s of ['a b c d e f g h i j k l m n o p q r s t u v w x y z', 'T h e   q u i c k   b r o w n   f o x', '1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17'])
      expect(spansOf(new DetectionCache(), s, providers), s).toEqual([]);
  });

  it("finds no provider's credential in the benign corpus's items a concatenation joins", () => {
    const items = benign.items.map((i) => i.text).filter((t) => !/["'`\\]/.test(t));
    const providers = new Set([...KINDS].filter((k) => k !== 'secret-assignment' && k !== 'pgpass-password'));
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...items), { minLength: 2, maxLength: 5 }), fc.constantFrom(' + ', '', ' . '), (picked, op) => {
        const s = `const x = ${picked.map((p) => `"${p}"`).join(op)};`;
        expect(spansOf(new DetectionCache(), s, providers), s).toEqual([]);
      }),
      { numRuns: 800 },
    );
  });

  it("finds no provider's credential across the lines of the benign corpus, its items one to a line or wrapped at any width", () => {
    // UUIDs, SHAs, digests, SRI hashes, base64 images, links, keys of a record: runs of letters and digits a wrap cuts.
    // (A word cut by the wrap may make another name, `sort_key` as `sor` then `t_key`: the generic assignments read
    // each line as written, and are not what a wrap is read for. A wrap at a token's prefix inside a longer word, `ta`
    // then `sk-3f2a...` of `task-3f2a...`, reads as the provider's token a model may read there too: the line after a
    // word is read without it, for a token that starts its line after a command, `cat creds` then `AKIA4D...`.)
    const items = benign.items.map((i) => i.text);
    const providers = new Set([...KINDS].filter((k) => k !== 'secret-assignment' && k !== 'pgpass-password'));
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...items), { minLength: 1, maxLength: 6 }), fc.integer({ min: 6, max: 120 }), fc.boolean(), (picked, width, wrap) => {
        const text = picked.join(wrap ? ' ' : '\n');
        const s = wrap ? (text.match(new RegExp(`[^]{1,${width}}`, 'g')) ?? []).join('\n') : text;
        // (Only the class the reading leaves: a find that starts a line the wrap made, at a prefix inside a word.)
        const found = spansOf(new DetectionCache(), s, providers).filter((sp) => !(wrap && sp.start > 0 && s[sp.start - 1] === '\n' && /\w/.test(s[sp.start - 2] ?? '')));
        expect(found, JSON.stringify(s)).toEqual([]);
      }),
      { numRuns: 1500 },
    );
  });

  it('reads a line break only between two characters a credential holds, where the two runs make 16 characters or more with a letter and a digit', () => {
    // A line that ends in a blank, an indented line after a break with no continuation, prose's short words: no read.
    expect(unwrappedStretches('ghp_aB3dE5fG7hJ9 \nkL1mN3pQ5rS7tU9vW1xY3zA5')).toEqual([]);
    expect(unwrappedStretches('ghp_aB3dE5fG7hJ9\n  kL1mN3pQ5rS7tU9vW1xY3zA5')).toEqual([]);
    expect(unwrappedStretches('the service\nis up, and the\nreport follows\n')).toEqual([]);
    expect(unwrappedStretches('configuration\nmanagement\n')).toEqual([]);
    // A continuation's `\` is removed with its break; a blank before it or after the break ends the token, as a shell
    // reads it (`--access-key-id AKIA... \` then `    --status Inactive`).
    const [w] = unwrappedStretches('curl -H "Authorization: token ghp_aB3dE5fG7h\\\nJ9kL1mN3pQ5rS7tU9vW1xY3zA5" x');
    expect(w!.text).toContain('ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5');
    expect(unwrappedStretches('curl -H "Authorization: token ghp_aB3dE5fG7h\\\n    J9kL1mN3pQ5rS7tU9vW1xY3zA5" x')).toEqual([]);
    const cli = 'aws iam update-access-key \\\n    --access-key-id AKIAIOSFODNN7EXAMPLE \\\n    --status Inactive\n';
    expect(spansOf(new DetectionCache(), cli, KINDS).map((sp) => cli.slice(sp.start, sp.end))).toEqual(['AKIAIOSFODNN7EXAMPLE']);
  });

  it('reads each character of a text a bounded number of times, however its lines are made', () => {
    // Lines that are all one run of letters and digits: every break is read alone, and all of them as chains; chains
    // of three and four breaks, each read four ways, of lines long and short.
    const units = ['a1b2c3d4\n', 'a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6\n', 'x'.repeat(2000) + '1\n', 'a1\n', 'a1b2c3d4\ne5f6g7h8\ni9j0k1l2\nm3n4o5p6\n\n', 'a1b2\nc3d4\ne5f6\ng7h8\n\n', 'ab\ncd\nef\ngh\nij\nkl\nmn\nop\nq1\n\n'];
    for (const unit of units) {
      const s = unit.repeat(Math.ceil(200_000 / unit.length));
      const read = unwrappedStretches(s).reduce((n, w) => n + w.text.length, 0);
      expect(read / s.length, unit.slice(0, 20)).toBeLessThan(6);
    }
  });
});
