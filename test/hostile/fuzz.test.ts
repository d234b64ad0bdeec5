/**
 * Generated hostile input through the real HTTP layer (contract section 8:
 * no request body, however malformed, yields a 5xx or takes the process
 * down). Valid requests of every shape are mutated structurally (members
 * deleted or replaced by the wrong type, `__proto__`/`constructor`/
 * `prototype` members, nesting around the 128/256 limits, long strings,
 * lone surrogates, number literals JSON.parse rounds, repeated member
 * names, thousands of blocks) and textually (truncation, stray characters,
 * invalid UTF-8, a BOM, random bytes, empty bodies), and sent with right and
 * wrong content types. Random JSON values are sent as well.
 *
 * Every answer must keep the invariants of `violation()` in ./gen.ts: a 200
 * of the route's contract shape or a 4xx problem+json whose `code` is in
 * docs/errors.md, never a 5xx; the gateway interceptor always a 200 with an
 * empty body or a CallToolResult. After every batch the service still
 * answers /healthz and no built-in prototype has changed; at the end the
 * heap has not grown beyond a bound (see the last test).
 *
 * Most requests go through `inject()`; a smaller part goes through a
 * listening socket with fetch, and raw HTTP/1.1 bytes (broken framing,
 * headers, request targets) exercise Node's parser. One more property
 * checks that a result-scope redact or drop withholds `content` whatever
 * its JSON shape.
 *
 * Seeded and reproducible: each batch runs with `seed = BASE + batch`, and
 * every failure names its seed, batch and case. FUZZ_SEED overrides BASE to
 * explore other inputs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BODY_LIMIT } from '../../src/config.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { shippedWithoutOpenWorldLabel } from '../helpers/closed-world.js';
import {
  attackText,
  contentTypeArb,
  errorRegistry,
  evaluateRequestArb,
  INTERCEPTOR,
  mutatedText,
  mutationArb,
  pollutionCheck,
  prototypeSnapshot,
  randomJsonArb,
  recordArb,
  resultArb,
  buildRequest,
  answerBound,
  answerWithoutResult,
  LOG_LINE_LIMIT,
  SHAPE_ROUTES,
  shapeArb,
  shapeRequest,
  textAttackArb,
  toText,
  violation,
  deep,
  type Answer,
  type Mutation,
  type Obj,
  type Route,
  type TextAttack,
} from './gen.js';

const BASE = Number(process.env.FUZZ_SEED ?? 0x7a5e_2025);
const registry = errorRegistry();

interface Case {
  route: Route;
  payload: string | Buffer;
  contentType: string | undefined;
  label: string;
  /** A valid request sent as application/json: must be a 200. */
  mustSucceed: boolean;
}

const counts = new Map<string, number>();
let bytesSent = 0;
const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

function describeMutations(ms: readonly Mutation[], a: TextAttack, ct: string | undefined): string {
  return `mutations=[${ms.map((m) => m.kind).join(',')}] text=${a.kind} content-type=${ct === undefined ? '(none)' : JSON.stringify(ct)}`;
}

function shaped(route: Route, value: unknown, ms: Mutation[], a: TextAttack, ct: string | undefined, label: string): Case {
  const text = ms.length === 0 ? toText(value) : mutatedText(JSON.parse(toText(value)), ms);
  const payload = attackText(text, a);
  const mustSucceed = ms.length === 0 && a.kind === 'none' && ct === 'application/json';
  return withShortPrint({ route, payload, contentType: ct, label: `${label} ${describeMutations(ms, a, ct)}`, mustSucceed });
}

/** Counterexamples print the route, label and the first 2,000 characters of the body, not megabytes. */
function withShortPrint(c: Case): Case {
  Object.defineProperty(c, fc.toStringMethod, {
    enumerable: true,
    value: () => {
      const body = typeof c.payload === 'string' ? JSON.stringify(c.payload.slice(0, 2000)) : `<${c.payload.length} bytes> ${c.payload.subarray(0, 500).toString('hex')}`;
      return `${c.route} [${c.label}] ${body}${Buffer.byteLength(c.payload) > 2000 ? ' …' : ''}`;
    },
  });
  return c;
}

const mutations = fc.array(mutationArb, { maxLength: 3 });
const mutationsOften = fc.oneof({ weight: 1, arbitrary: fc.constant([] as Mutation[]) }, { weight: 4, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) });

