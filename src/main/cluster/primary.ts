/**
 * The primary process of TRUSTGATE_WORKERS > 1: it loads the policy folder
 * (start-up fails closed here, before any worker starts), forks the worker
 * processes that serve HTTP (Node's cluster module: the primary accepts
 * connections and hands them round-robin to the workers), and holds what
 * must be one for the whole service, each duty in a module of its own:
 *
 * - the policy set (broadcast.ts): a reload (SIGHUP here, or a worker's POST
 *   /v1/policies/reload) reads the folder once, and on success sends the
 *   same bytes to every worker; the reload is answered once every worker
 *   serves the new set, so no request after the answer sees the old one;
 * - GET /metrics (metrics-sum.ts): the counters of every process summed (prom-client's
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
 * - the watchdog (watchdog.ts): each worker sends a heartbeat from its event loop every
 *   second, and one silent for TRUSTGATE_WORKER_WATCHDOG_MS (a loop stuck
 *   in one request's work) is killed and replaced like a worker that died.
 *   Without it the other workers would keep /healthz answering while every
 *   connection handed to the stuck one waits for good.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { createMetrics, type Metrics } from '../../metrics.js';
import type { PolicyStore } from '../../policy/reload.js';
import type { PrimaryStore } from '../stores.js';
import { PolicyBroadcast, sendTo, sourcesOf } from './broadcast.js';
import { MetricsSum } from './metrics-sum.js';
import { WORKER_ENV, isMessage, type ToPrimary } from './protocol.js';
import { Watchdog } from './watchdog.js';

/** A worker dying more often than this many times in RESTART_WINDOW_MS stops the service. */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;

export interface PrimaryOptions {
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
}

/** The session store's part held here, or undefined after a fatal log line and exit 1 when it cannot be created. */
async function openSessions(opts: PrimaryOptions, metrics: Metrics): Promise<{ store: PrimaryStore | undefined } | undefined> {
  try {
    return { store: await opts.sessions?.(metrics) };
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    opts.log.fatal({ errName: (err as Error)?.name }, `the session store could not be created: ${message}`);
    process.stderr.write(`trustgate: refusing to start: the session store could not be created: ${message}\n`);
    opts.exit(1);
    return undefined;
  }
}

/** Runs the primary: its duties' modules, and the workers' lifecycle (fork, replace, stop). */
export async function runPrimary(opts: PrimaryOptions): Promise<void> {
  const { workers: count, log, store } = opts;
  const metrics = createMetrics();
  const opened = await openSessions(opts, metrics);
  if (opened === undefined) return;
  const sessions = opened.store;
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
  const restarts: number[] = [];
  let closing = false;
  let exitCode = 0;
  let ready = 0;

  const policies = new PolicyBroadcast(live, store, metrics, log);
  const sums = new MetricsSum(live, metrics, log, () => closing);
  const watchdog = new Watchdog(opts.watchdogMs, log, () => closing);

  cluster.setupPrimary({ serialization: 'advanced' });

  const onMessage = (w: Worker, m: unknown): void => {
    if (!isMessage<ToPrimary>(m)) return;
    switch (m.kind) {
      case 'beat':
        return watchdog.beat(w);
      case 'hello':
        live.add(w);
        watchdog.watch(w);
        sendTo(w, { kind: 'policies', id: 0, files: sourcesOf(store.current!) });
        return;
      case 'installed':
        return policies.installed(w, m);
      case 'metricsData':
        return sums.collected(w, m.data);
      case 'log':
        if (typeof m.text === 'string') opts.writeLog(m.text);
        return;
      case 'reload':
        void policies.reload(m.source).then((outcome) =>
          sendTo(
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

  cluster.on('exit', (w, code, signal) => {
    watchdog.forget(w);
    live.delete(w);
    forked.delete(w);
    policies.settle(w);
    sums.retire(w);
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

  opts.onHangup(() => void policies.reload('SIGHUP'));
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
