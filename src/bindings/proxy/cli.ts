/**
 * `trustgate proxy [--policies DIR] -- <command> [args...]`: the host
 * starts Trustgate as its stdio MCP server and Trustgate starts the real
 * server as its child.
 * `trustgate proxy [--policies DIR] --upstream <url> [--header 'Name: value']...`:
 * the real server is reached over Streamable HTTP, every request carrying
 * the headers given (and TRUSTGATE_UPSTREAM_AUTHORIZATION as Authorization).
 * Standard output is the MCP channel; logs go to standard error; the
 * child's standard error is passed through to it.
 */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { startBinding, takePolicies } from '../process.js';
import { IdlePoll } from './poll.js';
import { McpProxy } from './relay.js';

const USAGE = "usage: trustgate proxy [--policies DIR] -- <command> [args...]\n       trustgate proxy [--policies DIR] --upstream <url> [--header 'Name: value']...\n";

function usage(problem: string): never {
  process.stderr.write(`trustgate proxy: ${problem}\n${USAGE}`);
  process.exit(2);
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The headers every request to an `--upstream` server carries: each
 * `--header 'Name: value'`, and `Authorization` from
 * TRUSTGATE_UPSTREAM_AUTHORIZATION (a token kept out of the command line,
 * which other users of the machine can read) unless a `--header` sets it.
 */
function upstreamHeaders(args: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i] !== '--header') usage(`unknown arguments: ${args.slice(i).join(' ')}`);
    const h = args[++i];
    const colon = h === undefined ? -1 : h.indexOf(':');
    if (h === undefined || colon <= 0) usage("--header needs 'Name: value'");
    const name = h.slice(0, colon).trim();
    const value = h.slice(colon + 1).trim();
    if (!HEADER_NAME.test(name) || /[\r\n\0]/.test(value)) usage(`--header is not a valid header: ${name}`);
    headers[name.toLowerCase()] = value;
  }
  const auth = process.env.TRUSTGATE_UPSTREAM_AUTHORIZATION;
  if (auth !== undefined && auth !== '' && headers.authorization === undefined) {
    if (/[\r\n\0]/.test(auth)) usage('TRUSTGATE_UPSTREAM_AUTHORIZATION is not a valid header value');
    headers.authorization = auth;
  }
  return headers;
}

/** The upstream transport the arguments name. */
export function upstreamOf(args: string[]): Transport {
  const dash = args.indexOf('--');
  const before = dash < 0 ? args : args.slice(0, dash);
  const command = dash < 0 ? [] : args.slice(dash + 1);
  const u = before.indexOf('--upstream');
  if (u >= 0) {
    const raw = before[u + 1];
    if (raw === undefined) usage('--upstream needs a URL');
    if (command.length > 0) usage('--upstream takes no command');
    const headers = upstreamHeaders([...before.slice(0, u), ...before.slice(u + 2)]);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      usage(`--upstream is not a URL: ${raw}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') usage('--upstream must be an http or https URL');
    return new StreamableHTTPClientTransport(url, Object.keys(headers).length > 0 ? { requestInit: { headers } } : undefined);
  }
  if (before.length > 0) usage(`unknown arguments: ${before.join(' ')}`);
  if (command.length === 0) usage('name the server to start after --, or give --upstream <url>');
  // The server gets the environment the host gave Trustgate (API keys and the like), and its working directory.
  return new StdioClientTransport({
    command: command[0]!,
    args: command.slice(1),
    env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
    stderr: 'inherit',
  });
}

export async function runProxy(args: string[], shippedPolicies: string): Promise<void> {
  const rest = [...args];
  const dash = rest.indexOf('--');
  const own = dash < 0 ? rest : rest.slice(0, dash);
  const policies = takePolicies(own);
  const upstream = upstreamOf(dash < 0 ? own : [...own, ...rest.slice(dash)]);
  const { config, log, core, pinTools, decisionLog } = await startBinding(policies, shippedPolicies, 'proxy');
  const host = new StdioServerTransport();
  const poll = new IdlePoll(config.proxyPollUs / 1000);
  const proxy = new McpProxy({
    core,
    host,
    upstream,
    log,
    pinTools,
    decisionLog,
    onActivity: () => poll.touch(),
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
    log.error({ err: (err as Error).message }, 'could not start the server');
    process.stderr.write(`trustgate proxy: could not start the server: ${(err as Error).message}\n`);
    process.exit(1);
  }
  log.info({ session: proxy.sessionId }, 'proxy ready on stdio');
}
