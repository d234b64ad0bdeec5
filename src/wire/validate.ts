/**
 * Wire schema of POST /v1/validate (docs/behaviour/validation.md); its body
 * and answer are shared with /v1/evaluate (shared.ts).
 */
import { v1Schema, validateBody, validateReply } from './shared.js';

export const validateSchema = v1Schema({
  operationId: 'validate',
  tags: ['validation'],
  summary: 'Validate a CallToolResult and its trust annotations for one MCP revision',
  body: validateBody,
  reply: validateReply,
  problems: [400, 401, 403, 413, 415],
});
