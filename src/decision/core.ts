/**
 * The decision core every binding calls (contract sections 3, 11, 12):
 * the HTTP API, the Docker interceptor route, `trustgate intercept`, the
 * MCP interceptor server and the MCP proxy are thin layers over these two
 * operations. The core knows no transport: a binding turns its own wire
 * format into these requests and the answers back into its own.
 */
import type { JsonScan } from '../json/scan.js';
import type { Decision, EvaluateRequest, FindingOut, Outcome } from './pipeline.js';
import type { DecisionLogEntry } from './log.js';
import type { SessionState } from '../session/store.js';

/** A session as answers show it: the state plus its id. */
export type SessionView = { id: string } & SessionState;

/** POST /v1/evaluate-call (contract section 12). */
export interface EvaluateCallRequest {
  call: { name: string; arguments?: Record<string, unknown> };
  /** The tool definition from tools/list. */
  tool?: Record<string, unknown>;
  server?: Record<string, unknown>;
  session?: { id: string };
  context?: Record<string, unknown>;
}

export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** The 200 answer of /v1/evaluate-call. */
export interface CallDecision {
  decisionId: string;
  outcome: Outcome;
  requiresConsent: boolean;
  policyRevision: string;
  findings: FindingOut[];
  tool: { hints: ToolHints; digest?: string; pin: 'first-seen' | 'match' | 'changed' | 'none' };
  /** After this request; present when the request named a session. */
  session?: SessionView;
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
}

export interface CallInput {
  request: EvaluateCallRequest;
  log?: ((entry: Record<string, unknown>) => void) | undefined;
}

export interface DecisionCore {
  /** Judge a tool result (section 3) and forward per section 11; the session takes in what was forwarded. */
  evaluateResult(input: ResultInput): Promise<Decision & { session?: SessionView }>;
  /** Judge a tool call before it runs (section 12): scope-call rules, hints, pins, session. */
  evaluateCall(input: CallInput): Promise<CallDecision>;
}
