/**
 * A DecisionCore over runDecision, until the session-aware core is in
 * place: results are judged as /v1/evaluate judges them (sessions are not
 * kept); calls are answered allow with MCP's default hints.
 */
import { randomUUID } from 'node:crypto';
import type { CallDecision, DecisionCore } from '../decision/core.js';
import { runDecision, type RunDeps } from '../decision/run.js';
import type { DecisionLogEntry } from '../decision/log.js';
import type { PolicySet } from '../policy/load.js';
import { TrustgateError } from '../errors.js';

export interface AdapterDeps {
  config: RunDeps['config'];
  policies: () => PolicySet | undefined;
  metrics?: RunDeps['metrics'];
  log?: (entry: DecisionLogEntry) => void;
}

export function createAdapterCore(deps: AdapterDeps): DecisionCore {
  return {
    async evaluateResult(input) {
      const { session: _session, ...request } = input.request;
      return runDecision(request, input.scan, {
        config: deps.config,
        policies: deps.policies(),
        metrics: deps.metrics,
        log: input.log ?? deps.log,
        resultRepeatsNames: input.resultRepeatsNames,
      }, input.evidencePath);
    },
    async evaluateCall(input): Promise<CallDecision> {
      const set = deps.policies();
      if (!set) throw new TrustgateError('TG_ERR_SERVER_NOT_READY', 'no policy set is loaded');
      const ann = (input.request.tool?.annotations ?? {}) as Record<string, unknown>;
      const hint = (k: string, def: boolean) => (typeof ann[k] === 'boolean' ? (ann[k] as boolean) : def);
      return {
        decisionId: randomUUID(),
        outcome: 'allow',
        requiresConsent: false,
        policyRevision: set.revision,
        findings: [],
        tool: {
          hints: {
            readOnlyHint: hint('readOnlyHint', false),
            destructiveHint: hint('destructiveHint', true),
            idempotentHint: hint('idempotentHint', false),
            openWorldHint: hint('openWorldHint', true),
          },
          pin: 'none',
        },
      };
    },
  };
}
