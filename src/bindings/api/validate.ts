import type { FastifyInstance } from 'fastify';
import { readTrust } from '../../annotations/claims.js';
import { answerBudget, boundValidation } from '../../decision/bound.js';
import { checkResultDepth, isValid, resolveRevision, resultFindings } from '../../decision/request-checks.js';
import { v1Security, problemReplies, validateBody, validateReply } from '../../http/schemas.js';

interface ValidateRequest {
  result: Record<string, unknown>;
  protocolVersion?: string;
}

/** POST /v1/validate: MCP shape and trust-claim checks without policies (docs/behaviour/validation.md). */
export function validateRoutes(app: FastifyInstance): void {
  const { config } = app.trustgate;
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
    async (request) => {
      const { result } = request.body;
      checkResultDepth(result);
      const revision = resolveRevision(result, request.body.protocolVersion);
      const found = resultFindings(result, revision, readTrust(result, config.dialects).findings, config.maxValidationFindings);
      // The answer's size follows the request's (docs/behaviour/limits.md): see src/decision/bound.ts.
      const cut = request.jsonScan ? boundValidation(found.validation, answerBudget(request.jsonScan.textLength)) : { items: found.validation, omitted: 0 };
      const validation = cut.items;
      const omitted = found.omitted + cut.omitted;
      // Every rule and severity that fired is listed (see FindingList and bound.ts), so `valid` is that of the whole list.
      return { valid: isValid(validation), protocolVersion: revision, validation, ...(omitted > 0 ? { validationOmitted: omitted } : {}) };
    },
  );
}
