/**
 * Wire schema of POST /mcp, the MCP Interceptors extension over Streamable HTTP (docs/bindings/interceptors.md).
 */
import { problemReplies, v1Security } from './shared.js';

export const mcpInterceptorsSchema = {
  operationId: 'mcpInterceptors',
  security: v1Security,
  tags: ['decisions'],
  summary: 'MCP Interceptors extension server (Streamable HTTP, stateless)',
  description:
    'The MCP Interceptors extension (`io.modelcontextprotocol/interceptors`) over MCP Streamable HTTP: JSON-RPC `initialize`, `interceptors/list` and `interceptor/invoke`, offering `trustgate-call` (validator, tools/call request: the pre-call decision), `trustgate-result` (validator, tools/call response: deny -> valid:false severity error; warn -> valid:true severity warn), `trustgate-redact` (mutator, tools/call response: the result to forward as payload; deny and consent -> an isError CallToolResult as payload) and `trustgate-discovery` (mutator, tools/list, resources/list, resources/templates/list and prompts/list responses: what a server says of itself judged as its content under the session, the list to forward as payload; a list that must not be forwarded is the empty list with info.withheld). Consent cannot be asked through an interceptor: the validators answer it as valid:false, severity error, saying so. Every interceptor is fail-closed (failOpen false); mode is audit when every policy the interceptor runs is in audit (or TRUSTGATE_MODE=audit). Stateless: no Mcp-Session-Id, JSON responses, GET and DELETE are 405; a Trustgate session is named per invocation by context.sessionId. Invocation config may carry tool, server, context and protocolVersion. Errors: -32602 for bad params, unknown names and hooks not offered, -32603 when a decision could not be made. With authentication configured (docs/operations/authentication.md), send Authorization: Bearer <token> (401 otherwise); a principal past its quota gets 429 with Retry-After and a JSON-RPC error.',
  body: { type: 'object', description: 'One JSON-RPC message (MCP Streamable HTTP)' },
  response: {
    200: { description: 'The JSON-RPC response', content: { 'application/json': { schema: { type: 'object' } } } },
    202: { description: 'A notification or response was accepted', type: 'null' },
    ...problemReplies(400, 401, 413, 415, 503),
  },
} as const;
