import type { FastifyInstance } from 'fastify';
import type { PolicyStore } from '../../policy/reload.js';
import { sendProblem } from '../../http/error-handler.js';
import type { InflightBudget } from '../../http/admission.js';
import { healthzSchema, readyzSchema } from '../../wire/health.js';

export function healthRoutes(app: FastifyInstance, store: PolicyStore, admission: InflightBudget): void {
  const { sessions } = app.trustgate;
  app.get(
    '/healthz',
    { schema: healthzSchema },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    { schema: readyzSchema },
    async (_request, reply) => {
      const set = store.current;
      if (!set) return sendProblem(reply, { code: 'TG_ERR_SERVER_NOT_READY', detail: 'no policy set is loaded' });
      if (!sessions.healthy()) {
        return sendProblem(reply, { code: 'TG_ERR_SESSION_STORE_UNAVAILABLE', detail: 'the session store cannot be reached', headers: { 'retry-after': '1' } });
      }
      return { status: 'ready', policyRevision: set.revision, admission: admission.pressure() };
    },
  );
}
