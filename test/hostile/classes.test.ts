/**
 * One test per class of hostile client of contract v2 sections 8 and 9 that
 * once took a worker down or made an answer or log line unbounded: the
 * pointer bomb (a long member name above many repeated names or unsafe
 * numbers), the client that never reads its answer, answer amplification,
 * web pages driving the sidecar, undecodable request targets. The decision
 * log written by several worker processes is test/e2e/log-lines.test.ts.
 * Generated shapes of the same classes run in ./fuzz.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestApp, believingServersFile } from '../helpers/app.js';
import { ROOT } from '../helpers/process.js';
import { answerBound, answerWithoutResult, errorRegistry, INTERCEPTOR, K, LOG_LINE_LIMIT, SHAPE_ROUTES, shapeRequest, violation } from './gen.js';

const registry = errorRegistry();
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('pointer bomb: a long member name above many occurrences (contract section 8, linear memory)', () => {
  it('costs every route that scans a heap growth of a small multiple of the body, in a process with a small heap', () => {
    const BODY = 2_000_000;
    // 160 MB of heap: the app and a few dozen times the body. One copy of the
    // 500 KB name per occurrence (about 250,000 of them) would need 125 GB.
    const run = spawnSync(process.execPath, ['--max-old-space-size=160', '--expose-gc', '--import', 'tsx', 'test/helpers/bomb.ts'], {
      cwd: ROOT,
      env: { ...process.env, BOMB_BYTES: String(BODY) },
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(run.status, `the process ended with ${run.status ?? run.signal}: ${run.stderr.slice(-600)}`).toBe(0);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { label: string; status: number; bytes: number; growth: number; detail: string });
    expect(lines.map((l) => [l.label, l.status, l.detail])).toEqual([
      ['evaluate: evidence record, repeated names', 200, 'malformed'],
      ['evaluate: evidence record, unsafe numbers', 200, 'malformed'],
      // The result repeats names: never left out, the host gets it as judged.
      ['evaluate: omitUnmodifiedResult', 200, ''],
      ['digest: repeated names', 400, 'TG_ERR_RECORD_NOT_IJSON'],
      ['digest: unsafe numbers', 400, 'TG_ERR_RECORD_NOT_IJSON'],
      ['interceptor', 200, 'replaced'],
    ]);
    for (const l of lines) expect(l.growth, `${l.label}: heap growth ${l.growth} for a ${l.bytes}-byte body`).toBeLessThan(32 * l.bytes);
  }, 120_000);
});

describe('a client that never reads its answer (contract section 8, write-side deadline)', () => {
  let t: TestApp;
  let port: number;
  /** Server-side sockets, to see which the service closed. */
  const serverSockets: Socket[] = [];
  beforeAll(async () => {
    // (The decision's budget out of the way, as below: the answer must be the 12 MB result however long judging it takes.)
    t = await testApp({ TRUSTGATE_SERVERS: believingServersFile(), LOG_LEVEL: 'warn', TRUSTGATE_REQUEST_TIMEOUT_MS: '300', TRUSTGATE_BODY_LIMIT: '16000000', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '60000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    t.app.server.on('connection', (s: Socket) => serverSockets.push(s));
  });
  afterAll(() => t.close());

  /** A request whose answer (the forwarded result) is far larger than the kernel buffers of a loopback connection. */
  const big = JSON.stringify({ result: { content: [{ type: 'text', text: 'x'.repeat(12_000_000) }] } });

  function pausedClient(): { socket: Socket; received: () => number; closed: () => boolean } {
    const socket = connect(port, '127.0.0.1');
    let received = 0;
    let closed = false;
    socket.on('data', (d: Buffer) => (received += d.length));
    socket.on('error', () => {});
    socket.on('close', () => (closed = true));
    socket.write(`POST /v1/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`);
    socket.pause();
    return { socket, received: () => received, closed: () => closed };
  }

  async function until(check: () => boolean, ms: number): Promise<boolean> {
    const end = Date.now() + ms;
    while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    return check();
  }

  it('closes the connection once the timeout has passed, and the client gets only part of the answer', async () => {
    const before = serverSockets.length;
    const c = pausedClient();
    expect(await until(() => serverSockets.length > before, 5000)).toBe(true);
    const server = serverSockets[serverSockets.length - 1]!;
    expect(await until(() => server.destroyed, 10_000), 'the service still holds the answer of a client that reads nothing').toBe(true);
    c.socket.resume();
    await until(c.closed, 5000);
    expect(c.closed()).toBe(true);
    expect(c.received()).toBeLessThan(big.length);
    // The service answers the next client.
    const r = await fetch(`http://127.0.0.1:${port}/v1/evaluate`, { method: 'POST', headers: JSON_HEADERS, body: '{"result":{"content":[]}}' });
    expect(r.status).toBe(200);
  }, 30_000);

  it('holds at most TRUSTGATE_ANSWER_BUFFER_BYTES of unsent answers: the oldest connections are closed before their deadline', async () => {
    // (The decision's budget out of the way: on a loaded machine, judging 12 MB can outlast the default 250 ms, and the
    // answer is then the small error it is, which no buffer has to hold.)
    const b = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_REQUEST_TIMEOUT_MS: '600000', TRUSTGATE_BODY_LIMIT: '16000000', TRUSTGATE_ANSWER_BUFFER_BYTES: '20000000', TRUSTGATE_MAX_INFLIGHT_BYTES: '1000000000', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '60000' });
    await b.app.listen({ port: 0, host: '127.0.0.1' });
    const sockets: Socket[] = [];
    b.app.server.on('connection', (s: Socket) => sockets.push(s));
    const p = (b.app.server.address() as { port: number }).port;
    const clients: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const s = connect(p, '127.0.0.1');
        s.on('error', () => {});
        s.write(`POST /v1/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`);
        s.pause();
        clients.push(s);
        // One at a time, so that "oldest" is well defined: each answer is held before the next request is sent.
        expect(await until(() => sockets.length === i + 1 && (sockets[i]!.writableLength > 0 || sockets[i]!.destroyed), 30_000), `answer ${i + 1} held`).toBe(true);
      }
      // Four answers of 12 MB do not fit in 20 MB: the older ones are closed, the newest is kept.
      expect(await until(() => sockets[0]!.destroyed && sockets[1]!.destroyed, 10_000)).toBe(true);
      expect(sockets[3]!.destroyed).toBe(false);
      const waiting = sockets.filter((s) => !s.destroyed).reduce((n, s) => n + s.writableLength, 0);
      expect(waiting).toBeLessThanOrEqual(20_000_000 + big.length);
    } finally {
      for (const c of clients) c.destroy();
      await b.close();
    }
  }, 60_000);
});

