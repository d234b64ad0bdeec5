/**
 * The one owner of session stores: every process opens its store here, and
 * a memory store is swept, counted and closed here only. The store a
 * process uses is chosen from TRUSTGATE_SESSION_STORE
 * (docs/behaviour/sessions.md):
 *
 * - `memory`, one process (TRUSTGATE_WORKERS=1, the stdio bindings, and an
 *   app built without a store): the process holds a HeldMemoryStore;
 * - `memory`, worker processes: one SQLite database in a private folder in
 *   memory (sqlite.ts), which the primary creates at start, sweeps every
 *   SHARED_SWEEP_MS and removes when the service stops; each worker opens
 *   it (its path in SHARED_DB_ENV) and runs every operation itself;
 * - `redis://...`: every serving process (each worker, each replica) has its
 *   own client of the one Redis; the primary holds nothing.
 *
 * The process that sweeps a memory store (the one process, or the primary)
 * reports the sessions-live gauge, and counts and logs evictions
 * (src/session/held.ts).
 */
import { accessSync, chmodSync, constants, lstatSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import { EvictionLog, HeldMemoryStore, type StoreLog } from '../session/held.js';
import { MemoryFlowStore, type FlowStore } from '../session/flows.js';
import type { SessionStore } from '../session/store.js';

/** How often the primary sweeps the database its workers share: expired sessions, and the bound. */
export const SHARED_SWEEP_MS = 1_000;
/** A store operation not answered in this time (Redis), or still locked out after it (the shared database), fails (503). */
export const STORE_TIMEOUT_MS = 1_000;
/** Set by the primary in its workers' environment: the database file of the memory store they share. */
export const SHARED_DB_ENV = 'TRUSTGATE_CLUSTER_SESSION_DB';

export function isMemory(config: Pick<Config, 'sessionStore'>): boolean {
  return config.sessionStore === 'memory';
}

async function openRedis(config: Pick<Config, 'sessionStore' | 'sessionTtlSeconds' | 'maxPins'>, metrics: Metrics, log: StoreLog): Promise<SessionStore> {
  // Loaded only when used: a service on the memory store never loads the Redis client.
  const { RedisSessionStore } = await import('../session/redis.js');
  return new RedisSessionStore({
    url: config.sessionStore,
    ttlMs: config.sessionTtlSeconds * 1000,
    maxPins: config.maxPins,
    commandTimeoutMs: STORE_TIMEOUT_MS,
    onError: (operation) => metrics.sessionStoreErrors.labels({ backend: 'redis', operation }).inc(),
    onHealth: (healthy, reason) =>
      healthy
        ? log.info({ sessionStore: 'redis' }, 'session store reachable')
        : log.error({ sessionStore: 'redis', reason }, 'session store unreachable: requests that name a session get 503 until it is back'),
  });
}

/**
 * What makes the configured store unusable at start-up, in one line, or
 * undefined: a Redis URL naming a database the server does not have (which
 * ioredis would silently replace with database 0). A store that cannot be
 * reached is no reason to refuse: requests fail closed until it answers.
 */
export async function sessionStoreProblem(config: Pick<Config, 'sessionStore'>): Promise<string | undefined> {
  if (isMemory(config)) return undefined;
  const { missingDatabase } = await import('../session/redis.js');
  const missing = await missingDatabase(config.sessionStore, 2_000);
  return missing === undefined ? undefined : `TRUSTGATE_SESSION_STORE names a database the Redis server does not have (${missing}); use one it has (0 to databases-1 of its configuration)`;
}

/** The store of a process that serves on its own (TRUSTGATE_WORKERS=1, the stdio bindings). */
export function openSessionStore(config: Config, metrics: Metrics, log: StoreLog): Promise<SessionStore> {
  if (isMemory(config)) return Promise.resolve(new HeldMemoryStore(config, metrics, log));
  return openRedis(config, metrics, log);
}

/**
 * Where the values sessions have seen live (docs/behaviour/flows.md), beside
 * the session store and shared as widely: in the process that holds the
 * memory store, in the database worker processes share, in Redis.
 */
export async function openFlowStore(config: Config, metrics: Metrics, worker: boolean, env: NodeJS.ProcessEnv = process.env): Promise<FlowStore> {
  const opts = { maxValues: config.maxFlowValues, ttlMs: config.sessionTtlSeconds * 1000, key: config.flowKey, onOverflow: () => metrics.flowOverflows.inc() };
  if (!isMemory(config)) {
    const { RedisFlowStore } = await import('../session/flows-redis.js');
    return new RedisFlowStore(config.sessionStore, { ...opts, commandTimeoutMs: STORE_TIMEOUT_MS });
  }
  if (!worker) return new MemoryFlowStore(opts);
  const path = env[SHARED_DB_ENV];
  if (!path) throw new Error(`${SHARED_DB_ENV} is not set: a worker on the memory store needs the database of its primary`);
  const { SqliteFlowStore } = await import('../session/flows-sqlite.js');
  return new SqliteFlowStore(path, { ...opts, timeoutMs: STORE_TIMEOUT_MS });
}

/** The store of a worker process: the database its primary made (memory), or its own Redis client. */
export async function openWorkerStore(config: Config, metrics: Metrics, log: StoreLog, env: NodeJS.ProcessEnv = process.env): Promise<SessionStore> {
  if (!isMemory(config)) return openRedis(config, metrics, log);
  const path = env[SHARED_DB_ENV];
  if (!path) throw new Error(`${SHARED_DB_ENV} is not set: a worker on the memory store needs the database of its primary`);
  const { SqliteSessionStore } = await import('../session/sqlite.js');
  return new SqliteSessionStore({
    path,
    ttlMs: config.sessionTtlSeconds * 1000,
    timeoutMs: STORE_TIMEOUT_MS,
    maxSessions: config.maxSessions,
    maxPins: config.maxPins,
    ...storeReports(metrics, log),
  });
}

function storeReports(metrics: Metrics, log: StoreLog): { onError: (operation: string) => void; onHealth: (healthy: boolean, reason: string) => void } {
  return {
    onError: (operation) => metrics.sessionStoreErrors.labels({ backend: 'memory', operation }).inc(),
    onHealth: (healthy, reason) =>
      healthy
        ? log.info({ sessionStore: 'memory' }, 'session store reachable')
        : log.error({ sessionStore: 'memory', reason }, 'session store unreachable: requests that name a session get 503 until it is back'),
  };
}

/** What the primary holds for its workers: the shared database's folder and sweep. */
export interface PrimaryStore {
  /** For each worker's environment. */
  readonly env: Record<string, string>;
  /** Stop sweeping and remove the folder (synchronous: the process exits right after). */
  close(): void;
}

/**
 * The primary's side of the memory store (TRUSTGATE_WORKERS > 1): removes
 * the folders of primaries that are gone, creates the database in a fresh
 * folder, and sweeps it every SHARED_SWEEP_MS (ids past their forgotten
 * window), counting the sessions whose TTL ran out. Undefined on Redis.
 */
export async function openPrimaryStore(config: Config, metrics: Metrics, log: StoreLog, base?: string): Promise<PrimaryStore | undefined> {
  if (!isMemory(config)) return undefined;
  const { SqliteSessionStore, createSessionDb } = await import('../session/sqlite.js');
  const where = base ?? storeBase();
  const removed = removeStaleDirs(where);
  if (removed.length > 0) log.info({ removed }, 'removed the session folders of primary processes that are gone');
  const dir = makeStoreDir(where);
  const path = join(dir, 'sessions.db');
  const ttlMs = config.sessionTtlSeconds * 1000;
  let store: InstanceType<typeof SqliteSessionStore>;
  try {
    createSessionDb(path, ttlMs);
    store = new SqliteSessionStore({ path, ttlMs, timeoutMs: STORE_TIMEOUT_MS, maxSessions: config.maxSessions, maxPins: config.maxPins, ...storeReports(metrics, log) });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const evictions = new EvictionLog(log, metrics);
  let live = 0;
  metrics.sessionCount = () => live;
  const sweeper = setInterval(() => {
    try {
      touchStoreDir(dir);
    } catch {
      // The folder is gone: every store on the file says so (it checks that the file is still there).
    }
    try {
      const r = store.sweep();
      evictions.evicted('ttl', r.ttl);
      live = r.live;
    } catch {
      // Counted and logged by the store (onError, onHealth); the next sweep tries again.
    }
  }, SHARED_SWEEP_MS);
  sweeper.unref();
  let closed = false;
  return {
    env: { [SHARED_DB_ENV]: path },
    close() {
      if (closed) return;
      closed = true;
      clearInterval(sweeper);
      evictions.flush();
      store.closeSync();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------
// The folder of a service's database: made by its primary, named with the
// primary's pid, removed when it stops, or at a later start once it is gone.

/** Every such folder's name starts with this, then the pid, `-` and six characters of mkdtemp's. */
export const DIR_PREFIX = 'trustgate-sessions-';
const DIR_NAME = new RegExp(`^${DIR_PREFIX}([0-9]+)-[A-Za-z0-9]{6}$`);
/** A folder not touched for this long, whose pid runs no process here, is left over. */
export const STALE_MS = 10_000;

/** Where the folder goes: /dev/shm (memory) when it is there and writable, else the temporary folder. */
export function storeBase(): string {
  try {
    accessSync('/dev/shm', constants.W_OK | constants.X_OK);
    if (statSync('/dev/shm').isDirectory()) return '/dev/shm';
  } catch {
    // no /dev/shm here (macOS), or not writable
  }
  return tmpdir();
}

/** A fresh folder for this primary's database, readable by this user only. */
export function makeStoreDir(base: string): string {
  const dir = mkdtempSync(join(base, `${DIR_PREFIX}${process.pid}-`));
  chmodSync(dir, 0o700);
  return dir;
}

/** Mark the folder as in use (the primary, on every sweep): removeStaleDirs() leaves it alone. */
export function touchStoreDir(dir: string): void {
  const t = new Date();
  utimesSync(dir, t, t);
}

/**
 * Remove the folders under `base` that primaries which are gone left
 * (killed outright, or the machine lost power with `base` on disk): ours
 * (same user), named with a pid that runs no process here, and untouched
 * for STALE_MS. The last condition keeps the folder of a live service
 * whose pid this process cannot see (another container sharing the
 * folder: pids repeat across pid namespaces, and each container's first
 * process is 1, as this one may be). Answers the folders removed.
 */
export function removeStaleDirs(base: string, now = Date.now()): string[] {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = DIR_NAME.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid !== process.pid && running(pid)) continue;
    const dir = join(base, name);
    const st = lstatSync(dir, { throwIfNoEntry: false });
    // Never through a link, never another user's.
    if (!st?.isDirectory() || (process.getuid && st.uid !== process.getuid())) continue;
    if (now - st.mtimeMs < STALE_MS) continue;
    try {
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // left for a later start
    }
  }
  return removed;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as { code?: unknown }).code === 'EPERM';
  }
}
