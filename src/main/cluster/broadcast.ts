/**
 * The primary's policy duty (primary.ts): one policy set for the whole
 * service. A reload reads the folder once and sends the same bytes to every
 * live worker; it is answered once every worker serves the new set, and a
 * worker that did not take it is replaced (its replacement starts with the
 * set in force).
 */
import type { Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics.js';
import type { PolicyFile, PolicySet } from '../../policy/load.js';
import { reportReload, type PolicyStore, type ReloadResult } from '../../policy/reload.js';
import type { ToPrimary, ToWorker } from './protocol.js';

/** How long the primary waits for a worker's acknowledgement of a new policy set. */
const ANSWER_TIMEOUT_MS = 5_000;

interface Pending {
  waiting: Set<Worker>;
  answers: ToPrimary[];
  done: () => void;
}

/** Sends a message to a worker; a worker that is gone settles what waited on it through its exit. */
export function sendTo(w: Worker, m: ToWorker): void {
  try {
    w.send(m);
  } catch {
    // the worker is gone; its exit handler settles what waited on it
  }
}

/** The files of a set, as every worker compiles them. */
export function sourcesOf(set: PolicySet): readonly PolicyFile[] {
  if (!set.sources) throw new Error('policy set without its files');
  return set.sources;
}

export class PolicyBroadcast {
  readonly #pending = new Map<number, Pending>();
  /** Which worker sent an answer (answers are plain data). */
  readonly #workerOf = new WeakMap<object, Worker>();
  #nextId = 1;

  constructor(
    private readonly live: ReadonlySet<Worker>,
    private readonly store: PolicyStore,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  /** Reloads the folder and, when it loads, installs it in every live worker; logged and counted as every reload is. */
  async reload(source: string): Promise<ReloadResult> {
    const outcome = await this.store.reload();
    if (outcome.ok) await this.#installEverywhere(outcome.set);
    reportReload(this.log, this.metrics, source, outcome, this.store.current?.revision);
    return outcome;
  }

  /** A worker's `installed` answer. */
  installed(w: Worker, answer: ToPrimary & { kind: 'installed' }): void {
    this.#workerOf.set(answer, w);
    this.settle(w, answer);
  }

  /** A worker answered (or, without an answer, exited): it no longer holds up what waited on it. */
  settle(w: Worker, answer?: ToPrimary & { id: number }): void {
    const entries = answer ? [this.#pending.get(answer.id)] : [...this.#pending.values()];
    for (const entry of entries) {
      if (!entry || !entry.waiting.delete(w)) continue;
      if (answer) entry.answers.push(answer);
      if (entry.waiting.size === 0) entry.done();
    }
  }

  /** Every worker serves `set` when this resolves; a worker that did not take it is replaced. */
  async #installEverywhere(set: PolicySet): Promise<void> {
    const files = sourcesOf(set);
    const asked = new Set(this.live);
    const answers = await this.#ask((id) => ({ kind: 'policies', id, files }));
    const took = new Set(answers.filter((a) => a.kind === 'installed' && a.ok && a.revision === set.revision).map((a) => this.#workerOf.get(a)));
    for (const w of asked) {
      if (!this.live.has(w) || took.has(w)) continue;
      this.log.error({ workerPid: w.process.pid }, 'a worker did not take the reloaded policy set; replacing it');
      w.process.kill('SIGKILL');
    }
  }

  /** Sends a message with a fresh id to every live worker; resolves with the answers of those that answered in time. */
  #ask(make: (id: number) => ToWorker): Promise<ToPrimary[]> {
    return new Promise((resolve) => {
      const id = this.#nextId++;
      const entry: Pending = {
        waiting: new Set(this.live),
        answers: [],
        done: () => {
          clearTimeout(timer);
          this.#pending.delete(id);
          resolve(entry.answers);
        },
      };
      const timer = setTimeout(entry.done, ANSWER_TIMEOUT_MS);
      this.#pending.set(id, entry);
      if (entry.waiting.size === 0) return entry.done();
      for (const w of entry.waiting) sendTo(w, make(id));
    });
  }
}
