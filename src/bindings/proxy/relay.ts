/**
 * The transparent MCP proxy (contract section 14): a relay between two SDK
 * transports, the host's (Trustgate is its MCP server) and the real
 * server's (Trustgate is its client). Framing and transports are the
 * SDK's; the relay sees whole JSON-RPC messages and passes every one
 * unchanged, except:
 *
 * - `tools/list` answers: the definitions are remembered (they are what
 *   each later call is judged and pinned against);
 * - `tools/call` requests: judged by the core first (section 12). deny:
 *   the server never sees the call and the host gets an `isError` result
 *   naming the policy, rule and decision id. consent: asked with
 *   `elicitation/create` when the host declared `elicitation`, the call
 *   goes on only on `accept`; otherwise denied;
 * - `tools/call` results (and `tasks/result` answers of a task a judged
 *   call created): judged by the core (section 3) and forwarded as the
 *   core's `result` (section 11), never the original; deny: `isError`.
 *
 * Everything else (notifications, progress, cancellation, resources,
 * prompts, completion, logging, and the server's own requests to the host:
 * sampling, elicitation, roots, ping) passes through as it came. One
 * Trustgate session per proxied connection.
 */
import { randomUUID } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CallDecision, DecisionCore } from '../../decision/core.js';
import { TrustgateError } from '../../errors.js';
import { errorDetail, isErrorResult, uncheckedText, withheldText, type Withheld } from '../answers.js';
import { deepFreeze } from '../../json/frozen.js';

type Msg = Record<string, unknown>;
type Id = string | number;

export interface ProxyLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ProxyOptions {
  core: DecisionCore;
  /** Toward the host (the MCP client): Trustgate is its server. */
  host: Transport;
  /** Toward the real server: Trustgate is its client. */
  upstream: Transport;
  log: ProxyLog;
  /** The Trustgate session of this connection; a fresh one by default. */
  sessionId?: string;
  /** Pin tool definitions as a tools/list answer passes (the store's trust on first use). */
  pinTools?: (server: string, tools: Record<string, unknown>[]) => Promise<void>;
  /** Receives the decision log lines. */
  decisionLog?: (entry: object) => void;
  /** How long a consent question may stay unanswered before it counts as declined (ms). */
  consentTimeoutMs?: number;
  /** Called once when either side has closed and the other was closed too. */
  onClose?: () => void;
  /** Called on every message that comes in or goes out (the process's idle strategy hooks here: poll.ts). */
  onActivity?: () => void;
}

interface CallInfo {
  name: string;
  tool: Record<string, unknown> | undefined;
}

const key = (id: Id): string => `${typeof id}:${id}`;
const isRecord = (v: unknown): v is Msg => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is Id => typeof v === 'string' || typeof v === 'number';

export class McpProxy {
  readonly sessionId: string;
  readonly #o: ProxyOptions;
  /** `server` of every request judged: the upstream's name (from its initialize answer), frozen. */
  #server: Readonly<{ name: string }> = deepFreeze({ name: '' });
  #protocolVersion: string | undefined;
  #elicitation = false;
  #initId: string | undefined;
  readonly #tools = new Map<string, Record<string, unknown>>();
  /** Upstream request ids (host's ids) of tools/list requests in flight. */
  readonly #lists = new Set<string>();
  /** Upstream request ids of forwarded tools/call requests, and of tasks/result requests for judged tasks. */
  readonly #calls = new Map<string, CallInfo>();
  /** Tasks created by judged tools/call requests. */
  readonly #tasks = new Map<string, CallInfo>();
  /** tools/call requests being judged before they are sent on; `true` once the host cancelled one. */
  readonly #judging = new Map<string, boolean>();
  /** Trustgate's own requests to the host (elicitation/create). */
  readonly #asked = new Map<string, (answer: Msg | undefined) => void>();
  readonly #prefix = `trustgate-${randomUUID()}-`;
  #next = 0;
  #closed = false;

  constructor(options: ProxyOptions) {
    this.#o = options;
    this.sessionId = options.sessionId ?? `proxy-${randomUUID()}`;
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
    upstream.onerror = (err) => this.#o.log.warn({ side: 'upstream', err: err.message }, 'transport error');
    await upstream.start();
    await host.start();
  }

