/**
 * The process: configuration, logger, first policy load (fail closed),
 * listen, signals. SIGHUP reloads policies; SIGTERM/SIGINT stop accepting,
 * finish in-flight requests and exit 0.
 */
import pino from 'pino';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { loggerOptions, TurnBatchedDestination } from './logger.js';
import { PolicyStore } from './policy/store.js';

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`trustgate: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Lines of one event-loop turn go out in one write; flushed before every exit below.
  const destination = new TurnBatchedDestination(1);
  const log = pino(loggerOptions(config.logLevel), destination);
  const exit = (code: number): never => {
    try {
      destination.flushSync();
    } catch {
      // nothing left to flush, or stdout is gone
    }
    process.exit(code);
  };
  const store = new PolicyStore(config.policyDir);
  try {
    const set = await store.load();
    log.info({ policyRevision: set.revision, policies: set.policies.map((p) => p.id), dir: config.policyDir }, 'policies loaded');
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.fatal({ dir: config.policyDir }, `policy load failed: ${message}`);
    process.stderr.write(`trustgate: refusing to start: policy load failed: ${message}\n`);
    exit(1);
  }
  if (!isLoopback(config.host) && config.token === undefined) {
    log.warn({ host: config.host }, 'listening on a non-loopback address without TRUSTGATE_TOKEN: anyone who can reach it can call /v1/*');
  }

  const app = await buildApp({ config, store, logger: log });
  process.on('SIGHUP', () => {
    void app.reloadPolicies('SIGHUP');
  });
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    app.close().then(
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

  await app.listen({ port: config.port, host: config.host });
}

main().catch((err: unknown) => {
  process.stderr.write(`trustgate: fatal: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
