/**
 * Security properties of the service, through the real routes:
 *
 * - prototype pollution: `__proto__`, `constructor` and `prototype` members,
 *   written in the request text (so JSON.parse makes them own members), in
 *   every place input is read or copied, never reach a built-in prototype;
 *   they survive as data where the result is forwarded or transformed, and
 *   policies see them as plain map members;
 * - the bearer token is compared in constant time (hash, then
 *   timingSafeEqual), every wrong token is a 401, and no spelling of a
 *   /v1 path gets past the check;
 * - start-up warns when bound to a non-loopback address without a token;
 * - validation of attacker-sized strings (`lastModified`, `_meta` keys,
 *   digests, headers) stays linear: bounded by the test timeout;
 * - no error path logs request content (a unique marker per path, at
 *   LOG_LEVEL=trace).
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearerToken } from '../../src/http/auth.js';
import { createAuthentication } from '../../src/http/identity.js';
import { answerOf, SHIPPED_POLICIES, testApp, type TestApp } from '../helpers/app.js';
import { isRunning, startService, type Running } from '../helpers/process.js';
import { deep, errorRegistry, INTERCEPTOR, K, pollutionCheck, prototypeSnapshot } from './gen.js';

// A pass-through spy on timingSafeEqual, to see what the token check compares.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) };
});

const registry = errorRegistry();
const JSON_HEADERS = { 'content-type': 'application/json' };

async function inject(t: TestApp, url: string, payload: string | Buffer, headers: Record<string, string> = JSON_HEADERS, method: 'POST' | 'GET' = 'POST') {
  return answerOf(await t.app.inject({ method, url, payload: method === 'POST' ? payload : undefined, headers }));
}

/** Own-member walk: `__proto__` and `constructor` are read as data, never through the prototype chain. */
function ownAt(root: unknown, path: Array<string | number>): { found: boolean; value?: unknown } {
  let node: unknown = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) return { found: false };
    node = (node as Record<string | number, unknown>)[key];
  }
  return { found: true, value: node };
}

// ------------------------------------------------------------ prototype pollution

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'] as const;
const PAYLOADS = ['{"polluted":true}', '{"prototype":{"polluted":true}}', '{"sensitive":true,"untrusted":true,"toString":"x"}'];

function protoPolicies(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-proto-'));
  const rule = (id: string, when: string, scope = 'result') => ({ id, scope, when, effect: 'flag' });
  writeFileSync(
    join(dir, '10-sees.json'),
    JSON.stringify({
      id: 'sees',
      mode: 'enforce',
      rules: [
        rule('context-has-constructor', 'has(context.constructor)'),
        rule('context-has-proto', 'has(context.__proto__)'),
        rule('context-in-proto', '"__proto__" in context'),
        rule('context-has-prototype', 'has(context.prototype)'),
        rule('context-proto-polluted', 'has(context.__proto__) && has(context.__proto__.polluted) && context.__proto__.polluted == true'),
        rule('tool-has-constructor', 'has(tool.constructor)'),
        rule('tool-has-proto', 'has(tool.__proto__)'),
        rule('tool-annotations-has-proto', 'has(tool.annotations.__proto__)'),
        rule('server-has-proto', 'has(server.__proto__)'),
        rule('server-has-prototype', 'has(server.prototype)'),
        // These must never match: they would only if a prototype, or a payload, leaked into the maps.
        rule('never-context-polluted', 'has(context.polluted)'),
        rule('never-context-tostring', 'has(context.toString) || has(context.hasOwnProperty) || has(context.valueOf)'),
        rule('never-tool-polluted', 'has(tool.polluted)'),
        rule('never-block-constructor', 'has(block.constructor) || has(block.polluted) || has(block.__proto__)', 'block'),
        rule('never-result-constructor', 'has(result.constructor) || has(result.polluted) || has(result.asserted.constructor)'),
      ],
    }),
  );
  writeFileSync(
    join(dir, '20-effects.json'),
    JSON.stringify({
      id: 'effects',
      mode: 'enforce',
      rules: ['redact', 'drop', 'spotlight'].flatMap((effect) => [
        { id: `${effect}-block`, scope: 'block', when: `has(context.effect) && context.effect == "${effect}"`, effect },
        { id: `${effect}-result`, scope: 'result', when: `has(context.effect) && context.effect == "${effect}-result"`, effect },
      ]),
    }),
  );
  return dir;
}

interface Site {
  name: string;
  /** The /v1/evaluate body with MEMBER (e.g. `"__proto__":{...}`) written at the site. */
  evaluate: (member: string, context: string) => string;
  /** Where the member must still be in the forwarded result, per effect applied ('none' = nothing applied). */
  survives?: Partial<Record<'none' | 'spotlight' | 'redact' | 'drop' | 'spotlight-result' | 'redact-result' | 'drop-result', Array<string | number>>>;
  /**
   * Where the member, or the member holding it, is withheld (contract
   * section 11: an effect rebuilds the result from what was judged), per
   * effect: the pointer `withheld` must list (`@` stands for the member).
   */
  withheld?: Partial<Record<'spotlight' | 'redact' | 'drop' | 'spotlight-result' | 'redact-result' | 'drop-result', string>>;
  /** Sites the request schema closes: a 400 is the right answer there. */
  schema400?: boolean;
  /** The `sees` rule that must match (policies see the member as data). */
  sees?: (key: string) => string | undefined;
}

