/**
 * The interceptor server on Streamable HTTP at /mcp on the service port
 * (docs/architecture.md#bindings-side-by-side), with the SDK's StreamableHTTPServerTransport.
 *
 * Stateless: every POST is answered on its own by a fresh server and
 * transport (no `Mcp-Session-Id`), with a JSON response (no SSE stream).
 * Interceptor invocations are independent requests, the service may run
 * several worker processes that share no MCP session state, and a
 * Trustgate session is named per invocation (`context.sessionId`), so
 * nothing is gained by MCP sessions. GET and DELETE (the standalone SSE
 * stream, session end) are 405.
 *
 * The body is read by the service's JSON parser (body limit, depth and
 * scan as for /v1/*) and handed to the transport already parsed; the token
 * is checked with /v1/* (app.ts). The reply is the transport's (Fastify
 * hands it the raw response), so the request timeout is kept here: an
 * answer not taken within TRUSTGATE_REQUEST_TIMEOUT_MS of the request
 * closes the connection, as on every route.
 */
import type { FastifyInstance } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { DecisionCore } from '../../decision/core.js';
import pino from 'pino';
import { problemReplies, v1Security } from '../../http/schemas.js';
import { decisionLines } from '../../main/start.js';
import { InterceptorRegistry } from './registry.js';
import { BINDING_VERSION, createInterceptorServer } from './mcp-server.js';
import { trustgateInterceptors } from './trustgate.js';

export const MCP_PATH = '/mcp';

export function mcpRoutes(app: FastifyInstance, core: DecisionCore): void {
  const { store, config } = app.trustgate;
  const registry = new InterceptorRegistry(
    trustgateInterceptors({ core, policies: () => store.current, modeOverride: config.modeOverride, version: BINDING_VERSION, log: decisionLines(app.log as pino.Logger) }),
  );
  const hidden = { schema: { hide: true } };
  app.post(
    MCP_PATH,
    {
      schema: {
        operationId: 'mcpInterceptors',
        security: v1Security,
        tags: ['decisions'],
        summary: 'MCP Interceptors extension server (Streamable HTTP, stateless)',
        description:
          'The MCP Interceptors extension (`io.modelcontextprotocol/interceptors`) over MCP Streamable HTTP: JSON-RPC `initialize`, `interceptors/list` and `interceptor/invoke`, offering `trustgate-call` (validator, tools/call request: the pre-call decision), `trustgate-result` (validator, tools/call response: deny -> valid:false severity error; warn -> valid:true severity warn) and `trustgate-redact` (mutator, tools/call response: the result to forward as payload; deny and consent -> an isError CallToolResult as payload). Consent cannot be asked through an interceptor: the validators answer it as valid:false, severity error, saying so. Every interceptor is fail-closed (failOpen false); mode is audit when every policy the interceptor runs is in audit (or TRUSTGATE_MODE=audit). Stateless: no Mcp-Session-Id, JSON responses, GET and DELETE are 405; a Trustgate session is named per invocation by context.sessionId. Invocation config may carry tool, server, context and protocolVersion. Errors: -32602 for bad params, unknown names and hooks not offered, -32603 when a decision could not be made. With TRUSTGATE_TOKEN set, send Authorization: Bearer <token> (401 otherwise).',
        body: { type: 'object', description: 'One JSON-RPC message (MCP Streamable HTTP)' },
        response: {
          200: { description: 'The JSON-RPC response', content: { 'application/json': { schema: { type: 'object' } } } },
          202: { description: 'A notification or response was accepted', type: 'null' },
          ...problemReplies(400, 401, 413, 415, 503),
        },
      },
      // The SDK transport checks the JSON-RPC message itself.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
    const server = createInterceptorServer(registry, BINDING_VERSION);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const timer = setTimeout(() => {
      if (!reply.raw.writableFinished) reply.raw.destroy();
    }, config.requestTimeoutMs);
    timer.unref();
    reply.raw.on('close', () => {
      clearTimeout(timer);
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    reply.hijack();
    await transport.handleRequest(request.raw, reply.raw, request.body);
    },
  );
  const notAllowed = async (_request: unknown, reply: import('fastify').FastifyReply) =>
    reply
      .code(405)
      .header('allow', 'POST')
      .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC requests' }, id: null });
  app.get(MCP_PATH, hidden, notAllowed);
  app.delete(MCP_PATH, hidden, notAllowed);
}
