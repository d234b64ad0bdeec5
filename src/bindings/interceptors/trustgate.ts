/**
 * Trustgate's three interceptors (docs/architecture.md#bindings-side-by-side), each a mapping
 * between `interceptor/invoke` and the decision core:
 *
 * - `trustgate-call`, validator on the `tools/call` request (docs/behaviour/sessions.md#post-v1evaluate-call)
 *   (core.evaluateCall). deny -> valid:false, severity error; consent ->
 *   valid:false, severity error, saying the user cannot be asked through
 *   an interceptor; warn -> valid:true, severity warn.
 * - `trustgate-result`, validator on the `tools/call` response (docs/behaviour/decisions.md)
 *   (core.evaluateResult), mapped the same way.
 * - `trustgate-redact`, mutator on the `tools/call` response: the result
 *   to forward (docs/behaviour/forwarding.md) as `payload`; when the result must not be forwarded (deny,
 *   consent) the payload is an `isError` result saying why.
 *
 * - `trustgate-discovery`, mutator on the `tools/list`, `resources/list`,
 *   `resources/templates/list` and `prompts/list` responses
 *   (docs/bindings/interceptors.md#discovery): what a server says of
 *   itself is content of that server (contract section 19), judged under
 *   the session as the proxy judges it (the same code: ../proxy/judged.ts,
 *   ../proxy/tool-list.ts). A tool list keeps what the `scope: tool` rules
 *   leave of it, its titles and descriptions read as the server's content;
 *   a picker list loses the titles and descriptions judging would change.
 *   A list that must not be forwarded is the empty list, with why in
 *   `info.withheld`.
 *
 * The request payload is the governed request, `{method, params}` (SEP) or
 * its bare params `{name, arguments}` (the conformance fixtures); both are
 * read. `config` may carry `tool` (the definition from tools/list),
 * `server`, `context` and `protocolVersion`; `context.sessionId` of the
 * invocation names the Trustgate session.
 */
import { isDeepStrictEqual } from 'node:util';
import type { PrincipalVar } from '../../policy/cel/variables.js';
import { judgeable, judgedAs } from '../proxy/judged.js';
import { descriptionsOf, judgeToolList, type ToolListDeps } from '../proxy/tool-list.js';
import { maskedStrings } from '../proxy/mask-strings.js';
import type { DecisionCore } from '../../decision/core.js';
import type { FindingOut } from '../../decision/types.js';
import { isRecord } from '../../json/record.js';
import type { PolicySet } from '../../policy/load.js';
import { SESSION_ID_PATTERN } from '../../session/store.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { isErrorResult, uncheckedVerdict, verdictOf, type Decided, type Subject } from '../../decision/verdict.js';
import {
  invalidParams,
  type Descriptor,
  type InvokeParams,
  type MutationOutcome,
  type RegisteredInterceptor,
  type ValidationMessage,
  type ValidationOutcome,
} from './registry.js';

export const CALL_INTERCEPTOR = 'trustgate-call';
export const RESULT_INTERCEPTOR = 'trustgate-result';
export const REDACT_INTERCEPTOR = 'trustgate-redact';
export const DISCOVERY_INTERCEPTOR = 'trustgate-discovery';

/** The lists a server describes itself in, and the member each holds its entries in. */
const DISCOVERY_LISTS: Readonly<Record<string, string>> = {
  'tools/list': 'tools',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
  'prompts/list': 'prompts',
};

export interface TrustgateInterceptorDeps {
  core: DecisionCore;
  /** The policy set in force (for the descriptors' mode); undefined before the first load. */
  policies: () => PolicySet | undefined;
  modeOverride?: 'audit' | 'warn' | undefined;
  version: string;
  /** Receives the decision log lines. */
  log?: (entry: object) => void;
  /** Where a tool list's judgement is logged (tools withheld or flagged); nowhere when absent. */
  logger?: ToolListDeps['log'];
}

const QUIET: ToolListDeps['log'] = { info() {}, warn() {}, error() {} };

const CONSENT_HOW = 'cannot be asked through an interceptor';
const sessionRe = new RegExp(SESSION_ID_PATTERN);

