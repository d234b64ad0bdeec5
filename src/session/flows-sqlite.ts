/**
 * The values sessions have seen (flows.ts), in the SQLite database worker
 * processes share (sqlite.ts): tables of their own beside the sessions',
 * every write one immediate transaction, so concurrent requests of one
 * session in several workers never lose a merge. The store's random flow
 * key lives in the database too, so every worker digests alike.
 */
import Database from 'better-sqlite3';
import { mergeEntry, newFlowKey, type FlowEntry, type FlowWrite } from '../flows/origin.js';
import type { FlowRead, FlowStore, FlowStoreOptions } from './flows.js';
import { SessionStoreUnavailable } from './store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS flows (session TEXT NOT NULL, digest TEXT NOT NULL, bits INTEGER NOT NULL, sources TEXT NOT NULL, PRIMARY KEY (session, digest)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS flow_sessions (session TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL, overflow INTEGER NOT NULL, used INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS flow_sessions_by_use ON flow_sessions (used);
CREATE TABLE IF NOT EXISTS flow_key (k BLOB NOT NULL);
`;

/** How many writes between sweeps of the values of ids unused for two TTLs. */
const SWEEP_EVERY = 1024;

interface Meta {
  count: number;
  overflow: number;
  used: number;
}

export class SqliteFlowStore implements FlowStore {
  readonly #db: Database.Database;
  readonly #now: () => number;
  #key: Uint8Array | undefined;
  #ops = 0;
  readonly #s;
  readonly #record: Database.Transaction<(id: string, writes: readonly FlowWrite[], dropped: number) => { overflow: boolean; first: boolean }>;

  constructor(
    path: string,
    private readonly opts: FlowStoreOptions & { timeoutMs: number },
  ) {
    this.#now = opts.now ?? Date.now;
    this.#key = opts.key;
    this.#db = new Database(path, { fileMustExist: true, timeout: opts.timeoutMs });
    this.#db.pragma('synchronous = OFF');
    this.#db.exec(SCHEMA);
    const db = this.#db;
    this.#s = {
      meta: db.prepare<[string], Meta>('SELECT count, overflow, used FROM flow_sessions WHERE session = ?'),
      setMeta: db.prepare('INSERT INTO flow_sessions (session, count, overflow, used) VALUES (?, ?, ?, ?) ON CONFLICT (session) DO UPDATE SET count = excluded.count, overflow = excluded.overflow, used = excluded.used'),
      touch: db.prepare('UPDATE flow_sessions SET used = ? WHERE session = ?'),
      get: db.prepare<[string, string], { bits: number; sources: string }>('SELECT bits, sources FROM flows WHERE session = ? AND digest = ?'),
      put: db.prepare('INSERT INTO flows (session, digest, bits, sources) VALUES (?, ?, ?, ?) ON CONFLICT (session, digest) DO UPDATE SET bits = excluded.bits, sources = excluded.sources'),
      drop: db.prepare('DELETE FROM flows WHERE session = ?'),
      dropMeta: db.prepare('DELETE FROM flow_sessions WHERE session = ?'),
      stale: db.prepare<[number], { session: string }>('SELECT session FROM flow_sessions WHERE used <= ? LIMIT 1000'),
      getKey: db.prepare<[], { k: Buffer }>('SELECT k FROM flow_key LIMIT 1'),
      addKey: db.prepare('INSERT INTO flow_key (k) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM flow_key)'),
    };
    this.#record = db.transaction((id: string, writes: readonly FlowWrite[], dropped: number) => {
      const now = this.#now();
      let meta = this.#live(id, now);
      const first = meta === undefined || meta.overflow === 0;
      meta ??= { count: 0, overflow: 0, used: now };
      if (dropped > 0) meta.overflow = 1;
      for (const w of writes) {
        const row = this.#s.get.get(id, w.digest);
        if (row !== undefined) {
          const sources = JSON.parse(row.sources) as string[];
          const had = sources.length;
          const e = mergeEntry({ bits: row.bits, sources }, w);
          if (e.bits !== row.bits || e.sources.length !== had) this.#s.put.run(id, w.digest, e.bits, JSON.stringify(e.sources));
        } else if (meta.count < this.opts.maxValues) {
          const e = mergeEntry({ bits: 0, sources: [] }, w);
          this.#s.put.run(id, w.digest, e.bits, JSON.stringify(e.sources));
          meta.count++;
        } else meta.overflow = 1;
      }
      this.#s.setMeta.run(id, meta.count, meta.overflow, now);
      return { overflow: meta.overflow === 1, first: first && meta.overflow === 1 };
    });
  }

  /** The meta row of a live id; an id unused for two TTLs has its values dropped first. */
  #live(id: string, now: number): Meta | undefined {
    const meta = this.#s.meta.get(id);
    if (meta === undefined) return undefined;
    if (now - meta.used < 2 * this.opts.ttlMs) return meta;
    this.#s.drop.run(id);
    this.#s.dropMeta.run(id);
    return undefined;
  }

  #run<T>(operation: string, f: () => T): Promise<T> {
    try {
      return Promise.resolve(f());
    } catch (err) {
      return Promise.reject(new SessionStoreUnavailable(`the flow store failed (${operation}): ${(err as Error)?.message ?? 'error'}`));
    }
  }

  key(): Promise<Uint8Array> {
    return this.#run('key', () => {
      if (this.#key === undefined) {
        this.#s.addKey.run(newFlowKey());
        this.#key = new Uint8Array(this.#s.getKey.get()!.k);
      }
      return this.#key;
    });
  }

  record(id: string, writes: readonly FlowWrite[], dropped: number): Promise<{ overflow: boolean }> {
    return this.#run('record', () => {
      if (++this.#ops % SWEEP_EVERY === 0) this.sweep();
      const r = this.#record.immediate(id, writes, dropped);
      if (r.first) this.opts.onOverflow?.();
      return { overflow: r.overflow };
    });
  }

  read(id: string, digests: readonly string[]): Promise<FlowRead> {
    return this.#run('read', () => {
      const now = this.#now();
      const entries = new Map<string, FlowEntry>();
      const meta = this.#live(id, now);
      if (meta === undefined) return { entries, overflow: false };
      this.#s.touch.run(now, id);
      for (const d of digests) {
        const row = this.#s.get.get(id, d);
        if (row !== undefined) entries.set(d, { bits: row.bits, sources: JSON.parse(row.sources) as string[] });
      }
      return { entries, overflow: meta.overflow === 1 };
    });
  }

  forget(id: string): Promise<void> {
    return this.#run('forget', () => {
      this.#s.drop.run(id);
      this.#s.dropMeta.run(id);
    });
  }

  /** Drop the values of ids unused for two TTLs (at most 1,000 ids a sweep). */
  sweep(): void {
    for (const { session } of this.#s.stale.all(this.#now() - 2 * this.opts.ttlMs)) {
      this.#s.drop.run(session);
      this.#s.dropMeta.run(session);
    }
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
