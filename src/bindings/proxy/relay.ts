/**
 * The MCP proxy's relay (docs/architecture.md#bindings-side-by-side and docs/bindings/proxy.md): between two SDK
 * transports, the host's (Trustgate is its MCP server) and the real
 * server's (Trustgate is its client). Framing and transports are the
 * SDK's; the relay sees whole JSON-RPC messages.
 *
 * Ids are Trustgate's own on both sides. Every request sent to the server
 * carries an id the relay made (a number never used before on this
 * connection), and so does every request of the server's passed to the
 * host (a string never used before). An answer is taken only when its id
 * equals an outstanding id exactly (a Map key: same JSON type and value),
 * once (the entry is gone when it is taken), and only for a request that
 * was sent (a tools/call being judged has no id yet); it then goes back
 * with the asker's own id. Anything else is dropped and counted
 * (`trustgate_proxy_dropped_total{reason}`), never forwarded.
 *
 * Nothing of the server's text reaches the host unjudged. Every message
 * toward the host goes through one path, `#judge`: the core (docs/bindings/proxy.md#what-the-proxy-judges)
 * decides on it under the connection's session and what is forwarded is
 * built from the core's answer (docs/behaviour/forwarding.md, judged.ts). That holds for
 * `tools/call` results (a `task` answer only for a call that asked for a
 * task), JSON-RPC errors (their message judged, their `data` never
 * forwarded), answers to every other request, the server's own requests
 * (`sampling/createMessage`, `elicitation/create`, also inside a 2026-07-28
 * `inputRequests`) and its notifications. Methods the relay does not know
 * are not passed on: a server request is answered with an error, a
 * notification dropped. Policies see the method as `call.method`, with
 * `tool.name` the tool, resource URI or prompt name.
 *
 * `tools/list` answers list only tools whose definition is pinned and
 * unchanged (under the operator's name for the server, never the name the
 * server reports); a call to a tool the server did not list is judged with
 * `tool.pin == "unlisted"`.
 *
 * `tools/call` requests are judged first (docs/behaviour/sessions.md#post-v1evaluate-call): deny: the server
 * never sees the call, and the host gets an `isError` result naming the
 * policy, rule and decision id; consent: asked with `elicitation/create`
 * when the host declared `elicitation`, otherwise denied.
 */
import type { PrincipalVar } from '../../policy/cel/variables.js';
import { randomUUID } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CallDecision, DecisionCore } from '../../decision/core.js';
import { TrustgateError } from '../../errors.js';
import { declined, errorDetail, isErrorResult, uncheckedVerdict, verdictOf, type Consent, type Subject, type Withhold } from '../../decision/verdict.js';
import { deepFreeze } from '../../json/frozen.js';
import { jsonDepth } from '../../json/depth.js';
import { MAX_RESULT_DEPTH } from '../../decision/request-checks.js';
import { isRecord } from '../../json/record.js';
import { judgeable, judgedAs } from './judged.js';
import { HostIds, isId, UpstreamIds, type Id } from './ids.js';
import { descriptionsOf, judgeToolList, type ListedTools } from './tool-list.js';
import { maskedStrings } from './mask-strings.js';
import type { OperatorEntry } from '../../trust/operator.js';

type Msg = Record<string, unknown>;

export interface ProxyLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Why a message from the server (or an answer from the host) was not passed on. */
export type DropReason = 'unknown-id' | 'repeated' | 'method' | 'withheld' | 'malformed' | 'host-unknown-id' | 'too-many' | 'too-deep';

export interface ProxyOptions {
  core: DecisionCore;
  /** Toward the host (the MCP client): Trustgate is its server. */
  host: Transport;
  /** Toward the real server: Trustgate is its client. */
  upstream: Transport;
  log: ProxyLog;
  /** The operator's name for the server: what pins are keyed by, and `server.name` for policies. */
  serverName?: string;
  /** `context` of every result judged (e.g. `hostShowsUserAudience`: the host shows audience-user blocks to its user only). */
  context?: Record<string, unknown>;
  /** The operator's entry for the server (docs/behaviour/operator.md); without it the servers file's (TRUSTGATE_SERVERS). */
  operator?: OperatorEntry | undefined;
  /** `context.destination` of what is judged (`--destination`); without it TRUSTGATE_DESTINATION. */
  destination?: string | undefined;
  /** The Trustgate session of this connection; a fresh one by default. */
  sessionId?: string;
  /** Who the host connection authenticated as (the gateway's HTTP front); the session is theirs. ANONYMOUS on stdio. */
  principal?: PrincipalVar | undefined;
  /**
   * Pin tool definitions as a tools/list answer passes (the store's trust on
   * first use); the pin status of each tool by name. Without it every tool is
   * listed as it came.
   */
  pinTools?: (server: string, tools: Record<string, unknown>[]) => Promise<Map<string, string>>;
  /** Receives the decision log lines. */
  decisionLog?: (entry: object) => void;
  /** How long a consent question may stay unanswered before it counts as declined (ms). */
  consentTimeoutMs?: number;
  /** How often the session is touched while connected (ms), so its TTL never runs out inside a live connection; off when absent. */
  keepAliveMs?: number;
  /** Called once when either side has closed and the other was closed too. */
  onClose?: () => void;
  /** Called on every message that comes in or goes out (the process's idle strategy hooks here: poll.ts). */
  onActivity?: () => void;
  /** Counts what was dropped (the metric `trustgate_proxy_dropped_total`). */
  onDrop?: (reason: DropReason) => void;
  /** Describes why the upstream could not be reached (the transport's own error when it has none). */
  describeFailure?: (err: unknown) => string;
}