/** Valid evaluate requests (every block type, claims, evidenceRefs, records), then mutated. */
const evaluateStructured: fc.Arbitrary<Case> = fc
  .tuple(evaluateRequestArb, mutationsOften, textAttackArb, contentTypeArb)
  .map(([req, ms, a, ct]) => shaped('/v1/evaluate', req, ms, a, ct, 'evaluate/structured'));

/** Random JSON, as the whole body or as `result`. */
const randomFor = (route: Route, wrap: (v: unknown) => unknown): fc.Arbitrary<Case> =>
  fc.tuple(randomJsonArb, fc.boolean(), mutations, textAttackArb, contentTypeArb).map(([v, wrapped, ms, a, ct]) => {
    const c = shaped(route, wrapped ? wrap(v) : v, ms, a, ct, `${route}/random${wrapped ? '(wrapped)' : ''}`);
    c.mustSucceed = false;
    return c;
  });

/** Valid pre-call requests (call, arguments of any JSON, a tool definition, a session), then mutated. */
const evaluateCallStructured: fc.Arbitrary<Case> = fc
  .tuple(
    fc.record(
      {
        call: fc.record({ name: fc.string({ maxLength: 20 }), arguments: fc.dictionary(fc.string({ maxLength: 8 }), randomJsonArb, { maxKeys: 4 }) }, { requiredKeys: ['name'] }),
        tool: fc.record(
          {
            name: fc.string({ maxLength: 20 }),
            description: fc.string({ maxLength: 40 }),
            inputSchema: fc.dictionary(fc.string({ maxLength: 8 }), randomJsonArb, { maxKeys: 3 }),
            annotations: fc.record({ readOnlyHint: randomJsonArb, openWorldHint: fc.boolean() }, { requiredKeys: [] }),
          },
          { requiredKeys: [] },
        ),
        server: fc.record({ name: fc.string({ maxLength: 10 }) }),
        session: fc.record({ id: fc.stringMatching(/^[A-Za-z0-9._:-]{1,40}$/) }),
        context: fc.dictionary(fc.string({ maxLength: 8 }), randomJsonArb, { maxKeys: 3 }),
      },
      { requiredKeys: ['call'] },
    )
      // Valid means a definition, when named, is the called tool's (a name of another tool is a 400).
      .map((req) => (req.tool?.name === undefined ? req : { ...req, tool: { ...req.tool, name: req.call.name } })),
    mutationsOften,
    textAttackArb,
    contentTypeArb,
  )
  .map(([req, ms, a, ct]) => shaped('/v1/evaluate-call', req, ms, a, ct, 'evaluate-call/structured'));

const validateStructured: fc.Arbitrary<Case> = fc
  .tuple(evaluateRequestArb, fc.boolean(), mutationsOften, textAttackArb, contentTypeArb)
  .map(([req, withVersion, ms, a, ct]) => {
    const body: Obj = { result: req.result! };
    if (withVersion && req.protocolVersion !== undefined) body.protocolVersion = req.protocolVersion;
    return shaped('/v1/validate', body, ms, a, ct, 'validate/structured');
  });

const digestStructured: fc.Arbitrary<Case> = fc
  .tuple(
    fc.oneof(recordArb, fc.jsonValue({ maxDepth: 4 }), evaluateRequestArb),
    fc.constantFrom('jcs/rfc8785', 'cbor/rfc8949'),
    fc.constantFrom(undefined, 'sha256', 'sha384', 'sha512'),
    fc.oneof({ weight: 3, arbitrary: fc.constant([] as Mutation[]) }, { weight: 2, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) }),
    textAttackArb,
    contentTypeArb,
  )
  .map(([record, canonicalization, algorithm, ms, a, ct]) => {
    const body: Obj = { record: record as any, canonicalization };
    if (algorithm !== undefined) body.algorithm = algorithm;
    const c = shaped('/v1/digest', body, ms, a, ct, 'digest/structured');
    // A record jsonValue made may hold a number of integral value outside ±(2^53-1), which
    // JSON.stringify writes as a long integer literal or, from 1e21 up, with an exponent (not I-JSON).
    c.mustSucceed = c.mustSucceed && !/\d{16}|\de\+/.test(String(c.payload));
    return c;
  });

