/**
 * The primary's watchdog (primary.ts): each worker sends a heartbeat from
 * its event loop every HEARTBEAT_MS, and one silent for
 * TRUSTGATE_WORKER_WATCHDOG_MS (a loop stuck in one request's work) is
 * killed, to be replaced like a worker that died. Without it the other
 * workers would keep /healthz answering while every connection handed to
 * the stuck one waits for good.
 */
import type { Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { HEARTBEAT_MS } from './protocol.js';

export class Watchdog {
  /** When each live worker last showed that its event loop turns. */
  readonly #lastBeat = new Map<Worker, number>();

  /** `silentMs` 0 watches nothing (the beats are still taken). */
  constructor(silentMs: number, log: Logger, closing: () => boolean) {
    if (silentMs <= 0) return;
    let lastCheck = Date.now();
    const timer = setInterval(() => {
      const now = Date.now();
      const late = now - lastCheck > 2 * HEARTBEAT_MS;
      lastCheck = now;
      if (closing()) return;
      if (late) {
        // This process was held up itself: the beats it has not read yet are no sign of a stuck worker.
        for (const w of this.#lastBeat.keys()) this.#lastBeat.set(w, now);
        return;
      }
      for (const [w, last] of this.#lastBeat) {
        if (now - last <= silentMs) continue;
        this.#lastBeat.delete(w);
        log.error({ workerPid: w.process.pid, silentMs: now - last }, 'a worker process stopped answering; replacing it');
        w.process.kill('SIGKILL');
      }
    }, HEARTBEAT_MS);
    timer.unref();
  }

  /** A worker said hello: it is watched from now. */
  watch(w: Worker): void {
    this.#lastBeat.set(w, Date.now());
  }

  /** A heartbeat of a watched worker. */
  beat(w: Worker): void {
    if (this.#lastBeat.has(w)) this.#lastBeat.set(w, Date.now());
  }

  /** A worker exited. */
  forget(w: Worker): void {
    this.#lastBeat.delete(w);
  }
}