const CONFIG_SCHEMA = {
  type: 'object',
  properties: {
    tool: { type: 'object', description: 'The tool definition from tools/list (hints and pins: docs/behaviour/pins.md)' },
    server: { type: 'object', description: 'The server, at least { name }' },
    context: { type: 'object', description: 'Handed to policies as `context`' },
    protocolVersion: { type: 'string', description: 'The negotiated MCP revision of the governed result' },
  },
  additionalProperties: false,
};

/**
 * `audit` when every policy with rules of these scopes is in audit (or
 * TRUSTGATE_MODE=audit): nothing this interceptor says can then block, and
 * the host should know it. Otherwise active.
 */
function modeFor(deps: TrustgateInterceptorDeps, scopes: readonly string[]): 'active' | 'audit' {
  if (deps.modeOverride === 'audit') return 'audit';
  const relevant = (deps.policies()?.policies ?? []).filter((p) => p.rules.some((r) => scopes.includes(r.scope as string)));
  return relevant.length > 0 && relevant.every((p) => p.mode === 'audit') ? 'audit' : 'active';
}

interface Common {
  tool?: Record<string, unknown>;
  server?: Record<string, unknown>;
  context?: Record<string, unknown>;
  protocolVersion?: string;
  session?: { id: string };
}

/** The parts of config and context the core reads; anything else is -32602. */
function common(p: InvokeParams): Common {
  const out: Common = {};
  const config = p.config ?? {};
  for (const key of Object.keys(config)) {
    if (!(key in CONFIG_SCHEMA.properties)) throw invalidParams(`config.${key} is not a Trustgate setting (known: tool, server, context, protocolVersion)`);
  }
  for (const key of ['tool', 'server', 'context'] as const) {
    const v = config[key];
    if (v === undefined) continue;
    if (!isRecord(v)) throw invalidParams(`config.${key} must be an object`);
    out[key] = v;
  }
  if (config.protocolVersion !== undefined) {
    if (typeof config.protocolVersion !== 'string') throw invalidParams('config.protocolVersion must be a string');
    out.protocolVersion = config.protocolVersion;
  }
  const sid = p.context?.sessionId;
  if (sid !== undefined && sid !== null) {
    if (typeof sid !== 'string' || !sessionRe.test(sid)) throw invalidParams('context.sessionId must be 1 to 256 characters of A-Z a-z 0-9 . _ : -');
    out.session = { id: sid };
  }
  return out;
}

/** The governed call from a request-phase payload: `{method, params}` or bare `{name, arguments}`. */
function callOf(payload: unknown): { name: string; arguments?: Record<string, unknown> } {
  let params = payload;
  if (isRecord(payload) && typeof payload.method === 'string') {
    if (payload.method !== 'tools/call') throw invalidParams('payload.method must be tools/call');
    params = payload.params;
  }
  if (!isRecord(params) || typeof params.name !== 'string') throw invalidParams('payload must be a tools/call request with a string name');
  const args = params.arguments;
  if (args !== undefined && !isRecord(args)) throw invalidParams('payload arguments must be an object');
  return { name: params.name, ...(args !== undefined ? { arguments: args } : {}) };
}

function resultOf(payload: unknown): Record<string, unknown> {
  if (!isRecord(payload)) throw invalidParams('payload must be the CallToolResult object');
  return payload;
}

function messagesOf(findings: readonly FindingOut[], mode: string, severity: 'warn' | 'error', effect?: string): ValidationMessage[] {
  return findings
    .filter((f) => (effect ? f.applied && f.effect === effect : f.mode === mode))
    .map((f) => ({ message: `${f.policy}/${f.rule}: ${f.message}`, severity }));
}

/** An error of the core as an MCP error: the caller's input (4xx) is -32602, anything else -32603. */
/** The JSON-RPC error for a decision that could not be made: its unchecked verdict, -32602 when the request was at fault, else -32603 (fail closed). */
export function mcpErrorOf(err: unknown, subject: Subject): McpError {
  if (err instanceof McpError) return err;
  const v = uncheckedVerdict(subject, err);
  return new McpError(v.requestFault ? ErrorCode.InvalidParams : ErrorCode.InternalError, `${v.detail} (${v.code})`);
}

