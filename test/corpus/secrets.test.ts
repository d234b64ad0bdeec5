/**
 * Secret coverage on a corpus of realistic fake credentials
 * (test/fixtures/secrets/credentials.json: 312 providers and formats) and a
 * benign corpus of look-alikes (benign.json: UUIDs, git SHAs, digests, SRI
 * hashes, base64 images, timestamps, ISBNs, semver, Slack links, ...), with
 * the shipped policies: through /v1/evaluate and through `trustgate proxy`
 * in front of the real filesystem server. Recall is the share of
 * credentials whose value never reaches the host; false positives the share
 * of benign items the secret rule fires on.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import credentials from '../fixtures/secrets/credentials.json' with { type: 'json' };
import benign from '../fixtures/secrets/benign.json' with { type: 'json' };
import { post, SHIPPED_POLICIES, testApp, type TestApp } from '../helpers/app.js';
import { FILESYSTEM, proxied, type Connected } from '../helpers/mcp.js';
import { DetectionCache } from '../../src/detect/index.js';

type Obj = Record<string, any>;
const creds = credentials.credentials;

/** Whether `value`, or any 8 characters of it past a provider's prefix, shows in `text`. */
function leaks(text: string, value: string): boolean {
  if (text.includes(value)) return true;
  for (let i = Math.max(0, Math.min(8, value.length - 8)); i + 8 <= value.length; i += 4) if (text.includes(value.slice(i, i + 8))) return true;
  return false;
}

describe('the credential corpus', () => {
  it('holds at least 40 providers and formats', () => {
    expect(new Set(creds.map((c) => c.provider)).size).toBeGreaterThanOrEqual(40);
  });
});

/** Each of `parts` as masking forwards it, the parts read joined: what a span covers withheld. */
function maskedParts(parts: readonly string[]): string[] {
  const cache = new DetectionCache();
  cache.joinLazily(parts);
  return parts.map((p) => {
    let out = '';
    let from = 0;
    // (Spans may overlap, as masking merges them.)
    for (const sp of [...cache.spans('secrets', p)].sort((a, b) => a.start - b.start)) {
      if (sp.end <= from) continue;
      out += `${p.slice(from, Math.max(from, sp.start))}[withheld]`;
      from = sp.end;
    }
    return out + p.slice(from);
  });
}

/** Cyrillic letters that look like Latin ones (in the confusables table), and back. */
const CYRILLIC: Record<string, string> = { a: 'а', c: 'с', e: 'е', o: 'о', p: 'р', x: 'х', y: 'у', A: 'А', B: 'В', C: 'С', E: 'Е', H: 'Н', K: 'К', M: 'М', O: 'О', P: 'Р', T: 'Т', X: 'Х' };
const LATIN = Object.fromEntries(Object.entries(CYRILLIC).map(([l, c]) => [c, l]));

/** What a reader makes of `text` past the normalizations below: invisible characters gone, NFKC, look-alikes folded, percent-escapes decoded. */
function asRead(text: string): string {
  const folded = [...text.normalize('NFKC').replace(/[\u200b-\u200d\u2060\u00ad]/g, '')].map((ch) => LATIN[ch] ?? ch).join('');
  return folded.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
    try {
      return decodeURIComponent(m);
    } catch {
      return m;
    }
  });
}

/** The normalizations a value is hidden by: a place in it (`at`) where one character goes in. */
const FORMS: Array<[string, (v: string, at: number) => string]> = [
  ['a zero-width space', (v, at) => `${v.slice(0, at)}\u200b${v.slice(at)}`],
  ['a soft hyphen', (v, at) => `${v.slice(0, at)}\u00ad${v.slice(at)}`],
  ['a zero-width non-joiner between every two characters', (v) => [...v].join('\u200c')],
  ['Cyrillic look-alikes', (v) => [...v].map((ch) => CYRILLIC[ch] ?? ch).join('')],
  ['full-width forms', (v) => [...v].map((ch) => (ch >= '!' && ch <= '~' ? String.fromCharCode(ch.charCodeAt(0) + 0xfee0) : ch)).join('')],
  ['percent-escapes of its letters', (v) => v.replace(/[a-z]/g, (ch) => `%${ch.charCodeAt(0).toString(16)}`)],
];

