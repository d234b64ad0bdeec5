/**
 * POST /v1/evaluate-call (docs/behaviour/sessions.md): judge a tool call before it
 * runs, by the `scope: call` rules, the tool's hints, its pin and what the
 * session has been shown.
 */
import type { FastifyInstance } from 'fastify';
import type { CallLogEntry } from '../../decision/log.js';
import type { EvaluateCallRequest } from '../../decision/core.js';
import { decisionLogger, plainJson } from '../../http/decisions.js';
import { evaluateCallSchema } from '../../wire/evaluate-call.js';


/** POST /v1/evaluate-call. */
export function evaluateCallRoutes(app: FastifyInstance): void {
  const { core } = app.trustgate;
  app.post<{ Body: EvaluateCallRequest }>(
    '/v1/evaluate-call',
    {
      schema: evaluateCallSchema,
      serializerCompiler: plainJson,
    },
    (request) => core.evaluateCall({ request: request.body, log: decisionLogger<CallLogEntry>(request), principal: request.principal }),
  );
}
