import type { FastifyInstance } from 'fastify';
import type { ValidateRequest } from '../../decision/types.js';
import { validateSchema } from '../../wire/validate.js';

/** POST /v1/validate: MCP shape and trust-claim checks without policies (docs/behaviour/validation.md). */
export function validateRoutes(app: FastifyInstance): void {
  const { core } = app.trustgate;
  app.post<{ Body: ValidateRequest }>(
    '/v1/validate',
    {
      schema: validateSchema,
      // Nothing here reads repeated member names or unsafe integers: the scan only bounds nesting.
      config: { jsonScanFocus: null },
    },
    async (request) => core.validate({ request: request.body, scan: request.jsonScan }),
  );
}
