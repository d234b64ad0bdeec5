/**
 * The one wrapper around every decision, result or call
 * (docs/architecture.md, "The path of a decision"): it reads what the
 * decision needs from the session store, gives the decision its id and its
 * CEL budget, lets the request's contribution merge into its session, and
 * only then counts the decision in /metrics and writes its decision log
 * line (docs/operations/decision-log.md). A request the store fails (503)
 * is therefore neither counted nor logged: no decision was answered.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import type { EvaluationBudget } from '../policy/evaluate.js';
import { randomHex } from './random.js';

/** What a run gives the decision it wraps. */
export interface Frame {
  decisionId: string;
  /** The CEL work allowed (TRUSTGATE_EVAL_BUDGET_MS), counted from when deciding starts: store reads do not spend it. */
  budget: EvaluationBudget;
}

/** One decision, in the order a run takes its steps. */
export interface RunSteps<R, D, L> {
  /** The store reads the decision needs (a session, a pin); a value when it needs none, so the decision is made in the same turn. */
  read(): R | Promise<R>;
  /** The decision itself: pure over what was read and the frame. */
  decide(read: R, frame: Frame): D;
  /** What the request adds to its session; a failure here fails the request. */
  merge?: ((decision: D) => Promise<void>) | undefined;
  /**
   * What `durationMs` covers: the decision alone (`decide`, as a result's
   * line has always said) or the whole request (`request`: the reads and
   * the merge too, as a call's line has always said, its pin being read for
   * every call).
   */
  timed: 'decide' | 'request';
  /** Counts the decision in /metrics, `seconds` being the time `timed` covers. */
  count(decision: D, seconds: number): void;
  /** Builds the decision log line. */
  entry(decision: D, ms: number): L;
  /** Receives the line; absent when the log level would drop it (the line is then never built). */
  log?: ((line: L) => void) | undefined;
}

/**
 * Run one decision (see the top of this file). A decision with nothing to
 * read is made in the turn its request arrived, as it always was: waiting a
 * turn changes when answers reach their sockets (the answer-buffer bound
 * is measured on them).
 */
export function runDecision<R, D, L>(config: Pick<Config, 'evalBudgetMs'>, steps: RunSteps<R, D, L>): Promise<D> {
  const requested = performance.now();
  const read = steps.read();
  return isPromiseLike(read) ? Promise.resolve(read).then((r) => decide(config, steps, r, requested)) : decide(config, steps, read, requested);
}

function isPromiseLike<R>(v: R | Promise<R>): v is Promise<R> {
  return typeof (v as { then?: unknown } | null | undefined)?.then === 'function';
}

async function decide<R, D, L>(config: Pick<Config, 'evalBudgetMs'>, steps: RunSteps<R, D, L>, read: R, requested: number): Promise<D> {
  const started = performance.now();
  const decision = steps.decide(read, { decisionId: randomUUID(), budget: budgetFrom(config, started) });
  let ms = performance.now() - started;
  if (steps.merge !== undefined) await steps.merge(decision);
  if (steps.timed === 'request') ms = performance.now() - requested;
  steps.count(decision, ms / 1000);
  steps.log?.(steps.entry(decision, ms));
  return decision;
}

/**
 * Share of TRUSTGATE_EVAL_BUDGET_MS the rules and detectors may take: past
 * it they stop, and the rest is left to what follows them and no deadline
 * bounds (planning the effects, building the forwarded result and the
 * answer, linear in the blocks: some 30 ms on 10,000), so that a decision
 * ends within its budget.
 */
export const RULES_SHARE = 0.9;

/** A CEL budget of TRUSTGATE_EVAL_BUDGET_MS from `start` (now when absent): exceeded past RULES_SHARE of it. */
export function budgetFrom(config: Pick<Config, 'evalBudgetMs'>, start = performance.now()): EvaluationBudget {
  const deadline = start + config.evalBudgetMs * RULES_SHARE;
  return { exceeded: () => performance.now() > deadline, describe: `${config.evalBudgetMs} ms per decision` };
}

/**
 * Fresh random boundary per decision (128 bits from the CSPRNG), so
 * untrusted text cannot forge a fence. Each boundary uses its own bytes.
 */
export function newBoundary(): string {
  return randomHex(16);
}