const interceptorStructured: fc.Arbitrary<Case> = fc
  .tuple(resultArb(), mutationsOften, textAttackArb, contentTypeArb)
  .map(([result, ms, a, ct]) => {
    const resolved = buildRequest({ result, records: [{ class: 'confidential' }], withEvidence: false }).result!;
    return shaped(INTERCEPTOR, resolved, ms, a, ct, 'interceptor/structured');
  });

/** Hand-picked boundaries: nesting around both limits, at several places, on every route. */
function boundaryCases(): Case[] {
  const out: Case[] = [];
  const add = (route: Route, payload: string | Buffer, label: string, contentType: string | undefined = 'application/json') =>
    out.push({ route, payload, contentType, label, mustSucceed: false });
  for (const route of ['/v1/evaluate', '/v1/validate', INTERCEPTOR] as const) {
    for (const d of [126, 127, 128, 129, 253, 254, 255, 256, 257, 10_000, 100_000]) {
      for (const obj of [false, true]) {
        const inner = deep(d, obj);
        const result = `{"content":[],"structuredContent":${inner}}`;
        add(route, route === INTERCEPTOR ? result : `{"result":${result}}`, `boundary depth ${d} in structuredContent`);
        add(route, route === INTERCEPTOR ? `{"content":[{"type":"text","text":"x","_meta":{"a":${inner}}}]}` : `{"result":{"content":[{"type":"text","text":"x","_meta":{"a":${inner}}}]}}`, `boundary depth ${d} in block _meta`);
        if (route === '/v1/evaluate') {
          add(route, `{"result":{"content":[]},"context":{"a":${inner}}}`, `boundary depth ${d} in context`);
          add(route, `{"result":{"content":[]},"evidence":[{"digest":"sha256:${'0'.repeat(64)}","record":${inner}}]}`, `boundary depth ${d} in an evidence record`);
        }
      }
    }
  }
  for (const d of [127, 128, 129, 255, 256, 257, 50_000]) {
    add('/v1/digest', `{"record":${deep(d)},"canonicalization":"cbor/rfc8949"}`, `digest depth ${d}`);
    add('/v1/digest', `{"record":${deep(d, true)},"canonicalization":"jcs/rfc8785","algorithm":"sha512"}`, `digest depth ${d} (objects)`);
  }
  for (const d of [126, 127, 128, 129, 253, 254, 255, 256, 257, 10_000]) {
    add('/v1/evaluate-call', `{"call":{"name":"x","arguments":{"a":${deep(d, true)}}},"tool":{"name":"x","inputSchema":${deep(d, true)}}}`, `evaluate-call depth ${d}`);
  }
  add('/v1/evaluate-call', '{"call":{"name":"x"},"tool":{"name":"x","description":"\\ud800"}}', 'evaluate-call: a lone surrogate in the pinned definition');
  for (const route of ['/v1/evaluate', '/v1/validate', '/v1/digest', INTERCEPTOR, '/v1/evaluate-call'] as const) {
    add(route, '', 'empty body');
    add(route, '', 'empty body, no content type', undefined);
    add(route, ' ', 'blank body');
    add(route, 'null', 'null');
    add(route, '[]', 'an array');
    add(route, '"\\ud800"', 'a lone surrogate string');
    add(route, Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), 'BOM + {}');
    add(route, Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), 'UTF-16 LE {}', 'application/json; charset=utf-16');
    add(route, '{"a":1,"a":2}', 'repeated member at top');
    add(route, `{"content":[${new Array(10_001).fill('{"type":"text","text":""}').join(',')}]}`, '10001 blocks at top');
    add(route, `{"result":{"content":[${new Array(10_001).fill('{"type":"text","text":""}').join(',')}]}}`, '10001 blocks');
    add(route, `{"result":{"content":[]},"evidence":[${new Array(1001).fill('{"record":1}').join(',')}]}`, '1001 evidence entries');
    add(route, `{"result":{"content":[{"type":"text","text":"${'x'.repeat(DEFAULT_BODY_LIMIT)}"}]}}`, 'over the body limit');
    add(route, '{"__proto__":{"polluted":true},"result":{"content":[]}}', '__proto__ at top');
    add(route, '{"constructor":{"prototype":{"polluted":true}},"result":{"content":[]}}', 'constructor.prototype at top');
  }
  return out;
}

