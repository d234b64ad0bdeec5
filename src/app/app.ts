/**
 * buildApp(): every plugin and route, never listening (tests inject into it;
 * src/main/serve.ts listens). The HTTP layer knows nothing of CEL; the pipeline
 * knows nothing of Fastify.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from '../config.js';
import { loggerOptions } from '../logger.js';
import { createMetrics, METRICS_MS, type Metrics } from '../metrics.js';
import { PolicyStore, reportReload } from '../policy/reload.js';
import { registerJsonParser } from '../http/body.js';
import { clientErrorHandler, ErrorRenderers, frameworkErrorHandler, registerErrorHandling, registerRequestHead, registerServerAnswers } from '../http/error-handler.js';
import { registerBrowserGuard } from '../http/browser.js';
import { registerPressure } from '../http/pressure.js';
import { registerRequestTimeout } from '../http/timeout.js';
import { registerAdmission } from '../http/admission.js';
import { routeOf } from '../http/auth.js';
import { registerAuthentication } from '../http/bearer.js';
import { createAuthentication, type Authentication } from '../http/identity.js';
import { createQuotas, type Quotas } from '../http/quota.js';
import type { PrincipalVar } from '../policy/cel/variables.js';
import { sharedSchemas } from '../wire/shared.js';
import { healthRoutes } from '../bindings/api/health.js';
import { digestRoutes } from '../bindings/api/digests.js';
import { validateRoutes } from '../bindings/api/validate.js';
import { policyRoutes } from '../bindings/api/policies.js';
import { evaluateRoutes } from '../bindings/api/evaluate-result.js';
import { evaluateCallRoutes } from '../bindings/api/evaluate-call.js';
import { sessionRoutes } from '../bindings/api/sessions.js';
import { playgroundRoutes } from '../bindings/api/playground.js';
import { interceptorRoutes } from '../bindings/docker-gateway/route.js';
import type { ReloadResult } from '../policy/reload.js';
import { performance } from 'node:perf_hooks';
import type { SessionStore } from '../session/store.js';
import { HeldMemoryStore } from '../session/held.js';
import { MemoryFlowStore, type FlowStore } from '../session/flows.js';
import { createDecisionCore, type DecisionCore } from '../decision/core.js';
import { mcpRoutes } from '../bindings/interceptors/http.js';
import { VERSION } from '../version.js';

export interface AppOptions {
  config: Config;
  /** The policy store; built from config.policyDir when absent. Loading is the caller's job. */
  store?: PolicyStore;
  /** A pino logger instance or options; defaults to the config's level. */
  logger?: FastifyServerOptions['loggerInstance'];
  metrics?: Metrics;
  /** How a reload is carried out; loading `store`'s folder by default (a worker process asks its primary instead). */
  reloadPolicies?: (source: string) => Promise<ReloadResult>;
  /** The text GET /metrics answers; the registry of `metrics` by default (a worker process answers for every process). */
  metricsText?: () => Promise<string>;
  /**
   * The session and pin store (docs/behaviour/sessions.md). When absent, an
   * in-process memory store sized by config (TRUSTGATE_MAX_SESSIONS,
   * TRUSTGATE_MAX_PINS, TRUSTGATE_SESSION_TTL), the one a serving process
   * holds (src/session/held.ts), closed with the app; a store passed in belongs to the caller, who closes it.
   */
  sessions?: SessionStore;
  /** Where the values sessions have seen live (docs/behaviour/flows.md); with `sessions` the caller's, beside it. Absent: in this process. */
  flows?: FlowStore;
  /** Who may ask (src/http/identity.ts); built from config (TRUSTGATE_TOKEN, TRUSTGATE_TOKENS_FILE, TRUSTGATE_JWKS) when absent. */
  auth?: Authentication;
}

