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
 * TTL and bound (never forget silently, docs/bindings/proxy.md): a session
 * expires `ttlMs` after its last use (a read or an update moves the expiry
 * only when it moved more than refreshMs() ago, so most reads write
 * nothing and most updates leave the index alone). An expired session's
 * row is kept for one more `ttlMs` (its forgotten window): a use in that
 * window reads it as forgotten (untrusted and sensitive) and keeps it,
 * forgotten, as a live session. The primary's sweep() (every second)
 * deletes rows past their window. No row is deleted to make room: a new
 * session while `maxSessions` rows are held is refused (SessionStoreFull),
 * and a new pin while `maxPins` pins are held is `unavailable`.
 *
 * Fail closed: every failure (locked past the timeout, a database file
 * deleted, replaced or corrupt, a full disk) rejects with
 * SessionStoreUnavailable; healthy() stays false until an operation (or
 * the probe, every second while failing) succeeds again.
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { emptySession, forgottenSession, mergeSession, ownedBy, SessionNotOwned, SessionStoreFull, SessionStoreUnavailable, type PinCheck, type SessionState, type SessionStore, type SessionUpdate } from './store.js';

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
 * sweep's (rows past their forgotten window). `restarted` counts uses that
 * found their session expired (the trigger; its WHEN holds the TTL of the
 * service, so the primary counts those expiries too). Pins are in pinning order (seq, the rowid).
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
  /** Most session rows (live, or in their forgotten window); a new session past it is refused. Unbounded when absent. */
  maxSessions?: number;
  /** Most pins; a new pin past it is refused. Unbounded when absent. */
  maxPins?: number;
  maxTools?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
  /** Called once per failed operation (the store-errors metric). */
  onError?: (operation: string) => void;
  /** Told when operations start failing and when they succeed again (never with session content). */
  onHealth?: (healthy: boolean, reason: string) => void;
}

export interface SweepResult {
  /** Sessions whose TTL ran out: rows past their forgotten window deleted by the sweep, and rows a use found expired first. */
  ttl: number;
  /** Session rows held after the sweep (live and forgotten). */
  live: number;
}

interface Statements {
  get: Database.Statement<[string], { state: string; expires: number }>;
  refresh: Database.Statement<[{ id: string; expires: number; now: number }]>;
  lapse: Database.Statement<[{ id: string; forgotten: string; expires: number; now: number }]>;
  merge: Database.Statement<[{ id: string; expires: number; now: number; refresh: number }]>;
  mergeMoving: Database.Statement<[{ id: string; fresh: string; lapsed: string; expires: number; now: number; ttl: number }]>;
  getPin: Database.Statement<[string], { digest: string }>;
  addPin: Database.Statement<[string, string, number]>;
  setPin: Database.Statement<[string, string]>;
  expire: Database.Statement<[number, number]>;
  restarted: Database.Statement<[], { n: number }>;
  resetRestarted: Database.Statement<[]>;
  count: Database.Statement<[], { n: number }>;
  countPins: Database.Statement<[], { n: number }>;
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
  private mergeGroup: Database.Transaction<(group: ReadonlyArray<{ id: string; update: SessionUpdate }>) => Array<SessionState | SessionStoreFull>> | undefined;
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
        // A read of a session whose TTL ran out: its labels are dropped for the forgotten state, and the read is a use.
        lapse: db.prepare('UPDATE sessions SET state = @forgotten, expires = @expires WHERE id = @id AND expires <= @now'),
        // The usual update: the session is live and its expiry moved less than `refresh` ago; the
        // expiry (and so the index on it) is left alone. Changes nothing otherwise (0 changes).
        merge: db.prepare('UPDATE sessions SET state = tg_merge(state) WHERE id = @id AND expires > @now AND @expires - expires <= @refresh'),
        // Otherwise: merge into it, or into the forgotten state when its TTL ran out (in its window), or
        // start it over (past its window: the id is not held any more), and move the expiry.
        mergeMoving: db.prepare(
          `INSERT INTO sessions (id, state, expires) VALUES (@id, @fresh, @expires)
           ON CONFLICT (id) DO UPDATE SET
             state = CASE WHEN sessions.expires > @now THEN tg_merge(sessions.state)
                          WHEN sessions.expires + @ttl > @now THEN @lapsed
                          ELSE excluded.state END,
             expires = excluded.expires`,
        ),
        getPin: db.prepare('SELECT digest FROM pins WHERE key = ?'),
        // A new pin only while fewer than the bound are held (no pin is ever dropped to make room).
        addPin: db.prepare('INSERT INTO pins (key, digest) SELECT ?, ? WHERE (SELECT count(*) FROM pins) < ? ON CONFLICT (key) DO NOTHING'),
        // REPLACE deletes the old row and inserts a new one: the pin becomes the most recent.
        setPin: db.prepare('REPLACE INTO pins (key, digest) VALUES (?, ?)'),
        // Rows past their forgotten window (the caller passes now - ttl).
        expire: db.prepare('DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires <= ? ORDER BY expires LIMIT ?)'),
        restarted: db.prepare('SELECT n FROM restarted'),
        resetRestarted: db.prepare('UPDATE restarted SET n = 0'),
        count: db.prepare('SELECT count(*) AS n FROM sessions'),
        countPins: db.prepare('SELECT count(*) AS n FROM pins'),
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
        // A refusal at the bound is the store working as it should: said as it is, not as a failure.
        if (err instanceof SessionStoreFull) throw err;
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

