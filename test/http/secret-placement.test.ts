/**
 * Generated: a credential placed anywhere in a result a host will see (a text block, in a sentence, markup, brackets or a
 * query string, wrapped at a terminal's width, split over two or three blocks or cut anywhere into up to thirteen, a
 * structuredContent value or member name, a block's _meta or annotations, a resource link's fields, a resource's text or a blob of a
 * non-text media type, an image's or audio's data that is text), as written or behind one of the normalizations (a zero-width space, a soft hyphen, any other
 * character drawn as nothing, tag characters, marks drawn on its characters, a confusable or fullwidth letter, a percent-escape, an HTML character reference, a
 * JavaScript escape, base64, hex, either of them over base64, a terminal's colours, HTML's tags; in a URL's path, the encoding glued to it; in a JSON string, escaped once or
 * twice), never reaches the host through /v1/evaluate with the shipped
 * policies.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import credentials from '../fixtures/secrets/credentials.json' with { type: 'json' };
import { believingServersFile, post, testApp, type TestApp } from '../helpers/app.js';
import { scanSecrets } from '../../src/detect/secrets.js';
import { IGNORABLES, inTags } from '../helpers/unicode.js';

type Obj = Record<string, any>;
/** One-line credentials of distinct formats (a PEM key is a block of its own). */
const creds = credentials.credentials.filter((c) => !c.value.includes('\n') && /^[\x21-\x7e]+$/.test(c.value));
/** Those whose value alone says what it is (a provider's prefix or shape): what may stand without a name, as a member name or in a URL. */
const bare = creds.filter((c) => scanSecrets(c.value).length > 0);
/**
 * Normalizations a wrap is not read through: encodings of the value, and markup (a wrap reads the text's own
 * characters); a terminal's colours, whose sequences are no cells a terminal wraps (the cut here would split one); and
 * a JavaScript escape, whose `\` a wrap may leave at a line's end, where it reads as a continuation's.
 */
const WRAP_APART = new Set(['base64', 'hex', 'base64-twice', 'hex-of-base64', 'markup', 'terminal', 'escape']);
/** Placements where the value stands alone. */
const ALONE = new Set(['structured-name', 'link-uri', 'sentence', 'markup', 'brackets', 'query', 'path', 'wrapped', 'wrapped-meta', 'wrapped-link']);

const CONFUSABLE: Record<string, string> = { a: '\u0430', e: '\u0435', o: '\u043e', p: '\u0440', c: '\u0441', x: '\u0445', A: '\u0391', B: '\u0392', E: '\u0395', K: '\uff2b', S: '\u0405' };

