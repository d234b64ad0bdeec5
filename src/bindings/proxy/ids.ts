/**
 * The relay's id correlation (docs/bindings/proxy.md): ids are Trustgate's
 * own on both sides, so that neither side can answer, cancel or report
 * progress on a request it was not sent.
 *
 * - Toward the server (UpstreamIds): every request of the host's goes out
 *   under a fresh id (`t<n>.<random>`: never used before on the connection,
 *   and not guessable), and an answer is taken only when its id equals an
 *   outstanding one exactly (a Map key: same JSON type and value), once.
 *   The last DONE_KEPT answered ids are remembered, so a repeated answer is
 *   told apart from an unknown id in the drop count; progress tokens and
 *   cancellations are followed only for requests in flight.
 * - Toward the host (HostIds): every request passed to the host (the
 *   server's, and Trustgate's own questions) goes out under a fresh string
 *   id with a random prefix; the server's cancellations follow its own id.
 */
import { randomUUID } from 'node:crypto';
import { randomHex } from '../../decision/random.js';
import { isRecord } from '../../json/record.js';

/** A JSON-RPC id as the relay takes it: a string or a finite number. */
export type Id = string | number;

export const isId = (v: unknown): v is Id => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** How many answered ids a connection remembers, to count a repeated answer as `repeated` rather than `unknown-id`. */
export const DONE_KEPT = 1024;

/** What the relay keeps of a request it sent to the server: at least the host's id and the params (for the progress token). */
export interface Outstanding {
  hostId: Id;
  params: Record<string, unknown>;
}

function progressToken(params: Record<string, unknown>): unknown {
  return isRecord(params._meta) ? params._meta.progressToken : undefined;
}

/** Requests of the host's sent to the server, under Trustgate's ids. */
export class UpstreamIds<S extends Outstanding> {
  readonly #sent = new Map<Id, S>();
  /** The host's id of each request sent -> Trustgate's (for the host's cancellations). */
  readonly #byHostId = new Map<Id, string>();
  /** Progress tokens of the host's requests in flight -> Trustgate's id. */
  readonly #tokens = new Map<Id, string>();
  #next = 1;
  /** The last ids answered (bounded). */
  readonly #done = new Set<string>();
  /** #done's ids in the order they were answered, a ring of DONE_KEPT: the oldest leaves as a new one comes (a Set's own oldest is found by skipping the slots of every id deleted before it). */
  readonly #doneOrder: Array<string | undefined> = new Array<string | undefined>(DONE_KEPT);
  #doneAt = 0;

  /** Records a request to send and answers the id it goes out under. */
  open(s: S): string {
    const id = `t${this.#next++}.${randomHex(6)}`;
    this.#sent.set(id, s);
    this.#byHostId.set(s.hostId, id);
    const token = progressToken(s.params);
    if (isId(token)) this.#tokens.set(token, id);
    return id;
  }

  /** The request an answer with this id is for, taken once; undefined when the id is not outstanding exactly. */
  take(id: unknown): S | undefined {
    if (!isId(id)) return undefined;
    const s = this.#sent.get(id);
    if (!s) return undefined;
    this.#sent.delete(id);
    const gone = this.#doneOrder[this.#doneAt];
    if (gone !== undefined) this.#done.delete(gone);
    this.#doneOrder[this.#doneAt] = id as string;
    this.#doneAt = (this.#doneAt + 1) % DONE_KEPT;
    this.#done.add(id as string);
    if (this.#byHostId.get(s.hostId) === id) this.#byHostId.delete(s.hostId);
    const token = progressToken(s.params);
    if (isId(token) && this.#tokens.get(token) === id) this.#tokens.delete(token);
    return s;
  }

  /** Whether `id` was answered already (among the last DONE_KEPT answers). */
  answered(id: unknown): boolean {
    return typeof id === 'string' && this.#done.has(id);
  }

  /** Trustgate's id of the host's request in flight with this id (the host cancels it by its own id). */
  ofHost(hostId: Id): string | undefined {
    return this.#byHostId.get(hostId);
  }

  /** Whether a request of the host's in flight carries this progress token, exactly. */
  hasToken(token: unknown): boolean {
    return isId(token) && this.#tokens.has(token);
  }
}

/** Requests passed to the host under Trustgate's ids: the server's own (with the server's id), and Trustgate's questions. */
export class HostIds<P extends { serverId: Id }> {
  readonly #prefix = `trustgate-${randomUUID()}-`;
  #next = 0;
  readonly #passed = new Map<string, P>();
  /** The server's id of each request passed to the host -> Trustgate's (for the server's cancellations). */
  readonly #byServerId = new Map<Id, string>();

  /** A fresh id toward the host, never used before on this connection. */
  fresh(): string {
    return `${this.#prefix}${this.#next++}`;
  }

  /** Records a server request passed to the host; the id it goes out under. */
  pass(p: P): string {
    const id = this.fresh();
    this.#passed.set(id, p);
    this.#byServerId.set(p.serverId, id);
    return id;
  }

  /** The server request the host answered with this id, taken once. */
  take(id: string): P | undefined {
    const p = this.#passed.get(id);
    if (!p) return undefined;
    this.#passed.delete(id);
    this.#byServerId.delete(p.serverId);
    return p;
  }

  /** The server cancels one of its requests passed on: Trustgate's id for it, forgotten; undefined when none is outstanding. */
  cancel(serverId: unknown): string | undefined {
    if (!isId(serverId)) return undefined;
    const ours = this.#byServerId.get(serverId);
    if (ours === undefined) return undefined;
    this.#byServerId.delete(serverId);
    this.#passed.delete(ours);
    return ours;
  }

  /** Server requests waiting on the host. */
  get size(): number {
    return this.#passed.size;
  }
}
