/**
 * The authentication check (docs/operations/authentication.md). A route opts in by
 * listing `bearer` in its schema's `security` (src/wire/shared.ts's
 * v1Security), the same declaration the OpenAPI document shows. A request
 * that matches no route is checked too when its path starts as an opted-in
 * route's does (`/v1/...`), so an unknown path there tells nothing before
 * the token does.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ownerKey } from '../decision/core.js';
import { isRecord } from '../json/record.js';
import type { Metrics } from '../metrics.js';
import { ANONYMOUS, type PrincipalVar } from '../policy/cel/variables.js';
import { routeOf } from './auth.js';
import { sendProblem } from './error-handler.js';
import type { Authentication, RefusalReason } from './identity.js';
import type { Quotas } from './quota.js';

/** True when the route's schema asks for the bearer token (OpenAPI `security` listing `bearer`). */
export function routeTakesBearer(schema: { security?: unknown } | undefined): boolean {
  const security = schema?.security;
  return Array.isArray(security) && security.some((s) => typeof s === 'object' && s !== null && 'bearer' in s);
}

/** `/v1` of `/v1/evaluate`: the first segment of a path. */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return end < 0 ? path.split('?')[0]! : path.slice(0, end);
}

/** `WWW-Authenticate` of a 401 (RFC 6750): the scheme, and `invalid_token` when a token was sent. */
export function challenge(reason: RefusalReason, resourceMetadata?: string): string {
  const meta = resourceMetadata !== undefined ? `, resource_metadata="${resourceMetadata}"` : '';
  return reason === 'missing' ? `Bearer realm="trustgate"${meta}` : `Bearer realm="trustgate", error="invalid_token"${meta}`;
}

/**
 * Authentication and quotas on every route that opts in (routeTakesBearer)
 * and on requests that match no route under an opted-in route's first path
 * segment; call it before the routes are added. The request's `principal`
 * is set here (ANONYMOUS when nothing is configured). A route that reads
 * the token itself (`config.checksOwnToken`: the Docker gateway route also
 * takes it from the query) is left to do so, and to ask the quotas itself.
 * A refusal is 401 TG_ERR_AUTH_TOKEN with `WWW-Authenticate`, counted by
 * reason; a principal past a quota gets 429 TG_ERR_QUOTA_EXCEEDED with `Retry-After`.
 */
export function registerAuthentication(app: FastifyInstance, auth: Authentication, quotas: Quotas, metrics: Metrics): void {
  const prefixes = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (routeTakesBearer(route.schema as { security?: unknown } | undefined)) prefixes.add(firstSegment(route.url));
  });
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    // Every request has a principal: the anonymous one until a token names another.
    request.principal = ANONYMOUS;
    const options = request.routeOptions;
    const guarded = request.is404 ? prefixes.has(firstSegment(request.url)) : routeTakesBearer(options.schema as { security?: unknown } | undefined);
    if (!guarded || options.config?.checksOwnToken === true) return;
    const who = await auth.authenticate(request.headers.authorization);
    if (!who.ok) {
      metrics.authRefused.labels({ reason: who.reason }).inc();
      reply.header('www-authenticate', challenge(who.reason));
      return sendProblem(reply, { code: 'TG_ERR_AUTH_TOKEN', detail: who.detail });
    }
    request.principal = who.principal;
    if (request.is404) return;
    return admitByQuota(request, reply, quotas, metrics);
  });
  // The session quota, once the body says which session a request names (`session.id`, or the path's `{id}`); no hook while it is off.
  if (!quotas.countsSessions) return;
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!routeTakesBearer(request.routeOptions.schema as { security?: unknown } | undefined)) return;
    for (const id of sessionsNamed(request)) {
      const answer = await quotas.session(ownerKey(request.principal), id);
      if (answer.ok) continue;
      metrics.quotaRefused.labels({ reason: answer.reason }).inc();
      return refuseByQuota(request, reply, 'this principal names more sessions than its quota (TRUSTGATE_QUOTA_SESSIONS); the sessions it named go on', answer.retryAfterSeconds);
    }
  });
}

/**
 * The sessions a request names: the body's `session.id`, the path's `{id}`
 * of /v1/sessions/{id}, or on /mcp each `interceptor/invoke`'s
 * `context.sessionId` (a batch may name several).
 */
function sessionsNamed(request: FastifyRequest): string[] {
  const params = request.params as Record<string, unknown> | undefined;
  if (typeof params?.id === 'string' && request.routeOptions.url?.startsWith('/v1/sessions/')) return [params.id];
  const body: unknown = request.body;
  if (request.routeOptions.url === '/mcp') {
    const ids: string[] = [];
    for (const m of Array.isArray(body) ? body : [body]) {
      const sid = isRecord(m) && m.method === 'interceptor/invoke' && isRecord(m.params) && isRecord(m.params.context) ? m.params.context.sessionId : undefined;
      if (typeof sid === 'string') ids.push(sid);
    }
    return ids;
  }
  const id = isRecord(body) && isRecord(body.session) ? body.session.id : undefined;
  return typeof id === 'string' ? [id] : [];
}

/** Charge a request to its principal's quotas (released when its answer closes); a refusal is answered here. */
export async function admitByQuota(request: FastifyRequest, reply: FastifyReply, quotas: Quotas, metrics: Metrics): Promise<FastifyReply | undefined> {
  const length = Number(request.headers['content-length'] ?? 0);
  const answer = await quotas.request(ownerKey(request.principal), Number.isSafeInteger(length) && length > 0 ? length : 0);
  if (answer.ok) {
    reply.raw.once('close', answer.release);
    return undefined;
  }
  metrics.quotaRefused.labels({ reason: answer.reason }).inc();
  return refuseByQuota(request, reply, answer.reason === 'rate' ? 'this principal sends more requests per second than its quota' : 'this principal has more bytes in flight than its quota', answer.retryAfterSeconds);
}

/** 429 with Retry-After: problem+json, or on the MCP endpoint a JSON-RPC error (the status and header all the same). */
function refuseByQuota(request: FastifyRequest, reply: FastifyReply, detail: string, retryAfterSeconds: number): FastifyReply {
  const headers = { 'retry-after': String(retryAfterSeconds) };
  if (routeOf(request) === '/mcp') {
    return reply.code(429).headers(headers).type('application/json').send({ jsonrpc: '2.0', id: null, error: { code: -32000, message: `TG_ERR_QUOTA_EXCEEDED: ${detail}` } });
  }
  return sendProblem(reply, { code: 'TG_ERR_QUOTA_EXCEEDED', detail, headers });
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is asking (src/http/identity.ts); ANONYMOUS without authentication. */
    principal: PrincipalVar;
  }
}
