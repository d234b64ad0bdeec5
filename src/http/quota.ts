/**
 * Quotas per principal (docs/operations/authentication.md#quotas): what one
 * caller may take of a process, so that one principal past its share gets
 * 429 with `Retry-After` while every other is served as usual. Callers
 * without authentication share one anonymous principal.
 *
 * - Requests per second: a token bucket holding two seconds' worth. In
 *   Redis (one Lua script, Redis's clock, atomic: shared by every replica
 *   and worker) when the session store is Redis, else in this process.
 * - Bytes in flight: the `content-length` of the requests a principal has
 *   being decided in this process, released when each answer closes.
 * - Host connections on the gateway front (bindings/proxy/gateway.ts): held
 *   by the gateway process, released when the connection ends.
 * - Sessions: the distinct session ids a principal named within one
 *   session TTL (in Redis when the store is, else in this process); a
 *   request naming one more is refused, those it named go on.
 *
 * A quota store that cannot be reached refuses (fail closed): the request
 * gets 503 like any store failure, never a free pass.
 */
import type { Redis } from 'ioredis';
import { failClosedRedis, firstConnection } from '../session/redis-client.js';
import { SessionStoreUnavailable } from '../session/store.js';

/** How a request-rate bucket answers: 0 when the request may go, else the ms until a token is there. */
export interface RateBuckets {
  take(key: string, rps: number): Promise<number>;
  /**
   * Whether principal `key` may name session `id`: yes when it named it in
   * the last `ttlMs` (the use is recorded again), or when it named fewer
   * than `max` others in that time (the id is recorded); else no.
   */
  session(key: string, id: string, max: number, ttlMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Buckets a principal holds at most this long idle before they are dropped (they would be full again). */
const IDLE_MS = 10_000;
/** Most buckets one process keeps; past it the ones idle longest go first (they are full anyway). */
const MAX_BUCKETS = 100_000;

/** Token buckets in this process. */
export class MemoryRateBuckets implements RateBuckets {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  async take(key: string, rps: number): Promise<number> {
    const now = this.#now();
    const burst = rps * 2;
    let b = this.#buckets.get(key);
    if (b === undefined) {
      if (this.#buckets.size >= MAX_BUCKETS) this.#prune(now);
      b = { tokens: burst, at: now };
    } else this.#buckets.delete(key);
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) * rps) / 1000);
    b.at = now;
    // Re-inserted: the map's order is the order of last use.
    this.#buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 1000) / rps);
  }

  readonly #sessions = new Map<string, Map<string, number>>();

  async session(key: string, id: string, max: number, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    let ids = this.#sessions.get(key);
    if (ids === undefined) {
      if (this.#sessions.size >= MAX_BUCKETS) for (const [k, v] of this.#sessions) if (v.size === 0 || [...v.values()].every((t) => t <= now)) this.#sessions.delete(k);
      this.#sessions.set(key, (ids = new Map()));
    }
    if (!ids.has(id)) {
      if (ids.size >= max) for (const [k, t] of ids) if (t <= now) ids.delete(k);
      if (ids.size >= max) return false;
    }
    ids.set(id, now + ttlMs);
    return true;
  }

  #prune(now: number): void {
    for (const [k, b] of this.#buckets) {
      if (now - b.at < IDLE_MS && this.#buckets.size < MAX_BUCKETS) break;
      this.#buckets.delete(k);
    }
  }

  async close(): Promise<void> {
    this.#buckets.clear();
    this.#sessions.clear();
  }
}

/** The token bucket in Redis: KEYS[1] the bucket, ARGV[1] tokens per second. Answers 0, or ms to wait. */
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = rate * 2
local h = redis.call('HMGET', KEYS[1], 'n', 'at')
local tokens = tonumber(h[1]) or burst
local at = tonumber(h[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 'n', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], ${IDLE_MS})
return wait
`;

/** The sessions a principal named lately: KEYS[1] a sorted set (id by expiry), ARGV 1 id, 2 most, 3 TTL ms. 1 when it may, 0 when not. */
const SESSION_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`;

/** The client with the scripts defined. */
type QuotaClient = Redis & { tgTake(key: string, rps: number): Promise<number>; tgSession(key: string, id: string, max: number, ttl: number): Promise<number> };

/** Token buckets in Redis, shared by every process and replica on it. */
export class RedisRateBuckets implements RateBuckets {
  readonly #client: QuotaClient;

  constructor(
    url: string,
    private readonly timeoutMs: number,
  ) {
    const client = failClosedRedis(url, timeoutMs, 'trustgate-quota');
    client.defineCommand('tgTake', { numberOfKeys: 1, lua: TAKE_LUA });
    client.defineCommand('tgSession', { numberOfKeys: 1, lua: SESSION_LUA });
    // Failures are answered per request (fail closed); the client reconnects by itself.
    client.on('error', () => undefined);
    this.#client = client as QuotaClient;
  }

