/** Credentials named in HTML or Markdown (src/detect/markup.ts): read with the markup removed, mapped back onto the text as written. */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import credentials from '../../fixtures/secrets/credentials.json' with { type: 'json' };
import { withoutMarkup } from '../../../src/detect/markup.js';
import { scanSecrets } from '../../../src/detect/secrets.js';
import { DetectionCache } from '../../../src/detect/index.js';
import { shannonEntropy } from '../../../src/detect/chars.js';

const found = (s: string) => new DetectionCache().spans('secrets', s);
const mask = (s: string, spans: readonly { start: number; end: number }[]) => spans.reduceRight((t, sp) => t.slice(0, sp.start) + '*'.repeat(sp.end - sp.start) + t.slice(sp.end), s);
/** Whether 8 characters of `value` past its first 8 (a provider's prefix) show in `text`. */
function leaks(text: string, value: string): boolean {
  for (let i = Math.max(0, Math.min(8, value.length - 8)); i + 8 <= value.length; i += 4) if (text.includes(value.slice(i, i + 8))) return true;
  return false;
}
/** The corpus's credentials written on one line, with no character of markup in them. */
const oneLine = credentials.credentials.filter((c) => !c.value.includes('\n') && /^[\x21-\x7e]+$/.test(c.value) && !/[<>`*]/.test(c.value));
const V = 'Xk9mQ2vL7pR4tW8zHq3N';

describe('withoutMarkup', () => {
  it("removes HTML's tags and Markdown's bold, reads a table's cells between pipes and a definition list's ends as blanks, lines' tags as line breaks, backticks as blanks", () => {
    expect(withoutMarkup('<dt>API key</dt><dd>X</dd>')?.text).toBe('API key X ');
    expect(withoutMarkup('<tr><td>password</td><td>X</td></tr>')?.text).toBe('\n|password|X|\n');
    // A table's rows one a line, its header's under a rule, an empty cell kept, the blanks between its tags left out.
    expect(withoutMarkup('<table>\n <tr><th>a</th> <th>b</th></tr>\n <tr><td> x </td><td></td></tr>\n</table>')?.text).toBe('\n|a|b|\n|-|\n|x||\n');
    expect(withoutMarkup('**password**: `X`')?.text).toBe('password:  X ');
    expect(withoutMarkup('ghp_Ab3<wbr>dE9<span class="x">f</span>')?.text).toBe('ghp_Ab3dE9f');
    // Another language's elements are kept (their names say what they hold); a tag cut short, a `<` of a comparison
    // and a lone `*` are no markup.
    expect(withoutMarkup('<password>X</password> a < b, 2 * 3, <b x="1"')).toBeUndefined();
  });

  it('maps every character back inside the input, in order', () => {
    const unit = fc.constantFrom('a', 'X', ' ', '<', '>', '/', 'b', 'td', 'wbr', 'span', ' class="x"', '`', '*', '**', '\n', 'password', ':');
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 60 }).map((a) => a.join('')), (s) => {
        const m = withoutMarkup(s);
        if (m === undefined) return;
        expect(m.from.length).toBe(m.text.length);
        expect(m.text.length).toBeLessThanOrEqual(s.length);
        for (let i = 0; i < m.text.length; i++) {
          expect(m.from[i]).toBeLessThan(m.to[i]!);
          expect(m.to[i]).toBeLessThanOrEqual(s.length);
          if (i > 0) expect(m.from[i]).toBeGreaterThanOrEqual(m.to[i - 1]!);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('credentials in markup', () => {
  it('masks a value named in an HTML page or in Markdown, where the name and the value are apart in markup', () => {
    for (const written of [
      `<table><tr><td>password</td><td>${V}</td></tr></table>`,
      `<dl><dt>API key</dt><dd>${V}</dd></dl>`,
      `Password: <code>${V}</code>`,
      `password: <b>${V}</b>`,
      `<span class="pl-smi">API_KEY</span><span class="pl-k">=</span><span class="pl-s">${V}</span>`,
      `**password**: ${V}`,
      `- **API key**: \`${V}\``,
      `\`password\`: \`${V}\``,
      `Authorization: Bearer \`${V}\``,
    ]) {
      expect(leaks(mask(written, found(written)), V), written).toBe(false);
    }
  });

  it("masks a value under a name in emphasis, Markdown's italics or Slack's bold (`*Password:* ...`), and reads no glob, product or value shown in part as emphasis", () => {
    const names = ['Password', 'API key', 'Token', 'Client secret', 'DB password', 'Access key'];
    const forms = [(n: string) => `*${n}:*`, (n: string) => `*${n}*:`, (n: string) => `_${n}_:`, (n: string) => `**${n}:**`, (n: string) => `* *${n}:*`];
    const value = fc.array(fc.constantFrom(...'abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789'), { minLength: 20, maxLength: 32 }).map((a) => a.join('')).filter((v) => /\d/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && new Set(v).size >= 14);
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.constantFrom(...forms), value, fc.constantFrom('', '`'), (n, form, v, q) => {
        const text = `Deploy notes\n${form(n)} ${q}${v}${q}\nDone.`;
        expect(leaks(mask(text, found(text)), v), text).toBe(false);
      }),
      { numRuns: 300 },
    );
    for (const none of ['ls *.txt and 2*3 and a * b, the *password* reset page', 'KEYS user:* lists the keys', 'token ghp_****Xy12 was shown in part']) expect(found(none), none).toEqual([]);
  });

  it('masks any credential of the corpus in markup: its value in code, bold or a span, or broken by <wbr> or a span anywhere', () => {
    const wraps = [(v: string) => `<code>${v}</code>`, (v: string) => `<b>${v}</b>`, (v: string) => `**${v}**`, (v: string) => `<span class="s">${v}</span>`, (v: string) => v];
    const breaks = ['<wbr>', '</span><span class="s">', '<wbr/>', ''];
    fc.assert(
      fc.property(fc.constantFrom(...oneLine), fc.nat(), fc.constantFrom(...wraps), fc.constantFrom(...breaks), (c, k, wrap, br) => {
        const i = 1 + (k % (c.value.length - 1));
        const placed = wrap(c.value.slice(0, i) + br + c.value.slice(i));
        const text = `<p>here it is:</p>\n<pre>${c.text.replace(c.value, () => placed)}</pre>`;
        expect(leaks(mask(text, found(text)), c.value), text).toBe(false);
      }),
      { numRuns: 600 },
    );
  });

  it("masks a credential whose characters tags of text's break, every one to every few of them, with nothing before it that names it", () => {
    // (`<b>AKIA</b><b>Z3MJ</b>...`: a page shows one token in bold, a model reads it whole; only `<wbr>` and a span were
    // read as breaking a token. Nor was a comment, which a page does not show: `AKIAZ3MJ<!-- -->QX7T...`.)
    const bare = oneLine.filter((c) => scanSecrets(c.value).length > 0 && c.value.length >= 16);
    const tags = fc.constantFrom(['<b>', '</b>'], ['<strong>', '</strong>'], ['<em>', '</em>'], ['<i>', '</i>'], ['<code>', '</code>'], ['<mark>', '</mark>'], ['<u>', '</u>'], ['<kbd>', '</kbd>'], ['<font color="red">', '</font>'], ['', '<sub></sub>'], ['', '<!-- -->'], ['<!--x-->', '']);
    fc.assert(
      fc.property(fc.constantFrom(...bare), fc.integer({ min: 1, max: 8 }), tags, fc.constantFrom('here: ', '<p>', 'Output:\n'), (c, n, [open, close], before) => {
        const chunks = c.value.match(new RegExp(`[^]{1,${n}}`, 'g'))!;
        const text = `${before}${chunks.map((k) => open + k + close).join('')}</p>`;
        // (Read as a page shows it: the tags gone, the mask's characters left.)
        const masked = found(text).reduceRight((t, sp) => t.slice(0, sp.start) + '#'.repeat(sp.end - sp.start) + t.slice(sp.end), text);
        expect(leaks(withoutMarkup(masked)?.text ?? masked, c.value), `${c.provider}: ${text}`).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('masks a value that markup opens on the line after what names it: a command that prints it, a label', () => {
    // (`$ bw get password "Prod DB"` then `<span class="s">...</span>`: the markup stood on the next line, where no
    // stretch was read without it, and the span's blank and quotes cut the token the rule reads.)
    const value = fc.string({ minLength: 10, maxLength: 24, unit: fc.constantFrom(...'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789#+'.split('')) }).filter((v) => /^[A-Za-z0-9]/.test(v) && /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) > 3);
    const naming = fc.constantFrom('$ bw get password "Prod DB"', '$ op read op://Private/GitHub/token', '$ echo $OPENAI_API_KEY', '$ printenv GITHUB_TOKEN', 'Password:', 'Your new API key:');
    const wraps = fc.constantFrom((v: string) => `<span class="s">${v}</span>`, (v: string) => `<code>${v}</code>`, (v: string) => `**${v}**`, (v: string) => `<b>${v}</b>`);
    fc.assert(
      fc.property(naming, wraps, value, (n, w, v) => {
        const text = `<pre>${n}\n${w(v)}</pre>`;
        expect(leaks(mask(text, found(text)), v), text).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("masks a value in an HTML table's column whose header names a secret, at any row, laid out in any way, and nothing under a header that names none or in a cell of words", () => {
    const header = fc.constantFrom('token', 'API Key', 'Password', 'client_secret', 'Access Token');
    const other = fc.constantFrom('Service', 'Owner', 'Region', 'Created');
    const layout = fc.constantFrom('', '\n', '\n  ', ' ');
    const table = (head: string[], rows: string[][], l: string) =>
      `<table>${l}<thead><tr>${head.map((h) => `${l}<th>${h}</th>`).join('')}${l}</tr></thead>${l}<tbody>${rows.map((r) => `${l}<tr>${r.map((c) => `${l}<td>${c}</td>`).join('')}${l}</tr>`).join('')}${l}</tbody></table>`;
    fc.assert(
      fc.property(header, fc.array(other, { minLength: 1, maxLength: 3 }), fc.nat(), fc.integer({ min: 1, max: 4 }), fc.nat(), layout, fc.constantFrom('not set', 'rotated monthly', ''), (h, others, col, n, row, l, words) => {
        const at = col % (others.length + 1);
        const head = [...others.slice(0, at), h, ...others.slice(at)];
        const rows = (cell: string) => Array.from({ length: n }, (_, r) => head.map((_, c) => (c === at ? (r === row % n ? cell : words) : 'ops')));
        const text = `<p>Keys:</p>${table(head, rows(V), l)}`;
        expect(leaks(mask(text, found(text)), V), text).toBe(false);
        expect(found(table(head, rows(words), l)), table(head, rows(words), l)).toEqual([]);
        const none = table(head.map((x, c) => (c === at ? 'Commit' : x)), rows(V), l);
        expect(found(none), none).toEqual([]);
      }),
      { numRuns: 600 },
    );
  });

  it("never reads from inside a word: a provider's prefix glued inside one, any distance before markup that names a secret, is no key", () => {
    // A stretch read with its markup removed starts some characters before the name; it once started inside
    // `task-3f2a...` and read `sk-3f2a...` (DeepSeek's `sk-` and 32 hex digits) as a key.
    // (Hex digits as an ID's are drawn, uniformly: fast-check's strings lean on repeated characters, whose entropy no
    // rule takes.)
    const hex = fc.nat().map((n) => createHash('sha256').update(String(n)).digest('hex').slice(0, 32));
    const glued = fc.tuple(fc.constantFrom('task-', 'disk-', 'mask-', 'risk-', 'xghp_', 'deskxoxb-'), hex).map(([p, h]) => p + h);
    const names = ['password: <redacted>', 'token: <b>hidden</b>', '<code>api_key</code>: ${API_KEY}', '**secret**: `none`'];
    fc.assert(
      fc.property(glued, fc.nat({ max: 160 }), fc.constantFrom(...names), fc.constantFrom(' ', '\n', ', '), (word, gap, name, sep) => {
        const s = `id ${word} done${sep}${'x '.repeat(gap).slice(0, gap)}${name}`;
        expect(found(s), JSON.stringify(s)).toEqual([]);
      }),
      { numRuns: 800 },
    );
  });

  it('finds nothing in markup that names no secret, and keeps a template literal and an HTML table of prose apart', () => {
    for (const benign of [
      '<td>Key</td><td>_xsltStylesheet</td>',
      'case "invalid_key": return `Неверный ключ в ${origin}`;',
      'o.key = t ? C0.ESC + `OB` : C0.ESC + `[B`;',
      ':type pkey: :py:class:`PKey`',
      '<b>password</b> reset <i>link</i> sent to your <code>inbox</code>',
      '| **Key** | **Value** |\n|---|---|\n| `retries` | `3` |',
    ]) {
      expect(found(benign), benign).toEqual([]);
    }
  });
});

describe('personal data in markup', () => {
  it('finds an address, a card number, an IBAN or a phone number a tag of text breaks anywhere, and labels no page of tags alone', () => {
    // (`alice<span>@</span>example.com`, a page's way to keep an address from scrapers; `4111<wbr>1111...`: a reader
    // sees the address and the number whole, and the text as written holds neither.)
    const values = ['alice.smith@example.com', 'j.doe+news@mail.example.org', '4111 1111 1111 1111', '5500-0000-0000-0004', 'DE89 3704 0044 0532 0130 00', 'GB82WEST12345698765432', '+1 415 555 0132', '+44 20 7946 0958'];
    const tags = fc.constantFrom(['<span>', '</span>'], ['<b>', '</b>'], ['', '<wbr>'], ['<em>', '</em>'], ['<span class="x">', '</span>'], ['', '<!-- x -->']);
    fc.assert(
      fc.property(fc.constantFrom(...values), fc.nat(), tags, (v, k, [open, close]) => {
        // Cut between two characters that are no blanks, the tags glued to both.
        const places = [...v].map((_, i) => i).filter((i) => i > 0 && v[i - 1] !== ' ' && v[i] !== ' ');
        const i = places[k % places.length]!;
        const text = `<p>Contact: ${v.slice(0, i)}${close}${open}${v.slice(i)}</p>`;
        expect(new DetectionCache().spans('pii', text).length, text).toBeGreaterThan(0);
      }),
      { numRuns: 400 },
    );
    for (const page of ['<p><b>2024</b>-<b>01</b>-<b>15</b> at <i>10</i>:<i>30</i></p>', '<code>a</code><code>@</code><code>b</code>', '<span>4111</span><span>1111</span>', 'v<b>1.2.3</b>'])
      expect(new DetectionCache().spans('pii', page), page).toEqual([]);
  });
});
