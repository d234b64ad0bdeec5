/**
 * The playground (docs/policy-testing.md), served only with
 * TRUSTGATE_PLAYGROUND=1 and under the bearer token when one is set:
 * `GET /playground` is one page (no build step, no CDN) and
 * `POST /v1/playground/evaluate` decides one request with the policies it
 * is given, and with those only. It writes no session and no pin (each
 * request gets a store of its own that is thrown away), and has the limits
 * of /v1/evaluate; policies that do not load are a 422 naming the file and
 * the rule, as a reload reports them.
 */
import type { FastifyInstance } from 'fastify';
import { createDecisionCore, type EvaluateCallRequest } from '../../decision/core.js';
import type { EvaluateRequest } from '../../decision/types.js';
import { TrustgateError } from '../../errors.js';
import { compilePolicyFiles, PolicyLoadError, type PolicySet } from '../../policy/load.js';
import { requestProblem } from '../../policytest/request.js';
import { MemorySessionStore } from '../../session/memory.js';
import { PLAYGROUND_HTML, PLAYGROUND_JS } from './playground-page.js';
import { decisionLogger, plainJson } from '../../http/decisions.js';
import { playgroundEvaluateSchema, type PlaygroundRequest } from '../../wire/playground.js';
import { hiddenBehindToken } from '../../wire/shared.js';

/** A fresh store per request: the playground never reads or writes the service's sessions and pins. */
const scratchStore = () => new MemorySessionStore({ maxSessions: 1, maxPins: 1, ttlMs: 60_000 });

export function playgroundRoutes(app: FastifyInstance): void {
  const { config } = app.trustgate;
  const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  app.get('/playground', { schema: hiddenBehindToken }, async (_request, reply) => {
    reply.type('text/html; charset=utf-8').header('content-security-policy', csp).header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    return PLAYGROUND_HTML;
  });
  app.get('/playground/app.js', { schema: hiddenBehindToken }, async (_request, reply) => {
    reply.type('text/javascript; charset=utf-8').header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    return PLAYGROUND_JS;
  });

  app.post<{ Body: PlaygroundRequest }>(
    '/v1/playground/evaluate',
    {
      schema: playgroundEvaluateSchema,
      serializerCompiler: plainJson,
      config: { jsonScanFocus: ['request', 'evidence', '*', 'record'] },
    },
    async (request) => {
      const { policies, call } = request.body;
      const names = new Set<string>();
      for (const p of policies) {
        if (names.has(p.name)) throw new TrustgateError('TG_ERR_BODY_SCHEMA', `two policies are named ${JSON.stringify(p.name)}`, [{ pointer: '/policies', message: 'names must differ' }]);
        names.add(p.name);
      }
      let set: PolicySet;
      try {
        set = compilePolicyFiles(
          policies.map((p) => ({ name: p.name, bytes: Buffer.from(p.text, 'utf8') })),
          'playground',
        );
      } catch (err) {
        if (!(err instanceof PolicyLoadError)) throw err;
        throw new TrustgateError('TG_ERR_POLICY_INVALID', err.message, [{ pointer: '/policies', message: [err.file, err.rule].filter(Boolean).join(' / ') || 'policies' }]);
      }
      const problem = requestProblem(request.body.request, call === true);
      if (problem !== undefined) {
        throw new TrustgateError('TG_ERR_BODY_SCHEMA', `request${problem.pointer} ${problem.message}`, [{ pointer: `/request${problem.pointer}`, message: problem.message }]);
      }
      const sessions = scratchStore();
      const core = createDecisionCore({ config, policies: () => set, sessions });
      try {
        if (call === true) return await core.evaluateCall({ request: request.body.request as unknown as EvaluateCallRequest, principal: request.principal });
        return await core.evaluateResult({
          request: request.body.request as unknown as EvaluateRequest,
          scan: request.jsonScan,
          evidencePath: '/request/evidence',
          log: decisionLogger(request),
          principal: request.principal,
        });
      } finally {
        await sessions.close();
      }
    },
  );
}
