import type { FastifyInstance } from 'fastify';

import { resultRepeatsNames } from '../../http/body.js';
import { decisionLogger, plainJson } from '../../http/decisions.js';
import { evaluateSchema, type EvaluateBody } from '../../wire/evaluate.js';

/** POST /v1/evaluate (docs/behaviour/decisions.md). */
export function evaluateRoutes(app: FastifyInstance): void {
  const { core } = app.trustgate;
  app.post<{ Body: EvaluateBody }>(
    '/v1/evaluate',
    {
      schema: evaluateSchema,
      serializerCompiler: plainJson,
      // Only evidence records are judged as I-JSON (repeated member names, unsafe integers).
      config: { jsonScanFocus: ['evidence', '*', 'record'] },
    },
    (request) =>
      core.evaluateResult({
        request: request.body,
        scan: request.jsonScan,
        log: decisionLogger(request),
        resultRepeatsNames: () => resultRepeatsNames(request.jsonText),
        principal: request.principal,
      }),
  );
}
