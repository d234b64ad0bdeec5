/**
 * An MCP server (the SDK's `Server`) that offers a registry of
 * interceptors: it declares the extension under `capabilities.extensions`
 * and answers `interceptors/list` and `interceptor/invoke`. The same
 * server runs on standard input/output (`trustgate interceptor`) and on
 * Streamable HTTP (`/mcp`, http.ts).
 */
import { ANONYMOUS, type PrincipalVar } from '../../policy/cel/variables.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ErrorCode, McpError, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { VERSION } from '../../version.js';
import { INTERCEPTORS_EXTENSION, INVOKE_METHOD, LIST_METHOD, type InterceptorRegistry } from './registry.js';

export const SERVER_NAME = 'trustgate-interceptors';
/** The version the MCP bindings report (serverInfo, descriptors): the package's. */
export const BINDING_VERSION = VERSION;

/** A server for one connection; its invocations are judged as `principal`'s (the HTTP front's caller; ANONYMOUS on stdio). */
export function createInterceptorServer(registry: InterceptorRegistry, version: string, principal: PrincipalVar = ANONYMOUS): Server {
  const server = new Server(
    { name: SERVER_NAME, version },
    {
      capabilities: { extensions: { [INTERCEPTORS_EXTENSION]: { supportedEvents: registry.supportedEvents() } } },
      instructions: 'Trustgate policy decisions as MCP interceptors: call interceptors/list, then interceptor/invoke.',
    },
  );
  // The two extension methods are not part of the SDK's schema set, so they
  // are answered by the fallback handler rather than typed handlers.
  server.fallbackRequestHandler = async (request: JSONRPCRequest) => {
    if (request.method === LIST_METHOD) return registry.list(request.params);
    if (request.method === INVOKE_METHOD) return registry.invoke(request.params, principal);
    throw new McpError(ErrorCode.MethodNotFound, `method ${request.method} not found`);
  };
  return server;
}
