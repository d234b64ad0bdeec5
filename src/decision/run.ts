/**
 * Run one decision with everything around it: fresh decision id and
 * spotlight boundary, metrics, and the decision log line. Shared by
 * /v1/evaluate, the gateway interceptor route and `trustgate intercept`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import { TrustgateError } from '../errors.js';
import type { JsonScan } from '../json/scan.js';
import type { Metrics } from '../metrics.js';
import type { PolicySet } from '../policy/load.js';
import { decisionLogEntry, type DecisionLogEntry } from './log.js';
import { decide, type Decision, type EvaluateRequest } from './pipeline.js';

export interface RunDeps {
  config: Pick<Config, 'modeOverride' | 'maxBlocks' | 'maxEvidence' | 'maxString' | 'evalBudgetMs'>;
  policies: PolicySet | undefined;
  metrics?: Metrics | undefined;
  log: (entry: DecisionLogEntry) => void;
}

/** Fresh random boundary per decision (128 bits), so untrusted text cannot forge a fence. */
export function newBoundary(): string {
  return randomBytes(16).toString('hex');
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
  });
  const ms = performance.now() - started;
  if (deps.metrics) {
    deps.metrics.decisions.inc({ outcome: decision.outcome });
    deps.metrics.evaluationSeconds.observe(ms / 1000);
    for (const e of decision.evidence) deps.metrics.evidence.inc({ status: e.status });
  }
  deps.log(decisionLogEntry(decision, body.tool, body.server, ms));
  return decision;
}
