/**
 * The primary process of TRUSTGATE_WORKERS > 1: it loads the policy folder
 * (start-up fails closed here, before any worker starts), forks the worker
 * processes that serve HTTP (Node's cluster module: the primary accepts
 * connections and hands them round-robin to the workers), and holds what
 * must be one for the whole service:
 *
 * - the policy set: a reload (SIGHUP here, or a worker's POST
 *   /v1/policies/reload) reads the folder once, and on success sends the
 *   same bytes to every worker; the reload is answered once every worker
 *   serves the new set, so no request after the answer sees the old one;
 * - GET /metrics: the counters of every process summed (prom-client's
 *   aggregation), so a scrape sees the whole service whichever worker it
 *   reaches. Workers send their metrics every METRICS_MS and the primary
 *   sends every worker the summed text, which a scrape answers as is: a
 *   flood of scrapes makes no work here or on the other workers;
 * - stdout: workers send their log lines here and this process alone
 *   writes them, so lines of different workers never interleave (a pipe
 *   takes a write whole only up to PIPE_BUF, 4096 bytes);
 * - with TRUSTGATE_SESSION_STORE=memory, the session store's database:
 *   created here in a fresh private folder before any worker starts (its
 *   path in every worker's environment), swept here every second, and
 *   removed when the service stops; the workers read and write it
 *   themselves (src/session/sqlite.ts);
 * - the process lifecycle: SIGTERM/SIGINT go to every worker, each
 *   finishes its in-flight requests, and the primary exits 0 once all
 *   have; a worker that dies is replaced with the set in force; a worker
 *   that cannot start (or keeps dying) stops the service with exit 1;
 * - the watchdog: each worker sends a heartbeat from its event loop every
 *   second, and one silent for TRUSTGATE_WORKER_WATCHDOG_MS (a loop stuck
 *   in one request's work) is killed and replaced like a worker that died.
 *   Without it the other workers would keep /healthz answering while every
 *   connection handed to the stuck one waits for good.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { Logger } from 'pino';
import { createMetrics, METRICS_MS, type Metrics } from '../../metrics.js';
import type { PolicyFile, PolicySet } from '../../policy/load.js';
import { reportReload, type PolicyStore } from '../../policy/reload.js';
import type { PrimaryStore } from '../stores.js';
import { HEARTBEAT_MS, WORKER_ENV, isMessage, type ToPrimary, type ToWorker } from './protocol.js';

/** How long the primary waits for a worker's acknowledgement of a new policy set. */
const ANSWER_TIMEOUT_MS = 5_000;
/** A worker dying more often than this many times in RESTART_WINDOW_MS stops the service. */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;

interface Pending {
  waiting: Set<Worker>;
  answers: ToPrimary[];
  done: () => void;
}

