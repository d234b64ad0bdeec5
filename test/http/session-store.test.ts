/**
 * Fail closed on the session store (contract section 12), through the real
 * routes: a store that cannot be reached (a Redis URL where nothing
 * listens) makes every request that names a session, and every
 * /v1/evaluate-call, a 503 TG_ERR_SESSION_STORE_UNAVAILABLE, and /readyz
 * 503; a request that names no session is still judged.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/config.js';
import { createMetrics } from '../../src/metrics.js';
import { PolicyStore } from '../../src/policy/reload.js';
import { RedisSessionStore } from '../../src/session/redis.js';
import { SHIPPED_POLICIES } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

let app: FastifyInstance;
let sessions: RedisSessionStore;
const metrics = createMetrics(false);

beforeAll(async () => {
  // A port nothing listens on: every connection attempt is refused.
  const url = `redis://127.0.0.1:${await freePort()}`;
  const config = loadConfig({ TRUSTGATE_POLICY_DIR: SHIPPED_POLICIES, TRUSTGATE_SESSION_STORE: url, LOG_LEVEL: 'silent' });
  const store = new PolicyStore(config.policyDir);
  await store.load();
  sessions = new RedisSessionStore({ url, ttlMs: 60_000, commandTimeoutMs: 200, onError: (operation) => metrics.sessionStoreErrors.labels({ backend: 'redis', operation }).inc() });
  app = await buildApp({ config, store, metrics, sessions, logger: pino({ level: 'silent' }) });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  await sessions?.close();
});

const result = { content: [{ type: 'text', text: 'hello' }] };

describe('an unreachable session store', () => {
  it.each([
    ['POST', '/v1/evaluate', { result, session: { id: 'conv-1' } }],
    ['POST', '/v1/evaluate-call', { call: { name: 'read_file' }, tool: { name: 'read_file' } }],
    ['POST', '/v1/evaluate-call', { call: { name: 'read_file' }, tool: { name: 'read_file' }, server: { name: 'fs' }, session: { id: 'conv-1' } }],
    ['GET', '/v1/sessions/conv-1', undefined],
    ['DELETE', '/v1/sessions/conv-1', undefined],
  ])('%s %s answers 503 TG_ERR_SESSION_STORE_UNAVAILABLE', async (method, url, payload) => {
    const r = await app.inject({ method: method as 'POST', url, ...(payload ? { payload } : {}) });
    expect(r.statusCode).toBe(503);
    expect(r.headers['content-type']).toContain('application/problem+json');
    expect(r.headers['retry-after']).toBe('1');
    expect(r.json()).toMatchObject({ status: 503, code: 'TG_ERR_SESSION_STORE_UNAVAILABLE', type: 'urn:trustgate:problem:TG_ERR_SESSION_STORE_UNAVAILABLE' });
    // The store's own error (host, port) stays out of the answer.
    expect(r.body).not.toContain('127.0.0.1');
  });

  it('/readyz answers 503 while it lasts', async () => {
    const r = await app.inject({ method: 'GET', url: '/readyz' });
    expect(r.statusCode).toBe(503);
    expect(r.json().code).toBe('TG_ERR_SESSION_STORE_UNAVAILABLE');
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('fails closed on every pre-call decision, even one that names neither a tool definition nor a session', async () => {
    const r = await app.inject({ method: 'POST', url: '/v1/evaluate-call', payload: { call: { name: 'read_file' } } });
    expect(r.statusCode).toBe(503);
    expect(r.json().code).toBe('TG_ERR_SESSION_STORE_UNAVAILABLE');
  });

  it('still judges a result that names no session', async () => {
    const r = await app.inject({ method: 'POST', url: '/v1/evaluate', payload: { result } });
    expect(r.statusCode).toBe(200);
    expect(r.json().outcome).toBe('allow');
  });

  it('counts each failed operation by backend and operation', async () => {
    // Under the shipped policies no result rule reads `session`: a result's one operation is the merge.
    await app.inject({ method: 'POST', url: '/v1/evaluate', payload: { result, session: { id: 'conv-2' } } });
    await app.inject({ method: 'GET', url: '/v1/sessions/conv-2' });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^trustgate_session_store_errors_total\{backend="redis",operation="update"\} [1-9]/m);
    expect(text).toMatch(/^trustgate_session_store_errors_total\{backend="redis",operation="get"\} [1-9]/m);
  });
});
