/**
 * The wire side of the MCP Interceptors extension
 * (`io.modelcontextprotocol/interceptors`, SEP-2624): descriptors as
 * `interceptors/list` puts them on the wire, and `interceptor/invoke`
 * checked and dispatched to a handler. It knows nothing of policies: the
 * Trustgate interceptors (trustgate.ts) are handlers registered here, and
 * the extension's conformance fixtures register their sample behaviours
 * on the same registry.
 *
 * Wire rules followed (the newest drafts; see README "MCP bindings"):
 * - a descriptor carries `mode` and `failOpen` only when its interceptor
 *   declares them (the fixtures' sample interceptors do not, and their
 *   lists hold no default-valued fields; Trustgate's own declare both);
 * - `interceptors/list` takes one concrete `event`; a wildcard (`*`) or a
 *   value that is not a string is -32602; `*` in a hook matches every event;
 * - an unknown name is -32602 with `data.name`; an event and phase the
 *   interceptor does not hook is -32602 with `data.advertisedHooks`; bad
 *   params are -32602; a handler that fails is -32603, never a made-up
 *   result (the invoker applies `failOpen`).
 */
import { ANONYMOUS, type PrincipalVar } from '../../policy/cel/variables.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from '../../json/record.js';

export const INTERCEPTORS_EXTENSION = 'io.modelcontextprotocol/interceptors';
export const LIST_METHOD = 'interceptors/list';
export const INVOKE_METHOD = 'interceptor/invoke';

export type Phase = 'request' | 'response';
export type InterceptorType = 'validation' | 'mutation';
export type Severity = 'info' | 'warn' | 'error';

export interface Hook {
  events: string[];
  phase: Phase;
}

export interface Descriptor {
  name: string;
  type: InterceptorType;
  hooks: Hook[];
  version?: string;
  description?: string;
  /** `active` (the default) or `audit`; on the wire only when declared. */
  mode?: 'active' | 'audit';
  failOpen?: boolean;
  configSchema?: Record<string, unknown>;
}

export interface InvokeParams {
  name: string;
  event: string;
  phase: Phase;
  payload: unknown;
  config?: Record<string, unknown>;
  timeoutMs?: number;
  context?: Record<string, unknown>;
}

export interface ValidationMessage {
  message: string;
  severity: Severity;
  path?: string;
}

export interface ValidationOutcome {
  valid: boolean;
  severity?: Severity;
  messages?: ValidationMessage[];
  info?: Record<string, unknown>;
}

export interface MutationOutcome {
  modified: boolean;
  payload: unknown;
  info?: Record<string, unknown>;
}

export interface RegisteredInterceptor {
  /** Read on every list and invoke, so a policy reload can change the mode. */
  descriptor(): Descriptor;
  handle(params: InvokeParams, principal: PrincipalVar): Promise<ValidationOutcome | MutationOutcome>;
}

/** A -32602 answer: the invoker sent something this server cannot take. */
export function invalidParams(message: string, data?: Record<string, unknown>): McpError {
  return new McpError(ErrorCode.InvalidParams, message, data);
}

/** One descriptor in wire shape: absent members left out. */
export function wireDescriptor(d: Descriptor): Record<string, unknown> {
  const out: Record<string, unknown> = { name: d.name, type: d.type, hooks: d.hooks.map((h) => ({ events: [...h.events], phase: h.phase })) };
  if (d.version !== undefined) out.version = d.version;
  if (d.description !== undefined) out.description = d.description;
  if (d.mode !== undefined) out.mode = d.mode;
  if (d.failOpen !== undefined) out.failOpen = d.failOpen;
  if (d.configSchema !== undefined) out.configSchema = d.configSchema;
  return out;
}

/** Read an inbound mode: `active`, or the older spelling `enforce`, is active; `audit` is audit. */
export function readMode(v: unknown): 'active' | 'audit' {
  return v === 'audit' ? 'audit' : 'active';
}

const hookMatches = (h: Hook, event: string): boolean => h.events.some((e) => e === '*' || e === event);

