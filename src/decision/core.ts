/**
 * The decision core every binding calls (docs/architecture.md, "The path
 * of a decision"; docs/behaviour/decisions.md, docs/behaviour/forwarding.md
 * and docs/behaviour/sessions.md): the HTTP API, the Docker interceptor
 * route, `trustgate intercept`, the MCP interceptor server and the MCP
 * proxy are thin layers over these operations. Each decision takes the same
 * path: core (session reads and merges) -> run.ts (id, clock, metrics, log
 * line) -> result.ts or call.ts (the decision) -> outcome.ts (the fold);
 * the binding then renders verdict.ts's verdict. The core knows no
 * transport: a binding turns its own wire format into these requests and
 * the answers back into its own.
 *
 * Sessions: a request that names a session reads it first (the `session`
 * variable holds the values before the request; a result is read first only
 * when a block or result rule reads `session`), is decided, and then
 * merges into the session what it contributed (a result: the labels of
 * what was forwarded; a call: its tool name). The store merges (labels only
 * go up), so concurrent requests of one session never lose an update. A
 * store that cannot be read or written rejects with SessionStoreUnavailable
 * and the request fails closed (503 on HTTP). Every evaluateCall also reads
 * the pins, so it needs the store even without a session. A core without a
 * store (`trustgate intercept`, whose requests name no session) decides
 * results that name none, and fails closed on anything that needs one.
 *
 * A store at capacity refuses a new session (SessionStoreFull, 503
 * TG_ERR_SESSION_STORE_FULL, counted in trustgate_sessions_refused_total);
 * a pin refused past TRUSTGATE_MAX_PINS is `pin: "unavailable"`, counted in
 * trustgate_pins_refused_total and denied by the shipped session policy.
 * A forgotten session (the store lost its labels) reads as untrusted and
 * sensitive: the store answers it so, the core passes it on as is.
 */
import { hash } from 'node:crypto';
import { readTrust } from '../annotations/claims.js';
import type { Config } from '../config.js';
import { TrustgateError } from '../errors.js';
import type { JsonScan } from '../json/scan.js';
import { recordDecision, type Metrics } from '../metrics.js';
import { hintViews } from '../mcp/hints.js';
import type { OperatorEntry } from '../trust/operator.js';
import { evaluateToolPolicies, type SessionVar } from '../policy/evaluate.js';
import { NO_SESSION, type CallVar, type PrincipalVar } from '../policy/cel/variables.js';
import { isRecord, own } from '../json/record.js';
import type { PolicySet } from '../policy/load.js';
import { pinKey, toolDigest } from '../session/pins.js';
import { SESSION_ID_PATTERN, SessionNotOwned, SessionStoreFull, SessionStoreUnavailable, type PinStatus, type SessionState, type SessionStore, type SessionUpdate } from '../session/store.js';
import { answerBudget, boundValidation } from './bound.js';
import { decideCall, readCall } from './call.js';
import type { ForwardedFlow } from './flow.js';
import { userValues, type CallFlows } from '../flows/flows.js';
import { MemoryFlowStore, type FlowStore } from '../session/flows.js';
import { sessionFlows } from './flows.js';
import { callLogEntry, decisionLogEntry, type CallLogEntry, type DecisionLogEntry } from './log.js';
import { foldMatches } from './outcome.js';
import { checkResultDepth, isValid, resolveRevision, resultFindings } from './request-checks.js';
import { decideResult } from './result.js';
import { budgetFrom, newBoundary, runDecision } from './run.js';
import type { CallDecision, Decision, EvaluateCallRequest, EvaluateRequest, FindingOut, SessionView, ValidateAnswer, ValidateRequest } from './types.js';

export type { ToolHints } from '../mcp/hints.js';
export type { CallDecision, EvaluateCallRequest, SessionView } from './types.js';

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
  /** The operator's entry for the server, from a binding that has its own (the gateway's `trustgate` member, the proxy's flags); else the servers file's. */
  operator?: OperatorEntry | undefined;
  /** The `context.destination` of a request that gives none, from the binding (`--destination`); else TRUSTGATE_DESTINATION. */
  destination?: string | undefined;
  /** Who is asking (the binding's authentication); the session named must be theirs. ANONYMOUS when absent. */
  principal?: PrincipalVar | undefined;
}

