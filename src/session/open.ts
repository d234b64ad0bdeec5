/**
 * The session store a process uses, chosen from TRUSTGATE_SESSION_STORE
 * (contract section 12):
 *
 * - `memory`, one process (TRUSTGATE_WORKERS=1): the process holds a
 *   MemorySessionStore itself;
 * - `memory`, worker processes: the primary holds the one MemorySessionStore
 *   of the service and each worker reaches it over IPC (ipc.ts; see there
 *   and the README for why IPC rather than a shared SQLite file);
 * - `redis://...`: every serving process (each worker, each replica) has its
 *   own client of the one Redis; the primary holds nothing.
 *
 * The process holding a memory store sweeps expired sessions on a timer,
 * reports the sessions-live gauge, and counts and logs evictions (at most
 * one line every EVICTION_LOG_MS, with counts, never session content).
 */
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import { MemorySessionStore } from './memory.js';
import type { SessionStore } from './store.js';

/** How often the memory store drops expired sessions. */
export const SWEEP_MS = 10_000;
/** At most one eviction line this often. */
export const EVICTION_LOG_MS = 10_000;
/** A store operation not answered in this time fails (503). */
export const STORE_TIMEOUT_MS = 1_000;
/** The same over IPC, where the primary's own work (a policy reload, a metrics scrape) can hold an answer up a little. */
export const IPC_TIMEOUT_MS = 2_000;

export interface StoreLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export function isMemory(config: Pick<Config, 'sessionStore'>): boolean {
  return config.sessionStore === 'memory';
}

/** Counts evictions and logs them, at most one line every EVICTION_LOG_MS. */
class EvictionLog {
  private counts = { lru: 0, ttl: 0 };
  private last = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: StoreLog,
    private readonly metrics: Metrics,
  ) {}

  evicted(why: 'lru' | 'ttl'): void {
    this.metrics.sessionEvictions.labels({ reason: why }).inc();
    this.counts[why] += 1;
    const wait = this.last + EVICTION_LOG_MS - Date.now();
    if (wait <= 0) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), wait);
      this.timer.unref();
    }
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const { lru, ttl } = this.counts;
    if (lru + ttl === 0) return;
    this.counts = { lru: 0, ttl: 0 };
    this.last = Date.now();
    // lru evictions mean the bound is too small for the traffic: say so louder.
    this.log[lru > 0 ? 'warn' : 'info']({ evicted: { lru, ttl } }, lru > 0 ? 'sessions evicted (TRUSTGATE_MAX_SESSIONS reached)' : 'sessions expired');
  }
}

/** The memory store of the process that holds it: sweep timer, gauge, evictions. */
export class HeldMemoryStore extends MemorySessionStore {
  private readonly sweeper: NodeJS.Timeout;
  private readonly evictions: EvictionLog;

  constructor(config: Pick<Config, 'sessionTtlSeconds' | 'maxSessions' | 'maxPins'>, metrics: Metrics, log: StoreLog) {
    const evictions = new EvictionLog(log, metrics);
    super({ maxSessions: config.maxSessions, maxPins: config.maxPins, ttlMs: config.sessionTtlSeconds * 1000, onEvict: (_id, why) => evictions.evicted(why) });
    this.evictions = evictions;
    metrics.sessionCount = () => this.size;
    this.sweeper = setInterval(() => this.sweep(), Math.min(SWEEP_MS, config.sessionTtlSeconds * 1000));
    this.sweeper.unref();
  }

  override async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.evictions.flush();
    await super.close();
  }
}

async function openRedis(config: Pick<Config, 'sessionStore' | 'sessionTtlSeconds'>, metrics: Metrics, log: StoreLog): Promise<SessionStore> {
  // Loaded only when used: a service on the memory store never loads the Redis client.
  const { RedisSessionStore } = await import('./redis.js');
  return new RedisSessionStore({
    url: config.sessionStore,
    ttlMs: config.sessionTtlSeconds * 1000,
    commandTimeoutMs: STORE_TIMEOUT_MS,
    onError: (operation) => metrics.sessionStoreErrors.labels({ backend: 'redis', operation }).inc(),
    onHealth: (healthy, reason) =>
      healthy
        ? log.info({ sessionStore: 'redis' }, 'session store reachable')
        : log.error({ sessionStore: 'redis', reason }, 'session store unreachable: requests that name a session get 503 until it is back'),
  });
}

/** The store of a process that serves on its own (TRUSTGATE_WORKERS=1), or of a worker on Redis (a worker on the memory store uses the primary's: worker.ts). */
export function openSessionStore(config: Config, metrics: Metrics, log: StoreLog): Promise<SessionStore> {
  if (isMemory(config)) return Promise.resolve(new HeldMemoryStore(config, metrics, log));
  return openRedis(config, metrics, log);
}

/** The store the primary holds for its workers: the memory store, or none (Redis: each worker has its own client). */
export function openPrimaryStore(config: Config, metrics: Metrics, log: StoreLog): HeldMemoryStore | undefined {
  return isMemory(config) ? new HeldMemoryStore(config, metrics, log) : undefined;
}
