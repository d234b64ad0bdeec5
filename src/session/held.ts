/**
 * The memory store of the process that holds it: swept on a timer, its
 * size reported as the sessions-live gauge, its evictions counted and logged
 * at most one line every EVICTION_LOG_MS (counts, never session content).
 * The one process of a service (TRUSTGATE_WORKERS=1), a stdio binding and an
 * app built without a store hold one; src/main/stores.ts chooses the store.
 */
import type { Metrics } from '../metrics.js';
import { MemorySessionStore } from './memory.js';

/** How often the memory store drops expired sessions. */
export const SWEEP_MS = 10_000;
/** At most one eviction line this often. */
export const EVICTION_LOG_MS = 10_000;

/** Where a store reports: the process's logger. */
export interface StoreLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The settings a held store reads (TRUSTGATE_SESSION_TTL_SECONDS, TRUSTGATE_MAX_SESSIONS, TRUSTGATE_MAX_PINS). */
export interface HeldStoreSettings {
  sessionTtlSeconds: number;
  maxSessions: number;
  maxPins: number;
}

/** Counts sessions whose TTL ran out (their labels dropped; they read as forgotten) and logs them, at most one line every EVICTION_LOG_MS. */
export class EvictionLog {
  private count = 0;
  private last = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: StoreLog,
    private readonly metrics: Metrics,
  ) {}

  evicted(why: 'ttl', n = 1): void {
    if (n <= 0) return;
    this.metrics.sessionEvictions.labels({ reason: why }).inc(n);
    this.count += n;
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
    if (this.count === 0) return;
    const ttl = this.count;
    this.count = 0;
    this.last = Date.now();
    this.log.info({ evicted: { ttl } }, 'sessions expired (a later use reads them as forgotten)');
  }
}

/** The memory store of the process that holds it: sweep timer, gauge, evictions. */
export class HeldMemoryStore extends MemorySessionStore {
  private readonly sweeper: NodeJS.Timeout;
  private readonly evictions: EvictionLog;

  constructor(config: HeldStoreSettings, metrics: Metrics, log: StoreLog) {
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
