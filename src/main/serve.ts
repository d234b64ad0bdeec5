/**
 * The process: configuration, logger, first policy load (fail closed),
 * through the one start-up (start.ts), then listen and signals. SIGHUP reloads policies; SIGTERM/SIGINT stop accepting,
 * finish in-flight requests and exit 0.
 *
 * With TRUSTGATE_WORKERS above 1 (by default, one per usable CPU up to 4)
 * this process becomes the primary of that many worker processes, which
 * serve HTTP (src/main/cluster/); with 1 it serves itself.
 */
import cluster from 'node:cluster';
import pino from 'pino';
import type { AppOptions } from '../app/app.js';
import { workerCount } from './cluster/cpus.js';
import { runPrimary } from './cluster/primary.js';
import { endWithParent, HEAP_DERIVED_ENV, heapFlag, heapLimitGiven, restartWithHeap } from './heap.js';
import { WORKER_ENV } from './cluster/protocol.js';
import { connectWorker } from './cluster/worker.js';
import type { Config } from '../config.js';
import { loggerOptions } from '../logger.js';
import { TurnBatchedDestination, WorkerLogDestination } from './log-destinations.js';
import { createMetrics } from '../metrics.js';
import { PolicyStore } from '../policy/reload.js';
import { openFlowStore, openPrimaryStore, openSessionStore, openWorkerStore } from './stores.js';
import { checkAuthentication, checkSessionStore, hangups, loadFirstPolicies, startConfig } from './start.js';
import type { SessionStore } from '../session/store.js';

/** Build the app, route the signals, listen. */
async function serve(
  config: Config,
  log: pino.Logger,
  exit: (code: number) => void,
  onHangup: (reload: () => void) => void,
  app: Omit<AppOptions, 'config' | 'logger'> & { store: PolicyStore; sessions: SessionStore },
): Promise<void> {
  let server: Awaited<ReturnType<typeof import('../app/app.js').buildApp>> | undefined;
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    // Stopped before it served: nothing is in flight.
    const closed = (server ? server.close() : Promise.resolve()).then(() => Promise.all([app.sessions.close(), app.flows?.close()]));
    closed.then(
      () => {
        log.info('stopped');
        exit(0);
      },
      (err: unknown) => {
        log.error({ errName: (err as Error)?.name }, 'error while closing');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // A worker whose primary is gone exits by itself (Node's cluster module does that on 'disconnect').

  // Loaded here, not at the top: a primary process never serves HTTP and stays small without Fastify and the routes.
  const { buildApp } = await import('../app/app.js');
  server = await buildApp({ config, logger: log, ...app });
  if (closing) return;
  const running = server;
  onHangup(() => void running.reloadPolicies('SIGHUP'));

  await server.listen({ port: config.port, host: config.host });
}

async function main(): Promise<void> {
  const onHangup = hangups();
  const config = startConfig(undefined);
  const isOurWorker = cluster.isWorker && process.env[WORKER_ENV] === '1';
  // A process forked by another cluster manager (pm2 and the like) serves on its own.
  const workers = cluster.isWorker ? 1 : workerCount(config.workers);
  // The default start runs under a heap limit derived from the budget (heap.ts): worker processes are
  // started with it; a process that serves by itself starts itself again with it, once.
  const ownHeap = heapLimitGiven(process.execArgv, process.env.NODE_OPTIONS) || process.env[HEAP_DERIVED_ENV] === '1';
  if (!cluster.isWorker && !ownHeap) {
    if (workers > 1) cluster.setupPrimary({ execArgv: [heapFlag(config.maxInflightBytes), ...process.execArgv] });
    else return restartWithHeap(config.maxInflightBytes);
  }
  if (!cluster.isWorker) endWithParent();
  // Lines of one event-loop turn go out together; flushed before every exit below. With
  // worker processes the primary alone writes stdout: workers send it their lines, so lines
  // of different processes never interleave, however long (a pipe takes only 4096 bytes whole).
  const toPrimary = isOurWorker && process.send !== undefined;
  const destination = toPrimary
    ? new WorkerLogDestination((text, sent) => process.send!({ kind: 'log', text }, undefined, undefined, () => sent()))
    : new TurnBatchedDestination(1);
  const log = pino(loggerOptions(config.logLevel, process.pid), destination);
  const exit = (code: number): never => {
    try {
      destination.flushSync();
    } catch {
      // nothing left to flush, or stdout is gone
    }
    process.exit(code);
  };

  if (isOurWorker) {
    // A worker's last lines are on their way to the primary: exit once they left (or after 2 s).
    const exitWorker = (code: number): void => {
      destination.flushSync();
      const until = Date.now() + 2000;
      const wait = (): void => {
        if (!(destination instanceof WorkerLogDestination) || destination.idle || Date.now() > until) process.exit(code);
        else setTimeout(wait, 10);
      };
      wait();
    };
    const { ready, ...parts } = connectWorker(config, log, () => exitWorker(1));
    await ready;
    return serve(config, log, exitWorker, onHangup, { ...parts, sessions: await openWorkerStore(config, parts.metrics, log), flows: await openFlowStore(config, parts.metrics, true) });
  }

  const store = new PolicyStore(config.policyDir, undefined, config.serversFile);
  // This process's log is its standard output: a refusal is logged too.
  if (!(await loadFirstPolicies(store, config.policyDir, { log, exit, logFatal: true }))) return;
  if (!(await checkSessionStore(config, { log, exit, logFatal: true }))) return;
  if (!checkAuthentication(config, config.host, 'the service', { log, exit })) return;
  if (workers > 1) {
    return runPrimary({ workers, watchdogMs: config.workerWatchdogMs, log, writeLog: (text) => destination.write(text), store, exit, onHangup, sessions: (metrics) => openPrimaryStore(config, metrics, log) });
  }
  const metrics = createMetrics();
  return serve(config, log, exit, onHangup, { store, metrics, sessions: await openSessionStore(config, metrics, log), flows: await openFlowStore(config, metrics, false) });
}

main().catch((err: unknown) => {
  process.stderr.write(`trustgate: fatal: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