describe('answer amplification (contract sections 3 and 8)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());

  it.each(SHAPE_ROUTES)('%s: 10,000 tiny blocks under an untrusted claim get an answer within 10 x the request + 64 KiB and a decision line within 64 KiB', async (route) => {
    const { path, text } = shapeRequest(route, { kind: 'manyFindings', blocks: 10_000, claim: 1, audience: false });
    t.logs.length = 0;
    const r = await t.app.inject({ method: 'POST', url: path, payload: text, headers: JSON_HEADERS });
    expect(violation(path, { status: r.statusCode, headers: r.headers, body: r.body }, registry)).toBeUndefined();
    expect(answerWithoutResult(path, r.body)).toBeLessThanOrEqual(answerBound(text.length));
    for (const line of t.logs) {
      expect(Buffer.byteLength(line)).toBeLessThanOrEqual(LOG_LINE_LIMIT);
      JSON.parse(line);
    }
    if (path === '/v1/evaluate') {
      const d = JSON.parse(r.body);
      // Every policy, rule and mode that matched is still listed, the rest is counted.
      expect(d.findings.map((f: any) => f.rule)).toEqual(expect.arrayContaining(['spotlight-untrusted', 'consent-sensitive-egress']));
      expect(d.findingsOmitted).toBeGreaterThan(0);
      expect(d.findings.length + d.findingsOmitted).toBeGreaterThanOrEqual(10_001);
      expect(d.blocks.length + d.blocksOmitted).toBe(10_000);
      const line = JSON.parse(t.logs.find((l) => l.includes('"msg":"decision"'))!);
      expect(line.findings.length + line.findingsOmitted).toBe(d.findings.length + d.findingsOmitted);
      expect(line.blockCount).toBe(10_000);
    }
  });

  it('findings past TRUSTGATE_MAX_FINDINGS: only the first of each further policy, rule and mode, the rest counted', async () => {
    const small = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_FINDINGS: '5', TRUSTGATE_SERVERS: believingServersFile() });
    try {
      const content = new Array(20).fill({ type: 'text', text: 'some text long enough to keep the size bound out of it' });
      const r = await small.app.inject({
        method: 'POST',
        url: '/v1/evaluate',
        payload: JSON.stringify({ result: { _meta: { [K]: { untrusted: true, sensitive: true } }, content }, tool: { name: 'read', annotations: { openWorldHint: false } }, context: { destination: 'remote' } }),
        headers: JSON_HEADERS,
      });
      const d = JSON.parse(r.body);
      expect(d.findings.map((f: any) => f.rule).sort()).toEqual(['consent-sensitive-egress', ...new Array(4).fill('spotlight-untrusted')]);
      expect(d.findingsOmitted).toBe(16);
      // Every block was fenced, listed or not.
      expect(d.blocks.every((b: any) => b.actions[0] === 'spotlight')).toBe(true);
      expect(d.result.content.every((b: any) => b.text.includes(d.result.content[0].text.slice(0, 20)))).toBe(true);
    } finally {
      await small.close();
    }
  });
});