/** The validator answer for the verdict of either decision (src/decision/verdict.ts). */
function validatorAnswer(d: Decided & { policyRevision: string }, what: 'call' | 'result'): ValidationOutcome {
  const info = { decisionId: d.decisionId, outcome: d.outcome, policyRevision: d.policyRevision };
  const verdict = verdictOf(d, { kind: what, name: '' }, { ask: false, why: CONSENT_HOW });
  if (verdict.kind === 'withhold') {
    if (d.outcome === 'deny') return { valid: false, severity: 'error', messages: messagesOf(d.findings, '', 'error', 'deny'), info };
    return { valid: false, severity: 'error', messages: [{ message: verdict.text, severity: 'error' }], info: { ...info, requiresConsent: true } };
  }
  if (d.outcome === 'warn') return { valid: true, severity: 'warn', messages: messagesOf(d.findings, 'warn', 'warn'), info };
  return { valid: true, info };
}

export function trustgateInterceptors(deps: TrustgateInterceptorDeps): RegisteredInterceptor[] {
  const { core, version } = deps;
  const call: RegisteredInterceptor = {
    descriptor: (): Descriptor => ({
      name: CALL_INTERCEPTOR,
      type: 'validation',
      hooks: [{ events: ['tools/call'], phase: 'request' }],
      version,
      description: 'Trustgate pre-call decision (scope-call rules, tool hints and pins, session labels)',
      mode: modeFor(deps, ['call']),
      failOpen: false,
      configSchema: CONFIG_SCHEMA,
    }),
    async handle(p, principal) {
      const c = common(p);
      const request = {
        call: callOf(p.payload),
        ...(c.tool ? { tool: c.tool } : {}),
        ...(c.server ? { server: c.server } : {}),
        ...(c.session ? { session: c.session } : {}),
        ...(c.context ? { context: c.context } : {}),
      };
      try {
        return validatorAnswer(await core.evaluateCall({ request, log: deps.log, principal }), 'call');
      } catch (err) {
        throw mcpErrorOf(err, { kind: 'call', name: '' });
      }
    },
  };
  const judgeResult = async (p: InvokeParams, principal: PrincipalVar) => {
    const c = common(p);
    const request = {
      result: resultOf(p.payload),
      ...(c.protocolVersion !== undefined ? { protocolVersion: c.protocolVersion } : {}),
      ...(c.tool ? { tool: c.tool } : {}),
      ...(c.server ? { server: c.server } : {}),
      ...(c.session ? { session: c.session } : {}),
      ...(c.context ? { context: c.context } : {}),
    };
    try {
      return await core.evaluateResult({ request, log: deps.log, principal });
    } catch (err) {
      throw mcpErrorOf(err, { kind: 'result', name: '' });
    }
  };
  const result: RegisteredInterceptor = {
    descriptor: (): Descriptor => ({
      name: RESULT_INTERCEPTOR,
      type: 'validation',
      hooks: [{ events: ['tools/call'], phase: 'response' }],
      version,
      description: 'Trustgate result decision (trust annotations, evidence, policies): deny blocks, warn is reported',
      mode: modeFor(deps, ['result', 'block']),
      failOpen: false,
      configSchema: CONFIG_SCHEMA,
    }),
    async handle(p, principal) {
      return validatorAnswer(await judgeResult(p, principal), 'result');
    },
  };
  const redact: RegisteredInterceptor = {
    descriptor: (): Descriptor => ({
      name: REDACT_INTERCEPTOR,
      type: 'mutation',
      hooks: [{ events: ['tools/call'], phase: 'response' }],
      version,
      description: 'Trustgate effects on the tool result: what may be forwarded (redact, drop, spotlight)',
      mode: modeFor(deps, ['result', 'block']),
      failOpen: false,
      configSchema: CONFIG_SCHEMA,
    }),
    async handle(p, principal): Promise<MutationOutcome> {
      const d = await judgeResult(p, principal);
      const info = { decisionId: d.decisionId, outcome: d.outcome, policyRevision: d.policyRevision };
      const verdict = verdictOf(d, { kind: 'result', name: '' }, { ask: false, why: CONSENT_HOW });
      if (verdict.kind === 'withhold') {
        return { modified: true, payload: isErrorResult(verdict.text), info: verdict.withheld === 'result-consent' ? { ...info, requiresConsent: true } : info };
      }
      if (!verdict.result) throw mcpErrorOf(new Error('no result to forward'), { kind: 'result', name: '' });
      // The judged copy is sent even when nothing changed: the host forwards exactly what was judged.
      return { modified: d.modified, payload: verdict.result, info };
    },
  };
  const discovery: RegisteredInterceptor = {
    descriptor: (): Descriptor => ({
      name: DISCOVERY_INTERCEPTOR,
      type: 'mutation',
      hooks: [{ events: Object.keys(DISCOVERY_LISTS), phase: 'response' }],
      version,
      description: "Trustgate on what a server says of itself (tool, resource and prompt lists): judged as that server's content under the session; the list to forward",
      mode: modeFor(deps, ['result', 'block', 'tool']),
      failOpen: false,
      configSchema: CONFIG_SCHEMA,
    }),
    async handle(p, principal): Promise<MutationOutcome> {
      const c = common(p);
      const member = DISCOVERY_LISTS[p.event]!;
      if (!isRecord(p.payload) || !Array.isArray(p.payload[member])) throw invalidParams(`payload must be the ${p.event} result, with its ${member} array`);
      const list = p.payload;
      const server = c.server ?? {};
      const serverName = typeof server.name === 'string' ? server.name : '';
      const operator = deps.policies()?.servers?.entryFor(serverName);
      const subject: Subject = { kind: 'message', method: p.event, name: '' };
      const decide = (result: Record<string, unknown>) =>
        core.evaluateResult({
          request: {
            result,
            ...(c.protocolVersion !== undefined ? { protocolVersion: c.protocolVersion } : {}),
            tool: judgedAs(p.event, '', operator),
            server,
            ...(c.session ? { session: c.session } : {}),
            ...(c.context ? { context: c.context } : {}),
          },
          call: { method: p.event, name: '', arguments: {} },
          log: deps.log,
          principal,
        });
      const withhold = (text: string, info?: Record<string, unknown>): MutationOutcome => ({ modified: true, payload: { [member]: [] }, info: { ...info, withheld: text } });
      try {
        if (p.event === 'tools/list') {
          const j = await judgeToolList(
            { core, log: deps.logger ?? QUIET, server: { name: serverName }, operator, ...(c.context ? { context: c.context } : {}) },
            new Map(),
            list,
          );
          if (!j.ok) return withhold(j.text);
          // The descriptions go into the session as the server's content; the list is what the tool rules left.
          const read = descriptionsOf(j.payload);
          const d = read === undefined ? undefined : await decide(read);
          const info = d ? { decisionId: d.decisionId, outcome: d.outcome, policyRevision: d.policyRevision } : undefined;
          return { modified: !isDeepStrictEqual(j.payload, list), payload: j.payload, ...(info ? { info } : {}) };
        }
        const j = judgeable(p.event, list);
        const ids = await maskedStrings({ core, server: { name: serverName }, context: c.context, method: p.event }, j.identifiers);
        if (j.slots === 0) {
          const payload = j.rebuild(j.result, ids);
          return { modified: !isDeepStrictEqual(payload, list), payload };
        }
        const d = await decide(j.result);
        const info = { decisionId: d.decisionId, outcome: d.outcome, policyRevision: d.policyRevision };
        const verdict = verdictOf(d, subject, { ask: false, why: CONSENT_HOW });
        if (verdict.kind === 'withhold') return withhold(verdict.text, verdict.withheld === 'result-consent' ? { ...info, requiresConsent: true } : info);
        if (!d.result) throw new Error('no list to forward');
        const payload = j.rebuild(d.result, ids);
        return { modified: !isDeepStrictEqual(payload, list), payload, info };
      } catch (err) {
        throw mcpErrorOf(err, subject);
      }
    },
  };
  return [call, result, redact, discovery];
}