const UNTRUSTED = `"_meta":{"${K}":{"untrusted":true}}`;
const text = (extra = '') => `{"type":"text","text":"hello"${extra ? ',' + extra : ''},${UNTRUSTED}}`;
const body = (result: string, context: string, extra = '') => `{"result":${result},"protocolVersion":"2025-06-18","context":${context}${extra ? ',' + extra : ''}}`;
const recordText = (member: string) => `{${member},"class":"confidential"}`;

const SITES: Site[] = [
  {
    name: 'the result',
    evaluate: (m, c) => body(`{${m},"content":[${text()}]}`, c),
    survives: { none: [] },
    withheld: { spotlight: '/@', redact: '/@', drop: '/@', 'spotlight-result': '/@', 'redact-result': '/@', 'drop-result': '/@' },
  },
  {
    name: 'a content block',
    evaluate: (m, c) => body(`{"content":[${text(m)}]}`, c),
    survives: { none: ['content', 0] },
    withheld: { spotlight: '/content/0/@', 'spotlight-result': '/content/0/@' },
  },
  {
    name: "a block's _meta",
    evaluate: (m, c) => body(`{"content":[{"type":"text","text":"hello","_meta":{${m},"${K}":{"untrusted":true}}}]}`, c),
    survives: { none: ['content', 0, '_meta'] },
    withheld: { spotlight: '/content/0/_meta/@', 'spotlight-result': '/content/0/_meta/@' },
  },
  {
    name: "a block's annotations",
    evaluate: (m, c) => body(`{"content":[${text(`"annotations":{${m},"priority":0.5}`)}]}`, c),
    survives: { none: ['content', 0, 'annotations'], spotlight: ['content', 0, 'annotations'] },
  },
  {
    name: 'an embedded resource',
    evaluate: (m, c) => body(`{"content":[{"type":"resource","resource":{"uri":"file:///r","text":"t",${m},${UNTRUSTED}}}]}`, c),
    survives: { none: ['content', 0, 'resource'] },
    withheld: { spotlight: '/content/0/resource/@', 'spotlight-result': '/content/0/resource/@' },
  },
  {
    name: 'a block-level trust claim',
    evaluate: (m, c) => body(`{"content":[{"type":"text","text":"hello","_meta":{"${K}":{${m},"untrusted":true}}}]}`, c),
    survives: { none: ['content', 0, '_meta', K], spotlight: ['content', 0, '_meta', K] },
  },
  {
    name: 'structuredContent',
    evaluate: (m, c) => body(`{"content":[${text()}],"structuredContent":{${m},"rows":[1]}}`, c),
    survives: { none: ['structuredContent'] },
    withheld: {
      spotlight: '/structuredContent',
      redact: '/structuredContent',
      drop: '/structuredContent',
      'spotlight-result': '/structuredContent',
      'redact-result': '/structuredContent',
      'drop-result': '/structuredContent',
    },
  },
  {
    name: "the result's _meta",
    evaluate: (m, c) => body(`{"content":[${text()}],"_meta":{${m}}}`, c),
    survives: { none: ['_meta'] },
    // A _meta with no trust claim left is withheld whole.
    withheld: { spotlight: '/_meta', redact: '/_meta', drop: '/_meta', 'spotlight-result': '/_meta', 'redact-result': '/_meta', 'drop-result': '/_meta' },
  },
  {
    name: 'the result-level trust claim',
    evaluate: (m, c) => body(`{"content":[${text()}],"_meta":{"${K}":{${m}}}}`, c),
    survives: { none: ['_meta', K], spotlight: ['_meta', K], redact: ['_meta', K], drop: ['_meta', K], 'spotlight-result': ['_meta', K], 'redact-result': ['_meta', K], 'drop-result': ['_meta', K] },
  },
  {
    name: 'an evidenceRef',
    evaluate: (m, c) =>
      body(`{"content":[${text()}],"_meta":{"${K}":{"evidenceRef":{${m},"type":"data-class.v1","digest":"sha256:${'0'.repeat(64)}","canonicalization":"jcs/rfc8785"}}}}`, c),
    survives: { none: ['_meta', K, 'evidenceRef'] },
  },
  {
    name: 'an evidence record',
    evaluate: (m, c) => body(`{"content":[${text()}]}`, c, `"evidence":[{"ref":"audit://1","record":${recordText(m)}}]`),
  },
  { name: 'an evidence entry', evaluate: (m, c) => body(`{"content":[${text()}]}`, c, `"evidence":[{${m},"record":{}}]`), schema400: true },
  { name: 'the request body', evaluate: (m, c) => `{${m},"result":{"content":[${text()}]},"context":${c}}`, schema400: true },
  {
    name: 'tool',
    evaluate: (m, c) => body(`{"content":[${text()}]}`, c, `"tool":{${m},"name":"t","annotations":{${m}}}`),
    sees: (key) => (key === 'constructor' ? 'tool-has-constructor' : key === '__proto__' ? 'tool-has-proto' : undefined),
  },
  {
    name: 'server',
    evaluate: (m, c) => body(`{"content":[${text()}]}`, c, `"server":{${m},"name":"s"}`),
    sees: (key) => (key === '__proto__' ? 'server-has-proto' : key === 'prototype' ? 'server-has-prototype' : undefined),
  },
  {
    name: 'context',
    evaluate: (m, c) => body(`{"content":[${text()}]}`, c.replace(/^\{/, `{${m},`)),
    sees: (key) => (key === 'constructor' ? 'context-has-constructor' : key === '__proto__' ? 'context-has-proto' : 'context-has-prototype'),
  },
];

const EFFECTS = ['none', 'spotlight', 'redact', 'drop', 'spotlight-result', 'redact-result', 'drop-result'] as const;

describe('prototype pollution: special member names are data everywhere', () => {
  let t: TestApp;
  let before: string[];
  let dir: string;
  beforeAll(async () => {
    before = prototypeSnapshot();
    dir = protoPolicies();
    t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' }, dir);
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cases = SITES.flatMap((site) => PROTO_KEYS.flatMap((key) => PAYLOADS.map((payload, p) => [site.name, key, p, site, payload] as const)));

  it.each(cases)('%s: %s (payload %i), under every effect', async (_name, key, _p, site, payload) => {
    const member = `"${key}":${payload}`;
    for (const effect of EFFECTS) {
      const context = effect === 'none' ? '{"destination":"local"}' : `{"destination":"local","effect":"${effect}"}`;
      const r = await inject(t, '/v1/evaluate', site.evaluate(member, context));
      const where = `${site.name} / ${key} / ${effect}`;
      expect(pollutionCheck(before), where).toBeUndefined();
      if (site.schema400) {
        expect(r.status, where).toBe(400);
        expect(r.json.code, where).toBe('TG_ERR_BODY_SCHEMA');
        continue;
      }
      expect(r.status, `${where}: ${r.body.slice(0, 300)}`).toBe(200);
      // Policies evaluated without tripping on the member: no rule failed, and no rule that would reveal a leak matched.
      expect(r.json.findings.filter((f: any) => f.error !== undefined), where).toEqual([]);
      expect(r.json.findings.filter((f: any) => f.rule.startsWith('never-')), where).toEqual([]);
      const seen = site.sees?.(key);
      if (seen !== undefined) expect(r.json.findings.map((f: any) => f.rule), where).toContain(seen);
      if (site.name === 'context' && key === '__proto__' && payload === PAYLOADS[0]) {
        expect(r.json.findings.map((f: any) => f.rule), where).toContain('context-proto-polluted');
        expect(r.json.findings.map((f: any) => f.rule), where).toContain('context-in-proto');
      }
      // A claim hidden under a special name claims nothing.
      if (site.name.includes('trust claim')) {
        expect(r.json.labels.sensitive, where).toBeNull();
      }
      const path = site.survives?.[effect];
      if (path !== undefined) {
        const at = ownAt(r.json.result, [...path, key]);
        expect(at.found, `${where}: the member is still in the forwarded result`).toBe(true);
        expect(at.value, where).toEqual(JSON.parse(payload));
      }
      const listed = effect === 'none' ? undefined : site.withheld?.[effect];
      if (listed !== undefined) {
        expect(r.json.withheld, `${where}: withheld`).toContain(listed.replace('@', key));
        if (listed.endsWith('@')) expect(ownAt(r.json.result, [...listed.slice(1, -2).split('/').filter(Boolean).map((t) => (/^\d+$/.test(t) ? Number(t) : t)), key]).found, where).toBe(false);
      }
    }
  });

  it('an evidence record with a special member verifies against the digest /v1/digest mints for it', async () => {
    for (const key of PROTO_KEYS) {
      const record = recordText(`"${key}":{"polluted":true}`);
      for (const canonicalization of ['jcs/rfc8785', 'cbor/rfc8949']) {
        const d = await inject(t, '/v1/digest', `{"record":${record},"canonicalization":"${canonicalization}"}`);
        expect(d.status).toBe(200);
        if (canonicalization === 'jcs/rfc8785') expect(d.json.canonical).toContain(`"${key}":{"polluted":true}`);
        const ref = `{"type":"data-class.v1","digest":"${d.json.digest}","canonicalization":"${canonicalization}"}`;
        const r = await inject(
          t,
          '/v1/evaluate',
          `{"result":{"content":[{"type":"text","text":"x"}],"_meta":{"${K}":{"evidenceRef":${ref}}}},"context":{"destination":"local"},"evidence":[{"digest":"${d.json.digest}","record":${record}}]}`,
        );
        expect(r.status).toBe(200);
        expect(r.json.evidence[0].status, `${key} ${canonicalization}`).toBe('verified');
        // The verified class is read from the record's own members: confidential makes the result sensitive.
        expect(r.json.labels.sensitive).toBe(true);
        expect(pollutionCheck(before)).toBeUndefined();
      }
    }
  });

  it('the interceptor forwards and transforms results with special members, and /v1/validate reads them', async () => {
    // The shipped policies: every result the gateway sends is labelled untrusted and spotlit, so the interceptor answers a transformed result.
    const shipped = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
    try {
      await interceptorAndValidate(shipped);
    } finally {
      await shipped.close();
    }
  });

  async function interceptorAndValidate(t: TestApp): Promise<void> {
    for (const key of PROTO_KEYS) {
      const m = `"${key}":{"polluted":true}`;
      const r = await inject(t, INTERCEPTOR, `{${m},"content":[{"type":"text","text":"x",${m},"_meta":{${m}}}]}`);
      expect(r.status).toBe(200);
      // The gateway names no tool, so the shipped label rule makes the result untrusted (contract section 16): the
      // label is written into a claim built beside the special members, which are withheld as data.
      expect(r.json._meta).toEqual({ 'io.modelcontextprotocol/trust-annotations': { untrusted: true } });
      for (const path of [[key], ['content', 0, key], ['content', 0, '_meta', key]]) {
        expect(ownAt(r.json, path).found, `${key}: ${path.join('/')}`).toBe(false);
      }
      expect(r.json.content[0].text).toMatch(/^<untrusted-content boundary="[0-9a-f]{32}">/);
      const s = await inject(t, `${INTERCEPTOR}`, `{${m},"content":[${text(m)}],"structuredContent":{${m}}}`);
      expect(s.status).toBe(200);
      // The spotlight rebuilt the result from what was judged (contract section 11): the special
      // members are withheld as data, never read as a prototype, and the fenced block stays.
      for (const path of [[key], ['content', 0, key], ['structuredContent']]) {
        expect(ownAt(s.json, path).found, `${key}: ${path.join('/')}`).toBe(false);
      }
      expect(s.json.content[0].text).toMatch(/^<untrusted-content boundary="[0-9a-f]{32}">/);
      const v = await inject(t, '/v1/validate', `{"result":{${m},"content":[{"type":"text","text":"x",${m},"annotations":{${m}},"_meta":{${m}}}]}}`);
      expect(v.status).toBe(200);
      const pointers = v.json.validation.map((f: any) => f.pointer);
      expect(pointers).toContain(`/content/0/${key}`);
      expect(pointers).toContain(`/content/0/annotations/${key}`);
      expect(pollutionCheck(before)).toBeUndefined();
    }
  }

  it('nothing anywhere touched a built-in prototype', () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort().join(',')).toBe(before[0]);
    expect(({} as any).polluted).toBeUndefined();
    expect(pollutionCheck(before)).toBeUndefined();
  });
});

// ------------------------------------------------------------ token

describe('the bearer token', () => {
  const TOKEN = 'Tg-0123456789abcdefghij';
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_TOKEN: TOKEN, TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());

  const wrong = [
    '',
    'x',
    TOKEN.slice(0, -1),
    TOKEN.slice(0, -1) + (TOKEN.endsWith('j') ? 'k' : 'j'),
    'X' + TOKEN.slice(1),
    TOKEN.toUpperCase(),
    TOKEN + 'x',
    TOKEN + TOKEN,
    'a'.repeat(TOKEN.length),
    'a'.repeat(4096),
  ];

  it('is hashed on both sides and compared with timingSafeEqual (source)', () => {
    const src = readFileSync(fileURLToPath(new URL('../../src/http/identity.ts', import.meta.url)), 'utf8');
    expect(src).toMatch(/import\s*\{[^}]*\b(createHash|hash)\b[^}]*\btimingSafeEqual\b[^}]*\}\s*from\s*'node:crypto'/);
    expect(src).toMatch(/\bhash\('sha256', |createHash\('sha256'\)/);
    expect(src).toMatch(/timingSafeEqual\(/);
    // No early-exit string comparison of what was presented against the secret.
    expect(src).not.toMatch(/presented\s*[!=]==?\s*token|token\s*[!=]==?\s*presented|\.startsWith\(token|localeCompare/);
  });

  it('compares fixed-length digests whatever was presented, a missing token included (behaviour)', async () => {
    const crypto = await import('node:crypto');
    const spy = vi.mocked(crypto.timingSafeEqual);
    const auth = createAuthentication({ token: TOKEN });
    for (const presented of [undefined, ...wrong, TOKEN]) {
      spy.mockClear();
      const ok = (await auth.authenticateToken(presented)).ok;
      expect(ok, JSON.stringify(presented)).toBe(presented === TOKEN);
      expect(spy, `timingSafeEqual for ${JSON.stringify(presented)}`).toHaveBeenCalledTimes(1);
      const [a, b] = spy.mock.calls[0]! as unknown as [Buffer, Buffer];
      expect(a.length).toBe(32);
      expect(b.length).toBe(32);
    }
  });

  it.each(wrong.map((w) => [w.length, w] as const))('a wrong token of length %i is a 401 problem', async (_len, w) => {
    for (const url of ['/v1/evaluate', '/v1/validate', '/v1/digest']) {
      const r = await inject(t, url, '{"result":{"content":[]}}', { ...JSON_HEADERS, authorization: `Bearer ${w}` });
      expect(r.status).toBe(401);
      expect(String(r.headers['content-type'])).toMatch(/^application\/problem\+json/);
      expect(r.json.code).toBe('TG_ERR_AUTH_TOKEN');
      expect(r.headers['www-authenticate']).toMatch(/^Bearer/);
    }
    const i = await inject(t, `${INTERCEPTOR}?token=${encodeURIComponent(w)}`, '{"content":[{"type":"text","text":"x"}]}');
    expect(i.status).toBe(200);
    expect(i.json.isError).toBe(true);
    expect(i.json.content[0].text).toContain('TG_ERR_AUTH_TOKEN');
  });

  it('other ways of presenting it are 401 too; the right token passes', async () => {
    for (const auth of [undefined, `Basic ${TOKEN}`, `Bearer`, `Bearer ${TOKEN} ${TOKEN}`, `${TOKEN}`, `Bearer\t${TOKEN}`, `Token ${TOKEN}`]) {
      const headers: Record<string, string> = { ...JSON_HEADERS };
      if (auth !== undefined) headers.authorization = auth;
      const r = await inject(t, '/v1/evaluate', '{"result":{"content":[]}}', headers);
      expect(r.status, String(auth)).toBe(401);
    }
    const ok = await inject(t, '/v1/evaluate', '{"result":{"content":[]}}', { ...JSON_HEADERS, authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    const q = await inject(t, `${INTERCEPTOR}?token=${TOKEN}`, '{"content":[{"type":"text","text":"x"}]}');
    expect(q.status).toBe(200);
    // Judged, not refused: the shipped set labels and fences what the gateway sends (no tool, so open-world).
    expect(q.body).not.toContain('TG_ERR_AUTH_TOKEN');
    expect(q.json.isError).toBeUndefined();
    expect(q.json.content[0].text).toMatch(/^<untrusted-content boundary=/);
    expect(bearerToken(`bearer ${TOKEN}`)).toBe(TOKEN);
  });

  // The router decodes percent-escapes in the path and accepts absolute-form
  // request targets, so the check must look at the route a request reached,
  // not at the raw URL text.
  it.each([
    ['/%761/evaluate', 'POST'],
    ['/%76%31/evaluate', 'POST'],
    ['/v%31/validate', 'POST'],
    ['/%761/digest', 'POST'],
    ['/%761/policies', 'GET'],
    ['/%761/policies/reload', 'POST'],
  ] as const)('%s (%s) reaches a /v1 route only with the token', async (url, method) => {
    const reload = url.endsWith('reload');
    const payload = reload ? '' : url.includes('digest') ? '{"record":{},"canonicalization":"jcs/rfc8785"}' : '{"result":{"content":[]}}';
    const r = await inject(t, url, payload, reload || method === 'GET' ? {} : JSON_HEADERS, method);
    expect(r.status, `${url} answered ${r.status} without a token: ${r.body.slice(0, 120)}`).toBe(401);
  });

  it('an absolute-form request target reaches a /v1 route only with the token', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    const payload = '{"result":{"content":[]}}';
    const answer = await new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1', () =>
        s.end(`POST http://127.0.0.1:${port}/v1/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n${payload}`),
      );
      let out = '';
      s.on('data', (d) => (out += String(d)));
      s.on('close', () => resolve(out));
      s.on('error', () => resolve(out));
    });
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
  });

  it('the interceptor answers an isError result, never a problem, however its path is spelt', async () => {
    for (const url of [`/v1/interceptors/docker-mcp-gatewa%79?token=${TOKEN}`, '/v1/interceptors/docker-mcp-gatewa%79', `/v1/interceptors/docker-mcp-gatewa%79?token=wrong`]) {
      const r = await inject(t, url, '{"content":[{"type":"text","text":"x"}]}');
      expect(r.status, url).toBe(200);
      expect(String(r.headers['content-type'] ?? ''), url).not.toMatch(/problem/);
    }
  });
});