/** The version `info.version` of the OpenAPI document says: the package's. */
export const API_VERSION = VERSION;

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const store = opts.store ?? new PolicyStore(config.policyDir, undefined, config.serversFile);
  const metrics = opts.metrics ?? createMetrics();
  // How bindings answer errors on their paths (the Docker gateway route: an isError result, never problem+json).
  const errorRenderers = new ErrorRenderers();
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: loggerOptions(config.logLevel) }),
    bodyLimit: config.bodyLimit,
    requestTimeout: config.requestTimeoutMs,
    // Node checks request timeouts every 30 s by default; check often enough for the setting to mean what it says.
    // (A request with no Host, or two, is answered by registerRequestHead, as a problem.)
    http: { connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.requestTimeoutMs / 4))), requireHostHeader: false },
    return503OnClosing: true,
    // One access line per request (below) instead of Fastify's two; a decision's own line replaces it.
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request (measurable on the hot path): lines name their request through
    // the `req` serializer (access lines) or the decisionId (decision lines).
    childLoggerFactory: (logger) => logger,
    clientErrorHandler,
    // Path parameters (session ids) are checked by their route schemas; this bound is only the router's.
    routerOptions: { maxParamLength: 1024 },
    // A target the router cannot decode: problem+json that does not repeat it (Fastify's own answer does).
    frameworkErrors: frameworkErrorHandler(errorRenderers),
    ajv: {
      // Validate, never repair: no coercion, no silent removal of members, no injected defaults.
      // Stop at the first error: collecting all of them lets one hostile body cost the service
      // about half a second (300,000 array items that each break the schema, in 900 KB).
      customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false },
    },
  });
  let sessions = opts.sessions;
  let flows = opts.flows;
  if (flows === undefined) {
    const own = new MemoryFlowStore({ maxValues: config.maxFlowValues, ttlMs: config.sessionTtlSeconds * 1000, key: config.flowKey, onOverflow: () => metrics.flowOverflows.inc() });
    flows = own;
    app.addHook('onClose', () => own.close());
  }
  if (sessions === undefined) {
    // The one memory store a process holds (src/session/held.ts): swept, counted and closed with the app.
    const own = new HeldMemoryStore(config, metrics, app.log);
    sessions = own;
    app.addHook('onClose', () => own.close());
  }
  const core = createDecisionCore({ config, policies: () => store.current, sessions, flows, metrics });
  const auth = opts.auth ?? createAuthentication(config);
  const quotas = createQuotas(config.quotas, config);
  app.addHook('onClose', () => quotas.close());
  app.decorate('trustgate', { config, store, metrics, sessions, core, auth, quotas });
  // Before every other hook and route (swagger's included): a request that does not name its host once, a body in a
  // content coding, and web pages of other origins, are refused.
  registerRequestHead(app);
  registerServerAnswers(app.server);
  registerBrowserGuard(app, config);
  // Members the body parser and the decision logger set on requests, declared
  // up front so that every request object has one shape from its constructor.
  app.decorateRequest('jsonScan', undefined);
  app.decorateRequest('jsonText', undefined);
  app.decorateRequest('decisionLogged', false);
  // Set on every request by the authentication hook (src/http/bearer.ts): the anonymous principal until a token names another.
  app.decorateRequest('principal', null as unknown as PrincipalVar);
  app.decorate(
    'reloadPolicies',
    opts.reloadPolicies ??
      (async (source: string): Promise<ReloadResult> => {
        const outcome = await store.reload();
        reportReload(app.log, metrics, source, outcome, store.current?.revision);
        return outcome;
      }),
  );

  for (const s of sharedSchemas) app.addSchema(s);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Trustgate',
        version: API_VERSION,
        description:
          'Policy decision service for MCP tool results: validates a CallToolResult, reads its trust annotations, re-derives evidence digests, evaluates CEL policies and answers with a decision and the result to forward.\n\nOn every route: a request with an `Origin` other than the service\'s own (`http://` or `https://` followed by its `Host`, where that `Host` is a loopback name or address: DNS rebinding) or with `Sec-Fetch-Site: cross-site`/`same-site` is a 403 `TG_ERR_CROSS_ORIGIN` unless TRUSTGATE_ALLOWED_ORIGINS lists the origin (listed origins get CORS headers); `text/plain`, form and multipart bodies, and a body in a content coding (`Content-Encoding` other than `identity`), are 415; a request that does not name its host once (no `Host` in HTTP/1.1, two, or one that is no host) is a 400 `TG_ERR_HTTP_MALFORMED`; a request target that cannot be decoded is a 400 `TG_ERR_REQUEST_TARGET` that never repeats it. An answer apart from its forwarded `result` stays within 10 times its request plus 64 KiB (its lists together within 8 times plus 48 KiB; what a list leaves out is counted in its `...Omitted` member). An answer the client has not taken within TRUSTGATE_REQUEST_TIMEOUT_MS closes the connection. Each process admits TRUSTGATE_MAX_INFLIGHT_BYTES (default 32 MiB) of requests being decided and answers not yet sent, counted as request bytes arrive (a declared `content-length` is charged before the body is read); a request that finds no room within 0.5 s gets 503 `TG_ERR_OVERLOADED` with `Retry-After` (its body is read and thrown away). A request that finds nothing else in flight is always admitted.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Relative: Swagger UI (/docs) targets the server the document is served from, whatever its host and PORT.
      servers: [{ url: '/', description: 'The service this document is served from' }],
      tags: [
        { name: 'decisions', description: 'Policy decisions on tool results, and on tool calls before they run' },
        { name: 'sessions', description: 'Session labels and tool pins' },
        { name: 'validation', description: 'MCP shape and trust-claim checks' },
        { name: 'evidence', description: 'Canonical digests of evidence records' },
        { name: 'policies', description: 'The loaded policy set' },
        { name: 'health', description: 'Liveness and readiness' },
      ],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'static token or JWT', description: 'Required on /v1/* and /mcp when authentication is configured: a static token (TRUSTGATE_TOKEN, TRUSTGATE_TOKENS_FILE) or a JWT access token checked against TRUSTGATE_JWKS (docs/operations/authentication.md). The token names the principal policies read as `principal` and sessions belong to' },
          queryToken: {
            type: 'apiKey',
            in: 'query',
            name: 'token',
            description:
              'A bearer token (static or JWT) as the `token` query parameter; accepted only by the Docker MCP Gateway interceptor, since the gateway sends no custom headers',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  registerPressure(app, config);
  registerRequestTimeout(app, config.requestTimeoutMs, config.answerBufferBytes);
  const admission = registerAdmission(app, config.maxInflightBytes, config.bodyLimit, metrics);
  app.addHook('onResponse', (request, reply, done) => {
    if (!request.decisionLogged) {
      const route = routeOf(request);
      const quiet = route === '/healthz' || route === '/readyz' || route === '/metrics';
      request.log[quiet ? 'debug' : 'info']({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
    done();
  });
  registerJsonParser(app);
  app.decorate('errorRenderers', errorRenderers);
  registerErrorHandling(app, config.bodyLimit);

  // Routes whose schema lists the bearer security authenticate, and are charged to their principal's quotas (src/http/bearer.ts).
  registerAuthentication(app, auth, quotas, metrics);

  healthRoutes(app, store, admission);
  digestRoutes(app);
  validateRoutes(app);
  policyRoutes(app);
  evaluateRoutes(app);
  evaluateCallRoutes(app);
  sessionRoutes(app);
  // Off by default (docs/policy-testing.md): the routes do not exist unless asked for.
  if (config.playground) playgroundRoutes(app);
  await app.register(interceptorRoutes);
  mcpRoutes(app, core);

  // A scrape costs no more than a health check (docs/behaviour/limits.md): the text is made at most
  // once every METRICS_MS (with worker processes the primary makes it; see src/main/cluster/).
  let cached: { text: string; at: number } | undefined;
  let making: Promise<string> | undefined;
  const metricsText =
    opts.metricsText ??
    ((): Promise<string> => {
      if (cached !== undefined && performance.now() - cached.at < METRICS_MS) return Promise.resolve(cached.text);
      making ??= metrics.registry.metrics().then(
        (text) => {
          cached = { text, at: performance.now() };
          making = undefined;
          return text;
        },
        (err: unknown) => {
          making = undefined;
          throw err;
        },
      );
      return making;
    });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metricsText();
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  return app;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once the decision log line for this request was written; it stands in for the access line. */
    decisionLogged?: boolean;
  }
  interface FastifyContextConfig {
    /** The route checks TRUSTGATE_TOKEN itself; the app's bearer check leaves it alone. */
    checksOwnToken?: boolean;
  }
  interface FastifyInstance {
    /** How bindings answer errors on their paths (src/http/error-handler.ts). */
    errorRenderers: ErrorRenderers;
    trustgate: { config: Config; store: PolicyStore; metrics: Metrics; sessions: SessionStore; core: DecisionCore; auth: Authentication; quotas: Quotas };
    /** Reload the policy folder; logs and counts the outcome. */
    reloadPolicies(source: string): Promise<ReloadResult>;
  }
}
