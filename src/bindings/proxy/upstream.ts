/**
 * Reaching the servers behind the proxy: the SDK transport for a server
 * spec, and what went wrong in words an operator can act on.
 */
import type { ChildProcess } from 'node:child_process';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ServerSpec } from './options.js';
import type { ProxyLog } from './relay.js';

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
  if ('url' in spec) return streamOpenedOnInitialized(new StreamableHTTPClientTransport(spec.url, Object.keys(spec.headers).length > 0 ? { requestInit: { headers: spec.headers } } : undefined));
  const t = new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, stderr: 'inherit', ...(spec.cwd ? { cwd: spec.cwd } : {}) });
  // The SDK keeps the child to itself and reports its end without the exit code: the code is what the operator needs.
  // A server Trustgate stopped (the host went away, the gateway shut down) ended as asked: that is said at info, not warn.
  let stopping = false;
  const close = t.close.bind(t);
  t.close = async () => {
    stopping = true;
    await close();
  };
  const start = t.start.bind(t);
  t.start = async () => {
    await start();
    const child = (t as unknown as { _process?: ChildProcess })._process;
    child?.once('exit', (code, signal) => {
      if (stopping) log.info({ server: spec.name, code, signal }, 'the server stopped');
      else log.warn({ server: spec.name, code, signal }, signal ? `the server was ended by ${signal}` : `the server exited with code ${code}`);
    });
  };
  return t;
}

/**
 * Sending `notifications/initialized` resolves only once the server's own
 * stream (the standalone GET) is open, or the server said it has none.
 * The SDK transport opens that stream after the server accepted the
 * notification, without waiting for it; a server request that is not tied
 * to a request of the client's (an `elicitation/create` inside a tool, with
 * no related request) goes on that stream, and a server drops it when the
 * stream is not there yet. The relay sends nothing else until this send has
 * resolved (relay.ts), so the server never sees the first call before it can
 * ask the client something.
 */
function streamOpenedOnInitialized(t: StreamableHTTPClientTransport): StreamableHTTPClientTransport {
  const inner = t as unknown as { _startOrAuthSse?: (options: { resumptionToken?: string }) => Promise<void> };
  const startSse = inner._startOrAuthSse;
  if (typeof startSse !== 'function') return t;
  let opened: Promise<void> | undefined;
  inner._startOrAuthSse = (options) => {
    const p = startSse.call(t, options);
    if (options.resumptionToken === undefined) opened = p.catch(() => {});
    return p;
  };
  const send = t.send.bind(t);
  t.send = async (message, options) => {
    await send(message, options);
    if ('method' in message && message.method === 'notifications/initialized' && opened) {
      // A stream that never answers must not hold the session: the server's requests may then be lost, as they would be directly.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([opened, new Promise<void>((resolve) => (timer = setTimeout(resolve, STREAM_OPEN_WAIT_MS)))]);
      clearTimeout(timer);
      opened = undefined;
    }
  };
  return t;
}

/** How long the first message after `initialized` may wait for the server's stream to open. */
const STREAM_OPEN_WAIT_MS = 5_000;

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