  get(id: string, owner?: string): Promise<SessionState | undefined> {
    return this.run('get', () => {
      const s = this.s!;
      const now = this.now();
      const row = s.get.get(id);
      const ttl = this.opts.ttlMs;
      if (!row || row.expires + ttl <= now) return undefined;
      // Another's live session is not there for this owner (a lapsed one belongs to no one any more).
      if (row.expires > now && !ownedBy(stored(row.state), owner)) return undefined;
      const expires = now + ttl;
      if (row.expires <= now) {
        // Its TTL ran out: it reads as forgotten, and this use keeps it so (a lock that holds the write up retries it all).
        const forgotten = forgottenSession();
        s.lapse.run({ id, forgotten: JSON.stringify(forgotten), expires, now });
        return forgotten;
      }
      if (expires - row.expires > this.refresh) {
        try {
          s.refresh.run({ id, expires, now });
        } catch (err) {
          // A refresh is a touch, not the answer: one the lock holds up waits for the next use.
          if (!isBusy(err)) throw err;
        }
      }
      return stored(row.state);
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
      let states: Array<SessionState | SessionStoreFull>;
      try {
        states = this.exec('update', () => (group.length === 1 ? [this.mergeOne(group[0]!)] : this.mergeGroup!.immediate(group)));
      } catch (err) {
        // exec counted one failed update (none on a closed store); the group's others failed too.
        if (!this.closed) for (let i = 1; i < group.length; i++) this.opts.onError?.('update');
        for (const m of group) m.reject(err as Error);
        continue;
      }
      group.forEach((m, i) => {
        const st = states[i]!;
        if (st instanceof SessionStoreFull) m.reject(st);
        else if ((st.owner ?? '') !== (m.update.owner ?? '')) m.reject(new SessionNotOwned());
        else m.resolve(st);
      });
    }
  };

  /**
   * One merge: the usual statement, else the one that moves the expiry (into
   * the forgotten state when the TTL ran out, or a new session when the id is
   * not held: refused past maxSessions). Answers the refusal rather than
   * throwing it, so that one refused merge never rolls back its group.
   */
  private mergeOne(m: { id: string; update: SessionUpdate }): SessionState | SessionStoreFull {
    const now = this.now();
    const ttl = this.opts.ttlMs;
    const fresh = mergeSession(emptySession(), m.update, this.maxTools);
    const expires = now + ttl;
    this.pending = m.update;
    try {
      this.merged = undefined;
      if (this.s!.merge.run({ id: m.id, expires, now, refresh: this.refresh }).changes > 0) return this.merged!;
      const moving = (): SessionState | SessionStoreFull => {
        const s = this.s!;
        const row = s.get.get(m.id);
        if (row === undefined || row.expires + ttl <= now) {
          const max = this.opts.maxSessions;
          if (max !== undefined && s.count.get()!.n >= max) {
            // Rows past their window free their room first (the sweep may not have run yet).
            s.expire.run(now - ttl, SWEEP_CHUNK);
            if (s.count.get()!.n >= max) {
              return new SessionStoreFull(`the session store holds TRUSTGATE_MAX_SESSIONS (${max}) sessions: no new session until one ends or expires`);
            }
          }
        }
        const lapsed = mergeSession(forgottenSession(), m.update, this.maxTools);
        this.merged = undefined;
        s.mergeMoving.run({ id: m.id, fresh: JSON.stringify(fresh), lapsed: JSON.stringify(lapsed), expires, now, ttl });
        if (this.merged !== undefined) return this.merged;
        return row !== undefined && row.expires <= now && row.expires + ttl > now ? lapsed : fresh;
      };
      // What the row was decides what is written: read and write in one transaction.
      return this.db!.inTransaction ? moving() : this.db!.transaction(moving).immediate();
    } finally {
      this.pending = undefined;
      this.merged = undefined;
    }
  }

  delete(id: string, owner?: string): Promise<boolean> {
    return this.run('delete', () =>
      this.db!.transaction((): boolean => {
        const s = this.s!;
        const now = this.now();
        const ttl = this.opts.ttlMs;
        const row = s.get.get(id);
        if (!row || row.expires + ttl <= now) return false;
        const held = stored(row.state);
        if (row.expires > now && !ownedBy(held, owner)) return false;
        // Ended, not cleaned: the id reads as forgotten, still its owner's, for one more TTL.
        const forgotten: SessionState = { ...forgottenSession(), owner: (row.expires > now ? held.owner : undefined) ?? owner ?? '' };
        s.lapse.run({ id, forgotten: JSON.stringify(forgotten), expires: now + ttl, now: Number.MAX_SAFE_INTEGER });
        return true;
      }).immediate(),
    );
  }

  checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    return this.run('pin', () => {
      const s = this.s!;
      const key = pinKey(server, tool);
      // Read first: a pin already there (the usual case) takes no write lock.
      for (let i = 0; i < 10; i++) {
        const pinned = s.getPin.get(key)?.digest;
        if (pinned !== undefined) return { status: pinned === digest ? 'match' : 'changed', pinned };
        if (s.addPin.run(key, digest, this.opts.maxPins ?? Number.MAX_SAFE_INTEGER).changes > 0) return { status: 'first-seen', pinned: digest };
        // Another process pinned it between the read and the insert (read what it pinned), or the bound is reached.
        if (s.getPin.get(key) === undefined) return { status: 'unavailable', pinned: digest };
      }
      throw new Error('the pin kept changing');
    });
  }

