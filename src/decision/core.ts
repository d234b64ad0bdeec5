/**
 * The decision core every binding calls (docs/behaviour/decisions.md, docs/behaviour/forwarding.md and docs/behaviour/sessions.md):
 * the HTTP API, the Docker interceptor route, `trustgate intercept`, the
 * MCP interceptor server and the MCP proxy are thin layers over these two
 * operations. The core knows no transport: a binding turns its own wire
 * format into these requests and the answers back into its own.
 *
 * Sessions: a request that names a session reads it first (the `session`
 * variable holds the values before the request; a result is read first only
 * when a block or result rule reads `session`), is decided, and then
 * merges into the session what it contributed (a result: the labels of
 * what was forwarded; a call: its tool name). The store merges (labels only
 * go up), so concurrent requests of one session never lose an update. A
 * store that cannot be read or written rejects with SessionStoreUnavailable
 * and the request fails closed (503 on HTTP). Every evaluateCall also reads
 * the pins, so it needs the store even without a session.
 *
 * A store at capacity refuses a new session (SessionStoreFull, 503
 * TG_ERR_SESSION_STORE_FULL, counted in trustgate_sessions_refused_total);
 * a pin refused past TRUSTGATE_MAX_PINS is `pin: "unavailable"`, counted in
 * trustgate_pins_refused_total and denied by the shipped session policy.
 * A forgotten session (the store lost its labels) reads as untrusted and
 * sensitive: the store answers it so, the core passes it on as is.
 */
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { TrustgateError } from '../errors.js';
import type { JsonScan } from '../json/scan.js';
import type { Metrics } from '../metrics.js';
import { hasOwn, isRecord as isObject, own } from '../json/record.js';
import { toolHints, type ToolHints } from '../mcp/hints.js';
import { evaluateCallPolicies, evaluateToolPolicies, type SessionVar, type TraceEntry } from '../policy/evaluate.js';
import { NO_SESSION, type CallVar } from '../policy/cel/variables.js';
import { resultRulesReadSession, type PolicySet } from '../policy/load.js';
import { pinKey, toolDigest } from '../session/pins.js';
import { SESSION_ID_PATTERN, SessionStoreFull, SessionStoreUnavailable, type PinStatus, type SessionState, type SessionStore, type SessionUpdate } from '../session/store.js';
import type { Decision, EvaluateRequest, FindingOut, Outcome } from './pipeline.js';
import type { DecisionLogEntry } from './log.js';
import { callLogEntry, type CallLogEntry } from './log.js';
import { runDecision } from './run.js';
import type { ForwardedFlow } from './flow.js';

export type { ToolHints };

/** A session as answers show it: the state plus its id; `dataClass` is `{}` while no verified class was forwarded. */
export type SessionView = { id: string } & Omit<SessionState, 'dataClass'> & { dataClass: { class: string; regulatory: string[] } | Record<string, never> };

/** POST /v1/evaluate-call (docs/behaviour/sessions.md). */
export interface EvaluateCallRequest {
  call: { name: string; arguments?: Record<string, unknown> };
  /** The tool definition from tools/list. */
  tool?: Record<string, unknown>;
  server?: Record<string, unknown>;
  session?: { id: string };
  context?: Record<string, unknown>;
  /** `explain` adds `trace` (docs/policy-testing.md). */
  options?: { explain?: boolean };
}

/** The 200 answer of /v1/evaluate-call. */
export interface CallDecision {
  decisionId: string;
  outcome: Outcome;
  requiresConsent: boolean;
  policyRevision: string;
  findings: FindingOut[];
  tool: { hints: ToolHints; digest?: string; pin: PinStatus | 'none' | 'unlisted' };
  /** After this request; present when the request named a session. */
  session?: SessionView;
  /** With `options.explain`: every call rule evaluated, with its value. */
  trace?: TraceEntry[];
}

