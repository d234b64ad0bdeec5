/**
 * The one start-up every process goes through (serve.ts, interceptor.ts,
 * proxy.ts, docker-exec-child.ts): configuration (exit 2 on a bad value),
 * the logger, the first policy load (fail closed: exit 1), the session
 * store check, and SIGHUP reloads through the service's reload path
 * (reportReload: the same log lines and trustgate_policy_reloads_total).
 *
 * The stdio bindings (`trustgate interceptor`, `trustgate proxy`) also get
 * a logger on standard error (standard output is the MCP channel), the
 * policy folder (`--policies DIR`, else TRUSTGATE_POLICY_DIR, else the
 * policies shipped with the package, found next to the package and not in
 * the working directory, since hosts start these commands from anywhere),
 * and the decision core (startBinding).
 */
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { AuthConfigError, createAuthentication, type Authentication } from '../http/identity.js';
import { loopbackAddress } from '../http/browser.js';
import { TrustgateError } from '../errors.js';
import type { DecisionCore } from '../decision/core.js';
import { decisionLines, loggerOptions } from '../logger.js';
import { TurnBatchedDestination } from './log-destinations.js';
import { PolicyStore, reportReload } from '../policy/reload.js';
import { openFlowStore, openSessionStore, sessionStoreProblem } from './stores.js';
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

/** Remove `--policies DIR` from args; the folder it names, if any. */
export function takePolicies(args: string[]): string | undefined {
  const i = args.indexOf('--policies');
  if (i < 0) return undefined;
  const dir = args[i + 1];
  if (dir === undefined || dir === '--') throw new ConfigError('--policies needs a folder');
  args.splice(i, 2);
  return dir;
}

/** How a process names itself on standard error: `trustgate`, or `trustgate <command>`. */
function prefix(what: string | undefined): string {
  return what === undefined ? 'trustgate' : `trustgate ${what}`;
}

/** The configuration from this process's environment, with `overrides` on top. Throws ConfigError naming the setting. */
export function readConfig(overrides: Record<string, string | undefined> = {}): Config {
  return loadConfig({ ...process.env, ...overrides });
}

/**
 * readConfig(), or, on a bad value, the end of the process: status 2 and
 * one line on standard error naming the setting.
 */