async function send(t: TestApp, c: Case): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (c.contentType !== undefined) headers['content-type'] = c.contentType;
  const r = await t.app.inject({ method: 'POST', url: c.route, payload: c.payload, headers });
  count(c.route);
  bytesSent += Buffer.byteLength(c.payload);
  return { status: r.statusCode, headers: r.headers, body: r.body };
}

/** What came back, per route: `200`, or the problem code. */
const outcomes = new Map<string, Map<string, number>>();
function tally(c: Case, a: Answer): void {
  let key = String(a.status);
  if (a.status >= 400) {
    try {
      key = String(JSON.parse(a.body).code);
    } catch {
      key = `${a.status} (no JSON)`;
    }
  } else if (c.route === INTERCEPTOR) {
    key = a.body.length === 0 ? '200 pass' : a.body.includes('"isError":true') ? '200 isError' : '200 replaced';
  }
  const m = outcomes.get(c.route) ?? new Map<string, number>();
  m.set(key, (m.get(key) ?? 0) + 1);
  outcomes.set(c.route, m);
}

function judge(c: Case, a: Answer, where: string): void {
  tally(c, a);
  const v = violation(c.route, a, registry) ?? (c.mustSucceed && a.status !== 200 ? `a valid request was answered ${a.status}: ${a.body.slice(0, 300)}` : undefined);
  if (v !== undefined) {
    const shown = typeof c.payload === 'string' ? c.payload.slice(0, 400) : `<${c.payload.length} bytes> ${c.payload.subarray(0, 200).toString('hex')}`;
    throw new Error(`${where} ${c.route} [${c.label}]: ${v}\n  body sent: ${shown}`);
  }
}

// ------------------------------------------------------------ raw HTTP

const GOOD_BODY = '{"result":{"content":[{"type":"text","text":"hi"}]}}';

const rawHttpArb = fc
  .record({
    route: fc.constantFrom<Route>('/v1/evaluate', '/v1/validate', '/v1/digest', INTERCEPTOR),
    target: fc.constantFrom('', '', '', 'absolute', 'star', 'encoded', 'space', 'long'),
    version: fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', ''),
    headers: fc.subarray(['dupCL', 'CLTE', 'badName', 'badValue', 'noHost', 'obsFold', 'bigHeader', 'negCL', 'hexCL', 'teIdentity', 'nul', 'expectOther', 'dupHost', 'badHost', 'gzip'], { maxLength: 1 }),
    // (CONNECT asks for a tunnel: answered by the server before any route.)
    method: fc.constantFrom('POST', 'POST', 'POST', 'CONNECT'),
    body: fc.constantFrom('good', 'good', 'chunked', 'badChunk', 'shortCL', 'longCL', 'none'),
  })
  .map((r) => {
    let target: string = r.route;
    if (r.target === 'absolute') target = `http://127.0.0.1${r.route}`;
    else if (r.target === 'star') target = '*';
    else if (r.target === 'encoded') target = r.route.replace('/v1/', '/v1/%2e%2e/v1/');
    else if (r.target === 'space') target = `${r.route} x`;
    else if (r.target === 'long') target = `${r.route}?q=${'a'.repeat(20_000)}`;
    const lines = [`${r.method} ${r.method === 'CONNECT' ? '127.0.0.1:443' : target} ${r.version}`.trimEnd()];
    const h = new Set(r.headers);
    if (!h.has('noHost')) lines.push(h.has('badHost') ? 'Host: a b' : 'Host: 127.0.0.1');
    lines.push('Content-Type: application/json');
    let body = GOOD_BODY;
    if (r.body === 'chunked' || r.body === 'badChunk') {
      lines.push('Transfer-Encoding: chunked');
      body = r.body === 'chunked' ? `${GOOD_BODY.length.toString(16)}\r\n${GOOD_BODY}\r\n0\r\n\r\n` : `zz\r\n${GOOD_BODY}\r\n0\r\n\r\n`;
    } else if (r.body === 'shortCL') lines.push(`Content-Length: ${GOOD_BODY.length - 10}`);
    else if (r.body === 'longCL') lines.push(`Content-Length: ${GOOD_BODY.length + 10}`);
    else if (r.body === 'good') lines.push(`Content-Length: ${GOOD_BODY.length}`);
    else body = '';
    if (h.has('dupCL')) lines.push('Content-Length: 3');
    if (h.has('CLTE')) lines.push('Transfer-Encoding: chunked');
    if (h.has('badName')) lines.push('Bad Name: x');
    if (h.has('badValue')) lines.push('X-Value: a\x01b');
    if (h.has('obsFold')) lines.push('X-Fold: a', ' b');
    if (h.has('bigHeader')) lines.push(`X-Big: ${'b'.repeat(17_000)}`);
    if (h.has('negCL')) lines.push('Content-Length: -1');
    if (h.has('hexCL')) lines.push('Content-Length: 0x10');
    if (h.has('teIdentity')) lines.push('Transfer-Encoding: identity');
    if (h.has('nul')) lines.push('X-Nul: a\u0000b');
    if (h.has('expectOther')) lines.push('Expect: something-else');
    if (h.has('dupHost')) lines.push('Host: 127.0.0.2');
    if (h.has('gzip')) lines.push('Content-Encoding: gzip');
    lines.push('Connection: close');
    // A head that names its host twice or no host, or a body in a content coding, is never taken.
    const refused = h.has('dupHost') || h.has('badHost') || h.has('gzip');
    // (A target that names no route, `*`, `/v1/%2e%2e/...`, or none the parser reads, is answered as no route's.)
    const routed = r.method !== 'CONNECT' && (r.target === '' || r.target === 'absolute' || r.target === 'long');
    return { route: r.route, routed, refused, text: Buffer.from(lines.join('\r\n') + '\r\n\r\n' + body, 'latin1') };
  });

