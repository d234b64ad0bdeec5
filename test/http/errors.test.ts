import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, routesOf, testApp, type TestApp } from '../helpers/app.js';

const ok = { result: { content: [{ type: 'text', text: 'hello' }] } };
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);

async function expectProblem(r: { status: number; headers: Record<string, unknown>; json: any }, status: number, code: string) {
  expect(r.status).toBe(status);
  expect(String(r.headers['content-type'])).toMatch(/^application\/problem\+json/);
  expect(r.json).toMatchObject({ status, code, type: `urn:trustgate:problem:${code}` });
  expect(typeof r.json.title).toBe('string');
  expect(typeof r.json.detail).toBe('string');
}

describe('errors and limits through the real routes (contract section 8)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_BODY_LIMIT: '65536' });
  });
  afterAll(() => t.close());

  const cases: Array<[string, string, string | Buffer, Record<string, string>, number, string]> = [
    ['malformed JSON', '/v1/evaluate', '{"result": {', {}, 400, 'TG_ERR_BODY_MALFORMED_JSON'],
    ['empty JSON body', '/v1/evaluate', '', {}, 400, 'TG_ERR_BODY_MALFORMED_JSON'],
    ['a typo in a top-level member', '/v1/evaluate', JSON.stringify({ ...ok, evidences: [] }), {}, 400, 'TG_ERR_BODY_SCHEMA'],
    ['no result', '/v1/evaluate', '{}', {}, 400, 'TG_ERR_BODY_SCHEMA'],
    ['a result that is not an object', '/v1/validate', '{"result":[1]}', {}, 400, 'TG_ERR_BODY_SCHEMA'],
    ['a body that is not an object', '/v1/evaluate', '"hello"', {}, 400, 'TG_ERR_BODY_SCHEMA'],
    ['an unknown protocolVersion', '/v1/evaluate', JSON.stringify({ ...ok, protocolVersion: '2099-01-01' }), {}, 400, 'TG_ERR_PROTOCOL_VERSION_UNKNOWN'],
    ['a result nesting 129 levels', '/v1/evaluate', `{"result":{"structuredContent":${deep(128)}}}`, {}, 400, 'TG_ERR_RESULT_TOO_DEEP'],
    ['a result nesting 129 levels (validate)', '/v1/validate', `{"result":{"x":${deep(128)}}}`, {}, 400, 'TG_ERR_RESULT_TOO_DEEP'],
    ['a body nesting 257 levels', '/v1/evaluate', `{"context":{"a":${deep(255)}},"result":{"content":[]}}`, {}, 400, 'TG_ERR_BODY_TOO_DEEP'],
    ['a body nesting 30000 levels', '/v1/digest', deep(30_000), {}, 400, 'TG_ERR_BODY_TOO_DEEP'],
    ['a body over the limit', '/v1/evaluate', JSON.stringify({ result: { content: [{ type: 'text', text: 'x'.repeat(70_000) }] } }), {}, 413, 'TG_ERR_BODY_TOO_LARGE'],
    ['a text/plain body', '/v1/evaluate', JSON.stringify(ok), { 'content-type': 'text/plain' }, 415, 'TG_ERR_MEDIA_TYPE'],
    ['a form body', '/v1/validate', 'a=1', { 'content-type': 'application/x-www-form-urlencoded' }, 415, 'TG_ERR_MEDIA_TYPE'],
  ];

  it.each(cases)('%s is answered with a problem', async (_what, url, payload, headers, status, code) => {
    const r = await t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } });
    await expectProblem({ status: r.statusCode, headers: r.headers, json: JSON.parse(r.body) }, status, code);
    // The service keeps answering.
    const next = await post(t.app, '/v1/evaluate', ok);
    expect(next.status).toBe(200);
  });

  it('points at the misspelt member', async () => {
    const r = await post(t.app, '/v1/evaluate', { ...ok, evidences: [] });
    expect(r.json.errors).toContainEqual(expect.objectContaining({ pointer: '/evidences' }));
  });

  it('names the first place a body breaks the schema, however many places it breaks it', async () => {
    // 20,000 evidence entries without a record: checking stops at the first.
    const body = { ...ok, evidence: Array.from({ length: 20_000 }, () => ({})) };
    const r = await post(t.app, '/v1/evaluate', body);
    await expectProblem(r, 400, 'TG_ERR_BODY_SCHEMA');
    expect(r.json.errors).toEqual([{ pointer: '/evidence/0/record', message: 'is required' }]);
  });

  it('a result nesting exactly 128 levels is evaluated', async () => {
    const r = await post(t.app, '/v1/evaluate', `{"result":{"content":[],"structuredContent":${deep(127)}}}`);
    expect(r.status).toBe(200);
  });

  it('an evidence record nesting too deep is not a 400: its evidenceRef is malformed', async () => {
    const K = 'io.modelcontextprotocol/trust-annotations';
    const digest = 'sha256:' + '0'.repeat(64);
    const body = `{"result":{"content":[],"_meta":{"${K}":{"evidenceRef":{"type":"x","digest":"${digest}","canonicalization":"jcs/rfc8785"}}}},"evidence":[{"digest":"${digest}","record":${deep(129)}}]}`;
    const r = await post(t.app, '/v1/evaluate', body);
    expect(r.status).toBe(200);
    expect(r.json.evidence[0].status).toBe('malformed');
  });

  it('evidence records nesting 125 and 128 levels verify (the limit is 128 levels below the record)', async () => {
    const K = 'io.modelcontextprotocol/trust-annotations';
    for (const levels of [125, 128]) {
      // The canonical text of nested empty arrays is the text itself.
      const digest = 'sha256:' + createHash('sha256').update(deep(levels)).digest('hex');
      const body = `{"result":{"content":[],"_meta":{"${K}":{"evidenceRef":{"type":"x","digest":"${digest}","canonicalization":"jcs/rfc8785"}}}},"evidence":[{"digest":"${digest}","record":${deep(levels)}}]}`;
      const r = await post(t.app, '/v1/evaluate', body);
      expect(r.status).toBe(200);
      expect(r.json.evidence[0].status).toBe('verified');
    }
  });

  it('an unknown route is a 404 problem', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/v2/nothing' });
    await expectProblem({ status: r.statusCode, headers: r.headers, json: JSON.parse(r.body) }, 404, 'TG_ERR_ROUTE_NOT_FOUND');
  });

  it('a target that names no route is a 404 problem whatever its JSON body: none, broken, too deep', async () => {
    // (A form's media types are refused first, on every target: the browser guard's 415.)
    for (const [type, payload] of [['application/json', ''], ['application/json', '{"result":'], ['application/json', '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[']] as const) {
      for (const url of ['/v2/nothing', '*']) {
        const r = await t.app.inject({ method: 'POST', url, headers: { 'content-type': type }, payload });
        await expectProblem({ status: r.statusCode, headers: r.headers, json: JSON.parse(r.body) }, 404, 'TG_ERR_ROUTE_NOT_FOUND');
      }
    }
  });
});

