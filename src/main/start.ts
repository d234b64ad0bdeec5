/**
 * What the stdio bindings (`trustgate interceptor`, `trustgate proxy`)
 * share as processes: configuration, a logger on standard error (standard
 * output is the MCP channel), the policy folder (`--policies DIR`, else
 * TRUSTGATE_POLICY_DIR, else the policies shipped with the package, found
 * next to the package and not in the working directory, since hosts start
 * these commands from anywhere), SIGHUP reloads, and the decision core.
 */
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { TrustgateError } from '../errors.js';
import { createDecisionCore, type DecisionCore } from '../decision/core.js';
import { decisionLineWriter, loggerOptions } from '../logger.js';
import { PolicyStore } from '../policy/reload.js';
import { openSessionStore, sessionStoreProblem } from './stores.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { pinKey, toolDigest } from '../session/pins.js';
import type { SessionStore } from '../session/store.js';

export interface BindingProcess {
  config: Config;
  log: pino.Logger;
  store: PolicyStore;
  sessions: SessionStore;
  core: DecisionCore;
  /** The process's metrics (not served over HTTP by a stdio binding). */
  metrics: Metrics;
  /** Pin the definitions of a tools/list answer (trust on first use), as /v1/evaluate-call would. */
  pinTools: (server: string, tools: Record<string, unknown>[]) => Promise<Map<string, string>>;
  /** Writes a decision log line; undefined when the log level drops them (the core then builds none). */
  decisionLog: ((entry: object) => void) | undefined;
}

/** The decision line writer of a logger, or undefined when its level drops decision lines (the core then builds none). */
export function decisionLines(log: pino.Logger): ((entry: object) => void) | undefined {
  if ((pino.levels.values[log.level] ?? Infinity) > pino.levels.values.info!) return undefined;
  const write = decisionLineWriter(log);
  return (entry) => write(entry as Parameters<typeof write>[0]);
}

/** Remove `--policies DIR` from args; the folder it names, if any. */
export function takePolicies(args: string[]): string | undefined {
  const i = args.indexOf('--policies');
  if (i < 0) return undefined;
  const dir = args[i + 1];
  if (dir === undefined || dir === '--') throw new ConfigError('--policies needs a folder');
  args.splice(i, 2);
  return dir;
}

/** Start-up of a stdio binding; exits 2 on a configuration error and 1 when the policies do not load (fail closed). */
export async function startBinding(policiesArg: string | undefined, shippedPolicies: string, what: string, overrides: Record<string, string> = {}): Promise<BindingProcess> {
  let config: Config;
  try {
    const env = { ...process.env, ...overrides };
    if (policiesArg !== undefined) env.TRUSTGATE_POLICY_DIR = policiesArg;
    else if (!env.TRUSTGATE_POLICY_DIR) env.TRUSTGATE_POLICY_DIR = shippedPolicies;
    config = loadConfig(env);
  } catch (err) {
    process.stderr.write(`trustgate ${what}: configuration error: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const log = pino(loggerOptions(config.logLevel, process.pid), pino.destination(2));
  const store = new PolicyStore(config.policyDir);
  try {
    const set = await store.load();
    log.info({ policyRevision: set.revision, policies: set.policies.map((p) => p.id), dir: config.policyDir }, 'policies loaded');
  } catch (err) {
    process.stderr.write(`trustgate ${what}: refusing to start: policy load failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
  process.on('SIGHUP', () => {
    void store.reload().then((r) => {
      if (r.ok) log.info({ policyRevision: r.set.revision, changed: r.changed }, 'policies reloaded');
      else log.error(`policy reload failed, the previous set stays in force: ${r.error.message}`);
    });
  });
  // The memory store lives in this process (sessions and pins start over when it restarts); with
  // TRUSTGATE_SESSION_STORE=redis://... pins are shared with the service and every other binding on that Redis.
  const storeProblem = await sessionStoreProblem(config);
  if (storeProblem !== undefined) {
    process.stderr.write(`trustgate ${what}: refusing to start: ${storeProblem}\n`);
    process.exit(1);
  }
  const metrics = createMetrics(false);
  const sessions = await openSessionStore(config, metrics, log);
  const core = createDecisionCore({ config, policies: () => store.current, sessions });
  const pinTools = async (server: string, tools: Record<string, unknown>[]): Promise<Map<string, string>> => {
    const statuses = new Map<string, string>();
    for (const tool of tools) {
      if (typeof tool.name !== 'string') continue;
      const key = pinKey({ name: server }, tool, tool.name);
      let status: string;
      try {
        status = (await sessions.checkPin(key.server, key.tool, toolDigest(tool))).status;
      } catch (err) {
        // A definition without a digest (TG_ERR_BODY_SCHEMA) cannot be pinned: it is not listed.
        if (!(err instanceof TrustgateError)) throw err;
        status = 'unavailable';
      }
      if (status === 'changed') log.warn({ server: key.server, tool: key.tool }, 'tool definition changed since it was pinned');
      statuses.set(tool.name, status);
    }
    return statuses;
  };
  return { config, log, store, sessions, core, pinTools, metrics, decisionLog: decisionLines(log) };
}
