/**
 * Overload protection: when the event loop is saturated (a slow policy, a
 * flood), requests are answered at once with 503 + Retry-After instead of
 * queueing without bound. Liveness stays open so an orchestrator does not
 * kill a busy but healthy process; the gateway interceptor answers its own
 * way (an isError result, status 200), since the gateway ignores statuses.
 */
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { interceptError } from '../decision/intercept.js';
import { problem } from '../errors.js';
import { INTERCEPTOR_PATH } from './routes/interceptor.js';

/** Seconds a client should wait before retrying. */
export const RETRY_AFTER_SECONDS = 1;

export async function registerPressure(app: FastifyInstance, config: Config): Promise<void> {
  if (config.maxEventLoopDelayMs === 0) return;
  await app.register(underPressure, {
    maxEventLoopDelay: config.maxEventLoopDelayMs,
    sampleInterval: Math.min(1000, Math.max(5, Math.floor(config.maxEventLoopDelayMs / 4))),
    pressureHandler: (request, reply) => {
      // Without a reply.send here the request is handled normally.
      const path = request.url.split('?')[0];
      if (path === '/healthz') return;
      if (path === INTERCEPTOR_PATH) {
        const answer = interceptError('TG_ERR_SERVER_OVERLOADED', 'the service is overloaded');
        if (answer.kind === 'replace') reply.code(200).type('application/json').send(answer.result);
        return;
      }
      reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .type('application/problem+json')
        .send(problem('TG_ERR_SERVER_OVERLOADED', `the event loop is saturated; retry after ${RETRY_AFTER_SECONDS} s`));
    },
  });
}
