/**
 * The in-process memory store: sessions in a Map kept in least-recently-used
 * order (a Map iterates in insertion order; a touch re-inserts), bounded in
 * count, each living `ttlMs` after its last use. Pins live in a second
 * bounded map. It serves one process (TRUSTGATE_WORKERS=1, the stdio
 * bindings); worker processes share a SQLite database instead (sqlite.ts).
 */
import { emptySession, mergeSession, type PinCheck, type SessionState, type SessionStore, type SessionUpdate } from './store.js';

export interface MemoryStoreOptions {
  /** Most sessions held; the least recently used is evicted past it. */
  maxSessions: number;
  /** Most (server, tool) pins held. */
  maxPins: number;
  ttlMs: number;
  /** Called once per evicted session (for the eviction metric and log line). */
  onEvict?: (id: string, why: 'lru' | 'ttl') => void;
  /** The clock (tests pass their own). */
  now?: () => number;
}

/** The key of a (server, tool) pin: the length prefix makes it one-to-one. */
const pinId = (server: string, tool: string): string => `${server.length}:${server}${tool}`;

interface Entry {
  state: SessionState;
  expires: number;
}

export class MemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, Entry>();
  private readonly pins = new Map<string, string>();
  private readonly now: () => number;
  /** The id inserted last: the end of the LRU order. */
  private newest: string | undefined;

  constructor(private readonly opts: MemoryStoreOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Sessions held now (for the sessions-live gauge). */
  get size(): number {
    return this.sessions.size;
  }

  /** A live session's entry (an expired one is evicted here). */
  private live(id: string): Entry | undefined {
    const e = this.sessions.get(id);
    if (!e) return undefined;
    if (e.expires <= this.now()) {
      this.remove(id);
      this.opts.onEvict?.(id, 'ttl');
      return undefined;
    }
    return e;
  }

  /** Store a session's state as the most recently used. */
  private put(id: string, state: SessionState): void {
    const expires = this.now() + this.opts.ttlMs;
    // Already the newest (a proxied connection's one session, call after call): updated in place, the order stays.
    const newest = id === this.newest ? this.sessions.get(id) : undefined;
    if (newest !== undefined) {
      newest.state = state;
      newest.expires = expires;
      return;
    }
    this.sessions.delete(id);
    this.sessions.set(id, { state, expires });
    this.newest = id;
    while (this.sessions.size > this.opts.maxSessions) {
      const oldest = this.sessions.keys().next().value as string;
      this.remove(oldest);
      this.opts.onEvict?.(oldest, 'lru');
    }
  }

  private remove(id: string): void {
    this.sessions.delete(id);
    if (id === this.newest) this.newest = undefined;
  }

  async get(id: string): Promise<SessionState | undefined> {
    const e = this.live(id);
    if (!e) return undefined;
    this.put(id, e.state);
    return e.state;
  }

  async update(id: string, update: SessionUpdate): Promise<SessionState> {
    const state = mergeSession(this.live(id)?.state ?? emptySession(), update);
    this.put(id, state);
    return state;
  }

  async delete(id: string): Promise<boolean> {
    const e = this.live(id);
    if (e !== undefined) this.remove(id);
    return e !== undefined;
  }

  async checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    const key = pinId(server, tool);
    const pinned = this.pins.get(key);
    if (pinned !== undefined) return { status: pinned === digest ? 'match' : 'changed', pinned };
    this.setPin(key, digest);
    return { status: 'first-seen', pinned: digest };
  }

  async acceptPin(server: string, tool: string, digest: string): Promise<void> {
    this.setPin(pinId(server, tool), digest);
  }

  async getPin(server: string, tool: string): Promise<string | undefined> {
    return this.pins.get(pinId(server, tool));
  }

  private setPin(key: string, digest: string): void {
    this.pins.delete(key);
    this.pins.set(key, digest);
    while (this.pins.size > this.opts.maxPins) this.pins.delete(this.pins.keys().next().value as string);
  }

  healthy(): boolean {
    return true;
  }

  /** Drop expired sessions (called on a timer by the owner, so idle sessions do not stay until touched). */
  sweep(): void {
    const t = this.now();
    // Every touch re-inserts with the same TTL, so the map's order is expiry order too.
    for (const [id, e] of this.sessions) {
      if (e.expires > t) break;
      this.remove(id);
      this.opts.onEvict?.(id, 'ttl');
    }
  }

  async close(): Promise<void> {
    this.sessions.clear();
    this.newest = undefined;
    this.pins.clear();
  }
}