export async function runPrimary(opts: {
  workers: number;
  /** A worker silent for this long is killed and replaced; 0 turns the watchdog off. */
  watchdogMs: number;
  log: Logger;
  /** Writes whole log lines of the workers to stdout (this process's own log destination). */
  writeLog: (text: string) => void;
  store: PolicyStore;
  exit: (code: number) => never;
  /** Where SIGHUP is routed (see src/main/serve.ts). */
  onHangup: (reload: () => void) => void;
  /** The session store's part held here (the memory store's database), if any; built with this process's metrics. */
  sessions?: (metrics: Metrics) => Promise<PrimaryStore | undefined>;
}): Promise<void> {
  const { workers: count, log, store } = opts;
  const metrics = createMetrics();
  let sessions: PrimaryStore | undefined;
  try {
    sessions = await opts.sessions?.(metrics);
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    log.fatal({ errName: (err as Error)?.name }, `the session store could not be created: ${message}`);
    process.stderr.write(`trustgate: refusing to start: the session store could not be created: ${message}\n`);
    return void opts.exit(1);
  }
  const exit = (code: number): never => {
    try {
      sessions?.close();
    } catch (err) {
      log.error({ errName: (err as Error)?.name }, `could not remove the session store: ${(err as Error)?.message}`);
    }
    return opts.exit(code);
  };
  /** Workers that said hello: they hear what is sent to them. */
  const live = new Set<Worker>();
  /** Every worker process not yet exited. */
  const forked = new Set<Worker>();
  const listening = new WeakSet<Worker>();
  const pending = new Map<number, Pending>();
  const restarts: number[] = [];
  /** When each live worker last showed that its event loop turns. */
  const lastBeat = new Map<Worker, number>();
  let nextId = 1;
  let closing = false;
  let exitCode = 0;
  let ready = 0;

  cluster.setupPrimary({ serialization: 'advanced' });

  const send = (w: Worker, m: ToWorker): void => {
    try {
      w.send(m);
    } catch {
      // the worker is gone; its exit handler settles what waited on it
    }
  };

  const sourcesOf = (set: PolicySet): readonly PolicyFile[] => {
    if (!set.sources) throw new Error('policy set without its files');
    return set.sources;
  };

  /** Send a message with a fresh id to every live worker; resolves with the answers of those that answered in time. */
  const ask = (make: (id: number) => ToWorker): Promise<ToPrimary[]> =>
    new Promise((resolve) => {
      const id = nextId++;
      const entry: Pending = {
        waiting: new Set(live),
        answers: [],
        done: () => {
          clearTimeout(timer);
          pending.delete(id);
          resolve(entry.answers);
        },
      };
      const timer = setTimeout(entry.done, ANSWER_TIMEOUT_MS);
      pending.set(id, entry);
      if (entry.waiting.size === 0) return entry.done();
      for (const w of entry.waiting) send(w, make(id));
    });

  const settle = (w: Worker, answer?: ToPrimary & { id: number }): void => {
    const entries = answer ? [pending.get(answer.id)] : [...pending.values()];
    for (const entry of entries) {
      if (!entry || !entry.waiting.delete(w)) continue;
      if (answer) entry.answers.push(answer);
      if (entry.waiting.size === 0) entry.done();
    }
  };

  // Which worker sent an answer (answers are plain data).
  const workerOf = new WeakMap<object, Worker>();

  /** Every worker serves `set` when this resolves; a worker that did not take it is replaced (its replacement starts with `set`). */
  const installEverywhere = async (set: PolicySet): Promise<void> => {
    const files = sourcesOf(set);
    const asked = new Set(live);
    const answers = await ask((id) => ({ kind: 'policies', id, files }));
    const took = new Set(answers.filter((a) => a.kind === 'installed' && a.ok && a.revision === set.revision).map((a) => workerOf.get(a)));
    for (const w of asked) {
      if (!live.has(w) || took.has(w)) continue;
      log.error({ workerPid: w.process.pid }, 'a worker did not take the reloaded policy set; replacing it');
      w.process.kill('SIGKILL');
    }
  };

  const reloadAll = async (source: string) => {
    const outcome = await store.reload();
    if (outcome.ok) await installEverywhere(outcome.set);
    reportReload(log, metrics, source, outcome, store.current?.revision);
    return outcome;
  };

  /**
   * Counters and histograms of workers that have exited, as last collected:
   * a worker's replacement starts from zero, and without these the sums a
   * scrape sees would go down (which Prometheus reads as a reset). What a
   * worker counted after its last collection is lost with it.
   */
  let retired: object[] = [];
  const lastCollected = new Map<Worker, object[]>();
  const retire = (w: Worker): void => {
    const last = lastCollected.get(w);
    lastCollected.delete(w);
    if (!last) return;
    // Metrics of one name are summed wherever they stand in the lists aggregated, so appending is enough.
    retired = [...retired, ...last.filter((m) => ['counter', 'histogram'].includes(String((m as { type?: unknown }).type)))];
  };

  /** Whether a worker sent metrics since the text was last made. */
  let fresh = false;
  let summing = false;
  const metricsText = async (): Promise<string> => {
    // Keep the retired list to one entry a metric however many workers have exited.
    if (retired.length > 64) retired = await AggregatorRegistry.aggregate([retired]).getMetricsAsJSON();
    const all = [await metrics.registry.getMetricsAsJSON(), retired, ...lastCollected.values()];
    const text = await AggregatorRegistry.aggregate(all).metrics();
    // Summing start times means nothing, so prom-client leaves them out; the service started when this process did.
    return text + (await metrics.registry.getSingleMetricAsString('trustgate_process_start_time_seconds')) + '\n';
  };
  /** Every METRICS_MS: the summed text to every worker, when some worker sent new figures. */
  const publish = setInterval(() => {
    if (!fresh || summing || closing) return;
    fresh = false;
    summing = true;
    metricsText().then(
      (text) => {
        summing = false;
        for (const w of live) send(w, { kind: 'metricsText', text });
      },
      (err: unknown) => {
        summing = false;
        log.error({ errName: (err as Error)?.name }, 'could not gather metrics');
      },
    );
  }, METRICS_MS);
  publish.unref();

  const onMessage = (w: Worker, m: unknown): void => {
    if (!isMessage<ToPrimary>(m)) return;
    switch (m.kind) {
      case 'beat':
        if (lastBeat.has(w)) lastBeat.set(w, Date.now());
        return;
      case 'hello':
        live.add(w);
        lastBeat.set(w, Date.now());
        send(w, { kind: 'policies', id: 0, files: sourcesOf(store.current!) });
        return;
      case 'installed':
        workerOf.set(m, w);
        settle(w, m);
        return;
      case 'metricsData':
        if (!live.has(w)) return;
        lastCollected.set(w, m.data);
        fresh = true;
        return;
      case 'log':
        if (typeof m.text === 'string') opts.writeLog(m.text);
        return;
      case 'reload':
        void reloadAll(m.source).then((outcome) =>
          send(
            w,
            outcome.ok
              ? { kind: 'reloaded', id: m.id, ok: true, changed: outcome.changed }
              : {
                  kind: 'reloaded',
                  id: m.id,
                  ok: false,
                  message: outcome.error.message,
                  detail: outcome.error.detail,
                  ...(outcome.error.file !== undefined ? { file: outcome.error.file } : {}),
                  ...(outcome.error.rule !== undefined ? { rule: outcome.error.rule } : {}),
                },
          ),
        );
        return;
    }
  };

  const fork = (): void => {
    const w = cluster.fork({ [WORKER_ENV]: '1', ...sessions?.env });
    forked.add(w);
    w.on('message', (m: unknown) => onMessage(w, m));
    w.on('error', () => {
      // IPC errors surface as an exit
    });
  };

  let stopSignal: NodeJS.Signals | undefined;
  const stopAll = (signal: NodeJS.Signals): void => {
    stopSignal = signal;
    for (const w of forked) w.process.kill(signal);
  };

  cluster.on('listening', (w) => {
    if (listening.has(w)) return;
    listening.add(w);
    ready += 1;
    if (ready === count) log.info({ workers: count }, `serving with ${count} worker processes`);
  });

  /** Stop the service with exit 1: every worker gets `signal`, the primary exits once all have. */
  const fail = (signal: NodeJS.Signals): void => {
    closing = true;
    exitCode = 1;
    stopAll(signal);
    if (forked.size === 0) exit(1);
  };

  if (opts.watchdogMs > 0) {
    let lastCheck = Date.now();
    const watchdog = setInterval(() => {
      const now = Date.now();
      const late = now - lastCheck > 2 * HEARTBEAT_MS;
      lastCheck = now;
      if (closing) return;
      if (late) {
        // This process was held up itself: the beats it has not read yet are no sign of a stuck worker.
        for (const w of lastBeat.keys()) lastBeat.set(w, now);
        return;
      }
      for (const [w, last] of lastBeat) {
        if (now - last <= opts.watchdogMs) continue;
        lastBeat.delete(w);
        log.error({ workerPid: w.process.pid, silentMs: now - last }, 'a worker process stopped answering; replacing it');
        w.process.kill('SIGKILL');
      }
    }, HEARTBEAT_MS);
    watchdog.unref();
  }

  cluster.on('exit', (w, code, signal) => {
    lastBeat.delete(w);
    live.delete(w);
    forked.delete(w);
    settle(w);
    retire(w);
    if (closing) {
      // A worker still starting has no handler yet and ends by the signal itself: nothing was in flight.
      if (code !== 0 && signal !== stopSignal) exitCode = 1;
      if (forked.size === 0) {
        log.info('stopped');
        exit(exitCode);
      }
      return;
    }
    // At start-up a worker that cannot serve stops the service (the port is taken, say); once
    // the service has served, a replacement that dies early counts as one more death below.
    if (!listening.has(w) && ready < count) {
      log.fatal({ workerPid: w.process.pid, code, signal }, 'a worker process could not start');
      process.stderr.write(`trustgate: refusing to start: a worker process exited before serving (code ${code ?? signal})\n`);
      fail('SIGKILL');
      return;
    }
    const now = Date.now();
    restarts.push(now);
    while (restarts.length > 0 && restarts[0]! < now - RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length > MAX_RESTARTS) {
      log.fatal({ workerPid: w.process.pid, code, signal, restarts: restarts.length }, 'worker processes keep exiting; stopping');
      fail('SIGTERM');
      return;
    }
    log.error({ workerPid: w.process.pid, code, signal }, 'a worker process exited; starting a replacement');
    fork();
  });

  opts.onHangup(() => void reloadAll('SIGHUP'));
  const shutdown = (signal: NodeJS.Signals): void => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    stopAll(signal);
    if (forked.size === 0) exit(0);
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  for (let i = 0; i < count; i++) fork();
}
