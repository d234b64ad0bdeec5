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
import { compilePolicyFiles, MAX_POLICY_FILE_BYTES, PolicyLoadError, type PolicySet } from '../../policy/load.js';
import { requestProblem } from '../../policytest/request.js';
import { MemorySessionStore } from '../../session/memory.js';
import { PLAYGROUND_HTML, PLAYGROUND_JS } from './playground-page.js';
import { v1Security, problemReplies } from '../../http/schemas.js';
import { decisionLogger, plainJson } from '../../http/decisions.js';

/** Most policies one playground request may carry. */
export const MAX_PLAYGROUND_POLICIES = 64;

export const playgroundBody = {
  type: 'object',
  additionalProperties: false,
  required: ['policies', 'request'],
  properties: {
    policies: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_PLAYGROUND_POLICIES,
      description: 'The policies to decide with, in this order, as files of a policy folder would be (only these: the loaded set is not used)',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'text'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', description: 'A file name (`*.json` is read as JSON, anything else as YAML); named in load errors' },
          text: { type: 'string', maxLength: MAX_POLICY_FILE_BYTES, description: 'The policy file\'s text: one policy' },
        },
      },
    },
    request: { type: 'object', description: 'A /v1/evaluate body, or a /v1/evaluate-call body when `call` is true; checked as those routes check it' },
    call: { type: 'boolean', default: false, description: 'Decide a tool call (/v1/evaluate-call) rather than a result' },
  },
} as const;

/** A fresh store per request: the playground never reads or writes the service's sessions and pins. */
const scratchStore = () => new MemorySessionStore({ maxSessions: 1, maxPins: 1, ttlMs: 60_000 });

export function playgroundRoutes(app: FastifyInstance): void {
  const { config } = app.trustgate;
  const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  app.get('/playground', { schema: { hide: true } }, async (_request, reply) => {
    reply.type('text/html; charset=utf-8').header('content-security-policy', csp).header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    return PLAYGROUND_HTML;
  });
  app.get('/playground/app.js', { schema: { hide: true } }, async (_request, reply) => {
    reply.type('text/javascript; charset=utf-8').header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
    return PLAYGROUND_JS;
  });

  app.post<{ Body: { policies: Array<{ name: string; text: string }>; request: Record<string, unknown>; call?: boolean } }>(
    '/v1/playground/evaluate',
    {
      schema: {
        operationId: 'playgroundEvaluate',
        security: v1Security,
        tags: ['policies'],
        summary: 'Decide one request with the policies given (TRUSTGATE_PLAYGROUND=1 only)',
        description: [
          'Served only when TRUSTGATE_PLAYGROUND=1 (off by default), for the page at `/playground`. The answer is the /v1/evaluate answer (or the /v1/evaluate-call answer with `call: true`) as if the given policies were the loaded set; `policyRevision` is theirs.',
          'Nothing is written: a `session` in the request starts empty and is forgotten, and a tool is always `first-seen` (no pin is read or written).',
          'Policies that do not load are a 422 `TG_ERR_POLICY_INVALID` naming the file, the rule and the error, as a failed reload reports them; a request the evaluate route would refuse is the same 400, its pointers under `/request`.',
        ].join('\n\n'),
        body: playgroundBody,
        response: { 200: { type: 'object', additionalProperties: true, description: 'The decision' }, ...problemReplies(400, 401, 403, 413, 415, 422) },
      },
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
        if (call === true) return await core.evaluateCall({ request: request.body.request as unknown as EvaluateCallRequest });
        return await core.evaluateResult({
          request: request.body.request as unknown as EvaluateRequest,
          scan: request.jsonScan,
          evidencePath: '/request/evidence',
          log: decisionLogger(request),
        });
      } finally {
        await sessions.close();
      }
    },
  );
}
