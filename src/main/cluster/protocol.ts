/**
 * Messages between the primary process and its worker processes
 * (TRUSTGATE_WORKERS > 1), over Node's IPC channel with the `advanced`
 * (structured clone) serialization, so policy file bytes travel as bytes.
 *
 * The primary holds what must be one for the whole service: the policy
 * folder as read (every worker compiles the same bytes, so all serve one
 * revision), the answer to GET /metrics (every worker's counters summed,
 * sent to the workers every METRICS_MS) and stdout (workers send it their
 * log lines, so lines never interleave). Workers serve HTTP; a worker
 * asked to reload asks the primary. The session store takes no message:
 * with TRUSTGATE_SESSION_STORE=memory the workers share a database file
 * whose path the primary puts in their environment (src/main/stores.ts).
 */
import type { PolicyFile } from '../../policy/load.js';

/** Set in a worker's environment by its primary; a process forked by any other cluster manager serves on its own. */
export const WORKER_ENV = 'TRUSTGATE_CLUSTER_WORKER';

/** How often a worker tells its primary that its event loop turns. */
export const HEARTBEAT_MS = 1_000;


/** Primary → worker. */
export type ToWorker =
  /** Serve these files (the answer to `hello`: id 0). The worker answers `installed`. */
  | { kind: 'policies'; id: number; files: readonly PolicyFile[] }
  /** The answer to the worker's `reload`; on success every worker already serves the new set. */
  | { kind: 'reloaded'; id: number; ok: true; changed: boolean }
  | { kind: 'reloaded'; id: number; ok: false; message: string; detail: string; file?: string; rule?: string }
  /** The Prometheus text for the whole service, sent to every worker every METRICS_MS: GET /metrics answers it as is. */
  | { kind: 'metricsText'; text: string };

/** Worker → primary. */
export type ToPrimary =
  /** Sent once the worker listens for messages (anything sent before that is lost); the primary answers with `policies`. */
  | { kind: 'hello' }
  /** Sent every HEARTBEAT_MS from the worker's event loop: a worker that stops sending them is stuck (see primary.ts). */
  | { kind: 'beat' }
  | { kind: 'installed'; id: number; ok: boolean; revision?: string }
  /** This worker's metrics (`registry.getMetricsAsJSON()`), sent every METRICS_MS. */
  | { kind: 'metricsData'; data: object[] }
  | { kind: 'reload'; id: number; source: string }
  /** Log lines (whole, each ending in a newline) for the primary to write to stdout, its only writer. */
  | { kind: 'log'; text: string };

export function isMessage<T extends { kind: string }>(m: unknown): m is T {
  return typeof m === 'object' && m !== null && typeof (m as { kind?: unknown }).kind === 'string';
}