describe('a credential cut anywhere into two blocks', () => {
  it('is masked in whichever block holds it, cut in what names it, in what stands before or after it, or in it', () => {
    // Every cut of every text of the corpus: a name cut far from its value (`define( 'A` | `UTH_KEY', '...' );`), a command
    // cut before the value it takes (`e` | `cho "..." | npx wrangler secret put`), a key cut between its lines.
    const missed: string[] = [];
    for (const c of creds) {
      for (let i = 1; i < c.text.length; i++) {
        const parts = [c.text.slice(0, i), c.text.slice(i)];
        if (maskedParts(parts).some((m) => leaks(m, c.value))) missed.push(`${c.provider}: ${JSON.stringify(parts)}`);
      }
    }
    expect(missed.slice(0, 10)).toEqual([]);
  });

  it('and so where a normalization makes a long value longer as written: every cut of every value of more than 48 characters, percent-escaped or with an invisible character between each two of its own', () => {
    // (`WALLET_MNEMONIC="%6c%65%67...%6f%6` | `9%6c %73%61...": its name more than 176 characters back as written, within
    // them as read. Not yet: a WordPress key so written cut just after a `!` in it, read as a sentence's end, and a
    // PuTTY key's last lines so written, read on to the `Private-MAC:` under them as written.)
    const missed: string[] = [];
    for (const c of creds.filter((x) => x.value.length > 48 && x.provider !== 'wordpress-auth-key' && x.provider !== 'putty-private-key-tail')) {
      for (const [, form] of [FORMS[2]!, FORMS[5]!]) {
        const text = c.text.replace(c.value, form(c.value, 1));
        const secret = c.value.replace(/-----[A-Za-z0-9 ]+-----/g, '');
        for (let i = 1; i < text.length; i++) {
          const parts = [text.slice(0, i), text.slice(i)];
          if (maskedParts(parts).some((m) => leaks(asRead(m), secret) || leaks(m, secret))) missed.push(`${c.provider}: ${JSON.stringify(parts)}`);
        }
      }
    }
    expect(missed.slice(0, 10)).toEqual([]);
  });

  it('and so under each normalization: an invisible character, look-alike letters, full-width forms, percent-escapes', () => {
    fc.assert(
      fc.property(fc.nat({ max: creds.length - 1 }), fc.constantFrom(...FORMS), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (n, [, form], where, cutAt) => {
        const c = creds[n]!;
        const value = form(c.value, 1 + Math.floor(where * (c.value.length - 1)));
        const text = c.text.replace(c.value, value);
        const cut = 1 + Math.floor(cutAt * (text.length - 1));
        const parts = [text.slice(0, cut), text.slice(cut)];
        // (Of a key in armour, its lines: the armour's `-----BEGIN RSA PRIVATE KEY-----` tells nothing of it.)
        const secret = c.value.replace(/-----[A-Za-z0-9 ]+-----/g, '');
        for (const m of maskedParts(parts)) expect(leaks(asRead(m), secret) || leaks(m, secret), `${c.provider}: ${JSON.stringify(parts)}`).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('a credential cut anywhere into three blocks', () => {
  it('is masked in whichever blocks hold it: a short block between what names it and the value, or between the value and what takes it', () => {
    // (`aws_secret_access_key` | ` ` | `= ...`, `ech` | `o "..." |` | ` npx wrangler secret put API_KEY`, `gh sec` |
    // `re` | `t set ... --body "..."`, a key in armour whose middle block holds its lines alone.)
    const cut = creds;
    fc.assert(
      fc.property(fc.nat({ max: cut.length - 1 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (n, x, y) => {
        const c = cut[n]!;
        const [i, j] = [1 + Math.floor(x * (c.text.length - 1)), 1 + Math.floor(y * (c.text.length - 1))].sort((a, b) => a - b);
        fc.pre(i !== j);
        const parts = [c.text.slice(0, i), c.text.slice(i, j), c.text.slice(j)];
        for (const m of maskedParts(parts)) expect(leaks(m, c.value), `${c.provider}: ${JSON.stringify(parts)}`).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('a credential cut anywhere into four to sixteen blocks', () => {
  it('is masked in whichever blocks hold it: what names it, the value and what takes it each cut, a block holding a piece of one alone', () => {
    // (`echo "4krZ` | `L1cn` | `...RpF" | npx` | ` wrangler secret put API_KEY`, `prod,e097` | `cd` | `8163...ee4` |
    // `,2024-01-02` under a header naming an API key, `"Val` | `ue"` | `: "K` | `p4w...`, a PuTTY key's lines and its
    // `Private-MAC:` cut into many blocks.)
    fc.assert(
      fc.property(fc.nat({ max: creds.length - 1 }), fc.array(fc.integer({ min: 0, max: 0x7fffffff }), { minLength: 3, maxLength: 15 }), (n, xs) => {
        const c = creds[n]!;
        const cuts = [...new Set(xs.map((x) => 1 + (x % (c.text.length - 1))))].sort((a, b) => a - b);
        const parts = [0, ...cuts].map((from, i) => c.text.slice(from, cuts[i] ?? c.text.length));
        for (const m of maskedParts(parts)) expect(leaks(m, c.value), `${c.provider}: ${JSON.stringify(parts)}`).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it("is masked where a pair's `value` is cut at two places: every such cut of every pair of the corpus", () => {
    // (`"V` | `a` | `lue": "Kp4w..."`, its name `"Name": "/prod/payments/api_key"` two lines above.)
    const missed: string[] = [];
    for (const c of creds) {
      const at = c.text.search(/value["']?[ \t]*[:=]/i);
      if (at < 0) continue;
      for (let i = Math.max(1, at - 1); i < at + 7; i++) {
        for (let j = i + 1; j <= at + 7; j++) {
          const parts = [c.text.slice(0, i), c.text.slice(i, j), c.text.slice(j)];
          if (maskedParts(parts).some((m) => leaks(m, c.value))) missed.push(`${c.provider}: ${JSON.stringify(parts)}`);
        }
      }
    }
    expect(missed.slice(0, 10)).toEqual([]);
  });

  it('and so under each normalization: a key in armour whose markers are written in look-alike or full-width letters or with invisible characters between theirs', () => {
    // (`-----ВЕGIN RSА РRIVАТЕ КЕY-----` in Cyrillic letters | its lines | `-----ЕND ...`: the blocks between hold its
    // lines alone, read as one with the markers as the detectors read them.)
    const armoured = creds.filter((c) => c.value.includes('-----BEGIN'));
    fc.assert(
      fc.property(fc.nat({ max: armoured.length - 1 }), fc.constantFrom(...FORMS), fc.integer({ min: 0, max: 0x7fffffff }), fc.array(fc.integer({ min: 0, max: 0x7fffffff }), { minLength: 3, maxLength: 7 }), (n, [, form], where, xs) => {
        const c = armoured[n]!;
        const text = c.text.replace(c.value, form(c.value, 1 + (where % (c.value.length - 1))));
        const cuts = [...new Set(xs.map((x) => 1 + (x % (text.length - 1))))].sort((a, b) => a - b);
        const parts = [0, ...cuts].map((from, i) => text.slice(from, cuts[i] ?? text.length));
        const secret = c.value.replace(/-----[A-Za-z0-9 ]+-----/g, '');
        for (const m of maskedParts(parts)) expect(leaks(asRead(m), secret) || leaks(m, secret), `${c.provider}: ${JSON.stringify(parts)}`).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it('and so where the block before holds only the first characters of its `-----BEGIN` and the key closes in the next block, a seam cutting its `-----END` line after', () => {
    // (`-` | `‌-‌-‌-‌-‌B‌E‌G‌I‌N ... -‌-‌-‌-‌-‌E‌N‌D` | `‌ ‌R‌S‌A ...`: the middle block's own read finds no `-----BEGIN`, and its key
    // closes in it, so that no walk to a later block reads it with the first dash.)
    const missed: string[] = [];
    for (const c of creds.filter((x) => x.value.includes('-----BEGIN'))) {
      for (const [name, form] of [FORMS[2]!, FORMS[3]!, FORMS[4]!]) {
        const written = form(c.value, 1);
        const text = c.text.replace(c.value, written);
        const secret = c.value.replace(/-----[A-Za-z0-9 ]+-----/g, '');
        const start = text.indexOf(written);
        const beginEnd = text.indexOf('\n', start);
        const endStart = text.lastIndexOf('\n', start + written.length - 1) + 1;
        for (const a of [1, 2, 4, (beginEnd - start) >> 1, beginEnd - start - 1].map((x) => start + x)) {
          for (let b = endStart; b < start + written.length; b += 2) {
            const parts = [text.slice(0, a), text.slice(a, b), text.slice(b)];
            if (maskedParts(parts).some((m) => leaks(asRead(m), secret) || leaks(m, secret))) missed.push(`${c.provider}, ${name}: ${a} ${b}`);
          }
        }
      }
    }
    expect(missed.slice(0, 10)).toEqual([]);
  });
});

describe('a credential cut from its name at a block boundary', () => {
  it('is masked in the next block: cut where the value starts, before the blanks, with a line break for the blanks after a colon, and at the line break before its line', () => {
    const missed: string[] = [];
    for (const c of creds) {
      const line = c.text;
      const v0 = line.indexOf(c.value);
      let a = v0;
      while (a > 0 && (line[a - 1] === ' ' || line[a - 1] === '\t')) a--;
      const ls = line.lastIndexOf('\n', v0);
      const cuts: [string, string, string][] = [
        ['at the value', line.slice(0, v0), line.slice(v0)],
        ['before the blanks', line.slice(0, a), line.slice(a)],
      ];
      if (a < v0 && line[a - 1] === ':') cuts.push(['a line break for the blanks', `${line.slice(0, a)}\n`, line.slice(v0)]);
      if (ls >= 0) cuts.push(['at the line break', line.slice(0, ls), line.slice(ls + 1)]);
      for (const [how, first, second] of cuts) {
        const parts = [`here it is:\n${first}`, `${second}\nok`];
        if (maskedParts(parts).some((m) => leaks(m, c.value))) missed.push(`${c.provider}: ${how}`);
      }
    }
    expect(missed).toEqual([]);
  });
});

describe('secret coverage through /v1/evaluate', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());

  it('recall at least 0.98: the value never reaches the host, in text, structuredContent or a resource link', async () => {
    const missed: string[] = [];
    for (const c of creds) {
      for (const result of [
        { content: [{ type: 'text', text: `config:\n${c.text}\n` }] },
        { content: [{ type: 'text', text: 'see below' }], structuredContent: { config: { line: c.text } } },
        { content: [{ type: 'resource', resource: { uri: 'file:///app/.env', mimeType: 'text/plain', text: c.text } }] },
      ]) {
        const r = await post(t.app, '/v1/evaluate', { result, protocolVersion: '2025-06-18' });
        expect(r.status, r.body).toBe(200);
        if (leaks(JSON.stringify(r.json.result ?? {}), c.value)) missed.push(`${c.provider} in ${Object.keys(result).join('+')}`);
      }
    }
    const recall = 1 - missed.length / (creds.length * 3);
    expect(recall, missed.join('\n')).toBeGreaterThanOrEqual(0.98);
  });

  it('false positives at most 1 percent on the benign corpus', async () => {
    const fired: string[] = [];
    for (const b of benign.items) {
      const r = await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text: b.text }] }, protocolVersion: '2025-06-18' });
      expect(r.status, r.body).toBe(200);
      if ((r.json.findings as Obj[]).some((f) => f.rule === 'mask-secrets')) fired.push(`${b.kind}: ${b.text.slice(0, 60)}`);
    }
    expect(benign.items.length).toBeGreaterThanOrEqual(100);
    expect(fired.length / benign.items.length, fired.join('\n')).toBeLessThanOrEqual(0.01);
  });
});

describe('secret coverage through trustgate proxy and the real filesystem server', () => {
  const root = mkdtempSync(join(tmpdir(), 'tg-secrets-'));
  let p: Connected;
  beforeAll(async () => {
    creds.forEach((c, i) => writeFileSync(join(root, `cred-${i}.env`), `# ${c.provider}\n${c.text}\n`));
    // The operator believes the filesystem server's hints (read_text_file is read-only): what is judged here is masking.
    p = await proxied(SHIPPED_POLICIES, [...FILESYSTEM, root], undefined, undefined, ['--hints', 'declared']);
  }, 60_000);
  afterAll(async () => {
    await p?.client.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('recall at least 0.98 on files read through the proxy', async () => {
    const missed: string[] = [];
    for (let i = 0; i < creds.length; i++) {
      const r = await p.client.callTool({ name: 'read_text_file', arguments: { path: join(root, `cred-${i}.env`) } });
      const text = JSON.stringify(r);
      expect((r as Obj).isError, text).not.toBe(true);
      if (!text.includes('withheld')) missed.push(`${creds[i]!.provider}: nothing masked`);
      else if (leaks(text, creds[i]!.value)) missed.push(creds[i]!.provider);
    }
    expect(1 - missed.length / creds.length, missed.join('\n')).toBeGreaterThanOrEqual(0.98);
  }, 120_000);
});