export interface CallInput {
  request: EvaluateCallRequest;
  /** Receives the decision log line (argument names only, never their values); left out when the log level would drop it. */
  log?: ((entry: CallLogEntry) => void) | undefined;
  /** The server did not list the tool called (the proxy): its pin reads `unlisted`, and nothing is pinned. */
  unlisted?: boolean;
  /** As ResultInput.operator. */
  operator?: OperatorEntry | undefined;
  /** As ResultInput.destination. */
  destination?: string | undefined;
  /** As ResultInput.principal. */
  principal?: PrincipalVar | undefined;
}

/** One result to check without policies, with what the binding knows of its request text. */
export interface ValidateInput {
  request: ValidateRequest;
  /** What the pre-parse scan found in the request text; the answer's size follows the text's (docs/behaviour/limits.md). */
  scan?: JsonScan | undefined;
}

export interface DecisionCore {
  /** Judge a tool result (docs/behaviour/decisions.md) and forward it (docs/behaviour/forwarding.md); the session takes in what was forwarded. */
  evaluateResult(input: ResultInput): Promise<Decision & { session?: SessionView }>;
  /** Judge a tool call before it runs (docs/behaviour/sessions.md): scope-call rules, hints, pins, session. */
  evaluateCall(input: CallInput): Promise<CallDecision>;
  /** Check a result's MCP shape and trust claims without policies (docs/behaviour/validation.md). */
  validate(input: ValidateInput): ValidateAnswer;
  /**
   * Judge the definitions of a tools/list answer by the `scope: tool` rules
   * (docs/bindings/proxy.md): for each, in order, whether an applied rule
   * drops it from the list, and the findings.
   */
  judgeTools(input: { tools: readonly Record<string, unknown>[]; server?: Record<string, unknown>; context?: Record<string, unknown>; operator?: OperatorEntry | undefined; principal?: PrincipalVar | undefined }): ToolJudgement[];
  /** Keep a session alive (its TTL starts again), as a binding that holds a connection does (docs/behaviour/sessions.md). */
  touchSession(id: string, principal?: PrincipalVar): Promise<void>;
  /** A session as answers show it (GET /v1/sessions/{id}); undefined when it does not exist or is another principal's. */
  session(id: string, principal?: PrincipalVar): Promise<SessionView | undefined>;
  /** The user's own words (docs/behaviour/flows.md): their values recorded with bit `user`, the session created when new; the session after. 404 when it is another principal's. */
  userWords(id: string, text: string, principal?: PrincipalVar): Promise<SessionView>;
  /** End a session and forget its values (the id then reads as forgotten); false when there was none, or it is another principal's. */
  endSession(id: string, principal?: PrincipalVar): Promise<boolean>;
}

/**
 * The key a session's owner is kept under (docs/operations/authentication.md):
 * `""` for the anonymous principal, else a digest of issuer and id, so that
 * the store holds no identity text and a static token's name never meets a
 * token subject of the same spelling.
 */
export function ownerKey(p: PrincipalVar | undefined): string {
  if (p === undefined || (p.id === '' && p.issuer === '')) return '';
  return hash('sha256', JSON.stringify([p.issuer, p.id]), 'base64url');
}

/** Another principal's session is answered as none at all. */
function notFound(err: unknown): never {
  if (err instanceof SessionNotOwned) throw new TrustgateError('TG_ERR_SESSION_NOT_FOUND', 'no session has that id (never used, or another principal\'s)');
  throw err;
}

/** The string `name` of a request's `server` or `tool` (`""` without one). */
function nameOf(v: unknown): string {
  const n = isRecord(v) ? own(v, 'name') : undefined;
  return typeof n === 'string' ? n : '';
}

/** A log line with who asked (`principal`: the id only, never a token), when someone was identified. */
function withPrincipal<E extends { principal?: string }>(entry: E, p: PrincipalVar | undefined): E {
  if (p !== undefined && p.id !== '') entry.principal = p.id.slice(0, 256);
  return entry;
}

/** The servers file's entry for a request's server (its own, else `"*"`). */
function operatorFor(policies: PolicySet, server: unknown): OperatorEntry | undefined {
  return policies.servers?.entryFor(nameOf(server));
}

