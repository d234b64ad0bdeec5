/**
 * The session store (docs/behaviour/sessions.md): what each session has been
 * shown, and the tool pins. One interface; the backends are the in-process
 * memory store (memory.ts), the memory store that worker processes share
 * (a SQLite database in memory, sqlite.ts), and Redis (redis.ts). Every
 * write is a merge done by the store itself (labels only go up), so
 * concurrent requests of one session never lose an update, whichever
 * process or replica sends them.
 *
 * Fail closed: a backend that cannot read or write rejects with
 * SessionStoreUnavailable; callers answer 503 TG_ERR_SESSION_STORE_UNAVAILABLE.
 *
 * Never forget silently (docs/bindings/proxy.md): no backend evicts a live
 * session to make room; one at TRUSTGATE_MAX_SESSIONS refuses a NEW session
 * with SessionStoreFull (503 TG_ERR_SESSION_STORE_FULL). A session whose
 * labels the store lost (its TTL ran out; for Redis also a restart without
 * persistence or a flush) reads as `forgotten`, with `untrusted` and
 * `sensitive` true, however long it is used; an ended session (delete)
 * reads so too, for one more TTL. Which ids read so, and for how long:
 * docs/behaviour/forgotten-sessions.md. Pins are never evicted
 * either: past TRUSTGATE_MAX_PINS a new pin is refused (`unavailable`).
 */

/** What a session has been shown so far (the `session` variable, less `id`). */
export interface SessionState {
  /** The store lost what this session was shown (its TTL ran out, the store was flushed or restarted): `sensitive` and `untrusted` read true. */
  forgotten: boolean;
  sensitive: boolean;
  untrusted: boolean;
  /** The most restrictive verified data class seen, and the union of `regulatory` (lower-cased); absent when none. */
  dataClass?: { class: string; regulatory: string[] };
  /** Answered /v1/evaluate-call requests. */
  calls: number;
  /** Answered /v1/evaluate requests. */
  results: number;
  /** Tool names called in the session, in first-call order, each once. */
  tools: string[];
  /**
   * Who the session belongs to: the owner key of the principal that created
   * it (see ownerKey; `""` for the anonymous principal). Absent on a
   * forgotten state and on states stored before sessions had owners: the
   * next write takes it.
   */
  owner?: string;
}

/**
 * One request's contribution. Only raises: `false` or an absent flag changes
 * nothing; a data class replaces the stored one only when its rank is higher.
 */
export interface SessionUpdate {
  sensitive?: boolean;
  untrusted?: boolean;
  /** `rank` from dataClassRank(); the store compares ranks, never names. */
  dataClass?: { class: string; rank: number; regulatory: string[] };
  /** Count one answered /v1/evaluate-call of this tool. */
  call?: { tool: string };
  /** Count one answered /v1/evaluate. */
  result?: boolean;
  /** The owner key of the principal writing (`""` when absent): a session owned by another is left as it is, and the store rejects with SessionNotOwned. */
  owner?: string;
}

/** `unavailable`: nothing was pinned for the pair and the store holds TRUSTGATE_MAX_PINS pins already (the new pin was refused). */
export type PinStatus = 'first-seen' | 'match' | 'changed' | 'unavailable';

export interface PinCheck {
  status: PinStatus;
  /** The digest pinned for the pair (after this check). */
  pinned: string;
}

export interface SessionStore {
  /** The session, touching its TTL; undefined when it does not exist (or expired), or belongs to another owner than `owner` (`""` when absent; untouched then). */
  get(id: string, owner?: string): Promise<SessionState | undefined>;
  /**
   * Merge an update atomically (creating the session, owned by `update.owner`) and touch its TTL; resolves to the state after it.
   * Rejects with SessionStoreFull when the session is new and the store is at capacity, and with SessionNotOwned (nothing written) when another owner holds it.
   */
  update(id: string, update: SessionUpdate): Promise<SessionState>;
  /**
   * End a session (docs/behaviour/forgotten-sessions.md): what it was shown is dropped and the id reads as
   * forgotten (tainted, still owned by `owner`) for one more TTL, so that ending it never makes it clean.
   * False when there was none, or another owner holds it (nothing changed then).
   */
  delete(id: string, owner?: string): Promise<boolean>;
  /** Trust on first use: pin `digest` for (server, tool) if nothing is pinned, else compare. Atomic. */
  checkPin(server: string, tool: string, digest: string): Promise<PinCheck>;
  /** Operator: pin `digest` for (server, tool), replacing what was pinned. Rejects with SessionStoreFull for a new pair past the pin bound. */
  acceptPin(server: string, tool: string, digest: string): Promise<void>;
  /** The digest pinned for (server, tool), if any. */
  getPin(server: string, tool: string): Promise<string | undefined>;
  /** False while the backend cannot be reached (drives /readyz). */
  healthy(): boolean;
  close(): Promise<void>;
}