/** `v` obfuscated at `at` by `how` (the detectors read it back as `v`). */
function obfuscate(v: string, how: string, at: number): string {
  const i = 1 + (at % (v.length - 2));
  switch (how) {
    case 'zero-width':
      return v.slice(0, i) + '\u200b' + v.slice(i);
    case 'soft-hyphen':
      return v.slice(0, i) + '\u00ad' + v.slice(i);
    case 'confusable': {
      for (let k = 0; k < v.length; k++) {
        const j = (i + k) % v.length;
        const r = CONFUSABLE[v[j]!];
        if (r !== undefined) return v.slice(0, j) + r + v.slice(j + 1);
      }
      return v;
    }
    case 'ignorable':
      // Any character drawn as nothing: a bidirectional mark, an invisible operator, a variation selector, a tag.
      return v.slice(0, i) + String.fromCodePoint(IGNORABLES[at % IGNORABLES.length]!) + v.slice(i);
    case 'tags':
      // The rest of the value hidden in tag characters, which a model reads as the ASCII they stand for.
      return v.slice(0, i) + inTags(v.slice(i));
    case 'marks': {
      // A mark drawn on every character (an accent, a dot, an overlay), composed into the letter where Unicode has one
      // on every other draw.
      const marks = ['\u0301', '\u0307', '\u0336', '\u0323'];
      const written = Array.from(v, (ch, k) => ch + marks[(at + k) % marks.length]).join('');
      return at % 2 === 0 ? written.normalize('NFC') : written;
    }
    case 'base64':
      // The value as the base64 of its text: a model decodes it as readily.
      return Buffer.from(v).toString('base64');
    case 'hex':
      return Buffer.from(v).toString('hex');
    case 'base64-twice':
      // Decoded twice (gitleaks decodes recursively too).
      return Buffer.from(Buffer.from(v).toString('base64')).toString('base64');
    case 'hex-of-base64':
      return Buffer.from(Buffer.from(v).toString('base64')).toString('hex');
    case 'entity':
      return v.slice(0, i) + `&#${v.charCodeAt(i)};` + v.slice(i + 1);
    case 'escape':
      return v.slice(0, i) + `\\u${v.charCodeAt(i).toString(16).padStart(4, '0')}` + v.slice(i + 1);
    case 'percent':
      return v.slice(0, i) + '%' + v.charCodeAt(i).toString(16).toUpperCase().padStart(2, '0') + v.slice(i + 1);
    case 'markup':
      // In an HTML page: in code, broken where a long token may wrap (`<wbr>`) or by spans. (A tag with attributes, whose
      // blank a cut into three blocks may put in the middle one, is not read across three: the run through the parts
      // goes through parts that are all token.)
      return `<code>${v.slice(0, i)}${at % 2 === 0 ? '<wbr>' : '</span><span>'}${v.slice(i)}</code>`;
    case 'terminal': {
      // Coloured as a terminal's output is (`grep --color` marks what matched): a control sequence before the value, one
      // inside it, one after; or a hyperlink's escape around it.
      const sgr = ['\x1b[01;31m\x1b[K', '\x1b[1;32m', '\x1b[38;5;208m', '\x9b0m'][at % 4]!;
      return at % 5 === 4 ? `\x1b]8;;https://cb.test/\x07${v}\x1b]8;;\x1b\\` : `${sgr}${v.slice(0, i)}\x1b[m\x1b[K${sgr}${v.slice(i)}\x1b[0m`;
    }
    default:
      return v;
  }
}