/** One result to judge, with what the binding knows of its request text. */
export interface ResultInput {
  /** The /v1/evaluate body; `session` names the session the result belongs to. */
  request: EvaluateRequest & { session?: { id: string } };
  /** What the pre-parse scan found in the request text. */
  scan?: JsonScan | undefined;
  /** Request-path of the `evidence` array in the scanned text ('/evidence' for /v1/evaluate). */
  evidencePath?: string;
  /** See DecideOptions.resultRepeatsNames. */
  resultRepeatsNames?: (() => boolean) | undefined;
  /** Receives the decision log line; left out when the log level would drop it. */
  log?: ((entry: DecisionLogEntry) => void) | undefined;
  /** What the judged message is (`call.method`, `call.name`): the proxy's messages other than tools/call results. */
  call?: CallVar | undefined;
}

export interface CallInput {
  request: EvaluateCallRequest;
  /** Receives the decision log line (argument names only, never their values); left out when the log level would drop it. */
  log?: ((entry: CallLogEntry) => void) | undefined;
  /** The server did not list the tool called (the proxy): its pin reads `unlisted`, and nothing is pinned. */
  unlisted?: boolean;
}

export interface DecisionCore {
  /** Judge a tool result (section 3) and forward per section 11; the session takes in what was forwarded. */
  evaluateResult(input: ResultInput): Promise<Decision & { session?: SessionView }>;
  /** Judge a tool call before it runs (section 12): scope-call rules, hints, pins, session. */
  evaluateCall(input: CallInput): Promise<CallDecision>;
  /**
   * Judge the definitions of a tools/list answer by the `scope: tool` rules
   * (section 15): for each, in order, whether an applied rule drops it from
   * the list, and the findings.
   */
  judgeTools(input: { tools: readonly Record<string, unknown>[]; server?: Record<string, unknown>; context?: Record<string, unknown> }): ToolJudgement[];
  /** Keep a session alive (its TTL starts again), as a binding that holds a connection does (section 15). */
  touchSession(id: string): Promise<void>;
}

/** What the `scope: tool` rules made of one listed definition. */
export interface ToolJudgement {
  dropped: boolean;
  findings: FindingOut[];
}

/** What the core needs. */
export interface DecisionCoreDeps {
  config: Pick<Config, 'modeOverride' | 'maxBlocks' | 'maxEvidence' | 'maxString' | 'maxValidationFindings' | 'maxFindings' | 'evalBudgetMs' | 'dialects'>;
  /** The policy set in force now (it changes on reload); undefined until one is loaded. */
  policies: () => PolicySet | undefined;
  sessions: SessionStore;
  metrics?: Metrics | undefined;
}

const SESSION_ID = new RegExp(SESSION_ID_PATTERN);

/** The session id a request names, checked (bindings that skip the HTTP schema get the same 400). */
function sessionId(session: unknown): string | undefined {
  if (session === undefined) return undefined;
  const id = isObject(session) ? own(session, 'id') : undefined;
  if (typeof id !== 'string' || !SESSION_ID.test(id)) {
    throw new TrustgateError('TG_ERR_BODY_SCHEMA', 'session.id must be 1 to 256 characters of A-Z a-z 0-9 . _ : -', [
      { pointer: '/session/id', message: 'must match ' + SESSION_ID_PATTERN },
    ]);
  }
  return id;
}

/** The `session` variable: the stored state, or a new session's, or no session at all. */
function sessionVar(id: string | undefined, s: SessionState | undefined): SessionVar {
  if (id === undefined) return NO_SESSION;
  if (s === undefined) return { ...NO_SESSION, id };
  return { id, forgotten: s.forgotten, sensitive: s.sensitive, untrusted: s.untrusted, dataClass: s.dataClass ?? {}, calls: s.calls, results: s.results, tools: s.tools };
}

/** A session as answers show it. */
export function sessionView(id: string, s: SessionState): SessionView {
  const dataClass: SessionView['dataClass'] = s.dataClass ? { class: s.dataClass.class, regulatory: s.dataClass.regulatory.slice() } : {};
  return { id, forgotten: s.forgotten === true, sensitive: s.sensitive, untrusted: s.untrusted, dataClass, calls: s.calls, results: s.results, tools: s.tools.slice() };
}