describe('bearer token (TRUSTGATE_TOKEN)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_TOKEN: 'tok-123', TRUSTGATE_PLAYGROUND: '1' });
  });
  afterAll(() => t.close());

  it.each([
    ['no header', {}],
    ['a wrong token', { authorization: 'Bearer tok-124' }],
    ['a prefix of the token', { authorization: 'Bearer tok-12' }],
    ['another scheme', { authorization: 'Basic dG9rLTEyMw==' }],
  ])('%s is a 401 problem on /v1/*', async (_what, headers) => {
    for (const [method, url] of [
      ['POST', '/v1/evaluate'],
      ['POST', '/v1/validate'],
      ['POST', '/v1/digest'],
      ['GET', '/v1/policies'],
      ['POST', '/v1/policies/reload'],
    ] as const) {
      const r = await t.app.inject({ method, url, headers: { 'content-type': 'application/json', ...headers }, payload: method === 'POST' ? JSON.stringify(ok) : undefined });
      await expectProblem({ status: r.statusCode, headers: r.headers, json: JSON.parse(r.body) }, 401, 'TG_ERR_AUTH_TOKEN');
      expect(r.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  it('the right token passes', async () => {
    const r = await post(t.app, '/v1/evaluate', ok, { authorization: 'Bearer tok-123' });
    expect(r.status).toBe(200);
  });

  it('every route takes the token but the open ones; an unknown path under theirs answers 401 before it says 404', async () => {
    // The open routes, on purpose: health, readiness, metrics, the OpenAPI document and its UI.
    const open = (url: string) => ['/healthz', '/readyz', '/metrics', '/openapi.json'].includes(url) || url === '/docs' || url.startsWith('/docs/');
    const routes = routesOf(t.app).filter((r) => !open(r.url) && r.method !== 'HEAD' && r.method !== 'OPTIONS');
    expect(routes.map((r) => r.url)).toEqual(expect.arrayContaining(['/v1/evaluate', '/v1/evaluate-call', '/mcp', '/v1/sessions/:id', '/v1/pins', '/playground', '/playground/app.js', '/v1/playground/evaluate']));
    for (const { method, url } of routes) {
      const r = await t.app.inject({ method, url: url.replace(':id', 's1'), headers: { 'content-type': 'application/json' }, payload: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
      if (url === '/v1/interceptors/docker-mcp-gateway') {
        // Checks the token itself (header or query) and always answers an isError result for the gateway.
        expect(r.statusCode, url).toBe(200);
        expect(JSON.parse(r.body).isError, url).toBe(true);
      } else {
        expect(r.statusCode, `${method} ${url}`).toBe(401);
      }
    }
    expect((await t.app.inject({ method: 'GET', url: '/v1/nothing' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/playground/nothing' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/v2/nothing' })).statusCode).toBe(404);
  });

  it('health, readiness, metrics and the OpenAPI document stay open', async () => {
    for (const url of ['/healthz', '/readyz', '/metrics', '/openapi.json']) {
      const r = await t.app.inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(200);
    }
  });
});

describe('errors the HTTP parser raises', () => {
  let t: TestApp;
  let port = 0;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_REQUEST_TIMEOUT_MS: '300' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const a = t.app.server.address();
    port = typeof a === 'object' && a ? a.port : 0;
  });
  afterAll(() => t.close());

  async function raw(text: string | Buffer, waitMs = 0): Promise<string> {
    const { connect } = await import('node:net');
    return new Promise((resolve) => {
      const sock = connect(port, '127.0.0.1', () => {
        sock.write(text);
      });
      let got = '';
      sock.on('data', (d) => (got += String(d)));
      sock.on('close', () => resolve(got));
      sock.on('error', () => resolve(got));
      if (waitMs) setTimeout(() => sock.end(), waitMs);
    });
  }

  it.each([
    ['broken framing', 'POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}', 400, 'TG_ERR_HTTP_MALFORMED'],
    ['a CONNECT (a tunnel, which the service never makes)', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 404, 'TG_ERR_ROUTE_NOT_FOUND'],
    ['an HTTP/1.1 request that names no host', 'POST /v1/validate HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', 400, 'TG_ERR_HTTP_MALFORMED'],
    ['a request that names two hosts', 'POST /v1/validate HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', 400, 'TG_ERR_HTTP_MALFORMED'],
    ['an HTTP/1.0 request that names two hosts', 'POST /v1/validate HTTP/1.0\r\nHost: x\r\nhost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', 400, 'TG_ERR_HTTP_MALFORMED'],
    ['a host that is no host', 'POST /v1/validate HTTP/1.1\r\nHost: a b/c\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', 400, 'TG_ERR_HTTP_MALFORMED'],
    ['oversized headers', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'TG_ERR_HTTP_HEADERS_TOO_LARGE'],
    ['a body that never finishes arriving', 'POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"result":', 408, 'TG_ERR_REQUEST_TIMEOUT'],
  ])('%s is answered with a problem on the socket', async (_what, text, status, code) => {
    const got = await raw(text, 5000);
    expect(got.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    expect(got.toLowerCase()).toContain('content-type: application/problem+json');
    expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)).code).toBe(code);
    expect((await post(t.app, '/v1/evaluate', ok)).status).toBe(200);
  });

  it('a host of any valid form is answered: a name, an address, IPv6, a port, empty', async () => {
    const body = JSON.stringify(ok);
    for (const host of ['localhost', '127.0.0.1:8080', '[::1]:80', '[fe80::1%25eth0]', 'trustgate.internal', 'xn--bcher-kva.example', '']) {
      const got = await raw(`POST /v1/evaluate HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 5000);
      expect(got.startsWith('HTTP/1.1 200 '), `${host}: ${got.slice(0, 300)}`).toBe(true);
    }
  });

  it('a body in a content coding (gzip, deflate, br) is a 415 that says which coding is read, not its bytes read as JSON', async () => {
    const { gzipSync, deflateSync, brotliCompressSync } = await import('node:zlib');
    const body = Buffer.from(JSON.stringify(ok));
    for (const [coding, bytes] of [
      ['gzip', gzipSync(body)],
      ['deflate', deflateSync(body)],
      ['br', brotliCompressSync(body)],
      ['gzip, identity', gzipSync(body)],
      ['x-unknown', body],
    ] as const) {
      const head = `POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: ${coding}\r\nConnection: close\r\nContent-Length: ${bytes.length}\r\n\r\n`;
      const got = await raw(Buffer.concat([Buffer.from(head, 'latin1'), bytes]), 5000);
      expect(got.startsWith('HTTP/1.1 415 '), `${coding}: ${got.slice(0, 300)}`).toBe(true);
      expect(got.toLowerCase()).toContain('accept-encoding: identity');
      expect(got.toLowerCase()).toContain('content-type: application/problem+json');
      expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)).code).toBe('TG_ERR_MEDIA_TYPE');
    }
    for (const coding of ['identity', 'Identity', ' identity , identity ']) {
      const text = JSON.stringify(ok);
      const got = await raw(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: ${coding}\r\nConnection: close\r\nContent-Length: ${text.length}\r\n\r\n${text}`, 5000);
      expect(got.startsWith('HTTP/1.1 200 '), `${coding}: ${got.slice(0, 300)}`).toBe(true);
    }
    expect((await post(t.app, '/v1/evaluate', ok)).status).toBe(200);
  });

  it('an expectation other than 100-continue is ignored: the request is answered as any other, not with an empty 417', async () => {
    const body = JSON.stringify(ok);
    const got = await raw(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: something-else\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 5000);
    expect(got.startsWith('HTTP/1.1 200 '), got).toBe(true);
    expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)).outcome).toBeDefined();
  });
});