function place(where: string, text: string, line: string, cut: number): Obj {
  switch (where) {
    case 'text':
      return { content: [{ type: 'text', text: `here it is:\n${line}\nok` }] };
    case 'split': {
      // Cut inside the value (the line's own words stay whole in the first block).
      const v0 = line.indexOf(text);
      const at = v0 + 1 + (cut % Math.max(1, text.length - 1));
      return { content: [{ type: 'text', text: `here it is:\n${line.slice(0, at)}` }, { type: 'text', text: `${line.slice(at)}\nok` }] };
    }
    case 'split-name': {
      // Cut where the value starts, after its name: the name and its operator end one block, the value starts the next,
      // the blanks between them on either side of the seam, or a line break there (a host shows blocks one after the
      // other).
      const v0 = line.indexOf(text);
      let a = v0;
      while (a > 0 && (line[a - 1] === ' ' || line[a - 1] === '\t')) a--;
      // (A line break for the blanks only where blanks stand between an operator and the value on one line:
      // `password:` then the value alone on the next line reads as its value, as a CLI prints one; after `=`, a word or a
      // command, `... and password` then a line, it does not.)
      const breaks = a < v0 && line[a - 1] === ':';
      const [first, second] = [
        [line.slice(0, v0), line.slice(v0)],
        [line.slice(0, a), line.slice(a)],
        [`${line.slice(0, a)}\n`, line.slice(v0)],
      ][cut % (breaks ? 3 : 2)]!;
      return { content: [{ type: 'text', text: `here it is:\n${first}` }, { type: 'text', text: `${second}\nok` }] };
    }
    case 'json-text':
      // A tool that prints an object holding a command's output: the line in a JSON string, once or twice (an object's
      // JSON in a member of another), its quotes and line breaks escaped.
      return { content: [{ type: 'text', text: cut % 2 === 0 ? JSON.stringify({ stdout: `here it is:\n${line}\nok`, code: 0 }) : JSON.stringify({ body: JSON.stringify({ env: `${line}\n` }) }) }] };
    case 'split-line': {
      // Cut at the line break before the value's line: its name, a header or a pair's name on a line before, in the
      // block before (a table's header | its rows, `- name: DB_PASSWORD` | `  value: ...`, `password: >-` | its value).
      const v0 = line.indexOf(text);
      const ls = line.lastIndexOf('\n', v0);
      const at = ls < 0 ? v0 : ls;
      return { content: [{ type: 'text', text: `here it is:\n${line.slice(0, at)}` }, { type: 'text', text: `${line.slice(ls < 0 ? at : at + 1)}\nok` }] };
    }
    case 'split-three': {
      // Cut twice inside the value: three blocks, the middle one all value.
      const v0 = line.indexOf(text);
      const a = v0 + 1 + (cut % Math.max(1, Math.floor(text.length / 2) - 1));
      const b = a + 1 + (cut % Math.max(1, v0 + text.length - a - 2));
      return { content: [{ type: 'text', text: `here it is:\n${line.slice(0, a)}` }, { type: 'text', text: line.slice(a, b) }, { type: 'text', text: `${line.slice(b)}\nok` }] };
    }
    case 'split-link': {
      // Cut inside the value, between a resource link's name and its description (shown one beside the other).
      const v0 = line.indexOf(text);
      const at = v0 + 1 + (cut % Math.max(1, text.length - 1));
      return { content: [{ type: 'resource_link', uri: 'file:///app/notes.txt', name: line.slice(0, at), description: line.slice(at) }] };
    }
    case 'split-structured': {
      // Cut inside the value, between the last block's text and the first string of structuredContent.
      const v0 = line.indexOf(text);
      const at = v0 + 1 + (cut % Math.max(1, text.length - 1));
      return { content: [{ type: 'text', text: `here it is:\n${line.slice(0, at)}` }], structuredContent: { rest: line.slice(at), n: 1 } };
    }
    case 'wrapped':
      return { content: [{ type: 'text', text: wrappedAt(text, cut) }] };
    case 'wrapped-meta':
      // Wrapped in the strings read with the result's other short strings (joined with line breaks of their own).
      return { content: [{ type: 'text', text: 'ok', _meta: { 'com.example/a': 'x1', 'com.example/log': wrappedAt(text, cut), 'com.example/b': 'y2' } }] };
    case 'wrapped-link':
      return { content: [{ type: 'resource_link', uri: 'file:///app/out.txt', name: 'out', description: wrappedAt(text, cut) }] };
    case 'sentence':
      // Prose and markup end a token with punctuation as often as with a blank.
      return { content: [{ type: 'text', text: `Your new key is ${text}. Keep it safe, ok?` }] };
    case 'markup':
      return { content: [{ type: 'text', text: `<p>Key: <b>${text}</b></p> or **${text}**, \`${text}\`|` }] };
    case 'brackets':
      return { content: [{ type: 'text', text: `keys: (${text}), [${text}], {${text}}: done!` }] };
    case 'query':
      return { content: [{ type: 'text', text: `open https://cb.test/cb?key=${text}&next=1#${text}` }] };
    case 'path':
      // A URL path segment, glued to the path before and after it (base64 and hex read with them as one run).
      return { content: [{ type: 'text', text: `GET https://cb.test/api/hooks/${text}/status` }] };
    case 'structured-value':
      return { content: [{ type: 'text', text: '{}' }], structuredContent: { config: { env: line } } };
    case 'structured-name':
      return { content: [{ type: 'text', text: '{}' }], structuredContent: { [text]: true } };
    case 'meta':
      return { content: [{ type: 'text', text: 'ok', _meta: { 'com.example/debug': line } }] };
    case 'link-description':
      return { content: [{ type: 'resource_link', uri: 'file:///app/.env', name: 'env', description: line }] };
    case 'link-uri':
      return { content: [{ type: 'resource_link', uri: `https://cb.test/hook?token=${text}`, name: 'callback' }] };
    case 'annotations':
      // A block's annotations are exempt from the fence an untrusted result gets, not from the masks.
      return { content: [{ type: 'text', text: 'ok', annotations: { audience: ['assistant'], note: line } }] };
    case 'link-annotations':
      return { content: [{ type: 'resource_link', uri: 'file:///app/.env', name: 'env', annotations: { priority: 0.5, note: { deep: [line] } } }] };
    case 'resource-text':
      return { content: [{ type: 'resource', resource: { uri: 'file:///app/.env', mimeType: 'text/plain', text: line } }] };
    case 'image-data':
      // Text under a picture's media type: the host is handed its bytes as they are.
      return { content: [{ type: 'image', mimeType: 'image/png', data: Buffer.from(line).toString('base64') }] };
    case 'svg-data':
      return { content: [{ type: 'image', mimeType: 'image/svg+xml', data: Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg"><text>${line}</text></svg>`).toString('base64') }] };
    case 'audio-data':
      return { content: [{ type: 'audio', mimeType: 'audio/wav', data: Buffer.from(line).toString('base64') }] };
    default:
      return { content: [{ type: 'resource', resource: { uri: 'file:///app/env.bin', mimeType: 'application/octet-stream', blob: Buffer.from(line).toString('base64') } }] };
  }
}

/**
 * `text` shown by a terminal after a command, each line cut by line breaks at its width, from 20 to 79 cells (a
 * character and the marks drawn on it one cell): the lines the host shows one under the other.
 */
function wrappedAt(text: string, cut: number): string {
  const width = 20 + (cut % 60);
  const lines: string[] = [];
  for (const l of ['$ echo $TOKEN', text, '$ ']) {
    const cells = [...new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(l)].map((g) => g.segment);
    for (let i = 0; i === 0 || i < cells.length; i += width) lines.push(cells.slice(i, i + width).join(''));
  }
  return lines.join('\n');
}

/**
 * Whether the value, as written or as placed, or 8 characters of it past its prefix, shows in what is forwarded (its
 * text, and its blobs decoded). A blob is read decoded only: its base64 is no text a host shows, and 8 of its
 * characters may spell what 8 of a base64 value's do where both encode the same word at the same offset (the mask's
 * `[aws-bedrock-short-term-key ...]` and a Bedrock key's `YmVkcm9j...`, both `bedrock`).
 */
function reaches(forwarded: unknown, value: string, placed: string): boolean {
  const texts: string[] = [JSON.stringify(forwarded, (k, v: unknown) => ((k === 'blob' || k === 'data') && typeof v === 'string' ? '' : v))];
  const walk = (x: unknown) => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) ((k === 'blob' || k === 'data') && typeof v === 'string' ? texts.push(Buffer.from(v, 'base64').toString('utf8')) : walk(v));
    else if (typeof x === 'string') texts.push(x, decodeURIComponent(x.replace(/%(?![0-9A-Fa-f]{2})/g, '%25')));
  };
  walk(forwarded);
  return texts.some((t) => {
    if (t.includes(value) || t.includes(placed)) return true;
    for (let i = Math.max(0, Math.min(8, value.length - 8)); i + 8 <= value.length; i += 4) if (t.includes(value.slice(i, i + 8))) return true;
    return false;
  });
}

describe('a credential anywhere in a result never reaches the host', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());

  it('for any placement, split or not, under any normalization', async () => {
    const wheres = ['text', 'json-text', 'wrapped', 'wrapped-meta', 'wrapped-link', 'sentence', 'markup', 'brackets', 'query', 'path', 'split', 'split-name', 'split-line', 'split-three', 'split-link', 'split-structured', 'structured-value', 'structured-name', 'meta', 'annotations', 'link-annotations', 'link-description', 'link-uri', 'resource-text', 'blob', 'image-data', 'svg-data', 'audio-data'];
    const hows = ['none', 'zero-width', 'soft-hyphen', 'confusable', 'percent', 'ignorable', 'tags', 'marks', 'entity', 'escape', 'base64', 'hex', 'base64-twice', 'hex-of-base64', 'terminal', 'markup'];
    await fc.assert(
      // (Wrapped: as written or behind the normalizations of its characters; an encoding or markup and a wrap both are
      // not read together.)
      fc.asyncProperty(fc.constantFrom(...wheres).chain((w) => fc.tuple(fc.constant(w), fc.constantFrom(...(ALONE.has(w) ? bare : creds)), fc.constantFrom(...(w.startsWith('wrapped') ? hows.filter((h) => !WRAP_APART.has(h)) : hows)))), fc.nat(), async ([where, c, how], n) => {
        const placed = obfuscate(c.value, how, n);
        // A function, not a string: a replacement string reads `$&` in a placed value (`$` then an entity) as the match.
        const line = c.text.replace(c.value, () => placed);
        const result = place(where, placed, line, n);
        const r = await post(t.app, '/v1/evaluate', { result, protocolVersion: '2025-06-18' });
        expect(r.status, r.body).toBe(200);
        if (r.json.outcome === 'deny') return;
        expect(reaches(r.json.result, c.value, placed), `${c.provider} ${where} ${how}: ${JSON.stringify(r.json.result)}`).toBe(false);
        // (Wrapped: its lines read one after the other hold none of it either.)
        if (where.startsWith('wrapped')) expect(reaches(JSON.stringify(r.json.result).replace(/\\n/g, ''), c.value, placed), `${c.provider} ${where} ${how}: ${JSON.stringify(r.json.result)}`).toBe(false);
      }),
      { numRuns: 700 },
    );
  }, 120_000);
});

