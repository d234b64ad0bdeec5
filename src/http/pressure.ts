/**
 * Overload protection: when the event loop is saturated (a slow policy, a
 * flood), requests are answered at once with 503 + Retry-After instead of
 * queueing without bound. Liveness stays open so an orchestrator does not
 * kill a busy but healthy process; the gateway interceptor answers its own
 * way (an isError result, status 200), since the gateway ignores statuses.
 *
 * The event-loop delay is sampled with perf_hooks' histogram, like
 * @fastify/under-pressure, with one difference that matters here: an
 * interval in which the loop never got to record a sample (it was blocked
 * the whole time) counts as the time it was actually late, not as an
 * infinite delay, so the stall of start-up does not shed the first requests.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { answerError } from './error-handler.js';
import { routeOf } from './auth.js';

/** Seconds a client should wait before retrying. */
export const RETRY_AFTER_SECONDS = 1;
const RESOLUTION_MS = 10;

/** Start sampling; returns the current delay in ms and a stop function. */
export function eventLoopDelaySampler(intervalMs: number): { delay: () => number; stop: () => void } {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let delay = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const mean = histogram.mean / 1e6;
    delay = Number.isNaN(mean) ? Math.max(0, now - last - intervalMs) : Math.max(0, mean - RESOLUTION_MS);
    histogram.reset();
    last = now;
  }, intervalMs);
  timer.unref();
  return {
    delay: () => delay,
    stop: () => {
      clearInterval(timer);
      histogram.disable();
    },
  };
}

export function registerPressure(app: FastifyInstance, config: Config): void {
  if (config.maxEventLoopDelayMs === 0) return;
  const sampler = eventLoopDelaySampler(Math.min(100, Math.max(5, Math.floor(config.maxEventLoopDelayMs / 4))));
  app.addHook('onClose', async () => sampler.stop());
  app.addHook('onRequest', (request, reply, done) => {
    // Liveness stays open while the loop is busy: the process is healthy, only saturated.
    if (sampler.delay() <= config.maxEventLoopDelayMs || routeOf(request) === '/healthz') return done();
    answerError(request, reply, {
      code: 'TG_ERR_SERVER_OVERLOADED',
      detail: `the event loop is saturated; retry after ${RETRY_AFTER_SECONDS} s`,
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    });
  });
}
