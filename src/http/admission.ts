/**
 * Admission by bytes in flight (TRUSTGATE_MAX_INFLIGHT_BYTES; docs/behaviour/limits.md, memory linear in input): a per-process budget for the bytes of
 * requests being decided and of answers not yet handed to the kernel.
 *
 * What a decision costs in memory is a multiple of its request (the text,
 * the parsed value, the forwarded copy, the answer text), so holding the sum
 * of the requests in flight to a budget bounds the process's memory whatever
 * the mix of concurrent requests; without it, memory follows the traffic.
 *
 * - A request is charged before its body is read: the `content-length` it
 *   announces (within the body limit; beyond it Fastify answers 413 without
 *   reading), or, for a chunked body, each chunk as it arrives.
 * - A charge that does not fit waits (first come, first served) for at most
 *   {@link ADMISSION_WAIT_MS}; then the request gets 503 `TG_ERR_OVERLOADED`
 *   with `Retry-After`. Its body is then read and thrown away as it
 *   arrives (never held), so the client reliably gets the answer: closing
 *   a connection with unread bytes makes the kernel reset it, and the reset
 *   can destroy the 503 before the client reads it. A chunked body that
 *   outgrows the budget stops being read while it waits (TCP back-pressure
 *   on the client).
 * - A request that finds nothing else in flight is always admitted, so a
 *   request within the body limit is served however small the budget.
 * - The answer text is charged as it is sent; everything the request holds
 *   is released when the response closes: the answer's last byte was handed
 *   to the kernel, or the connection went away (a client that never reads
 *   is closed at TRUSTGATE_REQUEST_TIMEOUT_MS, see timeout.ts).
 *
 * Bodyless requests (health, metrics, session reads) are never held back.
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TrustgateError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { answerError } from './error-handler.js';
import { RETRY_AFTER_SECONDS } from './pressure.js';

/** Longest a request waits for room in the budget before it is refused, ms. */
export const ADMISSION_WAIT_MS = 500;

interface Waiter {
  n: number;
  /** Bytes the waiting request already holds (a chunked body's earlier chunks). */
  own: number;
  grant: (ok: boolean) => void;
  timer: NodeJS.Timeout;
}

/** What /readyz reports of the budget. */
export interface Pressure {
  /** Bytes of requests being decided and answers not yet sent. */
  inflightBytes: number;
  /** TRUSTGATE_MAX_INFLIGHT_BYTES. */
  maxInflightBytes: number;
  /** Requests waiting for room. */
  waiting: number;
  /** Requests refused since the process started. */
  refused: number;
}

/**
 * The budget: a sum, a bound and a first-come-first-served queue of charges
 * waiting for room. Pure bookkeeping, no I/O; one per process.
 */
export class InflightBudget {
  private total = 0;
  private refusedCount = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    readonly limit: number,
    private readonly waitMs = ADMISSION_WAIT_MS,
  ) {}

  get inflight(): number {
    return this.total;
  }

  private fits(n: number, own: number): boolean {
    return this.total === own || this.total + n <= this.limit;
  }

  /** Take `n` bytes now if they fit and nobody waits before; `own` is what the caller already holds. */
  tryTake(n: number, own = 0): boolean {
    if (this.queue.length > 0 || !this.fits(n, own)) return false;
    this.total += n;
    return true;
  }

  /** Take `n` bytes once they fit, or give up after the wait; `grant(true)` means they were taken. */
  take(n: number, own: number, grant: (ok: boolean) => void): void {
    if (this.tryTake(n, own)) return grant(true);
    const w: Waiter = {
      n,
      own,
      grant,
      timer: setTimeout(() => {
        const i = this.queue.indexOf(w);
        if (i >= 0) this.queue.splice(i, 1);
        this.refusedCount++;
        grant(false);
        // The head may have been what held the others back.
        this.drain();
      }, this.waitMs),
    };
    this.queue.push(w);
  }

  /** Charge bytes already in memory (an answer): never refused. */
  add(n: number): void {
    this.total += n;
  }

  release(n: number): void {
    if (n === 0) return;
    this.total -= n;
    this.drain();
  }

  /** Count a refusal decided outside take() (a chunked body that cannot wait). */
  refused(): void {
    this.refusedCount++;
  }

  private drain(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (!this.fits(head.n, head.own)) return;
      this.queue.shift();
      clearTimeout(head.timer);
      this.total += head.n;
      head.grant(true);
    }
  }

  pressure(): Pressure {
    return { inflightBytes: this.total, maxInflightBytes: this.limit, waiting: this.queue.length, refused: this.refusedCount };
  }
}