// ------------------------------------------------------------ start-up warning

describe('start-up on a non-loopback address', () => {
  const started: Running[] = [];
  afterAll(() => {
    for (const s of started) {
      try {
        process.kill(s.pid, 'SIGKILL');
      } catch {
        // already stopped
      }
    }
  });

  async function start(env: Record<string, string>): Promise<Running> {
    const s = await startService({ LOG_LEVEL: 'info', ...env }, ['node', 'dist/server.js']);
    if (!isRunning(s)) throw new Error(`the service did not start (exit ${s.code}):\n${s.stderr}\n${s.stdout}`);
    started.push(s);
    return s;
  }

  const warnings = (out: string) =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.level === 40 && /authentication/.test(l.msg));

  it('HOST=0.0.0.0 without authentication does not start; with TRUSTGATE_INSECURE_NO_AUTH=1 it starts and warns naming the host', async () => {
    const refused = await startService({ LOG_LEVEL: 'info', HOST: '0.0.0.0', TRUSTGATE_TOKEN: '' }, ['node', 'dist/server.js']);
    expect(isRunning(refused)).toBe(false);
    expect((refused as { code: number | null }).code).toBe(2);
    expect(refused.stderr).toMatch(/beyond loopback, without authentication: set TRUSTGATE_TOKENS_FILE, TRUSTGATE_TOKEN or TRUSTGATE_JWKS/);
    const s = await start({ HOST: '0.0.0.0', TRUSTGATE_TOKEN: '', TRUSTGATE_INSECURE_NO_AUTH: '1' });
    const w = warnings(s.stdout());
    expect(w).toHaveLength(1);
    expect(w[0].host).toBe('0.0.0.0');
    expect(w[0].msg).toContain('TRUSTGATE_INSECURE_NO_AUTH');
    const h = await fetch(`${s.base}/healthz`);
    expect(h.status).toBe(200);
    expect(await s.stop()).toBe(0);
  }, 60_000);

  it('HOST=0.0.0.0 with a token: no warning; a loopback HOST without one: one warning that it is open to local users', async () => {
    for (const env of [{ HOST: '0.0.0.0', TRUSTGATE_TOKEN: 'tok-startup' }, { HOST: '127.0.0.1', TRUSTGATE_TOKEN: '' }]) {
      const s = await start(env);
      const r = await fetch(`${s.base}/v1/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"result":{"content":[]}}' });
      expect(r.status).toBe(env.TRUSTGATE_TOKEN ? 401 : 200);
      expect(await s.stop()).toBe(0);
      const w = warnings(s.stdout());
      if (env.TRUSTGATE_TOKEN) expect(w, JSON.stringify(env)).toEqual([]);
      else expect(w.map((x: { msg: string }) => x.msg)).toEqual([expect.stringContaining('has no authentication')]);
      expect(s.stdout()).toContain('"msg":"policies loaded"');
    }
  }, 60_000);
});

// ------------------------------------------------------------ linear validation

describe('attacker-sized strings are checked in linear time', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_TOKEN: 'tok' });
  });
  afterAll(() => t.close());
  const auth = { ...JSON_HEADERS, authorization: 'Bearer tok' };

  const lastModified: Array<[string, string, boolean]> = [
    ['fraction of ".0" pairs', '2025-01-01T00:00:00' + '.0'.repeat(150_000) + 'x', false],
    ['a 500k-digit fraction, then junk', '2025-01-01T00:00:00.' + '9'.repeat(500_000) + 'x', false],
    ['500k nines', '9'.repeat(500_000), false],
    ['a date-time repeated', '2025-01-01T00:00:00Z'.repeat(20_000), false],
    ['an offset of 300k zeros', '2025-01-01T00:00:00+' + '0'.repeat(300_000), false],
    ['300k spaces before a date-time', ' '.repeat(300_000) + '2025-01-01T00:00:00Z', false],
    ['digits and dashes', '2025-'.repeat(100_000), false],
    ['a valid date-time with a 400k-digit fraction', '2025-01-01T00:00:00.' + '1'.repeat(400_000) + 'Z', true],
  ];

  it.each(lastModified)('lastModified: %s', async (_what, value, valid) => {
    const r = await inject(t, '/v1/validate', JSON.stringify({ result: { content: [{ type: 'text', text: 'x', annotations: { lastModified: value } }] } }), auth);
    expect(r.status).toBe(200);
    expect(r.json.valid).toBe(true);
    const findings = r.json.validation.filter((f: any) => f.rule === 'mcp.annotations.lastModified');
    if (valid) expect(findings).toEqual([]);
    else expect(findings).toEqual([expect.objectContaining({ severity: 'warning', pointer: '/content/0/annotations/lastModified' })]);
  }, 20_000);

  const metaKeys: Array<[string, string, boolean]> = [
    ['100k letters', 'a'.repeat(100_000), true],
    ['100k letters then "!"', 'a'.repeat(100_000) + '!', false],
    ['50k labels', 'a.'.repeat(50_000).slice(0, -1) + '/name', true],
    ['a label ending in "-"', 'a-'.repeat(50_000) + '/name', false],
    ['a name ending in "_"', 'com.example/' + 'x_'.repeat(50_000), false],
    ['100k slashes', '/'.repeat(100_000), false],
    ['100k dots then a slash', '.'.repeat(100_000) + '/', false],
  ];

  it.each(metaKeys)('_meta key: %s', async (_what, key, valid) => {
    for (const url of ['/v1/validate', '/v1/evaluate']) {
      const r = await inject(t, url, JSON.stringify({ result: { content: [{ type: 'text', text: 'x', _meta: { [key]: 1 } }], _meta: { [key]: 2 } } }), auth);
      expect(r.status, url).toBe(200);
      const findings = r.json.validation.filter((f: any) => f.rule === 'mcp.meta.key');
      expect(findings, url).toHaveLength(valid ? 0 : 2);
      // Messages quote a bounded part of the key.
      for (const f of findings) expect(f.message.length).toBeLessThan(1000);
    }
  }, 20_000);

  it('evidenceRef digests, types and refs of 300k characters', async () => {
    const long = 'a'.repeat(300_000);
    for (const ref of [
      { type: 'data-class.v1', digest: `sha256:${long}`, canonicalization: 'jcs/rfc8785' },
      { type: long, digest: `${long}:${long.slice(0, 64)}`, canonicalization: long },
      { type: 'data-class.v1', digest: `sha256:${'0'.repeat(64)}`, canonicalization: 'jcs/rfc8785', ref: long },
      { type: 'data-class.v1', digest: `sha256:${'0:'.repeat(150_000)}`, canonicalization: 'cbor/rfc8949', ref: long },
    ]) {
      const r = await inject(t, '/v1/evaluate', JSON.stringify({ result: { content: [], _meta: { [K]: { evidenceRef: ref } } }, evidence: [{ ref: 'r', record: {} }] }), auth);
      expect(r.status, r.body.slice(0, 200)).toBe(200);
      expect(['malformed', 'unsupported', 'unresolved']).toContain(r.json.evidence[0].status);
    }
  }, 20_000);

  it('evidence entries with digests and refs of 500k characters: refused at once, or matched in linear time', async () => {
    const long = 'A'.repeat(500_000);
    for (const entry of [{ ref: long, record: {} }, { digest: `sha256:${long}`, record: {} }, { digest: long, ref: long, record: {} }]) {
      const r = await inject(t, '/v1/evaluate', JSON.stringify({ result: { content: [] }, evidence: [entry] }), auth);
      expect([200, 400], r.body.slice(0, 200)).toContain(r.status);
      if (r.status === 400) expect(r.json.code).toBe('TG_ERR_LIMIT_STRING');
    }
  }, 20_000);

  it('an Authorization header of 8k spaces is refused at once', async () => {
    for (const authorization of ['Bearer' + ' '.repeat(8000), 'Bearer ' + ' '.repeat(8000) + 'x ' + ' '.repeat(100), 'Bearer ' + 'x '.repeat(4000)]) {
      const r = await inject(t, '/v1/evaluate', '{"result":{"content":[]}}', { ...JSON_HEADERS, authorization });
      expect(r.status).toBe(401);
    }
  }, 20_000);
});

// ------------------------------------------------------------ log canary

describe('no error path logs request content', () => {
  const TOKEN = 'tok-canary';
  let t: TestApp;
  let dir: string;
  const markers: string[] = [];
  const marker = (what: string) => {
    const m = `CANARY-${what}-${randomBytes(6).toString('hex')}`;
    markers.push(m);
    return m;
  };
  const auth = { ...JSON_HEADERS, authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trustgate-canary-'));
    cpSync(SHIPPED_POLICIES, dir, { recursive: true });
    t = await testApp(
      {
        LOG_LEVEL: 'trace',
        TRUSTGATE_TOKEN: TOKEN,
        TRUSTGATE_MAX_BLOCKS: '2',
        TRUSTGATE_MAX_EVIDENCE: '1',
        TRUSTGATE_MAX_STRING: '1024',
        TRUSTGATE_BODY_LIMIT: '65536',
        TRUSTGATE_REQUEST_TIMEOUT_MS: '400',
        TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0',
      },
      dir,
    );
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function expectClean(where: string): void {
    const all = t.logs.join('\n');
    for (const m of markers) expect(all.includes(m), `${where}: marker ${m} was logged`).toBe(false);
  }

  const block = (m: string) => `{"type":"text","text":"${m}"}`;
  const problemCases: Array<[string, string, (m: string) => string | Buffer, Record<string, string> | undefined]> = [
    ['TG_ERR_BODY_MALFORMED_JSON', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}`, undefined],
    ['TG_ERR_BODY_SCHEMA', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}]},"${m}":"${m}"}`, undefined],
    ['TG_ERR_BODY_SCHEMA', '/v1/digest', (m) => `{"record":"${m}","canonicalization":"${m}"}`, undefined],
    ['TG_ERR_BODY_TOO_DEEP', '/v1/validate', (m) => `{"result":{"t":"${m}","x":${deep(300)}}}`, undefined],
    ['TG_ERR_RESULT_TOO_DEEP', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}],"x":${deep(130)}}}`, undefined],
    ['TG_ERR_PROTOCOL_VERSION_UNKNOWN', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}]},"protocolVersion":"${m}"}`, undefined],
    ['TG_ERR_RECORD_TOO_DEEP', '/v1/digest', (m) => `{"record":{"m":"${m}","d":${deep(130)}},"canonicalization":"jcs/rfc8785"}`, undefined],
    ['TG_ERR_RECORD_NOT_IJSON', '/v1/digest', (m) => `{"record":{"${m}":"${m}","${m}":1},"canonicalization":"jcs/rfc8785"}`, undefined],
    ['TG_ERR_RECORD_NOT_IJSON', '/v1/digest', (m) => `{"record":{"m":"${m}","n":123456789012345678901},"canonicalization":"cbor/rfc8949"}`, undefined],
    ['TG_ERR_RECORD_NOT_CANONICALIZABLE', '/v1/digest', (m) => `{"record":{"${m}":"${m}\\udc00"},"canonicalization":"jcs/rfc8785"}`, undefined],
    ['TG_ERR_LIMIT_BLOCKS', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)},${block(m)},${block(m)}]}}`, undefined],
    ['TG_ERR_LIMIT_EVIDENCE', '/v1/evaluate', (m) => `{"result":{"content":[]},"evidence":[{"ref":"${m}","record":"${m}"},{"ref":"${m}","record":"${m}"}]}`, undefined],
    ['TG_ERR_LIMIT_STRING', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}]},"context":{"destination":"${m}${'x'.repeat(2000)}"}}`, undefined],
    ['TG_ERR_LIMIT_STRING', '/v1/evaluate', (m) => `{"result":{"content":[]},"tool":{"name":"${m}${'x'.repeat(2000)}"}}`, undefined],
    ['TG_ERR_AUTH_TOKEN', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}]}}`, { 'content-type': 'application/json', authorization: 'Bearer TOKEN-IS-MARKER' }],
    ['TG_ERR_ROUTE_NOT_FOUND', '/v1/nothing-here', (m) => `{"result":{"content":[${block(m)}]}}`, undefined],
    ['TG_ERR_BODY_TOO_LARGE', '/v1/evaluate', (m) => `{"result":{"content":[${block(m + 'x'.repeat(70_000))}]}}`, undefined],
    ['TG_ERR_MEDIA_TYPE', '/v1/evaluate', (m) => `{"result":{"content":[${block(m)}]}}`, { 'content-type': 'text/plain', authorization: `Bearer ${TOKEN}` }],
    ['TG_ERR_MEDIA_TYPE', '/v1/validate', (m) => `result=${m}`, { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${TOKEN}` }],
  ];

  it.each(problemCases)('%s via %s', async (code, url, payload, headers) => {
    const m = marker(code);
    let h = headers ?? auth;
    if (code === 'TG_ERR_AUTH_TOKEN') h = { ...h, authorization: `Bearer ${m}` };
    const r = await inject(t, url, payload(m), h);
    expect(registry.get(code)).toBe(r.status);
    expect(r.json?.code, r.body.slice(0, 200)).toBe(code);
    expectClean(code);
  });

  it('TG_ERR_POLICY_RELOAD: a reload that fails, with content in the request', async () => {
    const m = marker('reload');
    writeFileSync(join(dir, 'zz-broken.yaml'), 'id: broken\nrules:\n  - id: r\n    when: "context.x +"\n    effect: flag\n');
    try {
      const r = await inject(t, '/v1/policies/reload', JSON.stringify({ note: m }), auth);
      expect(r.status).toBe(422);
      expect(r.json.code).toBe('TG_ERR_POLICY_RELOAD');
    } finally {
      rmSync(join(dir, 'zz-broken.yaml'));
    }
    const ok = await inject(t, '/v1/policies/reload', JSON.stringify({ note: m }), auth);
    expect(ok.status).toBe(200);
    expectClean('reload');
  });

  async function listeningPort(): Promise<number> {
    if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    return typeof addr === 'object' && addr ? addr.port : 0;
  }

  /** Send raw bytes; half-close unless `hold` (a client that stops sending but keeps the connection open). */
  async function raw(bytes: string, hold = false): Promise<string> {
    const port = await listeningPort();
    return new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1', () => (hold ? s.write(bytes) : s.end(bytes)));
      let out = '';
      const timer = setTimeout(() => s.destroy(), 5000);
      s.on('data', (d) => (out += String(d)));
      s.on('close', () => {
        clearTimeout(timer);
        resolve(out);
      });
      s.on('error', () => resolve(out));
    });
  }

  it('TG_ERR_REQUEST_TIMEOUT: a body that stops arriving, on a /v1 route and on the interceptor', async () => {
    const m = marker('timeout');
    const partial = `{"result":{"content":[${block(m)}`;
    const head = (path: string) =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${partial.length + 100}\r\n\r\n${partial}`;
    const a = await raw(head('/v1/evaluate'), true);
    expect(a.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)).code).toBe('TG_ERR_REQUEST_TIMEOUT');
    const i = await raw(head(`${INTERCEPTOR}?token=${TOKEN}`), true);
    expect(i.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(i).toContain('TG_ERR_REQUEST_TIMEOUT');
    expect(i.includes(m)).toBe(false);
    expectClean('timeout');
  }, 20_000);

  it('the HTTP parser errors (framing, header size), with content in the bytes', async () => {
    const send = (bytes: string) => raw(bytes);
    const m1 = marker('http');
    const m2 = marker('http-header');
    const m3 = marker('http-chunk');
    const answers = [
      await send(`POST /v1/evaluate?${m1} HTTP/1.1\r\nHost: x\r\nBad Header ${m1}: y\r\n\r\n`),
      await send(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nX-${m2}: ${m2.repeat(1000)}\r\n\r\n`),
      await send(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{"t":"${m3}"}\r\n0\r\n\r\n`),
    ];
    for (const a of answers) {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(a)?.[1]);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
      const code = JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)).code;
      expect(registry.get(code)).toBe(status);
    }
    expectClean('http parser');
  });

  it('the interceptor isError paths, with content in the body and the query token', async () => {
    const cases: Array<[string, (m: string) => string, string]> = [
      ['not an object', (m) => `["${m}"]`, TOKEN],
      ['malformed JSON', (m) => `{"content":[${block(m)}`, TOKEN],
      ['too large', (m) => `{"content":[${block(m + 'x'.repeat(70_000))}]}`, TOKEN],
      ['no token', (m) => `{"content":[${block(m)}]}`, ''],
      ['wrong content type', (m) => `content=${m}`, TOKEN],
      ['wrong token in the query', (m) => `{"content":[${block(m)}]}`, 'QUERY-MARKER'],
      ['consent required', (m) => `{"content":[${block(m)}],"_meta":{"${K}":{"sensitive":true}},"structuredContent":{"s":"${m}"}}`, TOKEN],
      ['spotlight', (m) => `{"content":[{"type":"text","text":"${m}","_meta":{"${K}":{"untrusted":true}}}]}`, TOKEN],
    ];
    for (const [what, payload, token] of cases) {
      const m = marker(`icpt-${what.replace(/\W+/g, '-')}`);
      const q = token === 'QUERY-MARKER' ? marker('icpt-query') : token;
      const r = await inject(t, `${INTERCEPTOR}${q ? `?token=${encodeURIComponent(q)}` : ''}`, payload(m), {
        'content-type': what === 'wrong content type' ? 'application/x-www-form-urlencoded' : 'application/json',
      });
      expect(r.status, what).toBe(200);
      expect(String(r.headers['content-type'] ?? ''), what).not.toMatch(/problem/);
      if (what !== 'spotlight') expect(r.json?.isError, what).toBe(true);
      // The answer says why without quoting the content it withheld.
      if (r.json?.isError) expect(r.body.includes(m), `${what}: the isError text quotes the body`).toBe(false);
      expectClean(`interceptor: ${what}`);
    }
  });

  it('decisions whose policy conditions fail on hostile context values', async () => {
    const m = marker('cel');
    const r = await inject(
      t,
      '/v1/evaluate',
      JSON.stringify({
        result: { content: [{ type: 'text', text: m, annotations: { audience: ['user'] } }], _meta: { [K]: { sensitive: true } } },
        tool: { name: 't', annotations: { note: m } },
        server: { name: 's', extra: m },
        context: { destination: { [m]: m }, reader: [m] },
      }),
      auth,
    );
    expect(r.status).toBe(200);
    expectClean('cel');
  });

  it('the request log carries no query string (a token may travel there)', () => {
    expect(t.logs.join('\n')).not.toContain('token=');
    expect(t.logs.some((l) => l.includes('"msg":"decision"'))).toBe(true);
  });
});