describe('limits, each with its own problem code', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_MAX_BLOCKS: '3', TRUSTGATE_MAX_EVIDENCE: '2', TRUSTGATE_MAX_STRING: '100' });
  });
  afterAll(() => t.close());
  const block = { type: 'text', text: 'x'.repeat(500) };

  it.each([
    ['too many blocks', { result: { content: [block, block, block, block] } }, 'TG_ERR_LIMIT_BLOCKS', '/result/content'],
    ['too many evidence entries', { result: { content: [] }, evidence: [{ record: 1 }, { record: 2 }, { record: 3 }] }, 'TG_ERR_LIMIT_EVIDENCE', '/evidence'],
    ['a long context string', { result: { content: [] }, context: { deep: [{ s: 'y'.repeat(101) }] } }, 'TG_ERR_LIMIT_STRING', '/context/deep/0/s'],
    ['a long tool name', { result: { content: [] }, tool: { name: 't'.repeat(101) } }, 'TG_ERR_LIMIT_STRING', '/tool/name'],
    ['a long evidence ref', { result: { content: [] }, evidence: [{ ref: 'r'.repeat(101), record: {} }] }, 'TG_ERR_LIMIT_STRING', '/evidence/0/ref'],
    ['a long block uri', { result: { content: [{ type: 'resource_link', name: 'n', uri: 'u'.repeat(101) }] } }, 'TG_ERR_LIMIT_STRING', '/result/content/0/uri'],
  ])('%s is a 400 with its own code', async (_what, body, code, ptr) => {
    const r = await post(t.app, '/v1/evaluate', body);
    expect(r.status).toBe(400);
    expect(r.json.code).toBe(code);
    expect(r.json.errors[0].pointer).toBe(ptr);
  });

  it('long block text is not limited by it (the body limit covers it)', async () => {
    const r = await post(t.app, '/v1/evaluate', { result: { content: [block, block, block] } });
    expect(r.status).toBe(200);
  });
});