describe('a credential cut into any number of blocks never reaches the host', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());
  /** A block's text as the host is shown it: inside the fence an untrusted result gets, if it got one. */
  const shown = (text: string): string => text.replace(/^<untrusted-content boundary="[0-9a-f]+">\n[^\n]*\n/, '').replace(/\n<\/untrusted-content boundary="[0-9a-f]+">$/, '');

  it('cut anywhere in its line, up to twelve times, into blocks of one character or more: the blocks read one after the other hold none of it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...creds), fc.array(fc.nat(), { minLength: 1, maxLength: 12 }), fc.boolean(), fc.constantFrom('', 'here it is:\n'), async (c, cuts, nameApart, before) => {
        const v0 = c.text.indexOf(c.value);
        // Cut points anywhere in its line: inside the value, its name, what stands between (and, where the name stands
        // apart, at the value's start).
        const at = [...new Set(cuts.map((n) => 1 + (n % (c.text.length - 1))))].sort((a, b) => a - b);
        const points = [...new Set(nameApart ? [v0, ...at] : at)].sort((a, b) => a - b);
        const pieces: string[] = [];
        let p = 0;
        for (const q of points) {
          pieces.push(c.text.slice(p, q));
          p = q;
        }
        pieces.push(c.text.slice(p));
        pieces[0] = before + pieces[0]!;
        pieces[pieces.length - 1] += '\nok';
        const r = await post(t.app, '/v1/evaluate', { result: { content: pieces.map((text) => ({ type: 'text', text })) }, protocolVersion: '2025-06-18' });
        expect(r.status, r.body).toBe(200);
        if (r.json.outcome === 'deny') return;
        const host = (r.json.result.content as { text: string }[]).map((b) => shown(b.text)).join('');
        const where = `${c.provider} cut at ${JSON.stringify(points.map((q) => q - v0))}: ${JSON.stringify(host)}`;
        expect(host.includes(c.value), where).toBe(false);
        // (Nor 8 characters of it past its first 8: what a prefix shares with the text around it is no leak.)
        for (let i = Math.max(0, Math.min(8, c.value.length - 8)); i + 8 <= c.value.length; i++) expect(host.includes(c.value.slice(i, i + 8)), where).toBe(false);
      }),
      { numRuns: 400 },
    );
  }, 120_000);
});

