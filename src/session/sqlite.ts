/**
 * The memory store shared by worker processes (TRUSTGATE_SESSION_STORE=
 * memory with TRUSTGATE_WORKERS > 1): one SQLite database (better-sqlite3)
 * in a private folder in memory (/dev/shm, else the temporary folder),
 * which the primary process creates at start and removes when the service
 * stops, and which every worker opens. Nothing in it outlives the service.
 *
 * Every write is one statement, so SQLite's single writer makes it atomic
 * across processes: an update is an UPSERT whose merge is mergeSession()
 * of store.ts, run inside the statement as a SQL function of this
 * connection; a pin is set-if-absent (INSERT ... ON CONFLICT DO NOTHING).
 * Concurrent requests of one session on any worker lose no update. The
 * updates of one event-loop turn are committed together, in one write
 * transaction (see update()).
 *
 * Lock waits: the connection never waits inside SQLite (busy_timeout 0);
 * a statement that finds the database locked is retried after a short
 * wait of this process (tens of microseconds, growing), for at most
 * `timeoutMs`, then fails. The wait blocks the worker's event loop, as the
 * statement itself does: every statement here takes microseconds, and the
 * only long writer, the primary's sweep, deletes in small chunks.
 *
 * TTL and bound: a session expires `ttlMs` after its last use (a read
 * or an update moves the expiry only when it moved more than refreshMs()
 * ago, so most reads write nothing and most updates leave the index alone); an expired session reads as absent and an
 * update starts it over. The primary's sweep() (every second) deletes
 * expired sessions and, past the bound, the least recently used ones, and
 * the least recently pinned pins past theirs.
 *
 * Fail closed: every failure (locked past the timeout, a database file
 * deleted, replaced or corrupt, a full disk) rejects with
 * SessionStoreUnavailable; healthy() stays false until an operation (or
 * the probe, every second while failing) succeeds again.
 */
import { accessSync, chmodSync, constants, lstatSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { emptySession, mergeSession, SessionStoreUnavailable, type PinCheck, type SessionState, type SessionStore, type SessionUpdate } from './store.js';

/** A use moves a session's expiry only when it last moved longer ago than this, or a tenth of the TTL when that is less. */
export const REFRESH_MS = 1_000;

/** How long ago the expiry must have moved for a use to move it again, for a TTL. */
export function refreshMs(ttlMs: number): number {
  return Math.min(REFRESH_MS, Math.floor(ttlMs / 10));
}
/** Most merges one write transaction commits (the other workers wait for the lock while it runs). */
export const MERGE_GROUP = 64;
/** The first wait for a lock, ms; each next one is WAIT_GROWTH times longer, up to WAIT_MAX_MS. */
const WAIT_FIRST_MS = 0.02;
const WAIT_GROWTH = 1.5;
const WAIT_MAX_MS = 2;
/** Rows one sweep transaction deletes at most, so that no worker waits long for the lock. */
const SWEEP_CHUNK = 500;
/** How often the database file is checked to still be the one opened. */
const FILE_CHECK_MS = 1_000;

/**
 * The schema. `expires` is in ms since the epoch; the index on it is the
 * sweep's (expired rows, least recently used first). `restarted` counts
 * updates that found their session expired before the sweep did (the
 * trigger; its WHEN holds the TTL of the service, so the primary counts
 * those expiries too). Pins are in pinning order (seq, the rowid).
 */
function schema(ttlMs: number): string {
  return `
CREATE TABLE sessions (id TEXT PRIMARY KEY NOT NULL, state TEXT NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX sessions_by_expiry ON sessions (expires);
CREATE TABLE pins (seq INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, digest TEXT NOT NULL);
CREATE TABLE restarted (n INTEGER NOT NULL);
INSERT INTO restarted (n) VALUES (0);
CREATE TRIGGER sessions_restarted AFTER UPDATE OF state ON sessions WHEN old.expires <= new.expires - ${Math.trunc(ttlMs)}
BEGIN UPDATE restarted SET n = n + 1; END;
`;
}

/** Create the database of a service (the primary, once, in a fresh folder). */
export function createSessionDb(path: string, ttlMs: number): void {
  const db = new Database(path);
  try {
    // WAL: readers never wait for the writer. Kept in the file, so every connection has it.
    db.pragma('journal_mode = WAL');
    db.exec(schema(ttlMs));
  } finally {
    db.close();
  }
}

export interface SqliteStoreOptions {
  /** The database file createSessionDb() made. */
  path: string;
  ttlMs: number;
  /** The most time one operation waits for the lock; past it, SessionStoreUnavailable. */
  timeoutMs: number;
  maxTools?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
  /** Called once per failed operation (the store-errors metric). */
  onError?: (operation: string) => void;
  /** Told when operations start failing and when they succeed again (never with session content). */
  onHealth?: (healthy: boolean, reason: string) => void;
}

export interface SweepResult {
  /** Sessions dropped for their TTL (by the sweep, or started over by an update first). */
  ttl: number;
  /** Sessions dropped, least recently used first, to bring the count down to the bound. */
  lru: number;
  /** Sessions held after the sweep. */
  live: number;
}

interface Statements {
  get: Database.Statement<[string], { state: string; expires: number }>;
  refresh: Database.Statement<[{ id: string; expires: number; now: number }]>;
  merge: Database.Statement<[{ id: string; fresh: string; expires: number; now: number; refresh: number }]>;
  mergeMoving: Database.Statement<[{ id: string; fresh: string; expires: number; now: number }]>;
  delete: Database.Statement<[string, number]>;
  getPin: Database.Statement<[string], { digest: string }>;
  addPin: Database.Statement<[string, string]>;
  setPin: Database.Statement<[string, string]>;
  expire: Database.Statement<[number, number]>;
  restarted: Database.Statement<[], { n: number }>;
  resetRestarted: Database.Statement<[]>;
  count: Database.Statement<[], { n: number }>;
  trim: Database.Statement<[number]>;
  countPins: Database.Statement<[], { n: number }>;
  trimPins: Database.Statement<[number]>;
  probe: Database.Statement<[], unknown>;
}

/** SQLITE_BUSY and its extended codes: another connection holds the lock. */
function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^SQLITE_BUSY(_|$)/.test(code);
}