export class InterceptorRegistry {
  readonly #entries: RegisteredInterceptor[] = [];

  constructor(entries: Iterable<RegisteredInterceptor> = []) {
    for (const e of entries) this.add(e);
  }

  add(entry: RegisteredInterceptor): this {
    const name = entry.descriptor().name;
    if (this.#entries.some((e) => e.descriptor().name === name)) throw new Error(`duplicate interceptor name ${name}`);
    this.#entries.push(entry);
    return this;
  }

  /** Every event some hook names (the capability's `supportedEvents` hint). */
  supportedEvents(): string[] {
    return [...new Set(this.#entries.flatMap((e) => e.descriptor().hooks.flatMap((h) => h.events)))];
  }

  /** The `interceptors/list` result for its params. */
  list(params: unknown): { interceptors: Record<string, unknown>[] } {
    const event = isRecord(params) ? params.event : undefined;
    if (event !== undefined && (typeof event !== 'string' || event === '' || event === '*')) {
      throw invalidParams('event must be one concrete event name, not a wildcard');
    }
    const all = this.#entries.map((e) => e.descriptor());
    const chosen = event === undefined ? all : all.filter((d) => d.hooks.some((h) => hookMatches(h, event)));
    return { interceptors: chosen.map(wireDescriptor) };
  }

  /** The `interceptor/invoke` result for its params (errors are McpError). */
  async invoke(params: unknown, principal: PrincipalVar = ANONYMOUS): Promise<Record<string, unknown>> {
    const p = checkInvokeParams(params);
    const entry = this.#entries.find((e) => e.descriptor().name === p.name);
    if (!entry) throw invalidParams(`interceptor ${p.name} not found`, { name: p.name });
    const d = entry.descriptor();
    if (!d.hooks.some((h) => h.phase === p.phase && hookMatches(h, p.event))) {
      throw invalidParams(`interceptor ${p.name} does not hook ${p.event} on ${p.phase}`, {
        advertisedHooks: d.hooks.map((h) => ({ events: [...h.events], phase: h.phase })),
      });
    }
    const started = performance.now();
    let outcome: ValidationOutcome | MutationOutcome;
    try {
      outcome = await entry.handle(p, principal);
    } catch (err) {
      if (err instanceof McpError) throw err;
      throw new McpError(ErrorCode.InternalError, `interceptor ${p.name} failed: ${err instanceof Error ? err.message : 'error'}`);
    }
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    return { interceptor: p.name, type: d.type, phase: p.phase, ...wireOutcome(d.type, outcome), durationMs };
  }
}

function wireOutcome(type: InterceptorType, o: ValidationOutcome | MutationOutcome): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (type === 'validation') {
    const v = o as ValidationOutcome;
    out.valid = v.valid;
    if (v.severity !== undefined) out.severity = v.severity;
    if (v.messages !== undefined && v.messages.length > 0) out.messages = v.messages;
  } else {
    const m = o as MutationOutcome;
    out.modified = m.modified;
    out.payload = m.payload;
  }
  if (o.info !== undefined) out.info = o.info;
  return out;
}

function checkInvokeParams(params: unknown): InvokeParams {
  if (!isRecord(params)) throw invalidParams('params must be an object with name, event, phase and payload');
  const { name, event, phase, payload, config, timeoutMs, context } = params;
  if (typeof name !== 'string') throw invalidParams('name must be a string');
  if (typeof event !== 'string' || event === '') throw invalidParams('event must be a non-empty string');
  if (phase !== 'request' && phase !== 'response') throw invalidParams('phase must be "request" or "response"');
  if (!('payload' in params)) throw invalidParams('payload is required');
  if (config !== undefined && !isRecord(config)) throw invalidParams('config must be an object');
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs >= 0))) throw invalidParams('timeoutMs must be a number of at least 0');
  if (context !== undefined && context !== null && !isRecord(context)) throw invalidParams('context must be an object');
  return {
    name,
    event,
    phase,
    payload,
    ...(config !== undefined ? { config } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(isRecord(context) ? { context } : {}),
  };
}