/** Write the bytes, half-close, and collect whatever comes back until the server closes (or 5 s pass). */
function exchange(port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(bytes);
      socket.end();
    });
    const done = () => resolve(Buffer.concat(chunks));
    const timer = setTimeout(() => {
      socket.destroy();
      done();
    }, 5000);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      done();
    });
  });
}

/** Split a byte stream into HTTP/1.1 responses (Content-Length framing, which every answer here uses). */
function parseResponses(buf: Buffer): Answer[] {
  const out: Answer[] = [];
  let at = 0;
  while (at < buf.length) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) throw new Error(`truncated response head: ${buf.subarray(at, at + 200).toString('latin1')}`);
    const head = buf.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '');
    if (!m) throw new Error(`not an HTTP response: ${head[0]}`);
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const c = line.indexOf(':');
      headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    const len = Number(headers['content-length'] ?? 0);
    const body = buf.subarray(end + 4, end + 4 + len).toString('utf8');
    out.push({ status: Number(m[1]), headers, body });
    at = end + 4 + len;
  }
  return out;
}

/**
 * Heap in use once the garbage collector has had its chance: forced when V8
 * lets a collection be requested at run time (the process was not started
 * with --expose-gc), else the lowest of a few readings some time apart.
 */
async function settledHeap(): Promise<{ bytes: number; forced: boolean }> {
  let gc: (() => void) | undefined;
  try {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  } catch {
    gc = undefined;
  }
  const readings: number[] = [];
  for (let i = 0; i < 6; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, gc ? 40 : 250));
    readings.push(process.memoryUsage().heapUsed);
  }
  return { bytes: Math.min(...readings), forced: gc !== undefined };
}

