import type { FastifyInstance } from 'fastify';
import type { PolicySet } from '../../policy/load.js';
import { TrustgateError } from '../../errors.js';
import { listPoliciesSchema, reloadPoliciesSchema } from '../../wire/policies.js';

export function describePolicies(set: PolicySet, override: 'audit' | 'warn' | undefined) {
  return {
    policyRevision: set.revision,
    policies: set.policies.map((p) => ({
      id: p.id,
      ...(p.description !== undefined ? { description: p.description } : {}),
      mode: p.mode,
      effectiveMode: override === 'audit' ? 'audit' : override === 'warn' && p.mode === 'enforce' ? 'warn' : p.mode,
      file: p.file,
      rules: p.rules.map((r) => r.id),
      ruleDetails: p.rules.map((r) => ({ id: r.id, scope: r.scope, ...(r.mode !== undefined ? { mode: r.mode } : {}), effect: r.effect, when: r.when })),
    })),
  };
}

/** GET /v1/policies and POST /v1/policies/reload (docs/operations/deploying.md and docs/policies/reference.md). */
export function policyRoutes(app: FastifyInstance): void {
  const { store, config } = app.trustgate;
  app.get(
    '/v1/policies',
    { schema: listPoliciesSchema },
    async () => {
      const set = store.current;
      if (!set) throw new TrustgateError('TG_ERR_SERVER_NOT_READY', 'no policy set is loaded');
      return describePolicies(set, config.modeOverride);
    },
  );
  app.post(
    '/v1/policies/reload',
    { schema: reloadPoliciesSchema },
    async () => {
      const outcome = await app.reloadPolicies('api');
      if (!outcome.ok) {
        const e = outcome.error;
        throw new TrustgateError('TG_ERR_POLICY_RELOAD', e.message, [
          { pointer: '', message: [e.file, e.rule].filter(Boolean).join(' / ') || 'policy folder' },
        ]);
      }
      return describePolicies(outcome.set, config.modeOverride);
    },
  );
}