export function startConfig(what: string | undefined, overrides: Record<string, string | undefined> = {}): Config {
  try {
    return readConfig(overrides);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${prefix(what)}: configuration error: ${err.message}\n`);
    process.exit(2);
  }
}

/** The logger of a process whose standard output is not its log (the stdio bindings, the intercept child): standard error. */
export function stderrLogger(config: Pick<Config, 'logLevel'>): pino.Logger {
  // Lines are written once per turn of the event loop, as the service's are: one
  // write per decision line cost a proxied call more than its judgement.
  return pino(loggerOptions(config.logLevel, process.pid), new TurnBatchedDestination(2));
}

/** How start-up refuses: `exit` ends the process (after flushing its log); `logFatal` also logs the reason (the service, whose log is not standard error). */
export interface Refusal {
  what?: string;
  log: pino.Logger;
  exit: (code: number) => void;
  logFatal?: boolean;
}

/** The first policy load; when it fails the process refuses to start (exit 1, fail closed). Resolves whether it loaded. */
export async function loadFirstPolicies(store: PolicyStore, dir: string, r: Refusal): Promise<boolean> {
  try {
    const set = await store.load();
    r.log.info({ policyRevision: set.revision, policies: set.policies.map((p) => p.id), dir }, 'policies loaded');
    return true;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (r.logFatal) r.log.fatal({ dir }, `policy load failed: ${message}`);
    process.stderr.write(`${prefix(r.what)}: refusing to start: policy load failed: ${message}\n`);
    r.exit(1);
    return false;
  }
}

/** A session store that cannot work (sessionStoreProblem) makes the process refuse to start (exit 1). Resolves whether it can. */
export async function checkSessionStore(config: Config, r: Refusal): Promise<boolean> {
  const problem = await sessionStoreProblem(config);
  if (problem === undefined) return true;
  if (r.logFatal) r.log.fatal(`session store: ${problem}`);
  process.stderr.write(`${prefix(r.what)}: refusing to start: ${problem}\n`);
  r.exit(1);
  return false;
}

/**
 * SIGHUP, taken from the start of a process: one that arrives while the
 * process cannot reload yet (policies loading, the app building) is kept
 * and acted on once it can, instead of ending the process (SIGHUP's
 * default action). Call it first; hand the reload to what it returns.
 */
export function hangups(): (reload: () => void) => void {
  let early = false;
  let handler: (() => void) | undefined;
  process.on('SIGHUP', () => {
    if (handler) handler();
    else early = true;
  });
  return (reload) => {
    handler = reload;
    if (early) {
      early = false;
      reload();
    }
  };
}

/** Start-up of a stdio binding; exits 2 on a configuration error and 1 when the policies do not load (fail closed). */
export async function startBinding(policiesArg: string | undefined, shippedPolicies: string, what: string, overrides: Record<string, string> = {}): Promise<BindingProcess> {
  const onHangup = hangups();
  const env: Record<string, string | undefined> = { ...overrides };
  if (policiesArg !== undefined) env.TRUSTGATE_POLICY_DIR = policiesArg;
  else if (!(overrides.TRUSTGATE_POLICY_DIR ?? process.env.TRUSTGATE_POLICY_DIR)) env.TRUSTGATE_POLICY_DIR = shippedPolicies;
  const config = startConfig(what, env);
  const log = stderrLogger(config);
  const store = new PolicyStore(config.policyDir, undefined, config.serversFile);
  const exit = (code: number): never => process.exit(code);
  await loadFirstPolicies(store, config.policyDir, { what, log, exit });
  const metrics = createMetrics(false);
  // The service's reload path: the same log lines and reload counts.
  onHangup(() => void store.reload().then((r) => reportReload(log, metrics, 'SIGHUP', r, store.current?.revision)));
  // The memory store lives in this process (sessions and pins start over when it restarts); with
  // TRUSTGATE_SESSION_STORE=redis://... pins are shared with the service and every other binding on that Redis.
  await checkSessionStore(config, { what, log, exit });
  const sessions = await openSessionStore(config, metrics, log);
  const flows = await openFlowStore(config, metrics, false);
  // Loaded here, not at the top: the service's primary process starts through this module and never decides.
  const { createDecisionCore } = await import('../decision/core.js');
  const core = createDecisionCore({ config, policies: () => store.current, sessions, flows });
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

/**
 * Whether a front may start with the authentication configured
 * (docs/operations/authentication.md): the settings must read (a tokens
 * file, a JWKS file), and a front bound beyond loopback without any
 * authentication starts only with TRUSTGATE_INSECURE_NO_AUTH=1, said at
 * every start. On loopback without authentication it starts, and says so.
 * False (after logging and exit(2)) when it may not.
 */
export function checkAuthentication(config: Config, host: string, front: string, p: { log: pino.Logger; exit: (code: number) => void; makesToken?: boolean }): Authentication | undefined {
  let auth: Authentication;
  try {
    auth = createAuthentication(config);
  } catch (err) {
    if (!(err instanceof AuthConfigError)) throw err;
    p.log.fatal({ err: err.message }, 'authentication is misconfigured');
    process.stderr.write(`trustgate: configuration error: ${err.message}\n`);
    p.exit(2);
    return undefined;
  }
  if (auth.configured) {
    // Several principals, and nobody named to vouch for tool definitions: any of them may accept a changed one for all.
    if (front === 'the service' && (config.tokensFile !== undefined || config.jwt !== undefined) && config.pinAdmins === undefined) {
      p.log.warn('every authenticated principal may accept a changed tool definition (PUT /v1/pins): name the ones who may in TRUSTGATE_PIN_ADMINS (docs/behaviour/pins.md#who-may-accept)');
    }
    return auth;
  }
  if (loopbackAddress(host)) {
    if (p.makesToken !== true) p.log.warn({ host }, `${front} has no authentication: every local process and user may call it (docs/operations/authentication.md)`);
    return auth;
  }
  if (config.insecureNoAuth) {
    p.log.warn({ host }, `${front} listens beyond loopback WITHOUT authentication (TRUSTGATE_INSECURE_NO_AUTH=1): anyone who can reach it may call it`);
    return auth;
  }
  const why = `${front} would listen on ${host}, beyond loopback, without authentication: set TRUSTGATE_TOKENS_FILE, TRUSTGATE_TOKEN or TRUSTGATE_JWKS (docs/operations/authentication.md), or TRUSTGATE_INSECURE_NO_AUTH=1 to accept that anyone who can reach it may call it`;
  p.log.fatal({ host }, why);
  process.stderr.write(`trustgate: ${why}\n`);
  p.exit(2);
  return undefined;
}
