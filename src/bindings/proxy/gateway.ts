/**
 * Gateway mode (docs/bindings/proxy.md): `trustgate proxy --config <file>`
 * serves every server of an `mcpServers` file to the host as one MCP
 * server, on stdio or (with `--listen host:port`) Streamable HTTP at `/mcp`.
 *
 * Each server sits behind a relay of its own (relay.ts: Trustgate's ids,
 * every message judged, pins under the server's key in the file); the
 * gateway speaks to each relay with the SDK Client over an in-memory pair,
 * and to the host with the SDK Server. Every relay of one host connection
 * judges under one session, so untrusted text read through one server gates
 * a write on another. Tools are named `<name>__<tool>`; the server's own
 * requests (sampling, elicitation, roots), Trustgate's consent questions,
 * log lines and progress reach the host through the Server, after the relay
 * judged them.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  InitializeRequestSchema,
  ListRootsRequestSchema,
  ListToolsRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
  type ClientCapabilities,
  type InitializeResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Writable } from 'node:stream';
import type { DecisionCore } from '../../decision/core.js';
import { batchedPerTurn } from './batch.js';
import { describeFailure, keepAliveMs, upstreamOf } from './upstream.js';
import type { ProxyArgs, ServerSpec } from './options.js';
import type { IdlePoll } from './poll.js';
import { McpProxy, type DropReason, type ProxyLog } from './relay.js';
import { browserOrigin } from '../../http/browser.js';
import { challenge } from '../../http/bearer.js';
import type { Authentication } from '../../http/identity.js';
import type { Quotas } from '../../http/quota.js';
import { ownerKey } from '../../decision/core.js';
import type { PrincipalVar } from '../../policy/cel/variables.js';
import { isRecord } from '../../json/record.js';
import { VERSION } from '../../version.js';

/** What the gateway asks of the process it runs in (src/main/proxy.ts gives it). */
export interface GatewayHost {
  /** Calls `f` once the host closes standard input. */
  onInputEnd(f: () => void): void;
  /** Calls `f` on SIGTERM and SIGINT. */
  onStop(f: () => void): void;
  /** Writes one line to standard error. */
  say(line: string): void;
  /** Ends the process with this status. */
  exit(code: number): never;
  /** The process's standard output: the MCP channel of a gateway on stdio. */
  stdout: Writable;
}

/** What the gateway judges with: the process's core and what it logs and pins (src/main/start.ts's startBinding gives it). */
export interface GatewayBinding {
  core: DecisionCore;
  log: ProxyLog;
  /** Pins the definitions of a tools/list answer (trust on first use), as /v1/evaluate-call would. */
  pinTools: (server: string, tools: Record<string, unknown>[]) => Promise<Map<string, string>>;
  /** Writes a decision log line; undefined when the log level drops them. */
  decisionLog: ((entry: object) => void) | undefined;
  /** TRUSTGATE_SESSION_TTL_SECONDS, the default of --session-ttl; TRUSTGATE_MAX_TOOLS, the most tools one server may list. */
  config: { sessionTtlSeconds: number; maxTools: number };
}

/** The most pages of one server's tools/list the gateway follows: a cursor that never ends is cut off. */
export const MAX_TOOL_PAGES = 100;

export interface GatewayOptions {
  args: ProxyArgs;
  binding: GatewayBinding;
  poll: IdlePoll;
  onDrop: (reason: DropReason) => void;
  host: GatewayHost;
  /** The HTTP front's authentication and quotas (src/main/proxy.ts makes them; required with `--listen`). */
  front?: GatewayFront;
}

/** Who may use the HTTP front, and how much (docs/operations/authentication.md). */
export interface GatewayFront {
  auth: Authentication;
  quotas: Quotas;
  /** Counts refusals (401 by reason, 429 by reason). */
  onRefused: (status: 401 | 429, reason: string) => void;
  /** The `authorization_servers` of the resource metadata (the JWT issuer), if any. */
  authorizationServers: readonly string[];
}