describe('from a server the operator believes, a credential never reaches the host', () => {
  // A server the operator believes, a tool that says it is closed-world: the result is not fenced, so a binary blob
  // would be forwarded as it came.
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_SERVERS: believingServersFile() });
  });
  afterAll(() => t.close());
  const tool = { name: 'read_archive', annotations: { openWorldHint: false } };
  const blobOf = (parts: Uint8Array[]) => Buffer.concat(parts.map((p) => Buffer.from(p))).toString('base64');
  /** Bytes that are no text: a NUL and a byte no UTF-8 holds among random ones. */
  const binary = fc.uint8Array({ minLength: 0, maxLength: 300 }).map((b) => Buffer.concat([Buffer.from([0, 0xff]), Buffer.from(b), Buffer.from([0xfe, 0])]));

  it('masks a value split between the text and structuredContent, both forwarded from a server it believes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...creds.filter((c) => !c.value.includes('\n'))), fc.nat(), async (c, n) => {
        const result = place('split-structured', c.value, c.text, n);
        const r = await post(t.app, '/v1/evaluate', { result, tool, protocolVersion: '2025-06-18' });
        expect(r.status, r.body).toBe(200);
        if (r.json.outcome === 'deny') return;
        expect(r.json.result.structuredContent, c.provider).toBeDefined();
        expect(reaches(r.json.result, c.value, c.value), `${c.provider}: ${JSON.stringify(r.json.result)}`).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('withholds the blob whole where its stretches of text hold one (an archive with a .env, a binary with a key in it)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...creds), binary, binary, fc.constantFrom('application/x-tar', 'application/octet-stream', 'application/zip'), async (c, before, after, mimeType) => {
        const blob = blobOf([before, Buffer.from(`${c.text}\n`), after]);
        const result = { content: [{ type: 'resource', resource: { uri: 'file:///backup/app.tar', mimeType, blob } }] };
        const r = await post(t.app, '/v1/evaluate', { result, tool, protocolVersion: '2025-06-18' });
        expect(r.status, r.body).toBe(200);
        if (r.json.outcome === 'deny') return;
        expect(reaches(r.json.result, c.value, c.value), `${c.provider}: ${JSON.stringify(r.json.result)}`).toBe(false);
        const res = r.json.result.content[0].resource;
        expect(res.blob).toBeUndefined();
        expect(res.uri).toBe('file:///backup/app.tar');
        expect(res.text).toMatch(/ withheld by secrets\/mask-secrets: binary content of \d+ bytes that holds it/);
        expect(r.json.withheld).toContain('/content/0/resource/blob');
        expect(r.json.masked.some((m: Obj) => m.pointer === '/content/0/resource/blob' && m.policy === 'secrets')).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('forwards a binary blob holding no credential as it came', async () => {
    const prose = fc.constantFrom('IHDR', 'ustar  root root', 'config.json version 2.4.1 build 20250514', 'The quick brown fox jumps over the lazy dog');
    await fc.assert(
      fc.asyncProperty(binary, prose, binary, async (before, words, after) => {
        const blob = blobOf([before, Buffer.from(words), after]);
        const result = { content: [{ type: 'resource', resource: { uri: 'file:///backup/app.tar', mimeType: 'application/x-tar', blob } }] };
        const r = await post(t.app, '/v1/evaluate', { result, tool, protocolVersion: '2025-06-18' });
        expect(r.status, r.body).toBe(200);
        expect(r.json.outcome).toBe('allow');
        expect(r.json.result.content[0].resource.blob).toBe(blob);
      }),
      { numRuns: 50 },
    );
  });
});