/** The store could not be read or written: the request must fail closed (503). */
export class SessionStoreUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SessionStoreUnavailable';
  }
}

/**
 * The store is at capacity (TRUSTGATE_MAX_SESSIONS sessions, or
 * TRUSTGATE_MAX_PINS pins for an operator's new pin): it refuses a new one
 * rather than evicting a live one. A kind of SessionStoreUnavailable, so
 * that every binding that fails closed on the store fails closed on this.
 */
export class SessionStoreFull extends SessionStoreUnavailable {
  constructor(message: string) {
    super(message);
    this.name = 'SessionStoreFull';
  }
}

/**
 * The session is another principal's (docs/operations/authentication.md):
 * the request is answered as if it did not exist (404
 * TG_ERR_SESSION_NOT_FOUND), and nothing was written.
 */
export class SessionNotOwned extends Error {
  constructor() {
    super('the session belongs to another principal');
    this.name = 'SessionNotOwned';
  }
}

/** Whether a stored state may be read and written by `owner`: its own, or one no owner holds (forgotten, or stored before owners). */
export function ownedBy(s: SessionState, owner: string | undefined): boolean {
  return s.owner === undefined || s.owner === (owner ?? '');
}

/** After a merge: the state belongs to the writer, or the merge left it alone (SessionNotOwned). */
export function mergedFor<S extends SessionState>(s: S, u: SessionUpdate): S {
  if (s.owner !== (u.owner ?? '')) throw new SessionNotOwned();
  return s;
}

/**
 * Rank of a data class, most restrictive highest (docs/behaviour/sessions.md):
 * public < internal < personal < confidential < restricted <
 * highly_confidential; any other class ranks with highly_confidential.
 */
export function dataClassRank(cls: string): number {
  const r = RANKS[cls.toLowerCase()];
  return r ?? RANKS.highly_confidential!;
}

const RANKS: Record<string, number> = {
  public: 0,
  internal: 1,
  personal: 2,
  confidential: 3,
  restricted: 4,
  highly_confidential: 5,
};

/** A session id: 1 to 256 characters of A-Z a-z 0-9 . _ : - */
export const SESSION_ID_PATTERN = '^[A-Za-z0-9._:-]{1,256}$';

/** The state of a session that does not exist yet. */
export function emptySession(): SessionState {
  return { forgotten: false, sensitive: false, untrusted: false, calls: 0, results: 0, tools: [] };
}

/**
 * The state of a session whose labels the store lost: what it was shown
 * cannot be known, so it is assumed tainted (untrusted and sensitive) until
 * the host deletes the session. Its counts start over.
 */
export function forgottenSession(): SessionState {
  return { forgotten: true, sensitive: true, untrusted: true, calls: 0, results: 0, tools: [] };
}

/**
 * Apply an update to a state (pure, returns a new state). Every backend
 * merges by these rules: the shared memory store runs this function inside
 * its SQL statement, Redis the same rules in a Lua script.
 */
export function mergeSession(s: SessionState, u: SessionUpdate, maxTools = 1000): SessionState {
  // Another owner's session is left as it is: the store answers SessionNotOwned (mergedFor).
  if (!ownedBy(s, u.owner)) return s;
  const next: SessionState = {
    // Stored states written before `forgotten` existed have none: they are not forgotten.
    forgotten: s.forgotten === true,
    sensitive: s.sensitive || u.sensitive === true,
    untrusted: s.untrusted || u.untrusted === true,
    calls: s.calls + (u.call ? 1 : 0),
    results: s.results + (u.result ? 1 : 0),
    tools: s.tools,
    owner: s.owner ?? u.owner ?? '',
  };
  let dc = s.dataClass;
  if (u.dataClass) {
    const reg = new Set([...(dc?.regulatory ?? []), ...u.dataClass.regulatory.map((r) => r.toLowerCase())]);
    const keep = dc !== undefined && dataClassRank(dc.class) >= u.dataClass.rank;
    dc = { class: keep ? dc!.class : u.dataClass.class, regulatory: [...reg].sort() };
  }
  if (dc) next.dataClass = dc;
  if (u.call && !s.tools.includes(u.call.tool) && s.tools.length < maxTools) next.tools = [...s.tools, u.call.tool];
  return next;
}
