/**
 * The call decision (docs/behaviour/sessions.md): a tool call judged
 * before it runs by the `scope: call` rules, over the call, the tool's
 * definition with its hints, digest and pin, the server, the context and
 * what the session was shown. Pure over what the core read from the
 * session store; run.ts wraps it with the id, clock, metrics and log line.
 */
import { TrustgateError } from '../errors.js';
import { hasOwn, isRecord, own } from '../json/record.js';
import { evaluateCallPolicies, type EvaluationBudget, type ModeOverride, type SessionVar, type TraceEntry } from '../policy/evaluate.js';
import type { PrincipalVar } from '../policy/cel/variables.js';
import type { PolicySet } from '../policy/load.js';
import type { CallFlows } from '../flows/flows.js';
import { foldMatches } from './outcome.js';
import type { CallDecision, EvaluateCallRequest } from './types.js';

/** A call request read and checked: what the decision and the store reads need. */
export interface CallRead {
  name: string;
  arguments: Record<string, unknown>;
  /** The definition judged; undefined when the request has none. */
  tool: Record<string, unknown> | undefined;
  /** `options.explain`. */
  explain: boolean;
}

/**
 * Read a call request as bindings that skip the HTTP schema send it: the
 * call name must be a string, and a definition that names a tool must name
 * the one called. A call of `delete_all` presented with the definition of
 * `read_file` would be judged as a read (docs/bindings/proxy.md).
 */
export function readCall(request: EvaluateCallRequest): CallRead {
  const call = isRecord(request.call) ? request.call : undefined;
  const name = call === undefined ? undefined : own(call, 'name');
  if (typeof name !== 'string') {
    throw new TrustgateError('TG_ERR_BODY_SCHEMA', 'call.name must be a string', [{ pointer: '/call/name', message: 'must be a string' }]);
  }
  const args = own(call!, 'arguments');
  const tool = isRecord(request.tool) ? request.tool : undefined;
  if (tool !== undefined && hasOwn(tool, 'name') && tool.name !== name) {
    throw new TrustgateError('TG_ERR_BODY_SCHEMA', 'tool.name must equal call.name: the definition judged must be the one of the tool called', [
      { pointer: '/tool/name', message: 'must equal /call/name' },
    ]);
  }
  const options = isRecord(request.options) ? request.options : undefined;
  return { name, arguments: isRecord(args) ? args : {}, tool, explain: options !== undefined && own(options, 'explain') === true };
}

/** What a call decision is given besides the request. */
export interface CallOptions {
  policies: PolicySet;
  modeOverride?: ModeOverride | undefined;
  decisionId: string;
  budget: EvaluationBudget;
  /** `tool` as policies see it: hints, digest and pin status. */
  tool: CallDecision['tool'];
  session: SessionVar;
  /** Who is asking (`principal`); ANONYMOUS when absent. */
  principal?: PrincipalVar | undefined;
  /** What the arguments carry of the session (docs/behaviour/flows.md); none without a session. */
  flows?: CallFlows | undefined;
}

/** Judge one call (the answer without `session`, which the core adds once the session took the call in). */
export function decideCall(request: EvaluateCallRequest, call: CallRead, opts: CallOptions): CallDecision {
  const trace: TraceEntry[] | undefined = call.explain ? [] : undefined;
  const matches = evaluateCallPolicies(
    opts.policies,
    {
      call: { name: call.name, arguments: call.arguments, ...(opts.flows ?? {}) },
      tool: call.tool,
      toolMembers: opts.tool,
      server: request.server,
      context: request.context,
      session: opts.session,
      principal: opts.principal,
    },
    opts.modeOverride,
    opts.budget,
    trace,
  );
  const { findings, outcome, requiresConsent } = foldMatches(matches);
  const answer: CallDecision = { decisionId: opts.decisionId, outcome, requiresConsent, policyRevision: opts.policies.revision, findings, tool: opts.tool };
  if (trace !== undefined) answer.trace = trace;
  return answer;
}