/** What one answered /v1/evaluate adds to its session: the count, and the labels of what was forwarded (nothing on deny). */
function resultUpdate(flow: ForwardedFlow | undefined): SessionUpdate {
  const u: SessionUpdate = { result: true };
  if (flow === undefined) return u;
  if (flow.sensitive) u.sensitive = true;
  if (flow.untrusted) u.untrusted = true;
  if (flow.dataClass) u.dataClass = flow.dataClass;
  return u;
}

/**
 * The decision core over a policy-set getter and a session store: see
 * DecisionCore. One core serves every binding of a process.
 */
export function createDecisionCore(deps: DecisionCoreDeps): DecisionCore {
  const { config, sessions, metrics } = deps;
  const callOutcomes = new Map<string, { inc(): void }>();
  const pinCounts = new Map<string, { inc(): void }>();
  const countCall = (outcome: string, pin: string) => {
    if (!metrics) return;
    let o = callOutcomes.get(outcome);
    if (o === undefined) callOutcomes.set(outcome, (o = metrics.callDecisions.labels({ outcome })));
    o.inc();
    if (pin === 'none') return;
    let p = pinCounts.get(pin);
    if (p === undefined) pinCounts.set(pin, (p = metrics.toolPins.labels({ status: pin })));
    p.inc();
    if (pin === 'unavailable') metrics.pinsRefused.inc();
  };
  /** A store operation that may create a session: a refusal at capacity is counted. */
  const merge = async (id: string, update: SessionUpdate) => {
    try {
      return await sessions.update(id, update);
    } catch (err) {
      if (err instanceof SessionStoreFull) metrics?.sessionsRefused.inc();
      throw err;
    }
  };

  return {
    judgeTools(input) {
      const policies = deps.policies();
      if (!policies) throw new TrustgateError('TG_ERR_SERVER_NOT_READY', 'no policy set is loaded');
      return input.tools.map((tool) => {
        const started = performance.now();
        const deadline = started + config.evalBudgetMs;
        const matches = evaluateToolPolicies(
          policies,
          { tool, toolMembers: { hints: toolHints(tool) }, server: input.server, context: input.context },
          config.modeOverride,
          { exceeded: () => performance.now() > deadline, describe: `${config.evalBudgetMs} ms per decision` },
        );
        let dropped = false;
        const findings: FindingOut[] = matches.map((m) => {
          const applied = m.mode === 'enforce';
          if (applied && m.effect === 'drop') dropped = true;
          const f: FindingOut = { policy: m.policy, rule: m.rule, mode: m.mode, effect: m.effect, scope: m.scope, pointer: m.pointer, message: m.message, applied };
          if (m.error !== undefined) f.error = m.error;
          return f;
        });
        return { dropped, findings };
      });
    },

    async touchSession(id) {
      // Reading a session starts its TTL again, in every store.
      await sessions.get(sessionId({ id })!);
    },

    async evaluateResult(input) {
      const request = input.request;
      const id = sessionId(request.session);
      // One set for the whole request: the one whose rules decide whether the session is read.
      const policies = deps.policies();
      // The `session` variable is read only by rules that name it; without one, the merge below is the request's one store operation.
      const before = id === undefined || policies === undefined || !resultRulesReadSession(policies) ? undefined : await sessions.get(id);
      const flow: { forwarded?: ForwardedFlow } = {};
      const log = input.log;
      // With a session, the line is written once the merge is done: a request the store fails (503) logs no decision.
      let line: DecisionLogEntry | undefined;
      let count: (() => void) | undefined;
      const decision: Decision & { session?: SessionView } = runDecision(
        request,
        input.scan,
        {
          config,
          policies,
          metrics,
          resultRepeatsNames: input.resultRepeatsNames,
          log: log === undefined ? undefined : id === undefined ? log : (entry) => (line = { ...entry, session: id }),
          session: sessionVar(id, before),
          call: input.call,
          // What was forwarded matters only to a session that takes it in.
          flow: id === undefined ? undefined : flow,
          // With a session, the decision is counted once the merge is done: a 503 is no decision made.
          deferCount: id === undefined ? undefined : (c) => (count = c),
        },
        input.evidencePath ?? '/evidence',
      );
      if (id !== undefined) {
        decision.session = sessionView(id, await merge(id, resultUpdate(flow.forwarded)));
        count?.();
        if (line !== undefined) log!(line);
      }
      return decision;
    },

    async evaluateCall(input) {
      const request = input.request;
      const call = isObject(request.call) ? request.call : undefined;
      const name = call === undefined ? undefined : own(call, 'name');
      if (typeof name !== 'string') {
        throw new TrustgateError('TG_ERR_BODY_SCHEMA', 'call.name must be a string', [{ pointer: '/call/name', message: 'must be a string' }]);
      }
      const args = own(call!, 'arguments');
      const callArguments = isObject(args) ? args : {};
      const tool = isObject(request.tool) ? request.tool : undefined;
      // The definition judged (hints, pin) must be the one of the tool called: a call of `delete_all`
      // presented with the definition of `read_file` would be judged as a read (docs/bindings/proxy.md).
      if (tool !== undefined && hasOwn(tool, 'name') && tool.name !== name) {
        throw new TrustgateError('TG_ERR_BODY_SCHEMA', 'tool.name must equal call.name: the definition judged must be the one of the tool called', [
          { pointer: '/tool/name', message: 'must equal /call/name' },
        ]);
      }
      const id = sessionId(request.session);
      const policies = deps.policies();
      if (!policies) throw new TrustgateError('TG_ERR_SERVER_NOT_READY', 'no policy set is loaded');

      // Every pre-call decision reads the store (docs/behaviour/sessions.md): one that names neither a tool nor a session still fails closed while it is down.
      if (id === undefined && tool === undefined && !sessions.healthy()) throw new SessionStoreUnavailable('the session store cannot be reached');
      const started = performance.now();
      const hints = toolHints(tool);
      const digest = tool === undefined ? undefined : toolDigest(tool);
      const key = tool === undefined || input.unlisted === true ? undefined : pinKey(request.server, tool, name);
      const [before, pin] = await Promise.all([
        id === undefined ? undefined : sessions.get(id),
        key === undefined ? undefined : sessions.checkPin(key.server, key.tool, digest!),
      ]);
      const pinStatus: PinStatus | 'none' | 'unlisted' = input.unlisted === true ? 'unlisted' : (pin?.status ?? 'none');
      const toolInfo: CallDecision['tool'] = { hints, pin: pinStatus };
      if (digest !== undefined) toolInfo.digest = digest;

      const budgetStart = performance.now();
      const deadline = budgetStart + config.evalBudgetMs;
      const options = isObject(request.options) ? request.options : undefined;
      const trace: TraceEntry[] | undefined = options !== undefined && own(options, 'explain') === true ? [] : undefined;
      const matches = evaluateCallPolicies(
        policies,
        {
          call: { name, arguments: callArguments },
          tool,
          toolMembers: toolInfo,
          server: request.server,
          context: request.context,
          session: sessionVar(id, before),
        },
        config.modeOverride,
        { exceeded: () => performance.now() > deadline, describe: `${config.evalBudgetMs} ms per decision` },
        trace,
      );
      let denied = false;
      let requiresConsent = false;
      let warned = false;
      const findings: FindingOut[] = matches.map((m) => {
        const applied = m.mode === 'enforce';
        if (m.mode === 'warn') warned = true;
        if (applied && m.effect === 'deny') denied = true;
        if (applied && m.effect === 'consent') requiresConsent = true;
        const f: FindingOut = { policy: m.policy, rule: m.rule, mode: m.mode, effect: m.effect, scope: m.scope, pointer: m.pointer, message: m.message, applied };
        if (m.error !== undefined) f.error = m.error;
        return f;
      });
      const outcome: Outcome = denied ? 'deny' : warned || requiresConsent ? 'warn' : 'allow';
      const answer: CallDecision = {
        decisionId: randomUUID(),
        outcome,
        requiresConsent,
        policyRevision: policies.revision,
        findings,
        tool: toolInfo,
      };
      if (trace !== undefined) answer.trace = trace;
      if (id !== undefined) answer.session = sessionView(id, await merge(id, { call: { tool: name } }));
      const ms = performance.now() - started;
      countCall(outcome, pinStatus);
      input.log?.(callLogEntry(answer, name, callArguments, tool, request.server, id, ms));
      return answer;
    },
  };
}