const CHARGE = Symbol('trustgate.inflightCharge');
const BUDGET = Symbol('trustgate.inflightBudget');

/** The response of a request that holds bytes of the budget. */
interface Charged extends ServerResponse {
  [CHARGE]: number;
  [BUDGET]: InflightBudget;
}

/** Release what a request holds, once: its response closed (sent, or the connection went away). */
function onResponseClose(this: Charged): void {
  const n = this[CHARGE];
  this[CHARGE] = 0;
  this[BUDGET].release(n);
}

/** Hold `n` bytes (already taken from the budget) until `res` closes; at once if it already has. */
function charge(res: ServerResponse, budget: InflightBudget, n: number): void {
  if (res.destroyed || res.closed || res.writableFinished) return budget.release(n);
  const r = res as Charged;
  if (r[BUDGET] === undefined) {
    r[BUDGET] = budget;
    r[CHARGE] = n;
    // 'finish': the last byte went to the kernel; 'close': the connection went away first
    // (or after it; the second call finds nothing to release). Injected requests emit only 'finish'.
    res.on('finish', onResponseClose);
    res.on('close', onResponseClose);
  } else {
    r[CHARGE] += n;
  }
}

function overloadedDetail(budget: InflightBudget): string {
  return `more than TRUSTGATE_MAX_INFLIGHT_BYTES (${budget.limit}) bytes are in flight; retry after ${RETRY_AFTER_SECONDS} s`;
}

function refuse(request: FastifyRequest, reply: FastifyReply, budget: InflightBudget, metrics: Metrics): void {
  metrics.admissionsRefused.inc();
  // Node reads the unread body and throws it away once the answer is sent.
  answerError(request, reply, {
    code: 'TG_ERR_OVERLOADED',
    detail: overloadedDetail(budget),
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  });
}

/**
 * A chunked body: each chunk is charged before it passes on to the parser;
 * a chunk that does not fit is held (and the socket with it) until it does,
 * or the request fails with 503.
 */
class MeteredBody extends Transform {
  /** Fastify's body reader reads this when present (bytes as received on the wire). */
  receivedEncodedLength = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly budget: InflightBudget,
    private readonly metrics: Metrics,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const n = chunk.length;
    this.receivedEncodedLength += n;
    const own = (this.res as Partial<Charged>)[CHARGE] ?? 0;
    this.budget.take(n, own, (ok) => {
      if (!ok) {
        this.metrics.admissionsRefused.inc();
        const err = new TrustgateError('TG_ERR_OVERLOADED', overloadedDetail(this.budget), undefined, {
          'retry-after': String(RETRY_AFTER_SECONDS),
        });
        return cb(Object.assign(err, { statusCode: 503 }));
      }
      charge(this.res, this.budget, n);
      cb(null, chunk);
    });
  }
}

function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Register the budget's hooks; returns the budget (for /readyz and metrics). */
export function registerAdmission(app: FastifyInstance, limit: number, bodyLimit: number, metrics: Metrics): InflightBudget {
  const budget = new InflightBudget(limit);
  metrics.inflight = () => budget.inflight;

  app.addHook('preParsing', (request, reply, payload, done) => {
    const req = request.raw;
    const declared = declaredLength(req);
    if (declared !== undefined) {
      // Over the body limit: Fastify answers 413 without reading it; nothing to charge.
      if (declared === 0 || declared > bodyLimit) return done(null, payload);
      if (budget.tryTake(declared)) {
        charge(reply.raw, budget, declared);
        return done(null, payload);
      }
      budget.take(declared, 0, (ok) => {
        if (!ok || req.destroyed) {
          if (ok) budget.release(declared);
          if (!ok && !req.destroyed) refuse(request, reply, budget, metrics);
          return;
        }
        charge(reply.raw, budget, declared);
        done(null, payload);
      });
      return;
    }
    // No length: a chunked body (or none); charged as it streams in.
    if (req.headers['transfer-encoding'] === undefined) return done(null, payload);
    const metered = new MeteredBody(reply.raw, budget, metrics);
    // Not pipeline(): a refused body must not destroy the request (and its socket, before
    // the 503 is written); what is left of it is read and thrown away instead.
    payload.pipe(metered);
    metered.once('error', () => {
      payload.unpipe(metered);
      payload.resume();
    });
    payload.once('error', (err) => metered.destroy(err));
    payload.once('close', () => {
      if (!payload.readableEnded) metered.destroy();
    });
    done(null, metered);
  });

  app.addHook('onSend', (_request, reply, payload, done) => {
    if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
      const n = payload.length;
      if (n > 0) {
        budget.add(n);
        charge(reply.raw, budget, n);
      }
    }
    done(null, payload);
  });

  return budget;
}