  async close(side = 'proxy'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#o.log.info({ side, session: this.sessionId }, 'connection closed');
    for (const resolve of this.#asked.values()) resolve(undefined);
    this.#asked.clear();
    await Promise.allSettled([this.#o.host.close(), this.#o.upstream.close()]);
    this.#o.onClose?.();
  }

  // ---- host -> upstream

  #fromHost(m: Msg): void {
    if (isId(m.id) && typeof m.method !== 'string') {
      // A response: to one of Trustgate's questions, or to the server's own request.
      const mine = typeof m.id === 'string' ? this.#asked.get(m.id) : undefined;
      if (mine) {
        this.#asked.delete(m.id as string);
        mine(m);
        return;
      }
      return this.#toUpstream(m);
    }
    if (typeof m.method === 'string' && isId(m.id)) {
      const params = isRecord(m.params) ? m.params : {};
      if (m.method === 'initialize') {
        this.#initId = key(m.id);
        const caps = isRecord(params.capabilities) ? params.capabilities : {};
        this.#elicitation = isRecord(caps.elicitation);
      } else if (m.method === 'tools/list') {
        this.#lists.add(key(m.id));
      } else if (m.method === 'tools/call') {
        void this.#judgeCall(m, params);
        return;
      } else if (m.method === 'tasks/result') {
        // A task's result is judged like a call's, also for a task this connection did not see created.
        const task = typeof params.taskId === 'string' ? this.#tasks.get(params.taskId) : undefined;
        this.#calls.set(key(m.id), task ?? { name: '', tool: undefined });
      }
      return this.#toUpstream(m);
    }
    if (m.method === 'notifications/cancelled' && isRecord(m.params) && isId(m.params.requestId)) {
      const k = key(m.params.requestId);
      if (this.#judging.has(k)) this.#judging.set(k, true);
    }
    this.#toUpstream(m);
  }

  #toUpstream(m: Msg): void {
    this.#o.onActivity?.();
    this.#o.upstream.send(m as unknown as JSONRPCMessage).catch((err: unknown) => {
      this.#o.log.warn({ err: (err as Error)?.message, method: m.method }, 'could not send to the server');
      if (isId(m.id) && typeof m.method === 'string') {
        this.#calls.delete(key(m.id));
        this.#lists.delete(key(m.id));
        this.#toHost({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: 'Trustgate could not reach the server' } });
      }
    });
  }