interface CallInfo {
  name: string;
  tool: Record<string, unknown> | undefined;
}

/** A request of the host's, sent to the server under Trustgate's id. */
interface Sent {
  hostId: Id;
  method: string;
  params: Msg;
  /** tools/call and tasks/result of a judged task. */
  call?: CallInfo;
  /** The call asked for a task (params.task). */
  task?: boolean;
  /** A request of Trustgate's own (not the host's): its answer goes here, never to the host. */
  own?: (m: Msg) => void;
}

/** A request of the server's, passed to the host under Trustgate's id. */
interface Passed {
  serverId: Id;
  method: string;
}


/** Pages of the server's tool list the proxy reads for itself before a call the host made without listing. */
const OWN_LIST_PAGES = 100;
/** How long the proxy waits for the server to answer a request of its own. */
const OWN_REQUEST_MS = 30_000;

/** Server requests the relay passes to the host (judged when they carry text); any other is refused. */
const SERVER_REQUESTS = new Set(['ping', 'roots/list', 'sampling/createMessage', 'elicitation/create']);
/** Server notifications the relay passes to the host (judged when they carry text); any other is dropped. */
const SERVER_NOTIFICATIONS = new Set([
  'notifications/message',
  'notifications/progress',
  'notifications/cancelled',
  'notifications/tools/list_changed',
  'notifications/resources/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/updated',
  'notifications/tasks/status',
  'notifications/elicitation/complete',
]);
/** Members of a CallToolResult passed on (judged as docs/behaviour/forwarding.md says); anything else a server adds is not. */
const CALL_RESULT_MEMBERS = ['content', 'structuredContent', 'isError', '_meta', 'resultType', 'toolResult', 'inputRequests', 'requestState'];

/** Methods whose answers describe the server rather than carry what the conversation reads. */

/** How many of the server's requests may wait on the host at once: past it a request is refused, so a server cannot grow the relay's memory without end. */
export const MAX_PASSED = 1024;

/**
 * Most levels a message of the server's may nest: a result's bound (the
 * core refuses a result nested deeper) and the message around it. Deeper,
 * the message is not read at all (reading it would go as deep as it
 * does): an answer is replaced by Trustgate's error, a request refused, a
 * notification dropped (`too-deep`).
 */
export const MAX_MESSAGE_DEPTH = MAX_RESULT_DEPTH + 1;

/** The outcome of judging one message: what to forward, or why nothing is. */
type Judged = { ok: true; payload: Msg } | { ok: false; text: string };

export class McpProxy {
  readonly sessionId: string;
  readonly #o: ProxyOptions;
  /** `server` of every decision: the operator's name, and what the server reports of itself, frozen. */
  #server: Readonly<{ name: string; reported?: string }>;
  #protocolVersion: string | undefined;
  #elicitation = false;
  /** Tools the server listed (exact names), frozen: what calls are judged and pinned against (tool-list.ts). */
  readonly #tools: ListedTools = new Map();
  /** Requests sent to the server, by Trustgate's id (ids.ts). */
  readonly #sent = new UpstreamIds<Sent>();
  /** Tasks created by judged tools/call requests. */
  readonly #tasks = new Map<string, CallInfo>();
  /** tools/call requests being judged before they are sent on (by the host's id); `true` once the host cancelled one. */
  readonly #judging = new Map<Id, boolean>();
  /** The server's requests passed to the host, by Trustgate's id (ids.ts). */
  readonly #passed = new HostIds<Passed>();
  /** Trustgate's own questions to the host (consent), by their id. */
  readonly #asked = new Map<string, (answer: Msg | undefined) => void>();
  /** The server's requests being judged, not yet passed on (they count toward MAX_PASSED). */
  #serverJudging = 0;
  #closed = false;
  /** Pending while the server has not yet accepted the host's `notifications/initialized`: later messages wait for it. */
  #initializing: Promise<void> | undefined;
  #keepAlive: NodeJS.Timeout | undefined;

