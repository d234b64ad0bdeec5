/**
 * TRUSTGATE_REQUEST_TIMEOUT_MS: a request that has not been answered in
 * time (typically a body that stops arriving) gets a 408 problem and its
 * connection is closed, so a slow client cannot hold a socket and a parser
 * open. Node's own requestTimeout stays as a backstop.
 *
 * The deadline holds on the write side too (docs/behaviour/limits.md): an answer
 * the client has not taken by then (its last byte not handed to the
 * kernel: the client does not read) closes the connection, so a client
 * that never reads cannot hold the answer in this process for good. And
 * the answers waiting for their clients are bounded in bytes
 * (TRUSTGATE_ANSWER_BUFFER_BYTES): past the bound, the connections of the
 * oldest are closed, so many clients that read nothing cannot exhaust the
 * process before their deadlines either.
 *
 * One sweep timer serves every request: in-flight replies sit in a Map in
 * arrival order, which is also deadline order, so each sweep stops at the
 * first request still in time. No timer or listener per request.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { answerError } from './error-handler.js';

/** Characters (or bytes) of an answer about to be written. */
function sizeOf(payload: unknown): number {
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) return payload.length;
  return 0;
}

/** Close an answer's connection; the reply leaves every table through onResponse. */
function cut(reply: FastifyReply): void {
  reply.raw.destroy();
}

export function registerRequestTimeout(app: FastifyInstance, ms: number, bufferBytes = Infinity): void {
  const inflight = new Map<FastifyReply, number>();
  /** Answers handed to their socket and not taken yet, oldest first, with an upper bound of their unsent bytes. */
  const unsent = new Map<FastifyReply, number>();
  let unsentTotal = 0;

  const expire = (reply: FastifyReply): void => {
    if (reply.sent || reply.raw.headersSent) {
      // Answered, but the client has not taken the answer.
      cut(reply);
      return;
    }
    reply.header('connection', 'close');
    answerError(reply.request, reply, { code: 'TG_ERR_REQUEST_TIMEOUT', detail: `the request was not complete within ${ms} ms` });
  };

  /**
   * Over the bound by the estimates: measure what each answer still holds
   * (its socket's unsent bytes) and close the oldest until the rest fits.
   * `keep` (the answer being written) is never closed.
   */
  const shed = (keep: FastifyReply, adding: number): void => {
    let total = adding;
    for (const [reply] of unsent) {
      if (reply === keep) continue;
      const left = reply.raw.socket?.writableLength ?? 0;
      unsent.set(reply, left);
      total += left;
    }
    unsentTotal = total;
    for (const [reply, left] of unsent) {
      if (total <= bufferBytes) break;
      if (reply === keep) continue;
      unsent.delete(reply);
      total -= left;
      cut(reply);
    }
    unsentTotal = total;
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
  app.addHook('onSend', (_request, reply, payload, done) => {
    const n = sizeOf(payload);
    if (n > 0 && Number.isFinite(bufferBytes)) {
      unsent.set(reply, n);
      unsentTotal += n;
      if (unsentTotal > bufferBytes) shed(reply, n);
    }
    done(null, payload);
  });
  // Fires once the answer's last byte left for the kernel (or the connection closed).
  app.addHook('onResponse', (_request, reply, done) => {
    inflight.delete(reply);
    const n = unsent.get(reply);
    if (n !== undefined) {
      unsent.delete(reply);
      unsentTotal -= n;
    }
    done();
  });
}