/** A host that held the event stream and let it go is gone once it sends nothing for this long (ms). */
export const STREAM_GRACE_MS = 10_000;
/** Default `--idle-timeout`, seconds. */
export const DEFAULT_IDLE_TIMEOUT_S = 600;
/** RFC 9728 metadata of the protected resource `/mcp`. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** Host connections one gateway on Streamable HTTP serves at once: each starts every server of the file. */
export const MAX_CONNECTIONS = 64;
/** The largest initialize request read before a connection's servers are started. */
const MAX_INITIALIZE_BYTES = 1 << 20;
/** No web page's origin is served (the gateway has no TRUSTGATE_ALLOWED_ORIGINS of its own). */
const NO_ORIGINS: ReadonlySet<string> = new Set();

/** A host connection of the HTTP front. */
interface Connection {
  transport: StreamableHTTPServerTransport;
  gateway: Gateway;
  /** Requests of it being answered (a GET stream stays open as long as the host holds it). */
  open: number;
  /** When it was last used (ms). */
  seen: number;
  /** The host opened the event stream (a GET) at some point. */
  streamed: boolean;
  /** The owner key of the principal that opened it: only they may use it. */
  owner: string;
  /** Gives back the principal's connection quota. */
  release: () => void;
}

/** A JSON-RPC error answer over HTTP, with no session. */
function refuse(res: ServerResponse, status: number, message: string, code = -32000, headers: Record<string, string> = {}): void {
  // A body too large is not read to its end: the connection closes once this answer is sent.
  res
    .writeHead(status, { 'content-type': 'application/json', ...(status === 413 ? { connection: 'close' } : {}), ...headers })
    .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }));
}

class BodyError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The body of a request that opens a connection, parsed: the initialize request, or undefined when it is not one. */
function readInitialize(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size > MAX_INITIALIZE_BYTES) return;
      size += chunk.length;
      if (size > MAX_INITIALIZE_BYTES) reject(new BodyError(413, `an initialize request is at most ${MAX_INITIALIZE_BYTES} bytes`));
      else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > MAX_INITIALIZE_BYTES) return;
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reject(new BodyError(400, 'the body is not JSON'));
      }
      resolve(isRecord(body) && body.method === 'initialize' && 'id' in body ? body : undefined);
    });
  });
}

/** `<name>__<tool>`: server names hold no `__` (options.ts), so the first `__` splits. */
export const SEPARATOR = '__';

interface Member {
  spec: ServerSpec;
  client: Client;
  proxy: McpProxy;
}

/** One host connection: the servers of the file, each behind its relay, all under one session. */
export class Gateway {
  readonly sessionId: string;
  readonly server: Server;
  readonly #o: GatewayOptions;
  readonly #members = new Map<string, Member>();
  #closed = false;
  #onClose: (() => void) | undefined;

  readonly #principal: PrincipalVar | undefined;

