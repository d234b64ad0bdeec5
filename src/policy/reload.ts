/**
 * Holds the policy set in force and swaps it atomically on reload: a reload
 * that fails leaves the previous set serving (docs/operations/deploying.md).
 */
import type { Metrics } from '../metrics.js';
import { loadPolicyDir, PolicyLoadError, type PolicySet } from './load.js';

export type ReloadResult = { ok: true; set: PolicySet; changed: boolean } | { ok: false; error: PolicyLoadError };

export class PolicyStore {
  #current: PolicySet | undefined;
  #pending: Promise<ReloadResult> | undefined;
  #queued: Promise<ReloadResult> | undefined;

  constructor(
    readonly dir: string,
    private readonly loader: (dir: string, serversFile?: string) => Promise<PolicySet> = loadPolicyDir,
    /** The operator's servers file (TRUSTGATE_SERVERS), read and reloaded with the folder. */
    readonly serversFile?: string,
  ) {}

  /** The set in force; undefined until the first successful load. */
  get current(): PolicySet | undefined {
    return this.#current;
  }

  /** First load at start-up. Throws PolicyLoadError: the process must not serve without policies. */
  async load(): Promise<PolicySet> {
    const set = await this.loader(this.dir, this.serversFile);
    this.#current = set;
    return set;
  }

  /** Put a set compiled elsewhere in force (a worker process serves the set its primary loaded). */
  install(set: PolicySet): void {
    this.#current = set;
  }

  /**
   * Load the folder again and swap only if everything loaded. Reloads never
   * interleave: a call made while one is running is queued behind it (and
   * calls made meanwhile share that queued one), so every call sees the
   * folder as it was when it was made, or later.
   */
  reload(): Promise<ReloadResult> {
    if (this.#queued) return this.#queued;
    if (this.#pending) {
      this.#queued = this.#pending.then(() => {
        this.#queued = undefined;
        return this.#start();
      });
      return this.#queued;
    }
    return this.#start();
  }

  #start(): Promise<ReloadResult> {
    this.#pending = (async (): Promise<ReloadResult> => {
      try {
        const set = await this.loader(this.dir, this.serversFile);
        const changed = set.revision !== this.#current?.revision;
        this.#current = set;
        return { ok: true, set, changed };
      } catch (err) {
        const error = err instanceof PolicyLoadError ? err : new PolicyLoadError(String((err as Error)?.message ?? err));
        return { ok: false, error };
      } finally {
        this.#pending = undefined;
      }
    })();
    return this.#pending;
  }
}

/** The logger calls reportReload makes (pino's and Fastify's loggers both fit). */
interface ReloadLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Count and log a reload's outcome: one line and one count per reload,
 * whichever process carried it out. `inForce` is the revision serving after it.
 */
export function reportReload(log: ReloadLog, metrics: Metrics, source: string, outcome: ReloadResult, inForce: string | undefined): void {
  metrics.reloads.inc({ result: outcome.ok ? 'success' : 'failure' });
  if (outcome.ok) {
    log.info({ source, policyRevision: outcome.set.revision, changed: outcome.changed }, 'policies reloaded');
  } else {
    log.error(
      { source, file: outcome.error.file, rule: outcome.error.rule, policyRevision: inForce },
      `policy reload failed, previous set stays in force: ${outcome.error.message}`,
    );
  }
}