  async #judgeCall(m: Msg, params: Msg): Promise<void> {
    const id = m.id as Id;
    const k = key(id);
    if (typeof params.name !== 'string' || (params.arguments !== undefined && !isRecord(params.arguments))) {
      // What the policies would see must be what the server gets: a call they cannot read is not forwarded.
      return this.#toHost({ jsonrpc: '2.0', id, error: { code: -32602, message: 'tools/call needs a string name and an arguments object' } });
    }
    const name = params.name;
    const args = params.arguments as Msg | undefined;
    const tool = this.#tools.get(name);
    this.#judging.set(k, false);
    let d: CallDecision;
    try {
      d = await this.#o.core.evaluateCall({
        request: {
          call: { name, ...(args ? { arguments: args } : {}) },
          ...(tool ? { tool } : {}),
          server: this.#server,
          session: { id: this.sessionId },
        },
        log: this.#o.decisionLog,
      });
    } catch (err) {
      this.#judging.delete(k);
      this.#o.log.error({ tool: name, err: errorDetail(err) }, 'call could not be checked');
      return this.#answer(id, isErrorResult(uncheckedText('call', err)));
    }
    let withheld: Withheld | undefined;
    let how = '';
    if (d.outcome === 'deny') withheld = 'call-denied';
    else if (d.requiresConsent) {
      if (!this.#elicitation) {
        withheld = 'call-consent';
        how = 'the client cannot ask (it did not declare elicitation)';
      } else if (!(await this.#consent(`The tool "${name}" needs your consent before it runs (${d.findings.filter((f) => f.applied && f.effect === 'consent').map((f) => `${f.policy}/${f.rule}: ${f.message}`).join('; ')}). Run it?`))) {
        withheld = 'call-declined';
      }
    }
    const cancelled = this.#judging.get(k) === true;
    this.#judging.delete(k);
    if (withheld) {
      this.#o.log.info({ tool: name, decisionId: d.decisionId, withheld }, 'tool call withheld');
      return this.#answer(id, isErrorResult(withheldText(withheld, d.findings, d.decisionId, how)));
    }
    if (cancelled || this.#closed) return;
    this.#calls.set(k, { name, tool });
    this.#toUpstream(m);
  }

  /** Ask the host's user; true only on `accept`. */
  #consent(message: string): Promise<boolean> {
    const id = `${this.#prefix}${this.#next++}`;
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
    if (isId(m.id) && typeof m.method !== 'string') {
      const k = key(m.id);
      if (k === this.#initId && isRecord(m.result)) {
        this.#initId = undefined;
        const info = isRecord(m.result.serverInfo) ? m.result.serverInfo : {};
        this.#server = deepFreeze({ name: typeof info.name === 'string' ? info.name : '' });
        if (typeof m.result.protocolVersion === 'string') {
          this.#protocolVersion = m.result.protocolVersion;
          this.#o.upstream.setProtocolVersion?.(m.result.protocolVersion);
        }
        this.#o.log.info({ server: this.#server.name, protocolVersion: this.#protocolVersion, session: this.sessionId }, 'connected');
      } else if (this.#lists.delete(k)) {
        if (isRecord(m.result) && Array.isArray(m.result.tools)) void this.#listed(m, m.result.tools);
        else this.#toHost(m);
        return;
      } else {
        const call = this.#calls.get(k);
        if (call) {
          this.#calls.delete(k);
          if (isRecord(m.result)) {
            void this.#judgeResult(m.id, m.result, call);
            return;
          }
          if ('result' in m) {
            // Not a CallToolResult object: nothing that was not judged is passed on.
            const why = new TrustgateError('TG_ERR_BODY_SCHEMA', 'the server answered tools/call with a result that is not an object');
            return this.#answer(m.id, isErrorResult(uncheckedText('result', why)));
          }
        }
      }
    }
    this.#toHost(m);
  }

  async #listed(m: Msg, tools: unknown[]): Promise<void> {
    const defs = tools.filter(isRecord);
    // Frozen, each definition is canonicalized for its pin once, not on every call judged against it.
    for (const t of defs) if (typeof t.name === 'string') this.#tools.set(t.name, deepFreeze(t));
    try {
      await this.#o.pinTools?.(this.#server.name, defs);
    } catch (err) {
      // Pins are checked again on every call, which fails closed when the store is away.
      this.#o.log.warn({ err: errorDetail(err) }, 'tool definitions could not be pinned');
    }
    this.#toHost(m);
  }

  async #judgeResult(id: Id, result: Msg, call: CallInfo): Promise<void> {
    // A task-augmented call answers with the task; its result comes later through tasks/result.
    if (isRecord(result.task) && typeof result.task.taskId === 'string' && !Array.isArray(result.content)) {
      this.#tasks.set(result.task.taskId, call);
      return this.#answer(id, result);
    }
    try {
      const d = await this.#o.core.evaluateResult({
        request: {
          result,
          ...(this.#protocolVersion !== undefined ? { protocolVersion: this.#protocolVersion } : {}),
          ...(call.tool ? { tool: call.tool } : { tool: { name: call.name } }),
          server: this.#server,
          session: { id: this.sessionId },
        },
        log: this.#o.decisionLog,
      });
      if (d.outcome === 'deny') return this.#answer(id, isErrorResult(withheldText('result-denied', d.findings, d.decisionId)));
      if (d.requiresConsent) {
        if (!this.#elicitation) {
          return this.#answer(id, isErrorResult(withheldText('result-consent', d.findings, d.decisionId, 'the client cannot ask (it did not declare elicitation)')));
        }
        const why = d.findings.filter((f) => f.applied && f.effect === 'consent').map((f) => `${f.policy}/${f.rule}: ${f.message}`).join('; ');
        if (!(await this.#consent(`The result of the tool "${call.name}" needs your consent before it is passed on (${why}). Pass it on?`))) {
          return this.#answer(id, isErrorResult(withheldText('result-declined', d.findings, d.decisionId)));
        }
      }
      if (!d.result) throw new Error('no result to forward');
      return this.#answer(id, d.result);
    } catch (err) {
      this.#o.log.error({ tool: call.name, err: errorDetail(err) }, 'result could not be checked');
      return this.#answer(id, isErrorResult(uncheckedText('result', err)));
    }
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