/** `request` with `context.destination` set to `destination` when it gives none (a new object; the input is not changed). */
function withDestination<R extends { context?: Record<string, unknown> | undefined }>(request: R, destination: string | undefined): R {
  if (destination === undefined) return request;
  const context = request.context;
  if (isRecord(context) && own(context, 'destination') !== undefined) return request;
  return { ...request, context: { ...(isRecord(context) ? context : {}), destination } };
}

/** What the `scope: tool` rules made of one listed definition. */
export interface ToolJudgement {
  dropped: boolean;
  findings: FindingOut[];
}

/** What the core needs. */
export interface DecisionCoreDeps {
  config: Pick<Config, 'modeOverride' | 'maxBlocks' | 'maxEvidence' | 'maxString' | 'maxValidationFindings' | 'maxFindings' | 'evalBudgetMs' | 'dialects' | 'maxFlowValues'> & Partial<Pick<Config, 'destination'>>;
  /** The policy set in force now (it changes on reload); undefined until one is loaded. */
  policies: () => PolicySet | undefined;
  /** The session and pin store; absent in a process whose requests name no session (`trustgate intercept`). */
  sessions?: SessionStore | undefined;
  /** The values sessions have seen (docs/behaviour/flows.md), beside the session store; a process without one keeps none, and its sessions read `flowsOverflow` (fail closed). */
  flows?: FlowStore | undefined;
  metrics?: Metrics | undefined;
}

const SESSION_ID = new RegExp(SESSION_ID_PATTERN);

/** The session id a request names, checked (bindings that skip the HTTP schema get the same 400). */
function sessionId(session: unknown): string | undefined {
  if (session === undefined) return undefined;
  const id = isRecord(session) ? own(session, 'id') : undefined;
  if (typeof id !== 'string' || !SESSION_ID.test(id)) {
    throw new TrustgateError('TG_ERR_BODY_SCHEMA', 'session.id must be 1 to 256 characters of A-Z a-z 0-9 . _ : -', [
      { pointer: '/session/id', message: 'must match ' + SESSION_ID_PATTERN },
    ]);
  }
  return id;
}

/** The `session` variable: the stored state, or a new session's, or no session at all. A forgotten session's values are lost: it reads `flowsOverflow`. */
function sessionVar(id: string | undefined, s: SessionState | undefined, flowsOverflow = false): SessionVar {
  if (id === undefined) return NO_SESSION;
  if (s === undefined) return { ...NO_SESSION, id, flowsOverflow };
  return {
    id,
    forgotten: s.forgotten,
    sensitive: s.sensitive,
    untrusted: s.untrusted,
    dataClass: s.dataClass ?? {},
    calls: s.calls,
    results: s.results,
    tools: s.tools,
    flowsOverflow: flowsOverflow || s.forgotten === true,
  };
}