describe('web pages cannot drive the sidecar (contract section 8)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_ALLOWED_ORIGINS: 'https://ui.example.com' });
  });
  afterAll(() => t.close());

  const inject = (method: 'GET' | 'POST' | 'OPTIONS', url: string, headers: Record<string, string>, payload?: string) =>
    t.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });

  it('refuses a cross-site form POST to /v1/policies/reload, with or without a body, and a bodiless fetch from another origin', async () => {
    const form = await inject('POST', '/v1/policies/reload', { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, 'a=1');
    expect(form.statusCode).toBe(403);
    expect(JSON.parse(form.body).code).toBe('TG_ERR_CROSS_ORIGIN');
    const bare = await inject('POST', '/v1/policies/reload', { origin: 'null' });
    expect(JSON.parse(bare.body).code).toBe('TG_ERR_CROSS_ORIGIN');
    const site = await inject('POST', '/v1/policies/reload', { 'sec-fetch-site': 'cross-site' });
    expect(JSON.parse(site.body).code).toBe('TG_ERR_CROSS_ORIGIN');
    const sameSite = await inject('POST', '/v1/evaluate', { 'sec-fetch-site': 'same-site', ...JSON_HEADERS }, '{"result":{"content":[]}}');
    expect(JSON.parse(sameSite.body).code).toBe('TG_ERR_CROSS_ORIGIN');
    // Even without an Origin, a form body is no JSON.
    const noOrigin = await inject('POST', '/v1/policies/reload', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1');
    expect(noOrigin.statusCode).toBe(415);
  });

  it('answers text/plain, form and multipart bodies 415 on every route, and on the interceptor an isError result', async () => {
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      for (const url of ['/v1/evaluate', '/v1/validate', '/v1/digest', '/v1/policies/reload']) {
        const r = await inject('POST', url, { 'content-type': type }, '{"result":{"content":[]}}');
        expect(r.statusCode, `${type} to ${url}`).toBe(415);
        expect(JSON.parse(r.body).code).toBe('TG_ERR_MEDIA_TYPE');
      }
      const i = await inject('POST', INTERCEPTOR, { 'content-type': type }, '{"content":[{"type":"text","text":"x"}]}');
      expect(i.statusCode).toBe(200);
      expect(JSON.parse(i.body)).toMatchObject({ isError: true });
      expect(i.body).toContain('TG_ERR_MEDIA_TYPE');
    }
    // The gateway sends its body with no content type: still judged (the gateway names no tool, so the
    // shipped open-world label fences the text).
    const gateway = await inject('POST', INTERCEPTOR, {}, '{"content":[{"type":"text","text":"x"}]}');
    expect(gateway.statusCode).toBe(200);
    expect(JSON.parse(gateway.body).content[0].text).toMatch(/^<untrusted-content boundary="[0-9a-f]+">/);
    const foreign = await inject('POST', INTERCEPTOR, { origin: 'https://evil.example' }, '{"content":[]}');
    expect(JSON.parse(foreign.body)).toMatchObject({ isError: true });
    expect(foreign.body).toContain('TG_ERR_CROSS_ORIGIN');
  });

  it("serves the service's own origin and the listed ones (with CORS headers), nothing else", async () => {
    const own = await inject('POST', '/v1/evaluate', { origin: 'http://localhost:80', host: 'localhost:80', ...JSON_HEADERS }, '{"result":{"content":[]}}');
    expect(own.statusCode).toBe(200);
    const listed = await inject('POST', '/v1/evaluate', { origin: 'https://ui.example.com', 'sec-fetch-site': 'cross-site', ...JSON_HEADERS }, '{"result":{"content":[]}}');
    expect(listed.statusCode).toBe(200);
    expect(listed.headers['access-control-allow-origin']).toBe('https://ui.example.com');
    const preflight = await inject('OPTIONS', '/v1/evaluate', { origin: 'https://ui.example.com' });
    expect(preflight.statusCode).toBe(204);
    const other = await inject('OPTIONS', '/v1/evaluate', { origin: 'https://ui.example.com.evil.example' });
    expect(other.statusCode).toBe(403);
  });

  it('refuses a page that pointed its own name at the service (DNS rebinding): its Origin equals its Host, which is not loopback', async () => {
    const body = '{"result":{"content":[]}}';
    for (const host of ['rebind.example:8080', 'rebind.example', '10.0.0.5:8080', '127.0.0.1.rebind.example', 'localhost.rebind.example:8080', '[::2]:8080']) {
      const r = await inject('POST', '/v1/evaluate', { origin: `http://${host}`, host, 'sec-fetch-site': 'same-origin', ...JSON_HEADERS }, body);
      expect(r.statusCode, host).toBe(403);
      expect(JSON.parse(r.body).code).toBe('TG_ERR_CROSS_ORIGIN');
      const reload = await inject('POST', '/v1/policies/reload', { origin: `https://${host}`, host });
      expect(reload.statusCode, host).toBe(403);
    }
    // The class: any name or address but loopback's, with or without a port.
    const foreign = fc
      .tuple(fc.oneof(fc.domain(), fc.ipV4()), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }))
      .filter(([name]) => name !== 'localhost' && !name.endsWith('.localhost') && !name.startsWith('127.'))
      .map(([name, port]) => (port === undefined ? name : `${name}:${port}`));
    await fc.assert(
      fc.asyncProperty(foreign, fc.constantFrom('http', 'https'), async (host, scheme) => {
        const r = await inject('POST', '/v1/evaluate', { origin: `${scheme}://${host}`, host, ...JSON_HEADERS }, body);
        expect(r.statusCode).toBe(403);
      }),
      { numRuns: 200 },
    );
    for (const host of ['localhost:8080', '127.0.0.1:8080', '127.1.2.3', '[::1]:8080', 'app.localhost:3000']) {
      const r = await inject('POST', '/v1/evaluate', { origin: `http://${host}`, host, 'sec-fetch-site': 'same-origin', ...JSON_HEADERS }, body);
      expect(r.statusCode, host).toBe(200);
    }
  });
});