  constructor(o: GatewayOptions, onClose?: () => void, principal?: PrincipalVar) {
    this.#o = o;
    this.#principal = principal;
    this.#onClose = onClose;
    this.sessionId = o.args.session ?? `gateway-${randomUUID()}`;
    this.server = new Server({ name: 'trustgate-gateway', version: VERSION }, { capabilities: { tools: { listChanged: true }, logging: {} } });
    this.server.setRequestHandler(ListToolsRequestSchema, () => this.#listTools());
    this.server.setRequestHandler(CallToolRequestSchema, (req, extra) => this.#callTool(req.params, extra));
    this.server.onclose = () => void this.close();
  }

  /**
   * Serve the host. Its servers are started when it initializes, each as a
   * client that declares what the host declared and nothing more (sampling,
   * elicitation, roots), so a server never asks the host for what it cannot
   * give; the host's initialize is answered once they are up, with their
   * instructions (judged by their relays, as all their text is) under their
   * names. A server that cannot be started is logged and left out; none at
   * all fails the initialize.
   */
  async connect(host: Transport): Promise<void> {
    this.server.setRequestHandler(InitializeRequestSchema, async (request) => {
      await this.#startMembers(request.params.capabilities);
      // The SDK's own answer (version negotiation, the host's capabilities recorded), with the servers' instructions.
      const answer = await (this.server as unknown as { _oninitialize(r: typeof request): Promise<InitializeResult> })._oninitialize(request);
      const instructions = [...this.#members.values()]
        .map((m) => ({ name: m.spec.name, text: m.client.getInstructions() }))
        .filter((m): m is { name: string; text: string } => typeof m.text === 'string' && m.text.trim() !== '')
        .map((m) => `## ${m.name}\n\n${m.text.trim()}`);
      return instructions.length > 0 ? { ...answer, instructions: instructions.join('\n\n') } : answer;
    });
    await this.server.connect(host);
  }

  #starting: Promise<void> | undefined;

  /** Start every server once, concurrently, as clients with the host's capabilities. */
  #startMembers(host: ClientCapabilities): Promise<void> {
    this.#starting ??= (async () => {
      const log = this.#o.binding.log;
      await Promise.all(
        this.#o.args.servers.map(async (spec) => {
          try {
            this.#members.set(spec.name, await this.#member(spec, host));
          } catch (err) {
            log.error({ server: spec.name, err: describeFailure(err, spec) }, 'could not start the server; its tools are left out');
          }
        }),
      );
      if (this.#members.size === 0) throw new Error('no server of the config file could be started');
    })();
    return this.#starting;
  }

  async #member(spec: ServerSpec, host: ClientCapabilities): Promise<Member> {
    const b = this.#o.binding;
    const [relaySide, clientSide] = InMemoryTransport.createLinkedPair();
    const proxy = new McpProxy({
      core: b.core,
      host: relaySide,
      upstream: upstreamOf(spec, b.log),
      log: b.log,
      serverName: spec.name,
      operator: spec.operator,
      destination: this.#o.args.destination,
      sessionId: this.sessionId,
      principal: this.#principal,
      ...(this.#o.args.userAudience ? { context: { hostShowsUserAudience: true } } : {}),
      pinTools: b.pinTools,
      decisionLog: b.decisionLog,
      keepAliveMs: keepAliveMs(b.config.sessionTtlSeconds),
      onActivity: () => this.#o.poll.touch(),
      onDrop: this.#o.onDrop,
      describeFailure: (err) => describeFailure(err, spec),
    });
    await proxy.start();
    // The server is told what the host declared, and only that: what it asks for (judged by the relay) goes on to the host;
    // a request for what the host did not declare is answered here as a method not found.
    const capabilities: ClientCapabilities = {};
    if (host.sampling !== undefined) capabilities.sampling = host.sampling;
    if (host.elicitation !== undefined) capabilities.elicitation = host.elicitation;
    if (host.roots !== undefined) capabilities.roots = host.roots;
    const client = new Client({ name: 'trustgate-gateway', version: VERSION }, { capabilities });
    if (capabilities.sampling) client.setRequestHandler(CreateMessageRequestSchema, (req) => this.server.createMessage(req.params));
    if (capabilities.elicitation) client.setRequestHandler(ElicitRequestSchema, (req) => this.server.elicitInput(req.params));
    if (capabilities.roots) client.setRequestHandler(ListRootsRequestSchema, () => this.server.listRoots());
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => this.server.sendLoggingMessage({ ...n.params, logger: spec.name }));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.server.sendToolListChanged());
    await client.connect(clientSide);
    return { spec, client, proxy };
  }

  async #listTools(): Promise<{ tools: Tool[] }> {
    const lists = await Promise.all(
      [...this.#members.values()].map(async (m) => {
        const tools: Tool[] = [];
        const max = this.#o.binding.config.maxTools;
        try {
          let cursor: string | undefined;
          let pages = 0;
          // Followed while within its bounds only: a cursor that never ends is cut off.
          do {
            const page = await m.client.listTools(cursor === undefined ? undefined : { cursor });
            pages++;
            for (const t of page.tools) tools.push({ ...t, name: `${m.spec.name}${SEPARATOR}${t.name}` });
            cursor = page.nextCursor;
          } while (cursor !== undefined && pages < MAX_TOOL_PAGES && tools.length <= max);
          if (cursor !== undefined || tools.length > max) {
            // A list past its bounds: that server's tools are left out, and the cut counted.
            this.#o.binding.log.error({ server: m.spec.name, pages, tools: tools.length, maxPages: MAX_TOOL_PAGES, maxTools: max }, 'tools/list past its bounds; that server is left out of the list');
            this.#o.onDrop('too-many');
            return [];
          }
        } catch (err) {
          this.#o.binding.log.warn({ server: m.spec.name, err: (err as Error).message }, 'tools/list failed; that server is left out of the list');
        }
        return tools;
      }),
    );
    return { tools: lists.flat() };
  }

  async #callTool(params: { name: string; arguments?: Record<string, unknown>; _meta?: Record<string, unknown> }, extra: { signal: AbortSignal; sendNotification: (n: never) => Promise<void> }) {
    const at = params.name.indexOf(SEPARATOR);
    const m = at > 0 ? this.#members.get(params.name.slice(0, at)) : undefined;
    if (m === undefined) {
      return { content: [{ type: 'text' as const, text: `Trustgate: no server of this gateway offers the tool ${JSON.stringify(params.name.slice(0, 128))}` }], isError: true };
    }
    const token = params._meta?.progressToken;
    return m.client.request(
      { method: 'tools/call', params: { ...params, name: params.name.slice(at + SEPARATOR.length) } },
      CallToolResultSchema,
      {
        signal: extra.signal,
        timeout: 24 * 3600_000,
        ...(token !== undefined
          ? { onprogress: (p) => void extra.sendNotification({ method: 'notifications/progress', params: { ...p, progressToken: token } } as never) }
          : {}),
      },
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#members.values()].map((m) => m.proxy.close()));
    await this.server.close().catch(() => {});
    this.#onClose?.();
  }
}