  async take(key: string, rps: number): Promise<number> {
    await firstConnection(this.#client, this.timeoutMs);
    return this.#client.tgTake(`trustgate:quota:rps:${key}`, rps);
  }

  async session(key: string, id: string, max: number, ttlMs: number): Promise<boolean> {
    await firstConnection(this.#client, this.timeoutMs);
    return (await this.#client.tgSession(`trustgate:quota:sessions:${key}`, id, max, ttlMs)) === 1;
  }

  async close(): Promise<void> {
    this.#client.disconnect();
  }
}

/** Why a request was refused; the metric's `reason` label. */
export type QuotaReason = 'rate' | 'bytes' | 'connections' | 'sessions';

export type QuotaAnswer = { ok: true; release: () => void } | { ok: false; reason: QuotaReason; retryAfterSeconds: number };

const NOTHING = (): void => undefined;

/** A counter per principal that goes up and down (bytes in flight, connections held). */
class Held {
  readonly #n = new Map<string, number>();

  tryAdd(key: string, amount: number, limit: number): (() => void) | undefined {
    const now = this.#n.get(key) ?? 0;
    // One request alone is always admitted (as admission.ts does for the process): a quota below the body limit never locks a principal out.
    if (now > 0 && now + amount > limit) return undefined;
    this.#n.set(key, now + amount);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.#n.get(key) ?? amount) - amount;
      if (left <= 0) this.#n.delete(key);
      else this.#n.set(key, left);
    };
  }

  count(key: string): number {
    return this.#n.get(key) ?? 0;
  }
}

/** The quotas of one process. Keys are principals' owner keys (the anonymous principal's is `""`). */
export class Quotas {
  readonly #bytes = new Held();
  readonly #connections = new Held();

  constructor(
    private readonly settings: QuotaLimits,
    private readonly buckets: RateBuckets,
  ) {}

  /** Whether the session quota is on (TRUSTGATE_QUOTA_SESSIONS > 0). */
  get countsSessions(): boolean {
    return this.settings.sessions > 0;
  }

  /** A request naming session `id` (not yet known to be new); refused past the principal's session quota. Rejects when the store cannot answer. */
  async session(key: string, id: string): Promise<QuotaAnswer> {
    const { sessions, sessionTtlMs } = this.settings;
    if (sessions === 0) return { ok: true, release: NOTHING };
    let ok: boolean;
    try {
      ok = await this.buckets.session(key, id, sessions, sessionTtlMs);
    } catch {
      throw new SessionStoreUnavailable('the quota store cannot be reached');
    }
    return ok ? { ok: true, release: NOTHING } : { ok: false, reason: 'sessions', retryAfterSeconds: 60 };
  }

  /** A request of `bytes` (its content-length) from `key`; release when its answer closes. Rejects when the rate store cannot answer. */
  async request(key: string, bytes: number): Promise<QuotaAnswer> {
    const { rps, inflightBytes } = this.settings;
    if (rps > 0) {
      let wait: number;
      try {
        wait = await this.buckets.take(key, rps);
      } catch {
        // Fail closed: answered 503 like any store failure.
        throw new SessionStoreUnavailable('the quota store cannot be reached');
      }
      if (wait > 0) return { ok: false, reason: 'rate', retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)) };
    }
    if (inflightBytes > 0 && bytes > 0) {
      const release = this.#bytes.tryAdd(key, bytes, inflightBytes);
      if (release === undefined) return { ok: false, reason: 'bytes', retryAfterSeconds: 1 };
      return { ok: true, release };
    }
    return { ok: true, release: NOTHING };
  }

  /** A host connection on the gateway front; release when it ends. */
  connection(key: string): QuotaAnswer {
    const limit = this.settings.connections;
    if (limit === 0) return { ok: true, release: NOTHING };
    if (this.#connections.count(key) >= limit) return { ok: false, reason: 'connections', retryAfterSeconds: 60 };
    return { ok: true, release: this.#connections.tryAdd(key, 1, Number.MAX_SAFE_INTEGER)! };
  }

  close(): Promise<void> {
    return this.buckets.close();
  }
}

/** What the quotas allow (0 is off); `sessionTtlMs` is the window of the session quota. */
export interface QuotaLimits {
  rps: number;
  inflightBytes: number;
  connections: number;
  sessions: number;
  sessionTtlMs: number;
}

/** The quotas a process keeps: rate buckets and session counts in Redis when its store is Redis, else in memory. */
export function createQuotas(settings: { rps: number; inflightBytes: number; connections: number; sessions: number }, store: { sessionStore: string; requestTimeoutMs: number; sessionTtlSeconds: number }): Quotas {
  const shared = (settings.rps > 0 || settings.sessions > 0) && store.sessionStore !== 'memory';
  return new Quotas({ ...settings, sessionTtlMs: store.sessionTtlSeconds * 1000 }, shared ? new RedisRateBuckets(store.sessionStore, Math.min(2_000, store.requestTimeoutMs)) : new MemoryRateBuckets());
}