describe('a request target that cannot be decoded (contract section 8)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_TOKEN: 's3cret-token' });
  });
  afterAll(() => t.close());

  it.each(['/%zz?token=s3cret-token', '/v1/%zz?token=s3cret-token', '/v1/evaluate?token=%zz&t=s3cret-token', '/v1/evaluate?q=%C3%28s3cret-token'])(
    '%s is a 400 problem+json that does not echo the target',
    async (url) => {
      const r = await t.app.inject({ method: 'POST', url, headers: { authorization: 'Bearer s3cret-token', ...JSON_HEADERS }, payload: '{"result":{"content":[]}}' });
      expect(r.statusCode).toBe(400);
      expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(r.body).code).toBe('TG_ERR_REQUEST_TARGET');
      expect(r.body).not.toContain('s3cret');
      expect(r.body).not.toContain('%');
    },
  );

  it('is an isError result on the interceptor route', async () => {
    for (const url of [`${INTERCEPTOR}?token=%zz`, `${INTERCEPTOR}/%zz?token=s3cret-token`]) {
      const r = await t.app.inject({ method: 'POST', url, headers: JSON_HEADERS, payload: '{"content":[]}' });
      expect(r.statusCode).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ isError: true });
      expect(r.body).toContain('TG_ERR_REQUEST_TARGET');
      expect(r.body).not.toContain('s3cret');
    }
  });
});

describe('a /metrics flood (contract section 8: a scrape costs no more than a health check)', () => {
  it('answers scrapes from a text made at most once a second, not from a collection per scrape', async () => {
    const t = await testApp({ LOG_LEVEL: 'warn' });
    try {
      const texts: string[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await t.app.inject({ method: 'GET', url: '/metrics' });
        expect(r.statusCode).toBe(200);
        texts.push(r.body);
      }
      // A collection per scrape reads the process's CPU time, heap and event-loop lag anew each time.
      expect(new Set(texts).size).toBe(1);
      expect(texts[0]).toContain('trustgate_process_cpu_user_seconds_total');
    } finally {
      await t.close();
    }
  });
});
