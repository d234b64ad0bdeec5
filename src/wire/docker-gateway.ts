/**
 * Wire schema of the Docker MCP Gateway route (docs/bindings/docker-gateway.md).
 */
import { interceptorSecurity } from './shared.js';

export const dockerMcpGatewayInterceptorSchema = {
  operationId: 'dockerMcpGatewayInterceptor',
  security: interceptorSecurity,
  tags: ['decisions'],
  summary: 'Docker MCP Gateway HTTP interceptor (after:http)',
  description:
    'Body: the bare CallToolResult. Always 200: an empty body when nothing was applied (the gateway passes the original through), the transformed CallToolResult when effects were applied, and an `isError` CallToolResult saying why when the result is denied, needs consent (the gateway cannot ask the user) or could not be checked. Never problem+json. With authentication configured (docs/operations/authentication.md), the token (static or JWT) may also come as the `token` query parameter. The same contract on standard input/output is the command `trustgate intercept [--policies DIR]` (after:exec): a guard process runs the decision in a child process (heap TRUSTGATE_INTERCEPT_HEAP_MB) and itself answers the `isError` result when the child crashes, runs out of memory, is killed, or does not finish within TRUSTGATE_REQUEST_TIMEOUT_MS, and on SIGTERM/SIGINT/SIGHUP; its policies are `--policies DIR`, else TRUSTGATE_POLICY_DIR (both relative to the working directory), else the set shipped with the package.',
  querystring: { type: 'object', properties: { token: { type: 'string', description: 'A bearer token (static or JWT), for gateways that cannot send headers' } } },
  body: { $ref: 'CallToolResult#' },
  response: {
    200: {
      description: 'Empty when nothing was applied; otherwise the replacement CallToolResult',
      content: { 'application/json': { schema: { $ref: 'CallToolResult#' } } },
    },
  },
} as const;
