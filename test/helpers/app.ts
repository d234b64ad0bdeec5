/** Build the real app for inject() tests, with its log lines captured. */
import type { SessionStore } from '../../src/session/store.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/config.js';
import { loggerOptions } from '../../src/logger.js';
import { PolicyStore } from '../../src/policy/reload.js';

export const SHIPPED_POLICIES = fileURLToPath(new URL('../../policies', import.meta.url));
export const FIXTURE_POLICIES = fileURLToPath(new URL('../fixtures/policies', import.meta.url));

export interface TestApp {
  app: FastifyInstance;
  /** Every log line written so far, raw. */
  logs: string[];
  close(): Promise<void>;
}

/** The app over the real routes; `sessions` is a store the caller owns (and closes), the app's own memory store otherwise. */
export async function testApp(env: Record<string, string> = {}, policyDir = SHIPPED_POLICIES, sessions?: SessionStore): Promise<TestApp> {
  const config = loadConfig({ TRUSTGATE_POLICY_DIR: policyDir, LOG_LEVEL: 'info', ...env });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const logger = pino(loggerOptions(config.logLevel), sink);
  const store = new PolicyStore(config.policyDir, undefined, config.serversFile);
  await store.load();
  const app = await buildApp({ config, store, logger, ...(sessions ? { sessions } : {}) });
  await app.ready();
  return { app, logs, close: () => app.close() };
}

/** POST JSON through the real routes. */
export async function post(app: FastifyInstance, url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return answerOf(res);
}

/** Status, headers, raw body and the body parsed as JSON (undefined when empty or not JSON) of an inject() response. */
export function answerOf<R extends { statusCode: number; headers: unknown; body: string }>(res: R) {
  let json: any;
  try {
    json = res.body.length > 0 ? JSON.parse(res.body) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers as R['headers'], body: res.body, json };
}

/** Every route of an app as method and path, read from Fastify's own route tree (`printRoutes`). */
export function routesOf(app: FastifyInstance): Array<{ method: string; url: string }> {
  const out: Array<{ method: string; url: string }> = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (m === null) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const url = (stack[depth - 1] ?? '') + m[2]!;
    stack.push(url);
    for (const method of (m[3] ?? '').split(', ').filter(Boolean)) out.push({ method, url });
  }
  return out;
}

/**
 * A TRUSTGATE_SERVERS file whose `"*"` entry believes every server's hints
 * (docs/behaviour/operator.md): for tests about what a declared hint does,
 * not about whether it is believed. Written once per process.
 */
let believing: string | undefined;
export function believingServersFile(): string {
  if (believing === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'tg-servers-'));
    believing = join(dir, 'servers.json');
    writeFileSync(believing, JSON.stringify({ '*': { hints: 'declared' } }));
  }
  return believing;
}
