/**
 * TRUSTGATE_REQUEST_TIMEOUT_MS: a request that has not been answered in
 * time (typically a body that stops arriving) gets a 408 problem and its
 * connection is closed, so a slow client cannot hold a socket and a parser
 * open. Node's own requestTimeout stays as a backstop.
 */
import type { FastifyInstance } from 'fastify';
import { problem } from '../errors.js';
import { INTERCEPTOR_PATH } from './routes/interceptor.js';
import { routeOf } from './auth.js';
import { interceptError } from '../decision/intercept.js';

export function registerRequestTimeout(app: FastifyInstance, ms: number): void {
  app.addHook('onRequest', async (request, reply) => {
    const timer = setTimeout(() => {
      if (reply.sent) return;
      reply.header('connection', 'close');
      if (routeOf(request) === INTERCEPTOR_PATH) {
        const answer = interceptError('TG_ERR_REQUEST_TIMEOUT', 'the request did not arrive in time');
        if (answer.kind === 'replace') reply.code(200).type('application/json').send(answer.result);
        return;
      }
      reply.code(408).type('application/problem+json').send(problem('TG_ERR_REQUEST_TIMEOUT', `the request was not complete within ${ms} ms`));
    }, ms);
    timer.unref();
    reply.raw.once('finish', () => clearTimeout(timer));
    request.raw.once('close', () => clearTimeout(timer));
  });
}
