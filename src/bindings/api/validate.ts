import type { FastifyInstance } from 'fastify';
import type { ValidateRequest } from '../../decision/types.js';
import { v1Schema, validateBody, validateReply } from '../../http/schemas.js';

const summary = 'Validate a CallToolResult and its trust annotations for one MCP revision';

/** POST /v1/validate: MCP shape and trust-claim checks without policies (docs/behaviour/validation.md). */
export function validateRoutes(app: FastifyInstance): void {
  const { core } = app.trustgate;
  app.post<{ Body: ValidateRequest }>(
    '/v1/validate',
    {
      schema: v1Schema({ operationId: 'validate', tags: ['validation'], summary, body: validateBody, reply: validateReply, problems: [400, 401, 403, 413, 415] }),
      // Nothing here reads repeated member names or unsafe integers: the scan only bounds nesting.
      config: { jsonScanFocus: null },
    },
    async (request) => core.validate({ request: request.body, scan: request.jsonScan }),
  );
}
