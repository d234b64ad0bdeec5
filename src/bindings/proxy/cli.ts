/**
 * `trustgate proxy`: the host starts Trustgate as its stdio MCP server and
 * Trustgate starts the real server as its child (`trustgate proxy [--]
 * <command> [args...]`), or reaches it over Streamable HTTP (`--upstream
 * <url>`), or serves several as one (`--config <mcpServers file>`,
 * gateway.ts). Options and the config file are read in options.ts.
 * Standard output is the MCP channel; logs go to standard error; a child
 * server's standard error is passed through to it.
 */
import type { ChildProcess } from 'node:child_process';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { startBinding } from '../process.js';
import { runGateway } from './gateway.js';
import { parseProxyArgs, UsageError, USAGE, type ProxyArgs, type ServerSpec } from './options.js';
import { IdlePoll } from './poll.js';
import { McpProxy, type ProxyLog } from './relay.js';

/** What the environment of a proxy says, from its flags and config keys (they win over the environment). */
function envOverrides(a: ProxyArgs): Record<string, string> {
  const env: Record<string, string> = {};
  if (a.store !== undefined) env.TRUSTGATE_SESSION_STORE = a.store;
  if (a.pollUs !== undefined) env.TRUSTGATE_PROXY_POLL_US = a.pollUs;
  return env;
}

/** What went wrong reaching a server, in words: an HTTP status, a refused connection, a missing command. */
export function describeFailure(err: unknown, spec?: ServerSpec): string {
  if (err instanceof StreamableHTTPError) {
    const code = err.code;
    if (code === 401 || code === 403) return `HTTP ${code} from the upstream (check --header or TRUSTGATE_UPSTREAM_AUTHORIZATION)`;
    if (typeof code === 'number' && code > 0) return `HTTP ${code} from the upstream`;
  }
  const e = err as { code?: unknown; cause?: { code?: unknown }; message?: unknown } | undefined;
  const code = e?.cause?.code ?? e?.code;
  const at = spec && 'url' in spec ? ` (${spec.url.origin})` : spec && 'command' in spec ? ` (${JSON.stringify(spec.command)})` : '';
  if (code === 'ECONNREFUSED') return `connection refused${at}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found${at}`;
  if (code === 'ECONNRESET') return `connection reset${at}`;
  if (code === 'ENOENT') return `command not found${at}`;
  if (code === 'EACCES') return `command not executable${at}`;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return message.slice(0, 300);
}

/** The transport to one server; for a child process, `exited` says how it ended once it has. */
export function upstreamOf(spec: ServerSpec, log: ProxyLog): Transport {
  if ('url' in spec) return new StreamableHTTPClientTransport(spec.url, Object.keys(spec.headers).length > 0 ? { requestInit: { headers: spec.headers } } : undefined);
  const t = new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, stderr: 'inherit', ...(spec.cwd ? { cwd: spec.cwd } : {}) });
  // The SDK keeps the child to itself and reports its end without the exit code: the code is what the operator needs.
  const start = t.start.bind(t);
  t.start = async () => {
    await start();
    const child = (t as unknown as { _process?: ChildProcess })._process;
    child?.once('exit', (code, signal) => {
      log.warn({ server: spec.name, code, signal }, signal ? `the server was ended by ${signal}` : `the server exited with code ${code}`);
    });
  };
  return t;
}

/** The store as logs may name it: never a password. */
export function storeName(store: string): string {
  if (store === 'memory') return 'memory';
  try {
    const u = new URL(store);
    return `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return 'redis';
  }
}

/** A third of the session TTL, at most a minute: the session is touched well before it could run out. */
export function keepAliveMs(ttlSeconds: number): number {
  return Math.max(250, Math.min(60_000, (ttlSeconds * 1000) / 3));
}

function usage(problem: string): never {
  process.stderr.write(`trustgate proxy: ${problem} (trustgate proxy --help)\n`);
  process.exit(2);
}

export async function runProxy(argv: string[], shippedPolicies: string): Promise<void> {
  let a: ProxyArgs;
  try {
    a = parseProxyArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) usage(err.message);
    throw err;
  }
  if (a.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const b = await startBinding(a.policies, shippedPolicies, 'proxy', envOverrides(a));
  const { config, log } = b;
  const sessionMode = a.session !== undefined ? 'shared (--session)' : 'one per host connection';
  log.info({ store: storeName(config.sessionStore), policies: config.policyDir, session: sessionMode, servers: a.servers.map((s) => s.name), userAudience: a.userAudience }, 'proxy starting');
  const poll = new IdlePoll(config.proxyPollUs / 1000);
  const drop = (reason: string) => b.metrics.proxyDropped.labels({ reason }).inc();
  if (a.gateway) {
    await runGateway({ args: a, binding: b, poll, onDrop: drop });
    return;
  }
  const spec = a.servers[0]!;
  const host = new StdioServerTransport();
  const proxy = new McpProxy({
    core: b.core,
    host,
    upstream: upstreamOf(spec, log),
    log,
    serverName: spec.name,
    ...(a.session !== undefined ? { sessionId: a.session } : {}),
    ...(a.userAudience ? { context: { hostShowsUserAudience: true } } : {}),
    pinTools: b.pinTools,
    decisionLog: b.decisionLog,
    keepAliveMs: keepAliveMs(config.sessionTtlSeconds),
    onActivity: () => poll.touch(),
    onDrop: drop,
    describeFailure: (err) => describeFailure(err, spec),
    onClose: () => {
      poll.stop();
      process.exit(0);
    },
  });
  process.stdin.once('end', () => void proxy.close('host'));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void proxy.close(signal));
  try {
    await proxy.start();
  } catch (err) {
    const why = describeFailure(err, spec);
    log.error({ server: spec.name, err: why }, 'could not start the server');
    process.stderr.write(`trustgate proxy: could not start the server: ${why}\n`);
    process.exit(1);
  }
  log.info({ session: proxy.sessionId }, 'proxy ready on stdio');
}
