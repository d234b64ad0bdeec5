/**
 * Messages between the primary process and its worker processes
 * (TRUSTGATE_WORKERS > 1), over Node's IPC channel with the `advanced`
 * (structured clone) serialization, so policy file bytes travel as bytes.
 *
 * The primary holds what must be one for the whole service: the policy
 * folder as read (every worker compiles the same bytes, so all serve one
 * revision) and the answer to GET /metrics (every worker's counters
 * summed), and with TRUSTGATE_SESSION_STORE=memory the session store.
 * Workers serve HTTP; a worker asked to reload or for metrics asks the
 * primary, and so does every session store operation.
 */
import type { PolicyFile } from '../policy/load.js';
import type { SessionAnswer, SessionOp } from '../session/ipc.js';

/** Set in a worker's environment by its primary; a process forked by any other cluster manager serves on its own. */
export const WORKER_ENV = 'TRUSTGATE_CLUSTER_WORKER';

/** How often a worker tells its primary that its event loop turns. */
export const HEARTBEAT_MS = 1_000;

/** Primary → worker. */
export type ToWorker =
  /** Serve these files (the answer to `hello`: id 0). The worker answers `installed`. */
  | { kind: 'policies'; id: number; files: readonly PolicyFile[] }
  /** Send your metrics (`registry.getMetricsAsJSON()`). */
  | { kind: 'collect'; id: number }
  /** The answer to the worker's `reload`; on success every worker already serves the new set. */
  | { kind: 'reloaded'; id: number; ok: true; changed: boolean }
  | { kind: 'reloaded'; id: number; ok: false; message: string; detail: string; file?: string; rule?: string }
  /** The answer to the worker's `metrics`: the Prometheus text for the whole service, or why there is none. */
  | { kind: 'metricsText'; id: number; text: string }
  | { kind: 'metricsText'; id: number; error: string }
  /** The answer to the worker's `session` operation (TRUSTGATE_SESSION_STORE=memory: the primary holds the store). */
  | ({ kind: 'sessionAnswer'; id: number } & SessionAnswer);

/** Worker → primary. */
export type ToPrimary =
  /** Sent once the worker listens for messages (anything sent before that is lost); the primary answers with `policies`. */
  | { kind: 'hello' }
  /** Sent every HEARTBEAT_MS from the worker's event loop: a worker that stops sending them is stuck (see primary.ts). */
  | { kind: 'beat' }
  | { kind: 'installed'; id: number; ok: boolean; revision?: string }
  | { kind: 'collected'; id: number; data: object[] }
  | { kind: 'reload'; id: number; source: string }
  | { kind: 'metrics'; id: number }
  /** One operation on the session store the primary holds; answered with `sessionAnswer` of the same id. */
  | { kind: 'session'; id: number; op: SessionOp };

export function isMessage<T extends { kind: string }>(m: unknown): m is T {
  return typeof m === 'object' && m !== null && typeof (m as { kind?: unknown }).kind === 'string';
}