/** A session as answers show it; `flowsOverflow` as its values say (a forgotten session's always). */
export function sessionView(id: string, s: SessionState, flowsOverflow: boolean): SessionView {
  const dataClass: SessionView['dataClass'] = s.dataClass ? { class: s.dataClass.class, regulatory: s.dataClass.regulatory.slice() } : {};
  return {
    id,
    forgotten: s.forgotten === true,
    sensitive: s.sensitive,
    untrusted: s.untrusted,
    flowsOverflow: flowsOverflow || s.forgotten === true,
    dataClass,
    calls: s.calls,
    results: s.results,
    tools: s.tools.slice(),
  };
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

/** Where a value was seen: `<server>/<tool>` as the request names them. */
function sourceOf(server: unknown, tool: unknown): string {
  return `${nameOf(server).slice(0, 128)}/${nameOf(tool).slice(0, 128)}`;
}

function loaded(policies: PolicySet | undefined): PolicySet {
  if (!policies) throw new TrustgateError('TG_ERR_SERVER_NOT_READY', 'no policy set is loaded');
  return policies;
}

/**
 * The decision core over a policy-set getter and a session store: see
 * DecisionCore. One core serves every binding of a process.
 */
export function createDecisionCore(deps: DecisionCoreDeps): DecisionCore {
  const { config, metrics } = deps;
  const store = (): SessionStore => {
    if (deps.sessions === undefined) throw new SessionStoreUnavailable('this process keeps no session store');
    return deps.sessions;
  };
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
  // Without a store of its own the core keeps values in this process (one process only: src/main/stores.ts gives
  // worker processes and replicas the store they share).
  const flows = sessionFlows(deps.flows ?? new MemoryFlowStore({ maxValues: config.maxFlowValues, ttlMs: 86_400_000 }), config.maxFlowValues);
  /** A store operation that may create a session: a refusal at capacity is counted. */
  const merge = async (id: string, owner: string, update: SessionUpdate) => {
    try {
      return await store().update(id, { ...update, owner });
    } catch (err) {
      if (err instanceof SessionStoreFull) metrics?.sessionsRefused.inc();
      return notFound(err);
    }
  };

  return {
    judgeTools(input) {
      const policies = loaded(deps.policies());
      return input.tools.map((tool) => {
        const matches = evaluateToolPolicies(
          policies,
          { tool, toolMembers: hintViews(tool, input.operator ?? operatorFor(policies, input.server)), server: input.server, context: input.context, principal: input.principal },
          config.modeOverride,
          budgetFrom(config),
        );
        let dropped = false;
        const { findings } = foldMatches(matches, (m) => {
          if (m.effect === 'drop') dropped = true;
        });
        return { dropped, findings };
      });
    },

    async touchSession(id, principal) {
      // Reading a session starts its TTL again, in every store.
      await store().get(sessionId({ id })!, ownerKey(principal));
    },

    async session(id, principal) {
      const s = await store().get(id, ownerKey(principal));
      if (s === undefined) return undefined;
      return sessionView(id, s, await flows.overflowed(id));
    },

    async userWords(id, text, principal) {
      const sid = sessionId({ id })!;
      // The session exists first (as a decision naming it makes it), so values never outlive a refused session.
      const s = await merge(sid, ownerKey(principal), {});
      const overflow = await flows.record(sid, userValues(text, config.maxFlowValues), 'user');
      return sessionView(sid, s, overflow);
    },

    async endSession(id, principal) {
      const ended = await store().delete(id, ownerKey(principal));
      // Another principal's session keeps its values; an ended one's are forgotten (it reads flowsOverflow from now on).
      if (ended) await flows.forget(id);
      return ended;
    },

    validate(input) {
      const { result, protocolVersion } = input.request;
      checkResultDepth(result);
      const revision = resolveRevision(result, protocolVersion);
      const found = resultFindings(result, revision, readTrust(result, config.dialects).findings, config.maxValidationFindings);
      // The answer's size follows the request's (docs/behaviour/limits.md): see bound.ts.
      const cut = input.scan ? boundValidation(found.validation, answerBudget(input.scan.textLength)) : { items: found.validation, omitted: 0 };
      const validation = cut.items;
      const omitted = found.omitted + cut.omitted;
      // Every rule and severity that fired is listed (see FindingList and bound.ts), so `valid` is that of the whole list.
      return { valid: isValid(validation), protocolVersion: revision, validation, ...(omitted > 0 ? { validationOmitted: omitted } : {}) };
    },

    async evaluateResult(input) {
      const { scan } = input;
      const request = withDestination(input.request, input.destination ?? config.destination);
      const id = sessionId(request.session);
      // One set for the whole request: the one whose rules decide whether the session is read.
      const policies = loaded(deps.policies());
      const operator = input.operator ?? operatorFor(policies, request.server);
      const owner = ownerKey(input.principal);
      const flow: { forwarded?: ForwardedFlow } = {};
      return runDecision<SessionState | undefined, Decision & { session?: SessionView }, DecisionLogEntry>(config, {
        // The `session` variable is read only by rules that name it; without one, the merge is the request's one store operation.
        read: () => (id === undefined || !policies.index.resultRulesReadSession ? undefined : store().get(id, owner)),
        decide: (before, frame) =>
          decideResult(request, {
            budget: frame.budget,
            policies,
            modeOverride: config.modeOverride,
            decisionId: frame.decisionId,
            boundary: newBoundary(),
            scan,
            evidencePath: input.evidencePath ?? '/evidence',
            maxBlocks: config.maxBlocks,
            maxEvidence: config.maxEvidence,
            maxString: config.maxString,
            maxValidationFindings: config.maxValidationFindings,
            maxFindings: config.maxFindings,
            // The answer's size follows its request text (docs/behaviour/limits.md); a caller without the text has no bound.
            ...(scan !== undefined ? { answerBudget: answerBudget(scan.textLength) } : {}),
            resultRepeatsNames: input.resultRepeatsNames,
            dialects: config.dialects,
            call: input.call,
            session: sessionVar(id, before),
            principal: input.principal,
            // What was forwarded matters only to a session that takes it in.
            flow: id === undefined ? undefined : flow,
            maxFlowValues: config.maxFlowValues,
            operator: operator === undefined ? undefined : { entry: operator, server: nameOf(request.server) },
          }),
        merge:
          id === undefined
            ? undefined
            : async (decision) => {
                // The merge comes first: another principal's session is refused (404) before any value is recorded in it.
                const state = await merge(id, owner, resultUpdate(flow.forwarded));
                const overflow = await flows.record(id, flow.forwarded?.seen, sourceOf(request.server, request.tool));
                decision.session = sessionView(id, state, overflow);
              },
        timed: 'decide',
        count: (decision, seconds) => {
          if (metrics) recordDecision(metrics, decision.outcome, decision.evidence, seconds);
        },
        entry: (decision, ms) => {
          const entry = withPrincipal(decisionLogEntry(decision, request.tool, request.server, ms), input.principal);
          return id === undefined ? entry : { ...entry, session: id };
        },
        log: input.log,
      });
    },

    async evaluateCall(input) {
      const request = withDestination(input.request, input.destination ?? config.destination);
      const call = readCall(request);
      const id = sessionId(request.session);
      const policies = loaded(deps.policies());
      const operator = input.operator ?? operatorFor(policies, request.server);
      const owner = ownerKey(input.principal);
      const sessions = store();
      // Every pre-call decision reads the store (docs/behaviour/sessions.md): one that names neither a tool nor a session still fails closed while it is down.
      if (id === undefined && call.tool === undefined && !sessions.healthy()) throw new SessionStoreUnavailable('the session store cannot be reached');
      const tool = call.tool;
      const digest = tool === undefined ? undefined : toolDigest(tool);
      const key = tool === undefined || input.unlisted === true ? undefined : pinKey(request.server, tool, call.name);
      let pinStatus: PinStatus | 'none' | 'unlisted' = 'none';
      let carried: { flows: CallFlows; overflow: boolean } | undefined;
      const userText = isRecord(request.context) ? own(request.context, 'userText') : undefined;
      return runDecision<SessionState | undefined, CallDecision, CallLogEntry>(config, {
        read: async () => {
          // The user's words of this turn are the user's before the call is judged.
          // The session is the caller's first (another principal's is refused): no one marks values `user` in a session not theirs.
          if (id !== undefined && typeof userText === 'string') {
            await merge(id, owner, {});
            await flows.record(id, userValues(userText, config.maxFlowValues), 'user');
          }
          const [before, pin, args] = await Promise.all([
            id === undefined ? undefined : sessions.get(id, owner),
            key === undefined ? undefined : sessions.checkPin(key.server, key.tool, digest!),
            id === undefined ? undefined : flows.carried(id, call.arguments),
          ]);
          pinStatus = input.unlisted === true ? 'unlisted' : (pin?.status ?? 'none');
          carried = args;
          return before;
        },
        decide: (before, frame) => {
          const toolInfo: CallDecision['tool'] = { ...hintViews(tool, operator, call.name), pin: pinStatus };
          if (digest !== undefined) toolInfo.digest = digest;
          return decideCall(request, call, {
            policies,
            modeOverride: config.modeOverride,
            decisionId: frame.decisionId,
            budget: frame.budget,
            tool: toolInfo,
            session: sessionVar(id, before, carried?.overflow),
            principal: input.principal,
            flows: carried?.flows,
          });
        },
        merge:
          id === undefined
            ? undefined
            : async (answer) => {
                answer.session = sessionView(id, await merge(id, owner, { call: { tool: call.name } }), carried?.overflow === true);
              },
        timed: 'request',
        count: (answer) => countCall(answer.outcome, pinStatus),
        entry: (answer, ms) => withPrincipal(callLogEntry(answer, call.name, call.arguments, tool, request.server, id, ms), input.principal),
        log: input.log,
      });
    },
  };
}