  constructor(options: ProxyOptions) {
    this.#o = options;
    this.sessionId = options.sessionId ?? `proxy-${randomUUID()}`;
    this.#server = deepFreeze({ name: options.serverName ?? '' });
  }

  /** The name the server reported for itself (serverInfo.name), once it answered initialize. */
  get reportedName(): string | undefined {
    return this.#server.reported;
  }

  async start(): Promise<void> {
    const { host, upstream } = this.#o;
    const active = this.#o.onActivity;
    host.onmessage = (m) => {
      active?.();
      this.#fromHost(m as unknown as Msg);
    };
    upstream.onmessage = (m) => {
      active?.();
      this.#fromUpstream(m as unknown as Msg);
    };
    host.onclose = () => void this.close('host');
    upstream.onclose = () => void this.close('upstream');
    host.onerror = (err) => this.#o.log.warn({ side: 'host', err: err.message }, 'transport error');
    upstream.onerror = (err) => this.#o.log.warn({ side: 'upstream', err: this.#describe(err) }, 'transport error');
    await upstream.start();
    await host.start();
    if (this.#o.keepAliveMs !== undefined && this.#o.keepAliveMs > 0) {
      this.#keepAlive = setInterval(() => {
        this.#o.core.touchSession(this.sessionId, this.#o.principal).catch((err: unknown) => this.#o.log.warn({ err: errorDetail(err) }, 'could not keep the session alive'));
      }, this.#o.keepAliveMs);
      this.#keepAlive.unref();
    }
  }

  async close(side = 'proxy'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#keepAlive) clearInterval(this.#keepAlive);
    this.#o.log.info({ side, session: this.sessionId }, 'connection closed');
    for (const resolve of this.#asked.values()) resolve(undefined);
    this.#asked.clear();
    await Promise.allSettled([this.#o.host.close(), this.#o.upstream.close()]);
    this.#o.onClose?.();
  }

  #describe(err: unknown): string {
    return this.#o.describeFailure?.(err) ?? (err instanceof Error ? err.message : String(err));
  }

  #drop(reason: DropReason, detail: object = {}): void {
    this.#o.onDrop?.(reason);
    this.#o.log.warn({ reason, ...detail }, 'message not passed on');
  }

  // ---- host -> upstream

  #fromHost(m: Msg): void {
    if (typeof m.method !== 'string') {
      if (!isId(m.id)) return this.#drop('malformed', { side: 'host' });
      // An answer: to one of Trustgate's questions, or to a server request passed on.
      if (typeof m.id !== 'string') return this.#drop('host-unknown-id');
      const mine = this.#asked.get(m.id);
      if (mine) {
        this.#asked.delete(m.id);
        return mine(m);
      }
      const passed = this.#passed.take(m.id);
      if (!passed) return this.#drop('host-unknown-id');
      const out: Msg = { jsonrpc: '2.0', id: passed.serverId };
      if ('error' in m) out.error = m.error;
      else out.result = m.result;
      return this.#toUpstream(out);
    }
    const params = isRecord(m.params) ? m.params : {};
    if (!('id' in m)) {
      if (m.method === 'notifications/cancelled' && isId(params.requestId)) {
        if (this.#judging.has(params.requestId)) return void this.#judging.set(params.requestId, true);
        const ours = this.#sent.ofHost(params.requestId);
        if (ours === undefined) return;
        return this.#toUpstream({ ...m, params: { ...params, requestId: ours } });
      }
      return this.#toUpstream(m);
    }
    if (!isId(m.id)) return this.#drop('malformed', { side: 'host' });
    if (m.method === 'initialize') {
      const caps = isRecord(params.capabilities) ? params.capabilities : {};
      this.#elicitation = isRecord(caps.elicitation);
    } else if (m.method === 'tools/call') {
      const id = m.id;
      return void this.#judgeCall(id, params).catch((err: unknown) => {
        this.#failed(err, 'tools/call');
        this.#answer(id, isErrorResult(uncheckedVerdict({ kind: 'call', name: typeof params.name === 'string' ? params.name : '' }, err).text));
      });
    }
    let call: CallInfo | undefined;
    if (m.method === 'tasks/result') {
      // A task's result is judged like a call's, also for a task this connection did not see created.
      call = (typeof params.taskId === 'string' ? this.#tasks.get(params.taskId) : undefined) ?? { name: '', tool: undefined };
    }
    this.#send({ hostId: m.id, method: m.method, params, ...(call ? { call } : {}) });
  }

  /** Send a request of the host's to the server under a fresh id of Trustgate's. */
  #send(s: Sent): void {
    const id = this.#sent.open(s);
    this.#toUpstream({ jsonrpc: '2.0', id, method: s.method, params: s.params }, id);
  }

  #toUpstream(m: Msg, ours?: string): void {
    if (this.#closed) return;
    this.#o.onActivity?.();
    const send = (): Promise<void> => (this.#closed ? Promise.resolve() : this.#o.upstream.send(m as unknown as JSONRPCMessage));
    // The host does not wait for its `initialized` to be accepted before its first call; a client of the server must
    // (upstream.ts: over HTTP the server's own stream opens only then). Whatever the host sends meanwhile waits.
    const gate = this.#initializing;
    const sent = gate ? gate.then(send) : send();
    if (m.method === 'notifications/initialized') {
      const done = sent.then(
        () => {},
        () => {},
      );
      this.#initializing = done;
      void done.then(() => {
        if (this.#initializing === done) this.#initializing = undefined;
      });
    }
    sent.catch((err: unknown) => {
      const why = this.#describe(err);
      this.#o.log.warn({ err: why, method: m.method }, 'could not send to the server');
      const s = ours === undefined ? undefined : this.#sent.take(ours);
      if (s) {
        const text = `Trustgate could not reach the server: ${why}`;
        if (s.method === 'tools/call') this.#answer(s.hostId, isErrorResult(text));
        else this.#toHost({ jsonrpc: '2.0', id: s.hostId, error: { code: -32603, message: text } });
      }
    });
  }

  async #judgeCall(id: Id, params: Msg): Promise<void> {
    if (typeof params.name !== 'string' || (params.arguments !== undefined && !isRecord(params.arguments))) {
      // What the policies would see must be what the server gets: a call they cannot read is not forwarded.
      return this.#toHost({ jsonrpc: '2.0', id, error: { code: -32602, message: 'tools/call needs a string name and an arguments object' } });
    }
    const name = params.name;
    const args = params.arguments as Msg | undefined;
    this.#judging.set(id, false);
    // A call before the host listed tools on this connection is judged against the server's list: the proxy lists them itself.
    if (!this.#everListed && !this.#tools.has(name)) await this.#listOwn();
    const tool = this.#tools.get(name);
    let d: CallDecision;
    try {
      d = await this.#o.core.evaluateCall({
        request: {
          call: { name, ...(args ? { arguments: args } : {}) },
          ...(tool ? { tool } : {}),
          server: this.#server,
          session: { id: this.sessionId },
        },
        ...(tool ? {} : { unlisted: true }),
        principal: this.#o.principal,
        operator: this.#o.operator,
        destination: this.#o.destination,
        log: this.#o.decisionLog,
      });
    } catch (err) {
      this.#judging.delete(id);
      this.#o.log.error({ tool: name, err: errorDetail(err) }, 'call could not be checked');
      return this.#answer(id, isErrorResult(uncheckedVerdict({ kind: 'call', name }, err).text));
    }
    const subject: Subject = { kind: 'call', name, ...(this.#server.name ? { server: this.#server.name } : {}), args: args ? Object.keys(args) : [] };
    const verdict = verdictOf(d, subject, this.#canAsk());
    let withheld: Withhold | undefined = verdict.kind === 'withhold' ? verdict : undefined;
    if (verdict.kind === 'ask' && !(await this.#consent(verdict.question))) withheld = declined(d, subject);
    const cancelled = this.#judging.get(id) === true;
    this.#judging.delete(id);
    if (withheld) {
      this.#o.log.info({ tool: name, decisionId: d.decisionId, withheld: withheld.withheld }, 'tool call withheld');
      return this.#answer(id, isErrorResult(withheld.text));
    }
    if (cancelled || this.#closed) return;
    this.#send({ hostId: id, method: 'tools/call', params, call: { name, tool }, task: params.task !== undefined });
  }

  /** Whether a consent can be asked of the host's user: only of a client that declared elicitation. */
  #canAsk(): Consent {
    return this.#elicitation ? { ask: true } : { ask: false, why: 'the client cannot ask (it did not declare elicitation)' };
  }

  /** Ask the host's user; true only on `accept`. */
  #consent(message: string): Promise<boolean> {
    const id = this.#passed.fresh();
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.#asked.delete(id);
        resolve(false);
      }, this.#o.consentTimeoutMs ?? 300_000);
      timer.unref();
      this.#asked.set(id, (answer) => {
        clearTimeout(timer);
        resolve(isRecord(answer?.result) && answer.result.action === 'accept');
      });
      this.#toHost({
        jsonrpc: '2.0',
        id,
        method: 'elicitation/create',
        params: { message, requestedSchema: { type: 'object', properties: {} } },
      });
    });
  }

  // ---- upstream -> host

  #fromUpstream(m: Msg): void {
    if (jsonDepth(m, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH) {
      const why = `it nests deeper than ${MAX_MESSAGE_DEPTH} levels`;
      const method = typeof m.method === 'string' ? m.method.slice(0, 64) : undefined;
      this.#drop('too-deep', method === undefined ? {} : { method });
      if (method !== undefined) {
        if ('id' in m && isId(m.id)) this.#toUpstream({ jsonrpc: '2.0', id: m.id, error: { code: -32600, message: `Trustgate does not pass this request to the client: ${why}` } });
        return;
      }
      // An answer: the host still gets one, Trustgate's own.
      if (!('id' in m)) return;
      m = { jsonrpc: '2.0', id: m.id, error: { code: -32603, message: `Trustgate withheld the server's answer: ${why}` } };
    }
    if (typeof m.method === 'string') {
      const id = m.id;
      if ('id' in m)
        return void this.#serverRequest(m).catch((err: unknown) => {
          this.#failed(err, m.method as string);
          if (isId(id)) this.#toUpstream({ jsonrpc: '2.0', id, error: { code: -32603, message: 'Trustgate could not check this request' } });
        });
      return void this.#serverNotification(m).catch((err: unknown) => {
        this.#failed(err, m.method as string);
        this.#drop('withheld', { method: String(m.method).slice(0, 64) });
      });
    }
    if (!('id' in m)) return this.#drop('malformed');
    // An answer: taken only for an id of Trustgate's that is outstanding, exactly (a Map key: same type and value).
    const id = m.id;
    const s = this.#sent.take(id);
    if (!s) return this.#drop(this.#sent.answered(id) ? 'repeated' : 'unknown-id', { id: typeof id === 'string' || typeof id === 'number' ? id : typeof id });
    if (s.own) return s.own(m);
    void this.#answered(s, m).catch((err: unknown) => {
      // Whatever failed, the host is answered, with words of Trustgate's own: never a silence, never the server's message.
      this.#failed(err, s.method);
      this.#withhold(s, uncheckedVerdict({ kind: 'message', method: s.method, name: this.#subject(s) }, err).text);
    });
  }

  /** A message whose handling failed where no judgement caught it: logged (never its content), and the process goes on. */
  #failed(err: unknown, method: string): void {
    this.#o.log.error({ method: method.slice(0, 64), err: errorDetail(err) }, 'message could not be checked');
  }

  async #answered(s: Sent, m: Msg): Promise<void> {
    const isCall = s.call !== undefined;
    if ('error' in m && !('result' in m)) {
      const e = isRecord(m.error) ? m.error : {};
      const code = typeof e.code === 'number' && Number.isInteger(e.code) ? e.code : -32603;
      const message = typeof e.message === 'string' ? e.message : '';
      const j = await this.#judge(s.method, this.#subject(s), { message }, { ask: false, shape: 'error' });
      const text = j.ok ? String(j.payload.message) : j.text;
      // The server's `data` is never forwarded: only the judged message, or Trustgate's own words.
      if (isCall) return this.#answer(s.hostId, isErrorResult(text));
      return this.#toHost({ jsonrpc: '2.0', id: s.hostId, error: { code, message: text } });
    }
    if (!isRecord(m.result)) {
      const why = new TrustgateError('TG_ERR_BODY_SCHEMA', `the server answered ${s.method} with a result that is not an object`);
      if (isCall) return this.#answer(s.hostId, isErrorResult(uncheckedVerdict({ kind: 'result', name: this.#subject(s) }, why).text));
      return this.#toHost({ jsonrpc: '2.0', id: s.hostId, error: { code: -32603, message: `Trustgate withheld this answer: ${errorDetail(why)}` } });
    }
    let result: Msg = m.result;
    if (isRecord(result.inputRequests)) {
      const inner = await this.#judgeInputRequests(result.inputRequests);
      if (!inner.ok) return this.#withhold(s, inner.text);
      result = { ...result, inputRequests: inner.payload };
    }
    if (s.method === 'initialize') return this.#initialized(s, result);
    if (s.method === 'tools/list') return this.#listed(s, result);
    if (isCall) return this.#callResult(s, result);
    const j = await this.#judge(s.method, this.#subject(s), result, { ask: true });
    if (!j.ok) return this.#withhold(s, j.text);
    this.#toHost({ jsonrpc: '2.0', id: s.hostId, result: j.payload });
  }

  /** `tool.name` for policies: the tool, resource URI or prompt name the request is about. */
  #subject(s: Sent): string {
    if (s.call) return s.call.name;
    const p = s.params;
    if (typeof p.uri === 'string') return p.uri;
    if (typeof p.name === 'string') return p.name;
    if (isRecord(p.ref)) return typeof p.ref.name === 'string' ? p.ref.name : typeof p.ref.uri === 'string' ? p.ref.uri : '';
    return '';
  }

  #withhold(s: Sent, text: string): void {
    if (s.call) return this.#answer(s.hostId, isErrorResult(text));
    this.#toHost({ jsonrpc: '2.0', id: s.hostId, error: { code: -32603, message: text } });
  }

  async #initialized(s: Sent, result: Msg): Promise<void> {
    const info = isRecord(result.serverInfo) ? result.serverInfo : {};
    const reported = typeof info.name === 'string' ? info.name : '';
    this.#server = deepFreeze({ name: this.#server.name, reported });
    if (typeof result.protocolVersion === 'string') {
      this.#protocolVersion = result.protocolVersion;
      this.#o.upstream.setProtocolVersion?.(result.protocolVersion);
    }
    this.#o.log.info({ server: this.#server.name, reported, protocolVersion: this.#protocolVersion, session: this.sessionId }, 'connected');
    // The instructions and descriptions are read by the host's model: judged like any text of the server's.
    const j = await this.#judge('initialize', '', result, { ask: false });
    if (!j.ok) return this.#withhold(s, j.text);
    this.#toHost({ jsonrpc: '2.0', id: s.hostId, result: j.payload });
  }

  /** Whether a tools/list answer was judged on this connection (the host's, or the proxy's own). */
  #everListed = false;
  #listing: Promise<void> | undefined;

  /**
   * List the server's tools for the proxy's own use (up to OWN_LIST_PAGES
   * pages), judged and pinned as a host's list is, so that a call made
   * before the host listed tools meets the definition the server gives.
   * Nothing of it reaches the host. A failure leaves the call unlisted.
   */
  #listOwn(): Promise<void> {
    this.#listing ??= (async () => {
      let cursor: string | undefined;
      for (let page = 0; page < OWN_LIST_PAGES; page++) {
        const m = await this.#ownRequest('tools/list', cursor === undefined ? {} : { cursor });
        if (m === undefined || !isRecord(m.result)) return;
        const j = await judgeToolList(this.#listDeps(), this.#tools, m.result);
        if (!j.ok) return;
        this.#everListed = true;
        cursor = typeof m.result.nextCursor === 'string' ? m.result.nextCursor : undefined;
        if (cursor === undefined) return;
      }
    })().catch(() => {});
    return this.#listing;
  }

  /** Send a request of Trustgate's own to the server; its answer, or undefined when it cannot be sent or the connection ends first. */
  #ownRequest(method: string, params: Msg): Promise<Msg | undefined> {
    return new Promise((resolve) => {
      if (this.#closed) return resolve(undefined);
      const timer = setTimeout(() => resolve(undefined), OWN_REQUEST_MS);
      timer.unref?.();
      const id = this.#sent.open({ hostId: `trustgate-own-${method}`, method, params, own: (m) => (clearTimeout(timer), resolve(m)) });
      this.#toUpstream({ jsonrpc: '2.0', id, method, params }, id);
    });
  }

  #listDeps() {
    const o = this.#o;
    return { core: o.core, log: o.log, server: this.#server, operator: o.operator, ...(o.pinTools ? { pinTools: o.pinTools } : {}), ...(o.context ? { context: o.context } : {}) };
  }

  async #listed(s: Sent, result: Msg): Promise<void> {
    this.#everListed = true;
    const j = await judgeToolList(this.#listDeps(), this.#tools, result);
    if (!j.ok) return this.#withhold(s, j.text);
    const read = await this.#readDescriptions(j.payload);
    if (!read.ok) return this.#withhold(s, read.text);
    this.#toHost({ jsonrpc: '2.0', id: s.hostId, result: j.payload });
  }

  /** What a message is judged as (judged.ts, judgedAs). */
  #discovery(method: string, subject: string): Msg {
    return judgedAs(method, subject, this.#o.operator);
  }

  /** The titles and descriptions of listed tools, read as content of the server (tool-list.ts, descriptionsOf); the list itself is what the `scope: tool` rules made of it. */
  async #readDescriptions(payload: Msg): Promise<{ ok: true } | { ok: false; text: string }> {
    const read = descriptionsOf(payload);
    if (read === undefined) return { ok: true };
    try {
      await this.#decideMessage('tools/list', this.#discovery('tools/list', ''), read);
      return { ok: true };
    } catch (err) {
      this.#o.log.error({ err: errorDetail(err) }, 'tool descriptions could not be checked');
      return { ok: false, text: uncheckedVerdict({ kind: 'message', method: 'tools/list', name: '' }, err).text };
    }
  }

  async #callResult(s: Sent, raw: Msg): Promise<void> {
    const call = s.call!;
    // A task answer only for a call that asked for a task; its result comes later through tasks/result.
    if (s.task && isRecord(raw.task) && typeof raw.task.taskId === 'string' && !('content' in raw)) {
      const j = await this.#judge('tools/call', call.name, { task: raw.task, ...(isRecord(raw._meta) ? { _meta: raw._meta } : {}) }, { ask: false });
      if (!j.ok) return this.#withhold(s, j.text);
      this.#tasks.set(raw.task.taskId, call);
      return this.#answer(s.hostId, j.payload);
    }
    // Otherwise the result is judged as the CallToolResult it is: members the host would read as something else are not passed on.
    const result: Msg = {};
    for (const k of CALL_RESULT_MEMBERS) if (k in raw) result[k] = raw[k];
    if (!Array.isArray(result.content)) result.content = [];
    try {
      // The listed definition is keyed by its name, so the judged message's name is the call's.
      const d = await this.#decideMessage('tools/call', call.tool ?? { name: call.name }, result);
      const subject: Subject = { kind: 'result', name: call.name };
      const verdict = verdictOf(d, subject, this.#canAsk());
      if (verdict.kind === 'withhold') return this.#answer(s.hostId, isErrorResult(verdict.text));
      if (verdict.kind === 'ask' && !(await this.#consent(verdict.question))) return this.#answer(s.hostId, isErrorResult(declined(d, subject).text));
      if (!d.result) throw new Error('no result to forward');
      return this.#answer(s.hostId, d.result);
    } catch (err) {
      this.#o.log.error({ tool: call.name, err: errorDetail(err) }, 'result could not be checked');
      return this.#answer(s.hostId, isErrorResult(uncheckedVerdict({ kind: 'result', name: call.name }, err).text));
    }
  }

  /**
   * The one judged path of every message toward the host but a tools/call
   * result: the core decides on the message's text (judged.ts) under the
   * connection's session; what is forwarded is rebuilt from its answer.
   * `ask`: whether a consent can be asked (an answer to the host's request);
   * elsewhere a consent withholds.
   */
  async #judge(method: string, subject: string, payload: Msg, how: { ask: boolean; args?: Msg; shape?: 'error' }): Promise<Judged> {
    try {
      const j = judgeable(method, payload, how.shape);
      if (j.withheld > 0) this.#o.log.warn({ method, members: j.withheld }, 'members whose names are not names were withheld');
      // URIs, names, media types and annotations are masked, not fenced (mask-strings.ts).
      const ids = await maskedStrings({ core: this.#o.core, server: this.#server, context: this.#o.context, method }, j.identifiers);
      // Nothing of the server's text: nothing to judge (a ping, an empty list).
      if (j.slots === 0 && method !== 'sampling/createMessage') return { ok: true, payload: j.rebuild(j.result, ids) };
      const d = await this.#decideMessage(method, this.#discovery(method, subject), j.result, how.args);
      const judged: Subject = { kind: 'message', method, name: subject };
      // Only an answer to the host's own request can wait on the user; elsewhere a consent withholds.
      const verdict = verdictOf(d, judged, how.ask ? this.#canAsk() : { ask: false, why: '' });
      if (verdict.kind === 'withhold') return { ok: false, text: verdict.text };
      if (verdict.kind === 'ask' && !(await this.#consent(verdict.question))) return { ok: false, text: declined(d, judged).text };
      if (!d.result) throw new Error('no result to forward');
      return { ok: true, payload: j.rebuild(d.result, ids) };
    } catch (err) {
      this.#o.log.error({ method, err: errorDetail(err) }, 'message could not be checked');
      return { ok: false, text: uncheckedVerdict({ kind: 'message', method, name: subject }, err).text };
    }
  }

  /**
   * The core's decision on a message of the server's, under the
   * connection's session: a tools/call result, and the rest the model reads
   * (discovery too: initialize's instructions, list and tool descriptions),
   * which the session takes in like any other.
   */
  #decideMessage(method: string, tool: Msg, result: Msg, args?: Msg) {
    const name = typeof tool.name === 'string' ? tool.name : '';
    return this.#o.core.evaluateResult({
      principal: this.#o.principal,
      operator: this.#o.operator,
      destination: this.#o.destination,
      request: {
        result,
        ...(this.#protocolVersion !== undefined ? { protocolVersion: this.#protocolVersion } : {}),
        tool,
        server: this.#server,
        session: { id: this.sessionId },
        ...(this.#o.context ? { context: this.#o.context } : {}),
      },
      call: { method, name, arguments: args ?? {} },
      log: this.#o.decisionLog,
    });
  }

  /** The server's own requests: passed to the host under Trustgate's id once judged; any other method refused. */
  async #serverRequest(m: Msg): Promise<void> {
    const serverId = m.id;
    if (!isId(serverId)) return this.#drop('malformed');
    const method = m.method as string;
    if (!SERVER_REQUESTS.has(method)) {
      this.#drop('method', { method: method.slice(0, 64) });
      return this.#toUpstream({ jsonrpc: '2.0', id: serverId, error: { code: -32601, message: 'Trustgate does not pass this request to the client' } });
    }
    if (this.#passed.size + this.#serverJudging >= MAX_PASSED) {
      this.#drop('too-many', { method });
      return this.#toUpstream({ jsonrpc: '2.0', id: serverId, error: { code: -32000, message: `Trustgate passes at most ${MAX_PASSED} of the server's requests to the client at once` } });
    }
    const params = isRecord(m.params) ? m.params : {};
    this.#serverJudging++;
    const j = await this.#judgeServerRequest(method, params).finally(() => this.#serverJudging--);
    if (!j.ok) {
      this.#o.log.info({ method }, 'server request withheld');
      if (method === 'elicitation/create') return this.#toUpstream({ jsonrpc: '2.0', id: serverId, result: { action: 'decline' } });
      return this.#toUpstream({ jsonrpc: '2.0', id: serverId, error: { code: -32600, message: j.text } });
    }
    if (this.#closed) return;
    const id = this.#passed.pass({ serverId, method });
    const out: Msg = { jsonrpc: '2.0', id, method };
    if (m.params !== undefined || method !== 'ping') out.params = j.payload;
    this.#toHost(out);
  }

  /** A server request's params judged: sampling messages fenced when untrusted, its includeContext shown to policies. */
  #judgeServerRequest(method: string, params: Msg): Promise<Judged> {
    const args: Msg | undefined = method === 'sampling/createMessage' ? { includeContext: typeof params.includeContext === 'string' ? params.includeContext : 'none' } : undefined;
    return this.#judge(method, '', params, { ask: false, ...(args ? { args } : {}) });
  }

  /** A 2026-07-28 `inputRequests` map: each request judged as the server's request it is; one withheld withholds the answer. */
  async #judgeInputRequests(map: Msg): Promise<Judged> {
    const out: Msg = {};
    for (const [k, v] of Object.entries(map)) {
      if (!isRecord(v) || typeof v.method !== 'string' || !SERVER_REQUESTS.has(v.method)) {
        return { ok: false, text: 'Trustgate withheld this answer: it asks the client for something Trustgate does not pass on' };
      }
      const j = await this.#judgeServerRequest(v.method, isRecord(v.params) ? v.params : {});
      if (!j.ok) return j;
      // Of a request inside, only what MCP defines: its method and its judged params.
      out[k] = { method: v.method, params: j.payload };
    }
    return { ok: true, payload: out };
  }

  async #serverNotification(m: Msg): Promise<void> {
    const method = m.method as string;
    if (!SERVER_NOTIFICATIONS.has(method)) return this.#drop('method', { method: method.slice(0, 64) });
    const params = isRecord(m.params) ? m.params : {};
    if (method === 'notifications/cancelled') {
      // The server cancels one of its own requests passed to the host: under Trustgate's id for it.
      const ours = this.#passed.cancel(params.requestId);
      if (ours === undefined) return this.#drop('unknown-id', { method });
      const out: Msg = { requestId: ours };
      if (typeof params.reason === 'string') {
        const j = await this.#judge(method, '', { reason: params.reason }, { ask: false });
        if (j.ok) out.reason = j.payload.reason;
      }
      return this.#toHost({ jsonrpc: '2.0', method, params: out });
    }
    if (method === 'notifications/progress') {
      // Progress only for a request of the host's in flight, by its token exactly.
      const token = params.progressToken;
      if (!this.#sent.hasToken(token)) return this.#drop('unknown-id', { method });
    }
    const j = await this.#judge(method, '', params, { ask: false });
    if (!j.ok) return this.#drop('withheld', { method });
    this.#toHost({ jsonrpc: '2.0', method, params: j.payload });
  }

  #answer(id: Id, result: Record<string, unknown>): void {
    this.#toHost({ jsonrpc: '2.0', id, result });
  }

  #toHost(m: Msg): void {
    if (this.#closed) return;
    this.#o.onActivity?.();
    this.#o.host.send(m as unknown as JSONRPCMessage).catch((err: unknown) => {
      this.#o.log.warn({ err: (err as Error)?.message }, 'could not send to the host');
    });
  }
}
