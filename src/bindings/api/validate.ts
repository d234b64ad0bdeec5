import type { FastifyInstance } from 'fastify';
import type { ValidateRequest } from '../../decision/types.js';
import { v1Security, problemReplies, validateBody, validateReply } from '../../http/schemas.js';

/** POST /v1/validate: MCP shape and trust-claim checks without policies (docs/behaviour/validation.md). */
export function validateRoutes(app: FastifyInstance): void {
  const { core } = app.trustgate;
  app.post<{ Body: ValidateRequest }>(
    '/v1/validate',
    {
      schema: {
        operationId: 'validate',
        security: v1Security,
        tags: ['validation'],
        summary: 'Validate a CallToolResult and its trust annotations for one MCP revision',
        body: validateBody,
        response: { 200: validateReply, ...problemReplies(400, 401, 403, 413, 415) },
      },
      // Nothing here reads repeated member names or unsafe integers: the scan only bounds nesting.
      config: { jsonScanFocus: null },
    },
    async (request) => core.validate({ request: request.body, scan: request.jsonScan }),
  );
}
