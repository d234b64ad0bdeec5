/**
 * Sessions and pins over HTTP (contract section 12): TTL, the pin
 * endpoints, auth on the new routes, the pre-call decision log line
 * (argument names, never values), the metrics, and path parameters that
 * cannot be read.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/config.js';
import { PolicyStore } from '../../src/policy/reload.js';
import { MemorySessionStore } from '../../src/session/memory.js';
import { answerOf, post, SHIPPED_POLICIES, testApp, type TestApp, believingServersFile } from '../helpers/app.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const untrusted = { content: [{ type: 'text', text: 'x', _meta: { [K]: { untrusted: true } } }] };
const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const a of opened.splice(0)) await a.close();
});

async function appWith(sessions: MemorySessionStore, env: Record<string, string> = {}) {
  // No event-loop shedding: these tests are about sessions and pins, on machines of any load.
  const config = loadConfig({ TRUSTGATE_POLICY_DIR: SHIPPED_POLICIES, LOG_LEVEL: 'silent', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_SERVERS: believingServersFile(), ...env });
  const store = new PolicyStore(config.policyDir, undefined, config.serversFile);
  await store.load();
  const app = await buildApp({ config, store, sessions, logger: pino({ level: 'silent' }) });
  opened.push(app);
  return app;
}

describe('session TTL: never forgotten silently', () => {
  it('a session lives TRUSTGATE_SESSION_TTL after its last use, then reads as forgotten (untrusted, sensitive), and an ended one too: never clean', async () => {
    let now = 1_000_000;
    const sessions = new MemorySessionStore({ maxSessions: 10, maxPins: 10, ttlMs: 60_000, now: () => now });
    const app = await appWith(sessions);
    expect(app.trustgate.sessions).toBe(sessions);
    const first = await post(app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'public' }] }, tool: { name: 'read', annotations: { openWorldHint: false } }, session: { id: 's' } });
    expect(first.json.session).toMatchObject({ forgotten: false, untrusted: false, sensitive: false });
    now += 59_000;
    // A use within the TTL keeps it alive for another TTL.
    expect(answerOf(await app.inject({ method: 'GET', url: '/v1/sessions/s' })).json).toMatchObject({ forgotten: false, results: 1 });
    now += 60_001;
    // The TTL ran out (a host that paused longer than the TTL): never clean, the write asks first.
    const shown = answerOf(await app.inject({ method: 'GET', url: '/v1/sessions/s' }));
    expect(shown.status).toBe(200);
    expect(shown.json).toMatchObject({ id: 's', forgotten: true, untrusted: true, sensitive: true, calls: 0, results: 0 });
    const call = await post(app, '/v1/evaluate-call', { call: { name: 'send' }, session: { id: 's' } });
    expect(call.json.requiresConsent).toBe(true);
    expect(call.json.session).toMatchObject({ forgotten: true, untrusted: true, sensitive: true, calls: 1 });
    // However long the host goes on using it, it stays forgotten.
    for (let i = 0; i < 3; i++) {
      now += 59_000;
      expect((await post(app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'x' }] }, session: { id: 's' } })).json.session).toMatchObject({ forgotten: true, untrusted: true });
    }
    // The host ends it: never clean, the id reads as forgotten for one more TTL and a write still asks.
    expect((await app.inject({ method: 'DELETE', url: '/v1/sessions/s' })).statusCode).toBe(204);
    const ended = await post(app, '/v1/evaluate-call', { call: { name: 'send' }, session: { id: 's' } });
    expect(ended.json.session).toMatchObject({ forgotten: true, untrusted: true, calls: 1, results: 0 });
    expect(ended.json.requiresConsent).toBe(true);
    // Unused for two TTLs: the id is not held any more.
    now += 120_001;
    expect(answerOf(await app.inject({ method: 'GET', url: '/v1/sessions/s' })).json.code).toBe('TG_ERR_SESSION_NOT_FOUND');
  });

  it('the default store is built from TRUSTGATE_SESSION_TTL and TRUSTGATE_MAX_SESSIONS: past the bound a new session is 503 TG_ERR_SESSION_STORE_FULL (counted), none is evicted', async () => {
    const config = loadConfig({ TRUSTGATE_POLICY_DIR: SHIPPED_POLICIES, LOG_LEVEL: 'silent', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_MAX_SESSIONS: '2', TRUSTGATE_SESSION_TTL: '30' });
    expect(config).toMatchObject({ sessionStore: 'memory', sessionTtlSeconds: 30, maxSessions: 2 });
    const store = new PolicyStore(config.policyDir, undefined, config.serversFile);
    await store.load();
    const app = await buildApp({ config, store, logger: pino({ level: 'silent' }) });
    opened.push(app);
    for (const id of ['a', 'b']) expect((await post(app, '/v1/evaluate', { result: untrusted, session: { id } })).status).toBe(200);
    for (const url of ['/v1/evaluate', '/v1/evaluate-call']) {
      const full = await post(app, url, url === '/v1/evaluate' ? { result: untrusted, session: { id: 'c' } } : { call: { name: 'send' }, session: { id: 'c' } });
      expect(full.status).toBe(503);
      expect(full.json).toMatchObject({ code: 'TG_ERR_SESSION_STORE_FULL', type: 'urn:trustgate:problem:TG_ERR_SESSION_STORE_FULL', status: 503 });
      expect(full.headers['retry-after']).toBe('1');
    }
    // The live sessions go on, labels intact.
    expect(answerOf(await app.inject({ method: 'GET', url: '/v1/sessions/a' })).json).toMatchObject({ untrusted: true, forgotten: false });
    // Session b's values are intact too: a call carrying what its untrusted result showed asks first.
    expect((await post(app, '/v1/evaluate-call', { call: { name: 'send', arguments: { to: 'x' } }, session: { id: 'b' } })).json.requiresConsent).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/v1/sessions/c' })).statusCode).toBe(404);
    // A request without a session is still judged.
    expect((await post(app, '/v1/evaluate', { result: untrusted })).status).toBe(200);
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^trustgate_sessions_refused_total 2$/m);
    // 503s are no decisions made: one per answered /v1/evaluate (two with a session, one without).
    expect(metrics).toMatch(/^trustgate_decisions_total\{outcome="allow"\} 3$/m);
  });
});

describe('the tool judged is the tool called', () => {
  it('/v1/evaluate-call with tool.name other than call.name is a 400 pointing at /tool/name, whatever the names', async () => {
    const app = await appWith(new MemorySessionStore({ maxSessions: 10, maxPins: 10, ttlMs: 60_000 }));
    for (const [call, tool] of [
      ['delete_all', 'read_file'],
      ['read_file', 'Read_file'],
      ['read_file', 'read_file '],
      ['a', 1],
      ['a', null],
    ] as const) {
      const r = await post(app, '/v1/evaluate-call', { call: { name: call }, tool: { name: tool, annotations: { readOnlyHint: true } } });
      expect(r.status).toBe(400);
      expect(r.json.code).toBe('TG_ERR_BODY_SCHEMA');
      expect(JSON.stringify(r.json.errors)).toContain('/tool/name');
    }
    // Nothing was pinned for the pair of the refused requests.
    expect(answerOf(await app.inject({ method: 'GET', url: '/v1/pins?tool=read_file' })).status).toBe(404);
    expect((await post(app, '/v1/evaluate-call', { call: { name: 'read_file' }, tool: { name: 'read_file' } })).status).toBe(200);
  });
});

describe('pins are never evicted', () => {
  it('past TRUSTGATE_MAX_PINS a new pin is refused: pin "unavailable", the call denied by the shipped policy, counted; an operator cannot add one either', async () => {
    const app = await appWith(new MemorySessionStore({ maxSessions: 10, maxPins: 2, ttlMs: 60_000 }));
    const call = (name: string, description = 'v1') => post(app, '/v1/evaluate-call', { call: { name }, tool: { name, description, annotations: { readOnlyHint: true } }, server: { name: 'fs' } });
    expect((await call('a')).json.tool.pin).toBe('first-seen');
    expect((await call('b')).json.tool.pin).toBe('first-seen');
    const refused = await call('c');
    expect(refused.json).toMatchObject({ outcome: 'deny', tool: { pin: 'unavailable' } });
    expect(refused.json.findings).toContainEqual(expect.objectContaining({ policy: 'session', rule: 'deny-unpinned-definition', effect: 'deny', applied: true }));
    // The pinned ones still hold: a changed definition of a is still caught.
    expect((await call('a')).json.tool.pin).toBe('match');
    expect((await call('a', 'v2')).json).toMatchObject({ outcome: 'deny', tool: { pin: 'changed' } });
    const put = answerOf(await app.inject({ method: 'PUT', url: '/v1/pins', payload: { server: 'fs', tool: 'c', digest: 'sha256:' + 'a'.repeat(64) } }));
    expect(put.status).toBe(503);
    expect(put.json.code).toBe('TG_ERR_SESSION_STORE_FULL');
    const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^trustgate_pins_refused_total 1$/m);
    expect(metrics).toMatch(/^trustgate_tool_pins_total\{status="unavailable"\} 1$/m);
  });
});

describe('pins', () => {
  it('GET /v1/pins shows a pin (404 TG_ERR_PIN_NOT_FOUND before one exists); PUT replaces it and says what it replaced', async () => {
    const app = await appWith(new MemorySessionStore({ maxSessions: 10, maxPins: 10, ttlMs: 60_000 }));
    const none = answerOf(await app.inject({ method: 'GET', url: '/v1/pins?server=mail&tool=send' }));
    expect(none.status).toBe(404);
    expect(none.json.code).toBe('TG_ERR_PIN_NOT_FOUND');
    const first = await post(app, '/v1/evaluate-call', { call: { name: 'send' }, tool: { name: 'send', description: 'v1' }, server: { name: 'mail' } });
    const shown = answerOf(await app.inject({ method: 'GET', url: '/v1/pins?server=mail&tool=send' }));
    expect(shown.json).toEqual({ server: 'mail', tool: 'send', digest: first.json.tool.digest });
    const digest = 'sha256:' + 'a'.repeat(64);
    const put = answerOf(await app.inject({ method: 'PUT', url: '/v1/pins', payload: { server: 'mail', tool: 'send', digest } }));
    expect(put.json).toEqual({ server: 'mail', tool: 'send', digest, previous: first.json.tool.digest });
    // Without a server the pair is ("", tool).
    const noServer = await post(app, '/v1/evaluate-call', { call: { name: 'send' }, tool: { name: 'send' } });
    expect(answerOf(await app.inject({ method: 'GET', url: '/v1/pins?tool=send' })).json.digest).toBe(noServer.json.tool.digest);
    expect(answerOf(await app.inject({ method: 'GET', url: '/v1/pins?tool=send&extra=1' })).status).toBe(400);
  });
});

describe('routes', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('every new /v1 route needs the token when TRUSTGATE_TOKEN is set', async () => {
    t = await testApp({ TRUSTGATE_TOKEN: 'sekret' });
    const auth = { authorization: 'Bearer sekret' };
    for (const [method, url, payload] of [
      ['POST', '/v1/evaluate-call', { call: { name: 'x' } }],
      ['GET', '/v1/sessions/a', undefined],
      ['DELETE', '/v1/sessions/a', undefined],
      ['GET', '/v1/pins?tool=x', undefined],
      ['PUT', '/v1/pins', { tool: 'x', digest: 'sha256:' + '0'.repeat(64) }],
    ] as const) {
      const denied = await t.app.inject({ method, url, ...(payload ? { payload } : {}) });
      expect(denied.statusCode, `${method} ${url}`).toBe(401);
      const allowed = await t.app.inject({ method, url, headers: auth, ...(payload ? { payload } : {}) });
      expect(allowed.statusCode, `${method} ${url}`).not.toBe(401);
    }
  });

  it('logs a pre-call decision with the argument names and never their values', async () => {
    t = await testApp();
    const secret = 'patient-record-4471-SECRET';
    const r = await post(t.app, '/v1/evaluate-call', {
      call: { name: 'send_email', arguments: { to: secret, [`body`]: { nested: secret } } },
      tool: { name: 'send_email', description: 'mail' },
      server: { name: 'mail' },
      session: { id: 'conv-9' },
    });
    expect(r.status).toBe(200);
    const lines = t.logs.filter((l) => l.includes(r.json.decisionId)).map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'decision',
      kind: 'call',
      decisionId: r.json.decisionId,
      outcome: 'allow',
      call: 'send_email',
      arguments: ['to', 'body'],
      tool: 'send_email',
      server: 'mail',
      pin: 'first-seen',
      digest: r.json.tool.digest,
      session: 'conv-9',
    });
    expect(t.logs.join('')).not.toContain(secret);
    // A result decision names its session too.
    const e = await post(t.app, '/v1/evaluate', { result: { content: [] }, session: { id: 'conv-9' } });
    expect(JSON.parse(t.logs.find((l) => l.includes(e.json.decisionId))!)).toMatchObject({ msg: 'decision', session: 'conv-9' });
  });

  it('counts pre-call decisions by outcome and pin checks by status in /metrics', async () => {
    t = await testApp();
    const tool = { name: 'w', description: '1' };
    await post(t.app, '/v1/evaluate-call', { call: { name: 'w' }, tool });
    await post(t.app, '/v1/evaluate-call', { call: { name: 'w' }, tool });
    await post(t.app, '/v1/evaluate-call', { call: { name: 'w' }, tool: { ...tool, description: '2' } });
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/trustgate_call_decisions_total\{outcome="allow"\} 2/);
    expect(text).toMatch(/trustgate_call_decisions_total\{outcome="deny"\} 1/);
    expect(text).toMatch(/trustgate_tool_pins_total\{status="first-seen"\} 1/);
    expect(text).toMatch(/trustgate_tool_pins_total\{status="match"\} 1/);
    expect(text).toMatch(/trustgate_tool_pins_total\{status="changed"\} 1/);
  });

  it('a session id that does not decode, or is far too long, is a 400 problem+json that does not echo it', async () => {
    t = await testApp();
    for (const url of ['/v1/sessions/%E0%A4%A', `/v1/sessions/${'q'.repeat(5000)}`]) {
      const r = answerOf(await t.app.inject({ method: 'GET', url }));
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toContain('application/problem+json');
      expect(r.body).not.toContain('%E0');
      expect(r.body).not.toContain('qqqq');
    }
  });

  it('the Docker interceptor route reads and raises no session', async () => {
    t = await testApp();
    const r = await t.app.inject({ method: 'POST', url: '/v1/interceptors/docker-mcp-gateway', payload: { ...untrusted, session: { id: 'x' } } });
    expect(r.statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/v1/sessions/x' })).statusCode).toBe(404);
  });
});
