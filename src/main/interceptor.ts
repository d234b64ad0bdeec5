/**
 * `trustgate interceptor [--policies DIR]`: the interceptor server on
 * standard input/output, for hosts and gateways that start interceptors as
 * stdio MCP servers. Logs go to standard error. A request line over
 * TRUSTGATE_BODY_LIMIT is answered with a JSON-RPC error (-32600, id null)
 * and the server goes on serving (lines.ts).
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { LineLimit } from '../bindings/interceptors/lines.js';
import { startBinding, takePolicies } from './start.js';
import { InterceptorRegistry } from '../bindings/interceptors/registry.js';
import { BINDING_VERSION, createInterceptorServer } from '../bindings/interceptors/mcp-server.js';
import { trustgateInterceptors } from '../bindings/interceptors/trustgate.js';

export async function runInterceptorStdio(args: string[], shippedPolicies: string): Promise<void> {
  const rest = [...args];
  // A usage error is one line and exit 2, before anything starts.
  let policies: string | undefined;
  try {
    policies = takePolicies(rest);
  } catch (err) {
    usage((err as Error).message);
  }
  if (rest.length > 0) usage(`unknown argument ${JSON.stringify(rest[0])}`);
  const { config, log, store, core, decisionLog } = await startBinding(policies, shippedPolicies, 'interceptor');
  const registry = new InterceptorRegistry(
    trustgateInterceptors({ core, policies: () => store.current, modeOverride: config.modeOverride, version: BINDING_VERSION, log: decisionLog, logger: log }),
  );
  const server = createInterceptorServer(registry, BINDING_VERSION);
  // A line over the body limit is answered with a JSON-RPC error (its id cannot be read: null) and the server keeps serving.
  const lines = new LineLimit(config.bodyLimit, () => {
    log.warn({ limit: config.bodyLimit }, 'interceptor request line over the body limit: answered with an error');
    void transport.send({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InvalidRequest, message: `request over the body limit of ${config.bodyLimit} bytes (TRUSTGATE_BODY_LIMIT)` } } as unknown as JSONRPCMessage);
  });
  const transport = new StdioServerTransport(lines, process.stdout, { maxBufferSize: config.bodyLimit + 2 });
  server.onerror = (err) => log.warn({ err: err.message }, 'interceptor transport error');
  server.onclose = () => process.exit(0);
  lines.once('end', () => void server.close());
  process.stdin.pipe(lines);
  await server.connect(transport);
  log.info('interceptor server ready on stdio');
}

function usage(problem: string): never {
  process.stderr.write(`trustgate interceptor: ${problem}; usage: trustgate interceptor [--policies DIR]\n`);
  process.exit(2);
}