/** A statement kept finding the database locked for the whole timeout. */
class LockedTooLong extends Error {}
/** One Int32 to wait on (never notified: Atomics.wait is a sleep of this thread). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

export class SqliteSessionStore implements SessionStore {
  private db: Database.Database | undefined;
  private s: Statements | undefined;
  /** The file opened (device and inode), to tell when it is deleted or replaced. */
  private file: { dev: number; ino: number } | undefined;
  private lastFileCheck = 0;
  private readonly now: () => number;
  private readonly maxTools: number;
  private readonly refresh: number;
  /** The update the merge function of the running statement applies. */
  private pending: SessionUpdate | undefined;
  /** What that function merged (undefined: the statement inserted, or started an expired session over). */
  private merged: SessionState | undefined;
  /** The merges of one group, in one write transaction (made once per connection). */
  private mergeGroup: Database.Transaction<(group: ReadonlyArray<{ id: string; update: SessionUpdate }>) => SessionState[]> | undefined;
  /** Merges waiting for the end of this event-loop turn (see update()). */
  private merges: Array<{ id: string; update: SessionUpdate; resolve: (s: SessionState) => void; reject: (err: Error) => void }> = [];
  private failing = false;
  /** Why the store cannot work at all (the file is gone): nothing but a restart helps. */
  private broken: string | undefined;
  /** Why the database could not be opened (the probe tries again). */
  private openError = 'the session database is not open';
  private closed = false;
  private readonly probe: NodeJS.Timeout;

  constructor(private readonly opts: SqliteStoreOptions) {
    this.now = opts.now ?? Date.now;
    this.maxTools = opts.maxTools ?? 1000;
    this.refresh = refreshMs(opts.ttlMs);
    if (!this.tryOpen()) this.fail('open', this.openError);
    this.probe = setInterval(() => {
      if (!this.failing || this.closed) return;
      if (!this.db && !this.broken && !this.tryOpen()) return;
      try {
        // The write lock, taken and given back: a store whose writes time out is not healthy yet.
        this.exec('probe', () => this.db!.transaction(() => this.s!.probe.get()).immediate());
      } catch {
        // still failing; said so already
      }
    }, 1_000);
    this.probe.unref();
  }

  private tryOpen(): boolean {
    try {
      this.open();
      return true;
    } catch (err) {
      this.openError = `the session database cannot be opened: ${describe(err)}`;
      return false;
    }
  }

  private open(): void {
    const db = new Database(this.opts.path, { fileMustExist: true, timeout: 0 });
    try {
      const st = statSync(this.opts.path);
      db.pragma('busy_timeout = 0');
      // Nothing must survive a restart: never wait for the disk.
      db.pragma('synchronous = OFF');
      db.function('tg_merge', { deterministic: false, directOnly: true }, (state: string) => {
        const next = mergeSession(JSON.parse(state) as SessionState, this.pending!, this.maxTools);
        this.merged = next;
        return JSON.stringify(next);
      });
      this.s = {
        get: db.prepare('SELECT state, expires FROM sessions WHERE id = ?'),
        refresh: db.prepare('UPDATE sessions SET expires = max(expires, @expires) WHERE id = @id AND expires > @now'),
        // The usual update: the session is live and its expiry moved less than `refresh` ago; the
        // expiry (and so the index on it) is left alone. Changes nothing otherwise (0 changes).
        merge: db.prepare(
          `INSERT INTO sessions (id, state, expires) VALUES (@id, @fresh, @expires)
           ON CONFLICT (id) DO UPDATE SET state = tg_merge(sessions.state)
           WHERE sessions.expires > @now AND excluded.expires - sessions.expires <= @refresh`,
        ),
        // Otherwise: merge into it (or start it over when it expired) and move the expiry.
        mergeMoving: db.prepare(
          `INSERT INTO sessions (id, state, expires) VALUES (@id, @fresh, @expires)
           ON CONFLICT (id) DO UPDATE SET
             state = CASE WHEN sessions.expires > @now THEN tg_merge(sessions.state) ELSE excluded.state END,
             expires = excluded.expires`,
        ),
        delete: db.prepare('DELETE FROM sessions WHERE id = ? AND expires > ?'),
        getPin: db.prepare('SELECT digest FROM pins WHERE key = ?'),
        addPin: db.prepare('INSERT INTO pins (key, digest) VALUES (?, ?) ON CONFLICT (key) DO NOTHING'),
        // REPLACE deletes the old row and inserts a new one: the pin becomes the most recent.
        setPin: db.prepare('REPLACE INTO pins (key, digest) VALUES (?, ?)'),
        expire: db.prepare('DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires <= ? ORDER BY expires LIMIT ?)'),
        restarted: db.prepare('SELECT n FROM restarted'),
        resetRestarted: db.prepare('UPDATE restarted SET n = 0'),
        count: db.prepare('SELECT count(*) AS n FROM sessions'),
        trim: db.prepare('DELETE FROM sessions WHERE id IN (SELECT id FROM sessions ORDER BY expires LIMIT ?)'),
        countPins: db.prepare('SELECT count(*) AS n FROM pins'),
        trimPins: db.prepare('DELETE FROM pins WHERE seq IN (SELECT seq FROM pins ORDER BY seq LIMIT ?)'),
        probe: db.prepare('SELECT 1 FROM restarted'),
      };
      this.file = { dev: st.dev, ino: st.ino };
      this.lastFileCheck = Date.now();
      this.mergeGroup = db.transaction((group: ReadonlyArray<{ id: string; update: SessionUpdate }>) => group.map((m) => this.mergeOne(m)));
      this.db = db;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Whether the path still names the file opened (checked at most every FILE_CHECK_MS). */
  private checkFile(): void {
    if (this.broken || !this.file) return;
    const t = Date.now();
    if (t - this.lastFileCheck < FILE_CHECK_MS) return;
    this.lastFileCheck = t;
    const st = statSync(this.opts.path, { throwIfNoEntry: false });
    if (!st) this.broken = 'the session database file was deleted';
    else if (st.dev !== this.file.dev || st.ino !== this.file.ino) this.broken = 'the session database file was replaced';
  }

  private fail(operation: string, reason: string): void {
    if (!this.failing && !this.closed) this.opts.onHealth?.(false, reason);
    this.failing = true;
    if (operation !== 'probe') this.opts.onError?.(operation);
  }

  /**
   * Run `f` (synchronous statements), retrying while the database is
   * locked, for at most timeoutMs; every failure becomes
   * SessionStoreUnavailable (the message names no session content).
   */
  private exec<T>(operation: string, f: () => T): T {
    if (this.closed) throw new SessionStoreUnavailable('the session store is closed');
    let reason: string;
    this.checkFile();
    if (this.broken) reason = this.broken;
    else if (!this.db) reason = this.openError;
    else {
      try {
        const v = this.retry(f);
        if (this.failing) {
          this.failing = false;
          this.opts.onHealth?.(true, 'the session database answers again');
        }
        return v;
      } catch (err) {
        reason = err instanceof LockedTooLong ? `the session database stayed locked for ${this.opts.timeoutMs} ms` : `the session database failed: ${describe(err)}`;
      }
    }
    this.fail(operation, reason);
    throw new SessionStoreUnavailable(`the session store failed (${operation}): ${reason}`);
  }

  /** Run `f`, again after a short wait each time it finds the database locked; LockedTooLong past timeoutMs. */
  private retry<T>(f: () => T): T {
    const deadline = performance.now() + this.opts.timeoutMs;
    let wait = WAIT_FIRST_MS;
    for (;;) {
      try {
        return f();
      } catch (err) {
        if (!isBusy(err)) throw err;
        if (performance.now() + wait >= deadline) throw new LockedTooLong();
        Atomics.wait(sleeper, 0, 0, wait);
        wait = Math.min(wait * WAIT_GROWTH, WAIT_MAX_MS);
      }
    }
  }

  private run<T>(operation: string, f: () => T): Promise<T> {
    try {
      return Promise.resolve(this.exec(operation, f));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  get(id: string): Promise<SessionState | undefined> {
    return this.run('get', () => {
      const s = this.s!;
      const now = this.now();
      const row = s.get.get(id);
      if (!row || row.expires <= now) return undefined;
      const expires = now + this.opts.ttlMs;
      if (expires - row.expires > this.refresh) {
        try {
          s.refresh.run({ id, expires, now });
        } catch (err) {
          // A refresh is a touch, not the answer: one the lock holds up waits for the next use.
          if (!isBusy(err)) throw err;
        }
      }
      return JSON.parse(row.state) as SessionState;
    });
  }

  /**
   * Merges are committed in groups: those asked for in one event-loop turn
   * (the requests whose decisions finished in it) run at its end in one
   * write transaction, at most MERGE_GROUP each, in the order asked; each
   * resolves to the state after its own merge. One transaction takes the
   * write lock once for the group (npm run bench:session, 2 workers, with a
   * session over without: 0.74-0.80 before, 0.77-0.96 and a median of 0.88
   * after). A group that fails rejects every merge in it, each counted as a
   * failed update.
   */
  update(id: string, update: SessionUpdate): Promise<SessionState> {
    return new Promise<SessionState>((resolve, reject) => {
      this.merges.push({ id, update, resolve, reject });
      if (this.merges.length === 1) setImmediate(this.commitMerges);
    });
  }

  private readonly commitMerges = (): void => {
    const all = this.merges;
    this.merges = [];
    for (let start = 0; start < all.length; start += MERGE_GROUP) {
      const group = all.slice(start, start + MERGE_GROUP);
      let states: SessionState[];
      try {
        states = this.exec('update', () => (group.length === 1 ? [this.mergeOne(group[0]!)] : this.mergeGroup!.immediate(group)));
      } catch (err) {
        // exec counted one failed update (none on a closed store); the group's others failed too.
        if (!this.closed) for (let i = 1; i < group.length; i++) this.opts.onError?.('update');
        for (const m of group) m.reject(err as Error);
        continue;
      }
      group.forEach((m, i) => m.resolve(states[i]!));
    }
  };

  /** One merge: the usual statement, else the one that moves the expiry (or starts an expired session over). */
  private mergeOne(m: { id: string; update: SessionUpdate }): SessionState {
    const now = this.now();
    const fresh = mergeSession(emptySession(), m.update, this.maxTools);
    const args = { id: m.id, fresh: JSON.stringify(fresh), expires: now + this.opts.ttlMs, now };
    this.pending = m.update;
    try {
      this.merged = undefined;
      if (this.s!.merge.run({ ...args, refresh: this.refresh }).changes > 0) return this.merged ?? fresh;
      this.merged = undefined;
      this.s!.mergeMoving.run(args);
      return this.merged ?? fresh;
    } finally {
      this.pending = undefined;
      this.merged = undefined;
    }
  }

  delete(id: string): Promise<boolean> {
    return this.run('delete', () => this.s!.delete.run(id, this.now()).changes > 0);
  }

  checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    return this.run('pin', () => {
      const s = this.s!;
      const key = pinKey(server, tool);
      // Read first: a pin already there (the usual case) takes no write lock.
      for (let i = 0; i < 10; i++) {
        const pinned = s.getPin.get(key)?.digest;
        if (pinned !== undefined) return { status: pinned === digest ? 'match' : 'changed', pinned };
        if (s.addPin.run(key, digest).changes > 0) return { status: 'first-seen', pinned: digest };
        // Another process pinned it between the read and the insert: read what it pinned.
      }
      throw new Error('the pin kept changing');
    });
  }

  acceptPin(server: string, tool: string, digest: string): Promise<void> {
    return this.run('pin', () => {
      this.s!.setPin.run(pinKey(server, tool), digest);
    });
  }

  getPin(server: string, tool: string): Promise<string | undefined> {
    return this.run('pin', () => this.s!.getPin.get(pinKey(server, tool))?.digest);
  }

  /**
   * Drop expired sessions, then the least recently used past `maxSessions`,
   * and the least recently pinned pins past `maxPins` (the primary, on a
   * timer). Deletes in chunks of SWEEP_CHUNK rows, one transaction each.
   * @throws SessionStoreUnavailable
   */
  sweep(maxSessions: number, maxPins: number): SweepResult {
    return this.exec('sweep', () => {
      const s = this.s!;
      const now = this.now();
      let ttl = 0;
      let lru = 0;
      for (;;) {
        const n = this.retry(() => s.expire.run(now, SWEEP_CHUNK).changes);
        ttl += n;
        if (n < SWEEP_CHUNK) break;
      }
      ttl += this.retry(() =>
        this.db!.transaction(() => {
          const n = s.restarted.get()!.n;
          if (n > 0) s.resetRestarted.run();
          return n;
        }).immediate(),
      );
      let live = this.retry(() => s.count.get()!.n);
      while (live > maxSessions) {
        const n = this.retry(() => s.trim.run(Math.min(live - maxSessions, SWEEP_CHUNK)).changes);
        if (n === 0) break;
        lru += n;
        live -= n;
      }
      const pins = this.retry(() => s.countPins.get()!.n);
      if (pins > maxPins) this.retry(() => s.trimPins.run(pins - maxPins));
      return { ttl, lru, live };
    });
  }

  healthy(): boolean {
    if (this.closed || !this.db) return false;
    this.checkFile();
    if (this.broken && !this.failing) this.fail('probe', this.broken);
    return !this.failing && !this.broken;
  }

  async close(): Promise<void> {
    this.closeSync();
  }

  /** close(), for a process about to exit. */
  closeSync(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.probe);
    try {
      this.db?.close();
    } catch {
      // closing is best effort
    }
    this.db = undefined;
  }
}

/** The key of a (server, tool) pin: the JSON text of the pair, so no two pairs share one. */
function pinKey(server: string, tool: string): string {
  return JSON.stringify([server, tool]);
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  const message = (err as Error)?.message ?? String(err);
  return typeof code === 'string' ? `${code}: ${message}` : message;
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
