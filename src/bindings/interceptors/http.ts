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
import { decisionLines } from '../../logger.js';
import { InterceptorRegistry } from './registry.js';
import { BINDING_VERSION, createInterceptorServer } from './mcp-server.js';
import { trustgateInterceptors } from './trustgate.js';
import { mcpInterceptorsSchema } from '../../wire/interceptors.js';
import { hiddenBehindToken } from '../../wire/shared.js';

export const MCP_PATH = '/mcp';

export function mcpRoutes(app: FastifyInstance, core: DecisionCore): void {
  const { store, config } = app.trustgate;
  const registry = new InterceptorRegistry(
    trustgateInterceptors({ core, policies: () => store.current, modeOverride: config.modeOverride, version: BINDING_VERSION, log: decisionLines(app.log as pino.Logger), logger: app.log }),
  );
  const hidden = { schema: hiddenBehindToken };
  app.post(
    MCP_PATH,
    {
      schema: mcpInterceptorsSchema,
      // The SDK transport checks the JSON-RPC message itself.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
    const server = createInterceptorServer(registry, BINDING_VERSION, request.principal);
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
