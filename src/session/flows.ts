/**
 * The values each session has seen (docs/behaviour/flows.md), kept beside
 * the session store: keyed digests only, bounded per session. One
 * interface; the backends follow the session store's (this file: one
 * process; flows-sqlite.ts: worker processes sharing a database;
 * flows-redis.ts: replicas sharing Redis), with one semantics:
 *
 * - a write merges (bits OR, sources appended up to MAX_SOURCES), so
 *   concurrent requests of one session never lose an update;
 * - at most `maxValues` values per session: a new value past it is not
 *   kept and the session is marked overflowed for good (fail closed:
 *   policies then count every argument as untrusted), never an old value
 *   dropped to make room;
 * - a session's values live as long as its id can be used (two TTLs after
 *   the last use), and end with the session;
 * - a store that cannot be read or written rejects with
 *   SessionStoreUnavailable (the request fails closed).
 */
import { mergeEntry, newFlowKey, type FlowEntry, type FlowWrite } from '../flows/origin.js';

/** What a session's values say of the digests asked for. */
export interface FlowRead {
  entries: Map<string, FlowEntry>;
  /** Values were left out of this session past its bound. */
  overflow: boolean;
}

export interface FlowStore {
  /** The key values are digested with: the configured one, else the store's own (made once, kept in the store). */
  key(): Promise<Uint8Array>;
  /** Merge `writes` into session `id`'s values; `dropped` values the request could not even list (its own bound) mark the overflow too. */
  record(id: string, writes: readonly FlowWrite[], dropped: number): Promise<{ overflow: boolean }>;
  /** The entries of `digests` session `id` holds. */
  read(id: string, digests: readonly string[]): Promise<FlowRead>;
  /** Forget session `id`'s values (the host ended it). */
  forget(id: string): Promise<void>;
  close(): Promise<void>;
}

export interface FlowStoreOptions {
  /** TRUSTGATE_MAX_FLOW_VALUES. */
  maxValues: number;
  /** The session TTL: values of an id unused for two of them are dropped. */
  ttlMs: number;
  /** TRUSTGATE_FLOW_KEY, when set. */
  key?: Uint8Array | undefined;
  /** Counts a session's first overflow (trustgate_flow_overflow_total). */
  onOverflow?: () => void;
  now?: () => number;
}

interface Held {
  entries: Map<string, FlowEntry>;
  overflow: boolean;
  used: number;
}

/** How many operations between sweeps of the values of ids unused for two TTLs. */
const SWEEP_EVERY = 1024;

/** One process's flows, in memory. */
export class MemoryFlowStore implements FlowStore {
  readonly #sessions = new Map<string, Held>();
  readonly #key: Uint8Array;
  readonly #now: () => number;
  #ops = 0;

  constructor(private readonly opts: FlowStoreOptions) {
    this.#key = opts.key ?? newFlowKey();
    this.#now = opts.now ?? Date.now;
  }

  async key(): Promise<Uint8Array> {
    return this.#key;
  }

  #held(id: string, create: boolean): Held | undefined {
    if (++this.#ops % SWEEP_EVERY === 0) this.sweep();
    let h = this.#sessions.get(id);
    const now = this.#now();
    if (h !== undefined && now - h.used >= 2 * this.opts.ttlMs) {
      this.#sessions.delete(id);
      h = undefined;
    }
    if (h === undefined && create) this.#sessions.set(id, (h = { entries: new Map(), overflow: false, used: now }));
    if (h !== undefined) h.used = now;
    return h;
  }

  async record(id: string, writes: readonly FlowWrite[], dropped: number): Promise<{ overflow: boolean }> {
    const h = this.#held(id, true)!;
    const was = h.overflow;
    if (dropped > 0) h.overflow = true;
    for (const w of writes) {
      const e = h.entries.get(w.digest);
      if (e !== undefined) mergeEntry(e, w);
      else if (h.entries.size < this.opts.maxValues) h.entries.set(w.digest, mergeEntry({ bits: 0, sources: [] }, w));
      else h.overflow = true;
    }
    if (h.overflow && !was) this.opts.onOverflow?.();
    return { overflow: h.overflow };
  }

  async read(id: string, digests: readonly string[]): Promise<FlowRead> {
    const h = this.#held(id, false);
    const entries = new Map<string, FlowEntry>();
    if (h === undefined) return { entries, overflow: false };
    for (const d of digests) {
      const e = h.entries.get(d);
      if (e !== undefined) entries.set(d, { bits: e.bits, sources: e.sources.slice() });
    }
    return { entries, overflow: h.overflow };
  }

  async forget(id: string): Promise<void> {
    this.#sessions.delete(id);
  }

  /** Drop the values of ids unused for two TTLs. */
  sweep(): void {
    const now = this.#now();
    for (const [id, h] of this.#sessions) if (now - h.used >= 2 * this.opts.ttlMs) this.#sessions.delete(id);
  }

  async close(): Promise<void> {
    this.#sessions.clear();
  }
}
