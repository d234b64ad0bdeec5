/**
 * Run one decision with everything around it: fresh decision id and
 * spotlight boundary, metrics, and the decision log line. Shared by
 * /v1/evaluate, the gateway interceptor route and `trustgate intercept`.
 */
import { randomFillSync, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import { TrustgateError } from '../errors.js';
import type { JsonScan } from '../json/scan.js';
import { recordDecision, type Metrics } from '../metrics.js';
import type { PolicySet } from '../policy/load.js';
import { answerBudget } from './bound.js';
import { decisionLogEntry, type DecisionLogEntry } from './log.js';
import { decide, type DecideOptions, type Decision, type EvaluateRequest } from './pipeline.js';

export interface RunDeps {
  config: Pick<Config, 'modeOverride' | 'maxBlocks' | 'maxEvidence' | 'maxString' | 'maxValidationFindings' | 'maxFindings' | 'evalBudgetMs' | 'dialects'>;
  policies: PolicySet | undefined;
  metrics?: Metrics | undefined;
  /** See DecideOptions.resultRepeatsNames; without it an unchanged result is never left out. */
  resultRepeatsNames?: (() => boolean) | undefined;
  /** Receives the decision log line; left out when the log level would drop it anyway. */
  log?: ((entry: DecisionLogEntry) => void) | undefined;
  /** See DecideOptions.call. */
  call?: DecideOptions['call'];
  /** See DecideOptions.session. */
  session?: DecideOptions['session'];
  /** See DecideOptions.flow. */
  flow?: DecideOptions['flow'];
  /**
   * Receives the counting of the decision in /metrics instead of it being
   * done here: a caller whose request can still fail after the decision (the
   * session merge, 503) counts it only once the decision is answered, so
   * `trustgate_decisions_total` counts decisions made, never 503s.
   */
  deferCount?: ((count: () => void) => void) | undefined;
}

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

/**
 * Fresh random boundary per decision (128 bits from the CSPRNG), so
 * untrusted text cannot forge a fence. Bytes are drawn from a pooled
 * buffer refilled 4 KiB at a time: one randomBytes call per decision cost
 * more than the rest of effect handling. Each boundary uses its own bytes.
 */
export function newBoundary(): string {
  if (poolOffset + 16 > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + 16);
  poolOffset += 16;
  return hex;
}

export function runDecision(body: EvaluateRequest, scan: JsonScan | undefined, deps: RunDeps, evidencePath = '/evidence'): Decision {
  const policies = deps.policies;
  if (!policies) throw new TrustgateError('TG_ERR_SERVER_NOT_READY', 'no policy set is loaded');
  const started = performance.now();
  const deadline = started + deps.config.evalBudgetMs;
  const decision = decide(body, {
    budget: { exceeded: () => performance.now() > deadline, describe: `${deps.config.evalBudgetMs} ms per decision` },
    policies,
    modeOverride: deps.config.modeOverride,
    decisionId: randomUUID(),
    boundary: newBoundary(),
    scan,
    evidencePath,
    maxBlocks: deps.config.maxBlocks,
    maxEvidence: deps.config.maxEvidence,
    maxString: deps.config.maxString,
    maxValidationFindings: deps.config.maxValidationFindings,
    maxFindings: deps.config.maxFindings,
    // The answer's size follows its request text (docs/behaviour/limits.md); a caller without the text has no bound.
    ...(scan !== undefined ? { answerBudget: answerBudget(scan.textLength) } : {}),
    resultRepeatsNames: deps.resultRepeatsNames,
    dialects: deps.config.dialects,
    call: deps.call,
    session: deps.session,
    flow: deps.flow,
  });
  const ms = performance.now() - started;
  const metrics = deps.metrics;
  if (metrics) {
    const count = (): void => recordDecision(metrics, decision.outcome, decision.evidence, ms / 1000);
    if (deps.deferCount) deps.deferCount(count);
    else count();
  }
  deps.log?.(decisionLogEntry(decision, body.tool, body.server, ms));
  return decision;
}