export async function runGateway(o: GatewayOptions): Promise<void> {
  const log = o.binding.log;
  const proc = o.host;
  if (o.args.listen === undefined) {
    const g = new Gateway(o, () => {
      o.poll.stop();
      proc.exit(0);
    });
    proc.onInputEnd(() => void g.close());
    proc.onStop(() => void g.close());
    try {
      await g.connect(batchedPerTurn(new StdioServerTransport(undefined, proc.stdout), () => proc.stdout));
    } catch (err) {
      proc.say(`trustgate proxy: ${(err as Error).message}`);
      proc.exit(1);
    }
    log.info({ session: g.sessionId, servers: o.args.servers.map((s) => s.name) }, 'gateway ready on stdio');
    return;
  }
  // Streamable HTTP: one gateway (and one session, unless --session) per host connection, each its principal's.
  const front = o.front;
  if (front === undefined) throw new Error('the HTTP front needs its authentication');
  const { host, port } = o.args.listen;
  const connections = new Map<string, Connection>();
  // A connection no host has used for --idle-timeout (no request, no stream open) is over: it is closed and its
  // servers stopped, so hosts that went away without DELETE do not hold servers or the quota. A host that held the
  // event stream and let it go is gone after STREAM_GRACE_MS of silence (the SDK client's close() sends no DELETE).
  const idleMs = (o.args.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_S) * 1000;
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const c of connections.values()) {
        if (c.open === 0 && (now - c.seen >= idleMs || (c.streamed && now - c.seen >= STREAM_GRACE_MS))) void c.transport.close();
      }
    },
    Math.min(1_000, Math.max(100, idleMs / 4)),
  );
  sweep.unref();
  /** Serve one request of a connection, counting it (and the stream it may hold open) as use. */
  const serve = (c: Connection, req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> => {
    c.open++;
    c.seen = Date.now();
    if (req.method === 'GET') c.streamed = true;
    res.once('close', () => {
      c.open--;
      c.seen = Date.now();
    });
    return c.transport.handleRequest(req, res, body);
  };
  let origin = '';
  const metadataUrl = () => `${origin}${RESOURCE_METADATA_PATH}/mcp`;
  /** Connections whose initialize is being answered: counted against the cap before they have a session id. */
  let starting = 0;
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === RESOURCE_METADATA_PATH || url.pathname === `${RESOURCE_METADATA_PATH}/mcp`) {
      // RFC 9728: what this resource is and who issues its tokens (public, as the 401 points here).
      const metadata = { resource: `${origin}/mcp`, authorization_servers: front.authorizationServers, bearer_methods_supported: ['header'], resource_name: 'Trustgate gateway' };
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(metadata));
      return;
    }
    if (url.pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the MCP endpoint is /mcp\n');
      return;
    }
    // A web page the user opens may not drive the gateway, under its own name pointed at this address (DNS rebinding) or any other.
    if (browserOrigin(req.headers, NO_ORIGINS).refused) return refuse(res, 403, 'requests from web pages are refused');
    void front.auth.authenticate(req.headers.authorization).then(async (who) => {
      if (!who.ok) {
        front.onRefused(401, who.reason);
        return refuse(res, 401, `unauthorized: ${who.detail}`, -32001, { 'www-authenticate': challenge(who.reason, metadataUrl()) });
      }
      const owner = ownerKey(who.principal);
      const rate = await front.quotas.request(owner, 0).catch(() => undefined);
      if (rate === undefined) return refuse(res, 503, 'the quota store cannot be reached; retry later', -32603, { 'retry-after': '1' });
      if (!rate.ok) {
        front.onRefused(429, rate.reason);
        return refuse(res, 429, 'too many requests from this principal', -32000, { 'retry-after': String(rate.retryAfterSeconds) });
      }
      const sid = req.headers['mcp-session-id'];
      if (typeof sid === 'string') {
        const c = connections.get(sid);
        // Another principal's connection is answered as none at all.
        if (!c || c.owner !== owner) return refuse(res, 404, 'unknown session', -32001);
        void serve(c, req, res);
        return;
      }
      if (req.method !== 'POST') return refuse(res, 400, 'start a session with initialize');
      // Servers are started for a host connection only: for an initialize request, within the cap and the principal's quota.
      let body: Record<string, unknown> | undefined;
      try {
        body = await readInitialize(req);
      } catch (err) {
        return refuse(res, err instanceof BodyError ? err.status : 400, (err as Error).message, -32700);
      }
      if (body === undefined) return refuse(res, 400, 'start a session with initialize');
      if (connections.size + starting >= MAX_CONNECTIONS) return refuse(res, 503, `this gateway serves at most ${MAX_CONNECTIONS} host connections at once`);
      const quota = front.quotas.connection(owner);
      if (!quota.ok) {
        front.onRefused(429, quota.reason);
        return refuse(res, 429, 'this principal holds as many host connections as its quota allows (TRUSTGATE_QUOTA_CONNECTIONS)', -32000, { 'retry-after': String(quota.retryAfterSeconds) });
      }
      starting++;
      const gateway = new Gateway(o, undefined, who.principal);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void connections.set(id, c),
      });
      const c: Connection = { transport, gateway, open: 0, seen: Date.now(), streamed: false, owner, release: quota.release };
      transport.onclose = () => {
        if (transport.sessionId) connections.delete(transport.sessionId);
        c.release();
        void gateway.close();
      };
      await gateway
        .connect(transport)
        .then(() => serve(c, req, res, body))
        .catch((err: unknown) => {
          log.error({ err: (err as Error).message }, 'could not start a gateway connection');
          if (!res.headersSent) refuse(res, 502, (err as Error).message, -32603);
        })
        .finally(() => {
          starting--;
          // An initialize the transport did not accept opened no session: nothing will ever use these servers.
          if (transport.sessionId === undefined || !connections.has(transport.sessionId)) {
            c.release();
            void gateway.close();
          }
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolve());
  });
  const address = http.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  origin = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`;
  log.info({ url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/mcp`, servers: o.args.servers.map((s) => s.name) }, 'gateway listening');
  proc.say(`trustgate proxy: gateway listening on http://${host.includes(':') ? `[${host}]` : host}:${bound}/mcp`);
  proc.onStop(() => {
    void Promise.allSettled([...connections.values()].map((c) => c.gateway.close())).then(() => proc.exit(0));
  });
}