  acceptPin(server: string, tool: string, digest: string): Promise<void> {
    return this.run('pin', () => {
      const s = this.s!;
      const key = pinKey(server, tool);
      const max = this.opts.maxPins;
      this.db!.transaction(() => {
        if (max !== undefined && s.getPin.get(key) === undefined && s.countPins.get()!.n >= max) {
          throw new SessionStoreFull(`the store holds TRUSTGATE_MAX_PINS (${max}) pins: no new pin`);
        }
        s.setPin.run(key, digest);
      }).immediate();
    });
  }

  getPin(server: string, tool: string): Promise<string | undefined> {
    return this.run('pin', () => this.s!.getPin.get(pinKey(server, tool))?.digest);
  }

  /**
   * Delete the session rows past their forgotten window (the primary, on a
   * timer), in chunks of SWEEP_CHUNK rows, one transaction each. Nothing
   * live is ever deleted, and no pin.
   * @throws SessionStoreUnavailable
   */
  sweep(): SweepResult {
    return this.exec('sweep', () => {
      const s = this.s!;
      const gone = this.now() - this.opts.ttlMs;
      let ttl = 0;
      for (;;) {
        const n = this.retry(() => s.expire.run(gone, SWEEP_CHUNK).changes);
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
      const live = this.retry(() => s.count.get()!.n);
      return { ttl, live };
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

/** A stored state; one written before `forgotten` existed has none (it is not forgotten). */
function stored(text: string): SessionState {
  const st = JSON.parse(text) as SessionState;
  st.forgotten = st.forgotten === true;
  return st;
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
