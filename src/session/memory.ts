/**
 * The in-process memory store: sessions in a Map kept in order of last use
 * (a Map iterates in insertion order; a touch re-inserts), so that the
 * order is expiry order too. It serves one process (TRUSTGATE_WORKERS=1,
 * the stdio bindings); worker processes share a SQLite database instead
 * (sqlite.ts).
 *
 * Never forget silently (docs/bindings/proxy.md):
 * - a session lives `ttlMs` after its last use; then its labels are dropped
 *   but its id is kept for one more `ttlMs` (the forgotten window): a use
 *   of the id in that window reads the session as forgotten (untrusted and
 *   sensitive), and that use keeps it, forgotten, like any live session;
 * - the store holds at most `maxSessions` ids (live sessions and ids in
 *   their forgotten window); past it a NEW session is refused
 *   (SessionStoreFull), never a held one evicted;
 * - at most `maxPins` pins; past it a new pin is refused (`unavailable`),
 *   never an old one dropped.
 */
import {
  emptySession,
  forgottenSession,
  mergedFor,
  mergeSession,
  ownedBy,
  SessionStoreFull,
  type PinCheck,
  type SessionState,
  type SessionStore,
  type SessionUpdate,
} from './store.js';

export interface MemoryStoreOptions {
  /** Most session ids held (live, or in their forgotten window); a new session past it is refused. */
  maxSessions: number;
  /** Most (server, tool) pins held; a new pin past it is refused. */
  maxPins: number;
  ttlMs: number;
  /** Called once per session whose TTL ran out (its labels were dropped), for the metric and log line. */
  onEvict?: (id: string, why: 'ttl') => void;
  /** The clock (tests pass their own). */
  now?: () => number;
}

/** The key of a (server, tool) pin: the length prefix makes it one-to-one. */
const pinId = (server: string, tool: string): string => `${server.length}:${server}${tool}`;

interface Entry {
  /** Undefined once the TTL ran out: the labels were dropped and the session reads as forgotten. */
  state: SessionState | undefined;
  expires: number;
}

export class MemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, Entry>();
  private readonly pins = new Map<string, string>();
  private readonly now: () => number;
  /** The id inserted last: the end of the order. */
  private newest: string | undefined;

  constructor(private readonly opts: MemoryStoreOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Session ids held now, forgotten ones included (for the sessions-live gauge). */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * The state of a held id: its own, or forgotten when its TTL ran out;
   * undefined when the id is not held (never used, deleted, or past its
   * forgotten window, which drops it here).
   */
  private held(id: string): SessionState | undefined {
    const e = this.sessions.get(id);
    if (!e) return undefined;
    const t = this.now();
    if (e.expires + this.opts.ttlMs <= t) {
      if (e.state !== undefined) this.opts.onEvict?.(id, 'ttl');
      this.remove(id);
      return undefined;
    }
    if (e.expires <= t) {
      if (e.state !== undefined) {
        e.state = undefined;
        this.opts.onEvict?.(id, 'ttl');
      }
      return forgottenSession();
    }
    return e.state ?? forgottenSession();
  }

  /** Store a session's state as the most recently used; a new id past the bound is refused. */
  private put(id: string, state: SessionState): void {
    const expires = this.now() + this.opts.ttlMs;
    const e = this.sessions.get(id);
    // Already the newest (a proxied connection's one session, call after call): updated in place, the order stays.
    if (e !== undefined && id === this.newest) {
      e.state = state;
      e.expires = expires;
      return;
    }
    if (e === undefined) {
      // Ids past their forgotten window free their room first.
      if (this.sessions.size >= this.opts.maxSessions) this.sweep();
      if (this.sessions.size >= this.opts.maxSessions) {
        throw new SessionStoreFull(`the session store holds TRUSTGATE_MAX_SESSIONS (${this.opts.maxSessions}) sessions: no new session until one ends or expires`);
      }
    } else this.sessions.delete(id);
    this.sessions.set(id, { state, expires });
    this.newest = id;
  }

  private remove(id: string): void {
    this.sessions.delete(id);
    if (id === this.newest) this.newest = undefined;
  }

  async get(id: string, owner?: string): Promise<SessionState | undefined> {
    const s = this.held(id);
    if (s === undefined || !ownedBy(s, owner)) return undefined;
    this.put(id, s);
    return s;
  }

  async update(id: string, update: SessionUpdate): Promise<SessionState> {
    const state = mergedFor(mergeSession(this.held(id) ?? emptySession(), update), update);
    this.put(id, state);
    return state;
  }

  async delete(id: string, owner?: string): Promise<boolean> {
    const s = this.held(id);
    if (s === undefined || !ownedBy(s, owner)) return false;
    // Ended, not cleaned: the id reads as forgotten, still its owner's, for one more TTL.
    this.put(id, { ...forgottenSession(), owner: s.owner ?? owner ?? '' });
    return true;
  }

  async checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    const key = pinId(server, tool);
    const pinned = this.pins.get(key);
    if (pinned !== undefined) return { status: pinned === digest ? 'match' : 'changed', pinned };
    if (this.pins.size >= this.opts.maxPins) return { status: 'unavailable', pinned: digest };
    this.pins.set(key, digest);
    return { status: 'first-seen', pinned: digest };
  }

  async acceptPin(server: string, tool: string, digest: string): Promise<void> {
    const key = pinId(server, tool);
    if (!this.pins.has(key) && this.pins.size >= this.opts.maxPins) {
      throw new SessionStoreFull(`the store holds TRUSTGATE_MAX_PINS (${this.opts.maxPins}) pins: no new pin`);
    }
    this.pins.set(key, digest);
  }

  async getPin(server: string, tool: string): Promise<string | undefined> {
    return this.pins.get(pinId(server, tool));
  }

  healthy(): boolean {
    return true;
  }

  /** Drop the labels of sessions whose TTL ran out, and the ids past their forgotten window (called on a timer by the owner). */
  sweep(): void {
    const t = this.now();
    // Every touch re-inserts with the same TTL, so the map's order is expiry order too.
    for (const [id, e] of this.sessions) {
      if (e.expires > t) break;
      if (e.state !== undefined) {
        e.state = undefined;
        this.opts.onEvict?.(id, 'ttl');
      }
      if (e.expires + this.opts.ttlMs <= t) this.remove(id);
    }
  }

  async close(): Promise<void> {
    this.sessions.clear();
    this.newest = undefined;
    this.pins.clear();
  }
}
