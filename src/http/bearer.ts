/**
 * The bearer-token check (docs/operations/deploying.md). A route opts in by
 * listing `bearer` in its schema's `security` (src/wire/shared.ts's
 * v1Security), the same declaration the OpenAPI document shows. A request
 * that matches no route is checked too when its path starts as an opted-in
 * route's does (`/v1/...`), so an unknown path there tells nothing before
 * the token does.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken, tokenMatcher } from './auth.js';
import { sendProblem } from './error-handler.js';

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

/**
 * Checks TRUSTGATE_TOKEN on every route that opts in (routeTakesBearer) and
 * on requests that match no route under an opted-in route's first path
 * segment; call it before the routes are added. A route that reads the token itself
 * (`config.checksOwnToken`: the Docker gateway route also takes it from the
 * query) is left alone. A miss is 401 TG_ERR_AUTH_TOKEN with
 * `WWW-Authenticate`.
 */
export function registerBearerCheck(app: FastifyInstance, token: string): void {
  const matches = tokenMatcher(token);
  const prefixes = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (routeTakesBearer(route.schema as { security?: unknown } | undefined)) prefixes.add(firstSegment(route.url));
  });
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const options = request.routeOptions;
    const guarded = request.is404 ? prefixes.has(firstSegment(request.url)) : routeTakesBearer(options.schema as { security?: unknown } | undefined);
    if (!guarded || options.config?.checksOwnToken === true) return;
    if (!matches(bearerToken(request.headers.authorization))) {
      reply.header('www-authenticate', 'Bearer realm="trustgate"');
      return sendProblem(reply, { code: 'TG_ERR_AUTH_TOKEN', detail: 'send Authorization: Bearer <token>' });
    }
  });
}
