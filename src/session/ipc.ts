/**
 * The memory store shared by every worker process (TRUSTGATE_SESSION_STORE
 * =memory with TRUSTGATE_WORKERS > 1): the primary process holds one
 * MemorySessionStore for the whole service, and each worker reaches it over
 * the cluster IPC channel. The primary runs one operation at a time on its
 * event loop, so every merge and every pin check is atomic across workers.
 *
 * Fail closed: an operation the primary has not answered within
 * `timeoutMs` (a primary that is busy, stuck or gone) rejects with
 * SessionStoreUnavailable, and healthy() stays false until an answer comes
 * again. A late answer is dropped.
 */
import type { PinCheck, SessionState, SessionStore, SessionUpdate } from './store.js';
import { SessionStoreUnavailable } from './store.js';

/** One store operation, as a worker sends it. */
export type SessionOp =
  | { op: 'get'; session: string }
  | { op: 'update'; session: string; update: SessionUpdate }
  | { op: 'delete'; session: string }
  | { op: 'checkPin'; server: string; tool: string; digest: string }
  | { op: 'acceptPin'; server: string; tool: string; digest: string }
  | { op: 'getPin'; server: string; tool: string }
  /** Answered with true: sent while failing, so that healthy() turns true again without traffic. */
  | { op: 'ping' };

/** What the primary answers: the operation's value, or why it failed. */
export type SessionAnswer = { ok: true; value: unknown } | { ok: false; error: string };

/** Run a worker's operation on the store the primary holds. */
export async function runSessionOp(store: SessionStore, m: SessionOp): Promise<unknown> {
  switch (m.op) {
    case 'get':
      return store.get(m.session);
    case 'update':
      return store.update(m.session, m.update);
    case 'delete':
      return store.delete(m.session);
    case 'checkPin':
      return store.checkPin(m.server, m.tool, m.digest);
    case 'acceptPin':
      return store.acceptPin(m.server, m.tool, m.digest);
    case 'getPin':
      return store.getPin(m.server, m.tool);
    case 'ping':
      return true;
  }
}

export interface IpcStoreOptions {
  /** Send one request to the primary; throws when the channel is closed. */
  send: (id: number, op: SessionOp) => void;
  /** Whether the channel to the primary is open. */
  connected: () => boolean;
  timeoutMs: number;
  /** Called once per failed operation (the store-errors metric). */
  onError?: (operation: string) => void;
  /** Told when operations start failing and when they succeed again. */
  onHealth?: (healthy: boolean, reason: string) => void;
}

interface Waiting {
  resolve: (v: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  op: string;
}

export class IpcSessionStore implements SessionStore {
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private failing = false;
  private closed = false;
  private readonly probe: NodeJS.Timeout;

  constructor(private readonly opts: IpcStoreOptions) {
    this.probe = setInterval(() => {
      if (this.failing && !this.closed) this.call({ op: 'ping' }, 'ping').catch(() => {});
    }, Math.max(100, opts.timeoutMs));
    this.probe.unref();
  }

  /** An answer from the primary (worker.ts routes `sessionAnswer` messages here). */
  answer(id: number, a: SessionAnswer): void {
    const w = this.waiting.get(id);
    if (!w) return; // timed out already
    this.waiting.delete(id);
    clearTimeout(w.timer);
    if (this.failing) {
      this.failing = false;
      this.opts.onHealth?.(true, 'the primary process answers again');
    }
    if (a.ok) w.resolve(a.value);
    else this.failed(w, a.error);
  }

  /** The channel closed: everything waiting fails now, rather than at its timeout. */
  disconnected(): void {
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id);
      clearTimeout(w.timer);
      this.failed(w, 'the primary process is gone');
    }
  }

  private failed(w: Waiting, why: string): void {
    if (!this.failing && !this.closed) this.opts.onHealth?.(false, why);
    this.failing = true;
    if (w.op !== 'ping') this.opts.onError?.(w.op);
    w.reject(new SessionStoreUnavailable(`the session store failed (${w.op}): ${why}`));
  }

  private call<T>(op: SessionOp, name: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = this.nextId++;
      const w: Waiting = {
        resolve: resolve as (v: unknown) => void,
        reject,
        op: name,
        timer: setTimeout(() => {
          if (!this.waiting.delete(id)) return;
          this.failed(w, `the primary process did not answer within ${this.opts.timeoutMs} ms`);
        }, this.opts.timeoutMs),
      };
      this.waiting.set(id, w);
      if (this.closed) return this.failed(this.take(id)!, 'the session store is closed');
      // Sending on a closed channel would raise an 'error' event later instead of failing now.
      if (!this.opts.connected()) return this.failed(this.take(id)!, 'the channel to the primary process is closed');
      try {
        this.opts.send(id, op);
      } catch {
        const taken = this.take(id);
        if (taken) this.failed(taken, 'the channel to the primary process is closed');
      }
    });
  }

  private take(id: number): Waiting | undefined {
    const w = this.waiting.get(id);
    if (!w) return undefined;
    this.waiting.delete(id);
    clearTimeout(w.timer);
    return w;
  }

  get(id: string): Promise<SessionState | undefined> {
    return this.call({ op: 'get', session: id }, 'get');
  }

  update(id: string, update: SessionUpdate): Promise<SessionState> {
    return this.call({ op: 'update', session: id, update }, 'update');
  }

  delete(id: string): Promise<boolean> {
    return this.call({ op: 'delete', session: id }, 'delete');
  }

  checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    return this.call({ op: 'checkPin', server, tool, digest }, 'pin');
  }

  acceptPin(server: string, tool: string, digest: string): Promise<void> {
    return this.call({ op: 'acceptPin', server, tool, digest }, 'pin');
  }

  getPin(server: string, tool: string): Promise<string | undefined> {
    return this.call({ op: 'getPin', server, tool }, 'pin');
  }

  healthy(): boolean {
    return !this.closed && !this.failing && this.opts.connected();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.probe);
    this.disconnected();
  }
}
