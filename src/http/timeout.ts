/**
 * TRUSTGATE_REQUEST_TIMEOUT_MS: a request that has not been answered in
 * time (typically a body that stops arriving) gets a 408 problem and its
 * connection is closed, so a slow client cannot hold a socket and a parser
 * open. Node's own requestTimeout stays as a backstop.
 *
 * One sweep timer serves every request: in-flight replies sit in a Map in
 * arrival order, which is also deadline order, so each sweep stops at the
 * first request still in time. No timer or listener per request.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { answerError } from './errors.js';

export function registerRequestTimeout(app: FastifyInstance, ms: number): void {
  const inflight = new Map<FastifyReply, number>();
  const expire = (reply: FastifyReply): void => {
    if (reply.sent) return;
    reply.header('connection', 'close');
    answerError(reply.request, reply, { code: 'TG_ERR_REQUEST_TIMEOUT', detail: `the request was not complete within ${ms} ms` });
  };
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [reply, deadline] of inflight) {
      if (deadline > now) break;
      inflight.delete(reply);
      expire(reply);
    }
  }, Math.max(25, Math.min(1000, Math.floor(ms / 4))));
  sweep.unref();
  app.addHook('onClose', (_app, done) => {
    clearInterval(sweep);
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    inflight.set(reply, performance.now() + ms);
    done();
  });
  app.addHook('onResponse', (_request, reply, done) => {
    inflight.delete(reply);
    done();
  });
}
