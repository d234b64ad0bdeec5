/**
 * `trustgate interceptor [--policies DIR]`: the interceptor server on
 * standard input/output, for hosts and gateways that start interceptors as
 * stdio MCP servers. Logs go to standard error.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { startBinding, takePolicies } from '../process.js';
import { InterceptorRegistry } from './registry.js';
import { BINDING_VERSION, createInterceptorServer } from './server.js';
import { trustgateInterceptors } from './trustgate.js';

export async function runInterceptorStdio(args: string[], shippedPolicies: string): Promise<void> {
  const rest = [...args];
  const { config, log, store, core, decisionLog } = await startBinding(takePolicies(rest), shippedPolicies, 'interceptor');
  if (rest.length > 0) {
    process.stderr.write(`trustgate interceptor: unknown arguments: ${rest.join(' ')}\nusage: trustgate interceptor [--policies DIR]\n`);
    process.exit(2);
  }
  const registry = new InterceptorRegistry(
    trustgateInterceptors({ core, policies: () => store.current, modeOverride: config.modeOverride, version: BINDING_VERSION, log: decisionLog }),
  );
  const server = createInterceptorServer(registry, BINDING_VERSION);
  const transport = new StdioServerTransport(process.stdin, process.stdout, { maxBufferSize: config.bodyLimit });
  server.onerror = (err) => log.warn({ err: err.message }, 'interceptor transport error');
  server.onclose = () => process.exit(0);
  process.stdin.once('end', () => void server.close());
  await server.connect(transport);
  log.info('interceptor server ready on stdio');
}