describe('validation findings past TRUSTGATE_MAX_VALIDATION_FINDINGS', () => {
  const K = 'io.modelcontextprotocol/trust-annotations';
  // 20 unknown members on one block (20 mcp.content.members errors), a lastModified warning,
  // then a malformed claim on the result (trust.annotation.type) after all of them.
  const noisy = () => {
    const block: Record<string, unknown> = { type: 'text', text: 'hi' };
    for (let i = 0; i < 20; i++) block[`x${i}`] = i;
    block.annotations = { lastModified: 'yesterday' };
    return { content: [block, { type: 'text', text: 'second' }], _meta: { [K]: { sensitive: 'yes' } } };
  };
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_MAX_VALIDATION_FINDINGS: '5', LOG_LEVEL: 'info' });
  });
  afterAll(() => t.close());

  it('/v1/evaluate lists the first 5, then the first of every other rule and severity, and counts the rest', async () => {
    const r = await post(t.app, '/v1/evaluate', { protocolVersion: '2025-06-18', result: noisy() });
    expect(r.status).toBe(200);
    const v = r.json.validation as Array<{ rule: string; severity: string; pointer: string }>;
    expect(v.slice(0, 5).map((x) => x.pointer)).toEqual(['/content/0/x0', '/content/0/x1', '/content/0/x2', '/content/0/x3', '/content/0/x4']);
    expect(v.slice(5).map((x) => [x.rule, x.severity])).toEqual([
      ['mcp.annotations.lastModified', 'warning'],
      ['trust.annotation.type', 'error'],
    ]);
    expect(r.json.validationOmitted).toBe(15);
    // The malformed claim still counts as true (fail closed) and policies still see validation errors.
    expect(r.json.labels.sensitive).toBe(true);
    expect(r.json.findings).toContainEqual(expect.objectContaining({ policy: 'validation', rule: 'flag-validation-errors' }));
  });

  it('/v1/validate answers the same list and count, and is not valid', async () => {
    const r = await post(t.app, '/v1/validate', { protocolVersion: '2025-06-18', result: noisy() });
    expect(r.status).toBe(200);
    expect(r.json.valid).toBe(false);
    expect(r.json.validation).toHaveLength(7);
    expect(r.json.validationOmitted).toBe(15);
  });

  it('leaves validationOmitted out when nothing was left out', async () => {
    for (const url of ['/v1/evaluate', '/v1/validate']) {
      const r = await post(t.app, url, { result: { content: [{ type: 'text', text: 'hi', x: 1 }] } });
      expect(r.status).toBe(200);
      expect(r.json.validation).toHaveLength(1);
      expect(r.json).not.toHaveProperty('validationOmitted');
    }
  });
});

describe('validation findings by default', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({});
  });
  afterAll(() => t.close());

  it('a result breaking a rule once per member gets 1,000 findings and the count of the rest', async () => {
    // 4,000 unknown members: without the bound the answer would carry 4,000 findings.
    const content = Array.from({ length: 40 }, (_, b) => {
      const block: Record<string, unknown> = { type: 'text', text: '' };
      for (let i = 0; i < 100; i++) block[`m${i}`] = b;
      return block;
    });
    const r = await post(t.app, '/v1/evaluate', { result: { content } });
    expect(r.status).toBe(200);
    expect(r.json.validation).toHaveLength(1000);
    expect(r.json.validationOmitted).toBe(3000);
    expect(r.json.validation.at(-1).pointer).toBe('/content/9/m99');
  });
});