describe('hostile input through the real HTTP layer', () => {
  let t: TestApp;
  let before: string[];
  let warm = { bytes: 0, forced: false };
  const started = Date.now();

  beforeAll(async () => {
    before = prototypeSnapshot();
    // Overload protection answers 503 when the event loop lags, which a
    // loaded test machine can cause at any time; it is not what this suite
    // judges (test/http/overload.test.ts does), so it is off here.
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(async () => {
    await t?.close();
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    console.log(
      `hostile fuzz: ${total} requests in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        [...counts.entries()].map(([k, v]) => `${k}: ${v}`).join(', ') +
        ` (base seed ${BASE}); ${(bytesSent / 1048576).toFixed(0)} MB of bodies through inject()`,
    );
    for (const [route, m] of outcomes) {
      console.log(`  ${route}: ` + [...m.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', '));
    }
  });

  async function batches(name: string, arb: fc.Arbitrary<Case>, n: number, size: number, offset: number): Promise<void> {
    for (let b = 0; b < n; b++) {
      const seed = BASE + offset + b;
      let i = 0;
      await fc.assert(
        fc.asyncProperty(arb, async (c) => {
          const a = await send(t, c);
          judge(c, a, `[${name} seed ${seed} batch ${b} case ${i++}]`);
        }),
        { seed, numRuns: size, endOnFailure: true },
      );
      await afterBatch(`${name} seed ${seed} batch ${b}`);
    }
  }

  async function afterBatch(where: string): Promise<void> {
    const h = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(h.statusCode, `${where}: /healthz after the batch`).toBe(200);
    expect(pollutionCheck(before), `${where}: prototypes after the batch`).toBeUndefined();
    const internal = t.logs.filter((l) => l.includes('"msg":"unhandled error"'));
    expect(internal, `${where}: internal errors logged`).toEqual([]);
  }

  it('hand-picked boundaries: depth limits, block and evidence limits, empty and odd bodies', async () => {
    const cases = boundaryCases();
    for (let i = 0; i < cases.length; i++) judge(cases[i]!, await send(t, cases[i]!), `[boundary case ${i}]`);
    await afterBatch('boundaries');
    warm = await settledHeap();
  }, 60_000);

  it('/v1/evaluate: mutated valid requests', () => batches('evaluate/structured', evaluateStructured, 8, 400, 0), 120_000);
  it('/v1/evaluate: random JSON', () => batches('evaluate/random', randomFor('/v1/evaluate', (v) => ({ result: v })), 3, 300, 100), 60_000);
  it('/v1/validate: mutated valid requests and random JSON', async () => {
    await batches('validate/structured', validateStructured, 4, 300, 200);
    await batches('validate/random', randomFor('/v1/validate', (v) => ({ result: v })), 2, 250, 300);
  }, 60_000);
  it('/v1/digest: records of every kind, both schemes, every algorithm, mutated', async () => {
    await batches('digest/structured', digestStructured, 5, 300, 400);
    await batches('digest/random', randomFor('/v1/digest', (v) => ({ record: v, canonicalization: 'jcs/rfc8785' })), 2, 250, 500);
  }, 60_000);
  it('/v1/evaluate-call: mutated valid requests and random JSON', async () => {
    await batches('evaluate-call/structured', evaluateCallStructured, 4, 300, 800);
    await batches('evaluate-call/random', randomFor('/v1/evaluate-call', (v) => ({ call: v })), 2, 250, 900);
  }, 60_000);
  it('/v1/interceptors/docker-mcp-gateway: mutated results and random JSON', async () => {
    await batches('interceptor/structured', interceptorStructured, 5, 300, 600);
    await batches('interceptor/random', randomFor(INTERCEPTOR, (v) => ({ content: v })), 2, 250, 700);
  }, 60_000);

  /** Port of the app once it listens on 127.0.0.1. */
  async function listening(): Promise<number> {
    if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.server.address();
    return typeof addr === 'object' && addr ? addr.port : 0;
  }

  it('through a listening socket (Node HTTP parser, fetch): every route', async () => {
    const base = `http://127.0.0.1:${await listening()}`;
    const arb = fc.oneof(evaluateStructured, validateStructured, digestStructured, interceptorStructured, randomFor('/v1/evaluate', (v) => ({ result: v })));
    const seed = BASE + 900;
    let i = 0;
    await fc.assert(
      fc.asyncProperty(arb, async (c) => {
        const headers: Record<string, string> = {};
        if (c.contentType !== undefined) headers['content-type'] = c.contentType;
        const r = await fetch(base + c.route, { method: 'POST', headers, body: c.payload });
        const body = await r.text();
        count(`socket ${c.route}`);
        judge(c, { status: r.status, headers: Object.fromEntries(r.headers), body }, `[socket seed ${seed} case ${i++}]`);
      }),
      { seed, numRuns: 500, endOnFailure: true },
    );
    const h = await fetch(base + '/healthz');
    expect(h.status).toBe(200);
    expect(pollutionCheck(before)).toBeUndefined();
  }, 90_000);

  it('raw HTTP/1.1 the parser must refuse: framing, headers, request targets', async () => {
    const port = await listening();
    const seed = BASE + 950;
    let i = 0;
    await fc.assert(
      fc.asyncProperty(rawHttpArb, async (raw) => {
        const where = `[raw http seed ${seed} case ${i++}] ${JSON.stringify(raw.text.toString('latin1').slice(0, 300))}`;
        const answers = parseResponses(await exchange(port, raw.text));
        count(`raw ${raw.route}`);
        if (answers.length === 0) tally({ route: 'raw' as Route } as Case, { status: 0, headers: {}, body: 'closed' });
        for (const a of answers) {
          tally({ route: 'raw' as Route } as Case, a);
          // Requests the parser refuses, or whose target names no route, never reach the route sent to.
          let code = '';
          try {
            code = String(JSON.parse(a.body).code);
          } catch {
            code = '';
          }
          const route = !raw.routed || /^TG_ERR_(HTTP_|ROUTE_NOT_FOUND)/.test(code) ? '/v1/evaluate' : raw.route;
          const v = violation(route, a, registry);
          if (v !== undefined) throw new Error(`${where}: ${v}`);
          // (The Docker MCP Gateway's route renders a refusal as the result it forwards: withheld, `isError`, naming
          // the problem's code, with 200, as the gateway forwards what it is answered.)
          const withheld = raw.routed && raw.route === INTERCEPTOR && a.status === 200 && /"isError":true/.test(a.body) && /\(TG_ERR_(HTTP_MALFORMED|MEDIA_TYPE)\)/.test(a.body);
          if (raw.refused && a.status < 300 && !withheld) throw new Error(`${where}: taken (${a.status})`);
        }
      }),
      { seed, numRuns: 240, endOnFailure: true },
    );
    const h = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(h.status).toBe(200);
  }, 60_000);

  it('a result-scope redact or drop withholds the content, whatever shape `content` has', async () => {
    const SECRET = 'SECRET-4f1d';
    const dir = mkdtempSync(join(tmpdir(), 'trustgate-withhold-'));
    writeFileSync(
      join(dir, 'withhold.yaml'),
      ['id: withhold', 'mode: enforce', 'rules:', '  - id: all', '    scope: result', '    when: "true"', '    effect: redact', ''].join('\n'),
    );
    writeFileSync(
      join(dir, 'withhold-drop.yaml'),
      ['id: withhold-drop', 'mode: enforce', 'rules:', '  - id: all', '    scope: result', '    when: has(context.drop)', '    effect: drop', ''].join('\n'),
    );
    const w = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' }, dir);
    const block = { type: 'text', text: SECRET };
    const contentArb = fc.constantFrom<unknown>([block], { 0: block }, block, SECRET, [[block]], { content: [block] }, [SECRET]);
    const seed = BASE + 960;
    let i = 0;
    try {
      await fc.assert(
        fc.asyncProperty(contentArb, fc.boolean(), fc.boolean(), async (content, structured, drop) => {
          const where = `[withhold seed ${seed} case ${i++}] content ${JSON.stringify(content)}${drop ? ' (drop)' : ''}`;
          const result: Record<string, unknown> = { content };
          if (structured) result.structuredContent = { s: SECRET };
          const e = await w.app.inject({ method: 'POST', url: '/v1/evaluate', payload: JSON.stringify({ result, ...(drop ? { context: { drop: true } } : {}) }), headers: { 'content-type': 'application/json' } });
          expect(e.statusCode, where).toBe(200);
          const d = JSON.parse(e.body);
          expect(d.findings.map((f: any) => f.rule), where).toContain('all');
          expect(Array.isArray(d.result.content), `${where}: forwarded content is an array`).toBe(true);
          expect(JSON.stringify(d.result).includes(SECRET), `${where}: the forwarded result still holds the content`).toBe(false);
          if (drop) return;
          const r = await w.app.inject({ method: 'POST', url: INTERCEPTOR, payload: JSON.stringify(result), headers: { 'content-type': 'application/json' } });
          expect(violation(INTERCEPTOR, { status: r.statusCode, headers: r.headers, body: r.body }, registry), where).toBeUndefined();
          expect(r.body.length, `${where}: the interceptor passed the original through`).toBeGreaterThan(0);
          expect(r.body.includes(SECRET), `${where}: the interceptor answer holds the content`).toBe(false);
        }),
        { seed, numRuns: 60, endOnFailure: true },
      );
    } finally {
      await w.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('shapes that once cost more than linear, on every route that scans: answers within 10 x the request + 64 KiB, log lines whole and within 64 KiB', async () => {
    // Long names over repeated names, unsafe numbers in every notation under long paths, many
    // findings from tiny blocks (contract section 8; a decision line is summarized, section 9).
    // The Docker route names no tool, so the shipped open-world label would replace every result: the scan's
    // verdicts are read under the shipped set less that label (test/helpers/closed-world.ts).
    // The verdicts read below are the scan's at these sizes, not the decision deadline's (a cold 360 KB shape takes
    // some 160 to 190 ms on an idle 2-CPU machine, past the default budget's nine tenths under a loaded test run, and
    // is then withheld whole: test/http/detection-deadline.test.ts holds that): the budget is set past any run's time.
    const a = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '10000' }, shippedWithoutOpenWorldLabel());
    const seed = BASE + 970;
    let i = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...SHAPE_ROUTES), shapeArb, async (route, shape) => {
          const { path, text } = shapeRequest(route, shape);
          const where = `[shapes seed ${seed} case ${i++}] ${route} ${JSON.stringify(shape)} (${text.length} bytes)`;
          a.logs.length = 0;
          const r = await a.app.inject({ method: 'POST', url: path, payload: text, headers: { 'content-type': 'application/json' } });
          count(`shapes ${route}`);
          bytesSent += text.length;
          expect(violation(path, { status: r.statusCode, headers: r.headers, body: r.body }, registry), where).toBeUndefined();
          expect(answerWithoutResult(path, r.body), `${where}: answer size`).toBeLessThanOrEqual(answerBound(text.length));
          for (const line of a.logs) {
            expect(Buffer.byteLength(line), `${where}: log line size`).toBeLessThanOrEqual(LOG_LINE_LIMIT);
            expect(() => JSON.parse(line), `${where}: log line`).not.toThrow();
          }
          if (shape.kind === 'manyFindings') return;
          // The scan's verdicts still hold at these sizes.
          const j = r.body === '' ? undefined : JSON.parse(r.body);
          if (route === '/v1/digest') expect(j.code, where).toBe('TG_ERR_RECORD_NOT_IJSON');
          if (route === '/v1/evaluate') expect(j.evidence.map((e: any) => e.status), where).toEqual(['malformed']);
          if (route === '/v1/evaluate#omit') expect(j.resultOmitted === true, where).toBe(shape.kind !== 'longOverRepeats' || shape.repeats < 2);
          if (route === INTERCEPTOR) expect(r.body.length > 0, where).toBe(shape.kind === 'longOverRepeats');
        }),
        { seed, numRuns: 150, endOnFailure: true },
      );
    } finally {
      await a.close();
    }
  }, 120_000);

  it('no built-in prototype changed, and the heap stayed bounded', async () => {
    expect(pollutionCheck(before)).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort().join(',')).toBe(before[0]);
    expect(({} as any).polluted).toBeUndefined();
    // The bound. After warm-up (app, compiled schemas and policies,
    // fast-check, the few hundred boundary requests) the heap is measured; at the end it must not
    // exceed it by more than the larger of 64 MB and half of it when a
    // collection could be forced. The run sends over 10,000 requests and
    // hundreds of MB of bodies (up to ~1 MB each): retaining 10 KB per
    // request, a fraction of a typical body or decision, would add 100 MB
    // and fail. Without a forced collection, garbage not yet collected is
    // indistinguishable from a leak, so the bound falls back to 3x the
    // warm-up heap plus 200 MB, which still catches keeping whole bodies.
    const end = await settledHeap();
    const MB = 1024 * 1024;
    const bound = end.forced && warm.forced ? warm.bytes + Math.max(64 * MB, warm.bytes / 2) : 3 * warm.bytes + 200 * MB;
    console.log(
      `heap after warm-up ${(warm.bytes / MB).toFixed(1)} MB, at the end ${(end.bytes / MB).toFixed(1)} MB, ` +
        `bound ${(bound / MB).toFixed(1)} MB (collection ${end.forced ? 'forced' : 'not forced'})`,
    );
    expect(warm.bytes).toBeGreaterThan(0);
    expect(end.bytes).toBeLessThan(bound);
  }, 30_000);
});
