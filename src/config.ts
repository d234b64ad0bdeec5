/**
 * Configuration: read from the environment in this one place, validated and
 * frozen. A bad value stops start-up with a message naming the setting and
 * its bound (docs/operations/deploying.md).
 */
import { isIP } from 'node:net';
import { DIALECTS, parseDialectList, type Dialect } from './annotations/dialects.js';
import { parseRedisUrl, RedisUrlError } from './session/url.js';

import { LOG_LEVELS, type LogLevel } from './logger.js';


export interface Config {
  /** TCP port (PORT, default 8080). */
  readonly port: number;
  /** Bind address (HOST, default 127.0.0.1). */
  readonly host: string;
  /** Folder of policy files (TRUSTGATE_POLICY_DIR, default ./policies). */
  readonly policyDir: string;
  /** Mode override (TRUSTGATE_MODE): audit forces audit, warn caps enforce at warn. */
  readonly modeOverride: 'audit' | 'warn' | undefined;
  /** Bearer token for /v1/* (TRUSTGATE_TOKEN), the static token named `default`; undefined: none. */
  readonly token: string | undefined;
  /** Named static tokens (TRUSTGATE_TOKENS_FILE; docs/operations/authentication.md); undefined: none. */
  readonly tokensFile: string | undefined;
  /** JWT access tokens against a JWKS (TRUSTGATE_JWKS and TRUSTGATE_JWT_*); undefined: none. */
  readonly jwt: JwtSettings | undefined;
  /** Principal ids that may accept a tool pin (`PUT /v1/pins`; TRUSTGATE_PIN_ADMINS); undefined: every principal may. */
  readonly pinAdmins: readonly string[] | undefined;
  /** TRUSTGATE_INSECURE_NO_AUTH=1: a front beyond loopback may start without authentication (logged at every start). */
  readonly insecureNoAuth: boolean;
  /** Quotas per principal (TRUSTGATE_QUOTA_*; 0 is off): docs/operations/authentication.md#quotas. */
  readonly quotas: QuotaSettings;
  /** Request body limit in bytes (TRUSTGATE_BODY_LIMIT, default {@link DEFAULT_BODY_LIMIT}, 8 MiB). */
  readonly bodyLimit: number;
  /** pino level (LOG_LEVEL, default info). */
  readonly logLevel: LogLevel;
  /** Most content blocks in one result (TRUSTGATE_MAX_BLOCKS, default 10000). */
  readonly maxBlocks: number;
  /** Most evidence entries in one request (TRUSTGATE_MAX_EVIDENCE, default 1000). */
  readonly maxEvidence: number;
  /** Time for a whole request to arrive and be answered, ms (TRUSTGATE_REQUEST_TIMEOUT_MS, default 10000). */
  readonly requestTimeoutMs: number;
  /** Longest string policies and evidence matching read, in characters (TRUSTGATE_MAX_STRING, default 65536). */
  readonly maxString: number;
  /** Validation findings listed per result, past which only the first of each rule and severity is (TRUSTGATE_MAX_VALIDATION_FINDINGS, default 1000). */
  readonly maxValidationFindings: number;
  /** Findings listed per decision, past which only the first of each policy, rule and mode is (TRUSTGATE_MAX_FINDINGS, default 1000). */
  readonly maxFindings: number;
  /**
   * Origins besides the service's own whose browser requests are served
   * (TRUSTGATE_ALLOWED_ORIGINS, comma-separated, e.g. `https://ui.example.com`;
   * default none). Lower-cased `scheme://host[:port]`.
   */
  readonly allowedOrigins: readonly string[];
  /**
   * Bytes of answers a process holds for clients that have not taken them
   * yet, past which the connections of the oldest are closed
   * (TRUSTGATE_ANSWER_BUFFER_BYTES, default 64 MiB).
   */
  readonly answerBufferBytes: number;
  /**
   * Bytes of requests being decided and of answers not yet sent that one
   * process admits (TRUSTGATE_MAX_INFLIGHT_BYTES, default
   * {@link DEFAULT_MAX_INFLIGHT_BYTES}); past it a request waits briefly, then
   * gets 503 TG_ERR_OVERLOADED. See src/http/admission.ts.
   */
  readonly maxInflightBytes: number;
  /** Time per decision, ms; past nine tenths of it, every rule left counts as matched (TRUSTGATE_EVAL_BUDGET_MS, default 250). */
  readonly evalBudgetMs: number;
  /** Event-loop delay above which requests get 503 + Retry-After, ms; 0 turns it off (TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS, default 1000). */
  readonly maxEventLoopDelayMs: number;
  /**
   * Serving processes (TRUSTGATE_WORKERS, default `auto`): `auto` is one per
   * CPU this process may use (affinity and cgroup CPU quota), at most
   * {@link MAX_AUTO_WORKERS}; 1 serves from this one process.
   */
  readonly workers: number | 'auto';
  /**
   * With worker processes: a worker whose event loop has not turned for this
   * long is killed and replaced (TRUSTGATE_WORKER_WATCHDOG_MS, default 30000;
   * 0 turns it off).
   */
  readonly workerWatchdogMs: number;
  /** Label dialects read from results (TRUSTGATE_DIALECTS, default `trust-annotations,ifc,fides`; docs/behaviour/dialects.md). */
  readonly dialects: readonly Dialect[];
  /**
   * `trustgate intercept`: the heap of the process that evaluates, in MiB
   * (TRUSTGATE_INTERCEPT_HEAP_MB, default 1024). A decision that needs more
   * ends that process, and the command answers an `isError` result.
   */
  readonly interceptHeapMb: number;
  /**
   * Where sessions and tool pins live (TRUSTGATE_SESSION_STORE, default
   * `memory`): `memory`, or a `redis://[user:password@]host:port[/db]` URL
   * (`rediss://` for TLS), kept as written.
   */
  readonly sessionStore: 'memory' | string;
  /** Seconds a session lives after its last use (TRUSTGATE_SESSION_TTL, default 86400). */
  readonly sessionTtlSeconds: number;
  /** Most sessions the memory store holds (live, or in their forgotten window); a new one past it is refused with 503 TG_ERR_SESSION_STORE_FULL, none is evicted (TRUSTGATE_MAX_SESSIONS, default 10000). */
  readonly maxSessions: number;
  /** Most (server, tool) pins a store holds; a new pin past it is refused (`pin: "unavailable"`, the call denied), none is dropped (TRUSTGATE_MAX_PINS, default 10000). */
  readonly maxPins: number;
  /** Most values a session keeps (TRUSTGATE_MAX_FLOW_VALUES, default 20000): past it the session reads `flowsOverflow` (docs/behaviour/flows.md). */
  readonly maxFlowValues: number;
  /** The key values are digested with (TRUSTGATE_FLOW_KEY, at least 32 characters); unset: the store's own random key. */
  readonly flowKey: Uint8Array | undefined;
  /**
   * How long `trustgate proxy` keeps polling its pipes after a message
   * before its event loop sleeps, in microseconds; 0 sleeps at once
   * (TRUSTGATE_PROXY_POLL_US, default 1000). See src/bindings/proxy/poll.ts.
   */
  readonly proxyPollUs: number;
  /** TRUSTGATE_PLAYGROUND=1: serve GET /playground and POST /v1/playground/evaluate (docs/policy-testing.md); off by default. */
  readonly playground: boolean;
  /** Most tools one server may list through the gateway (TRUSTGATE_MAX_TOOLS, default 1000). */
  readonly maxTools: number;
  /** The operator's servers file (TRUSTGATE_SERVERS; docs/behaviour/operator.md), read and reloaded with the policies; unset: none. */
  readonly serversFile: string | undefined;
  /** The `context.destination` a request that gives none is judged with (TRUSTGATE_DESTINATION); unset: none. */
  readonly destination: string | undefined;
}

/** Quotas per principal (docs/operations/authentication.md#quotas); 0 turns one off. */
export interface QuotaSettings {
  /** Host connections one principal holds open on the gateway's `--listen` front (TRUSTGATE_QUOTA_CONNECTIONS, default 16). */
  readonly connections: number;
  /** Requests per second, a token bucket of twice that many (TRUSTGATE_QUOTA_RPS, default 0: off). */
  readonly rps: number;
  /** Bytes of requests one principal has in flight (TRUSTGATE_QUOTA_INFLIGHT_BYTES, default 0: off). */
  readonly inflightBytes: number;
  /** Distinct sessions one principal names per session TTL (TRUSTGATE_QUOTA_SESSIONS, default 0: off). */
  readonly sessions: number;
}

/** The JWT settings (TRUSTGATE_JWKS, TRUSTGATE_JWT_*; docs/operations/authentication.md). */
export interface JwtSettings {
  /** A JWKS file path, or an `https://` (or loopback `http://`) URL. */
  readonly jwks: string;
  readonly issuer: string;
  readonly audience: string;
  readonly algorithms: readonly string[];
  /** Claims copied into `principal.claims`. */
  readonly claims: readonly string[];
  /** Least time between two fetches of a remote JWKS, ms. */
  readonly cooldownMs: number;
}

/**
 * Default request body limit: 8 MiB (docs/operations/deploying.md). A tool result
 * that carries a file or an image carries its base64 twice (in `content`
 * and in `structuredContent`), so 1 MiB refused an 800 KB file.
 */
export const DEFAULT_BODY_LIMIT = 8_388_608;

/**
 * Default per-process budget of bytes in flight: 32 MiB. A decision holds
 * several times its request (text, parsed value, forwarded copy, answer), so
 * this keeps one serving process of a 512 MB container well inside it
 * (docs/operations/admission.md gives the measured multiple).
 */
export const DEFAULT_MAX_INFLIGHT_BYTES = 33_554_432;

/** The most serving processes `TRUSTGATE_WORKERS=auto` starts: each holds its own heap (about 100 MiB under load). */
export const MAX_AUTO_WORKERS = 4;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Shortest watchdog: a few heartbeats (one a second) must fit in it, or a busy but healthy worker would be killed. */
export const MIN_WATCHDOG_MS = 5_000;

/** One setting as docs/configuration.md lists it. */
export interface SettingRow {
  /** The default, as the page shows it (Markdown). */
  readonly default: string;
  /** The values accepted, as the page shows them (Markdown). */
  readonly bound: string;
  /** What it does (Markdown; links are relative to docs/). */
  readonly description: string;
}

/** A whole-number setting: its default and bounds are what loadConfig() enforces. */
export interface IntSetting {
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** The bound when it is narrower than `min to max` (the watchdog). */
  readonly bound?: string;
  readonly description: string;
}

const row = (d: string, bound: string, description: string): SettingRow => ({ default: d, bound, description });
const whole = (d: number, min: number, max: number, description: string, bound?: string): IntSetting => ({ default: d, min, max, description, ...(bound !== undefined ? { bound } : {}) });

/**
 * Every setting, in the order docs/configuration.md lists them: the one
 * table the whole-number defaults and bounds are read from, and the page is
 * generated from (`npm run configuration-doc`; `-- --check` says whether
 * the page is current).
 */
export const DEFAULTS = {
  PORT: whole(8080, 0, 65535, 'TCP port'),
  HOST: row('`127.0.0.1` (`0.0.0.0` in the container image)', 'an IP address or host name', 'bind address; start-up warns when it is not loopback and no token is set'),
  LOG_LEVEL: row('`info`', LOG_LEVELS.join(', '), 'pino level ([decision log](operations/decision-log.md))'),
  TRUSTGATE_POLICY_DIR: row('`./policies`', 'a folder', 'folder of policy files ([format](policies/reference.md)); `trustgate intercept`, `interceptor` and `proxy` default to the set shipped with the package instead, and take `--policies DIR` first; `trustgate serve`, `eval` and `test` read `./policies` when there is one, else the shipped set'),
  TRUSTGATE_MODE: row('unset', '`audit`, `warn`', '`audit` forces every policy into audit (dry-run rollout); `warn` caps `enforce` at `warn`'),
  TRUSTGATE_TOKEN: row('unset', 'printable ASCII, no spaces', 'one static token, named `default` ([authentication](operations/authentication.md)): when any authentication is set, every `/v1/*` request and `POST /mcp` (and the gateway\'s `--listen` front) needs `Authorization: Bearer <token>` (compared in constant time); the Docker interceptor route also takes it as `?token=`'),
  TRUSTGATE_TOKENS_FILE: row('unset', 'the path of a file', 'named static tokens, one `<name> <token>` per line (`#` comments; tokens of at least 22 characters, each name and token once): the name is `principal.id` ([authentication](operations/authentication.md)); a file that does not read stops start-up'),
  TRUSTGATE_PIN_ADMINS: row('unset (every principal)', 'comma-separated principal ids', 'who may accept a changed tool definition with `PUT /v1/pins` ([pins](behaviour/pins.md#who-may-accept)): a static token\'s name or a token\'s `sub`; anyone else gets 403 `TG_ERR_PIN_FORBIDDEN`. With several principals (a tokens file, or JWT) and this unset, every one of them may, and the service says so at start'),
  TRUSTGATE_JWKS: row('unset', 'a file path, or an `https://` URL (`http://` on loopback only)', 'JWT access tokens checked against this JSON Web Key Set ([authentication](operations/authentication.md)); a URL is fetched at the first token, cached, and fetched again when a token names an unknown `kid`; needs `TRUSTGATE_JWT_ISSUER` and `TRUSTGATE_JWT_AUDIENCE`'),
  TRUSTGATE_JWT_ISSUER: row('unset', 'the issuer URL', 'the `iss` an access token must carry'),
  TRUSTGATE_JWT_AUDIENCE: row('unset', 'a string', 'the `aud` an access token must carry (the resource: for the gateway front, its `/mcp` URL)'),
  TRUSTGATE_JWT_ALGORITHMS: row('`RS256,PS256,ES256,EdDSA`', 'a comma-separated subset of RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 ES512 EdDSA', 'the signature algorithms accepted; `none` and every HMAC (`HS*`) are refused whatever this says'),
  TRUSTGATE_JWT_CLAIMS: row('unset', 'comma-separated claim names', 'claims of the access token copied into `principal.claims` for policies (the token itself never is)'),
  TRUSTGATE_JWKS_COOLDOWN_MS: whole(30_000, 0, 3_600_000, 'least time between two fetches of a remote JWKS: a token naming an unknown `kid` fetches it again at most this often'),
  TRUSTGATE_INSECURE_NO_AUTH: row('unset', '`0` or `1`', '`1` lets a front bound beyond loopback start without authentication (logged at warn at every start); without it such a start is refused'),
  TRUSTGATE_QUOTA_CONNECTIONS: whole(16, 0, 100_000, 'host connections one principal may hold open on the gateway\'s `--listen` front; past it 429 with `Retry-After`; `0` turns it off ([quotas](operations/authentication.md#quotas))'),
  TRUSTGATE_QUOTA_RPS: whole(0, 0, 1_000_000, 'requests per second one principal may send (a token bucket holding two seconds\' worth), on every authenticated route and the gateway front; past it 429 with `Retry-After`; in Redis when the session store is Redis (shared by replicas), else per process; `0` is off'),
  TRUSTGATE_QUOTA_SESSIONS: whole(0, 0, 10_000_000, 'distinct sessions one principal may name within one `TRUSTGATE_SESSION_TTL`; a request naming one more gets 429 with `Retry-After` (the sessions it named go on); in Redis when the session store is Redis, else per process; `0` is off'),
  TRUSTGATE_QUOTA_INFLIGHT_BYTES: whole(0, 0, 68_719_476_736, 'bytes of requests one principal may have in flight in one process (by `content-length`); past it 429 with `Retry-After`; `0` is off'),

  TRUSTGATE_PLAYGROUND: row('unset', '`0` or `1`', '`1` serves the policy playground at `GET /playground` and `POST /v1/playground/evaluate` (under the bearer token when one is set; [policy testing](policy-testing.md#the-playground))'),
  TRUSTGATE_BODY_LIMIT: whole(DEFAULT_BODY_LIMIT, 1, 1_073_741_824, 'request body limit in bytes (8 MiB: a result that carries a file or an image carries its base64 twice, in `content` and `structuredContent`)'),
  TRUSTGATE_MAX_BLOCKS: whole(10_000, 1, 1_000_000, 'most content blocks in one result'),
  TRUSTGATE_MAX_EVIDENCE: whole(1_000, 0, 1_000_000, 'most evidence entries in one request'),
  TRUSTGATE_MAX_STRING: whole(65_536, 16, 16_777_216, 'longest string (characters) in `tool`, `server`, `context`, evidence `digest`/`ref`, block `uri`/`mimeType`'),
  TRUSTGATE_MAX_VALIDATION_FINDINGS: whole(1_000, 1, 1_000_000, 'validation findings (and `withheld` pointers) listed per result; past it only the first of each rule and severity is listed, and `validationOmitted` counts the rest'),
  TRUSTGATE_MAX_FINDINGS: whole(1_000, 1, 1_000_000, 'findings listed per decision; past it only the first of each further policy, rule and mode is listed, and `findingsOmitted` counts the rest (every effect is still applied to every block it matched)'),
  TRUSTGATE_ALLOWED_ORIGINS: row('unset', 'comma-separated origins', "origins (`https://ui.example.com`: scheme, host, optional port; no path) whose browser requests are served besides the service's own; every other `Origin`, and `Sec-Fetch-Site: cross-site`/`same-site`, is refused with 403 `TG_ERR_CROSS_ORIGIN` ([browsers](behaviour/browsers.md))"),
  TRUSTGATE_ANSWER_BUFFER_BYTES: whole(64 * 1024 * 1024, 1024 * 1024, 68_719_476_736, 'bytes of answers a serving process holds for clients that have not taken them yet (64 MiB); past it the connections of the oldest are closed'),
  TRUSTGATE_MAX_INFLIGHT_BYTES: whole(DEFAULT_MAX_INFLIGHT_BYTES, 65_536, 68_719_476_736, 'bytes of requests being decided and answers not yet sent that one serving process admits (32 MiB, sized for a 512 MB container); past it a request waits up to 0.5 s, then gets 503 `TG_ERR_OVERLOADED` with `Retry-After` ([admission](operations/admission.md))'),
  TRUSTGATE_EVAL_BUDGET_MS: whole(250, 1, 60_000, 'time per decision; its rules and detectors stop at nine tenths of it (every rule not yet evaluated counts as matched), the rest left to build the answer'),
  TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: whole(1_000, 0, 60_000, 'event-loop delay above which requests get 503 + `Retry-After`; `0` turns it off'),
  TRUSTGATE_REQUEST_TIMEOUT_MS: whole(10_000, 100, 600_000, 'time for a request to arrive and be answered, its answer taken by the client included (`trustgate intercept`: for the whole decision)'),
  TRUSTGATE_INTERCEPT_HEAP_MB: whole(1024, 16, 65_536, '`trustgate intercept`: heap of the process that evaluates, in MiB; a decision that needs more is answered with an `isError` result'),
  TRUSTGATE_WORKERS: row('`auto`', '`auto`, 1 to 64', `serving processes: \`auto\` is one per CPU the process may use (its CPU affinity and cgroup CPU quota, so a container's CPU limit counts), at most ${MAX_AUTO_WORKERS}; \`1\` serves from the started process itself ([worker processes](operations/workers.md))`),
  TRUSTGATE_WORKER_WATCHDOG_MS: whole(30_000, 0, 600_000, 'with worker processes, a worker whose event loop has not turned for this long is killed and replaced; `0` turns it off', `0, or ${MIN_WATCHDOG_MS} to 600000`),
  TRUSTGATE_DIALECTS: row(`\`${DIALECTS.join(',')}\``, 'a comma-separated subset', 'the trust-label dialects read from results ([label dialects](behaviour/dialects.md)); an unknown name stops start-up'),
  TRUSTGATE_SESSION_STORE: row('`memory`', '`memory`, `redis://[user:password@]host[:port][/db]`, `rediss://...`', 'where sessions and tool pins live: `memory` (one store for the whole service, nothing survives a restart) or Redis 6 or later, shared by every replica ([session stores](operations/session-stores.md)); any other value stops start-up (the message does not repeat the value, which may hold a password)'),
  TRUSTGATE_SESSION_TTL: whole(86_400, 1, 31_536_000, 'seconds a session lives after its last use (any request naming it, `GET` included)'),
  TRUSTGATE_MAX_SESSIONS: whole(10_000, 1, 10_000_000, 'most sessions the memory store holds (ids in their forgotten window included); past it a request naming a new session gets 503 `TG_ERR_SESSION_STORE_FULL`, and no live session is evicted'),
  TRUSTGATE_MAX_PINS: whole(10_000, 1, 10_000_000, 'most (server, tool) pins the store holds; past it a new pin is refused (`pin: "unavailable"`, the shipped policies deny the call, `trustgate_pins_refused_total` counts it), and no pin is evicted'),
  TRUSTGATE_MAX_FLOW_VALUES: whole(20_000, 1, 10_000_000, 'most values a session keeps ([flows](behaviour/flows.md)); past it the session reads `flowsOverflow: true` for good, the shipped policies ask before every call that is not read-only, and `trustgate_flow_overflow_total` counts it; none is dropped to make room'),
  TRUSTGATE_FLOW_KEY: row('unset (a random key made once per store and kept in it)', 'at least 32 characters', 'the HMAC key the values a session has seen are kept under ([flows](behaviour/flows.md)): the store holds keyed digests, never the text; replicas on one Redis share the store\'s own key when this is unset'),
  TRUSTGATE_PROXY_POLL_US: whole(1000, 0, 10_000, '`trustgate proxy` only: how long, in microseconds, it keeps polling its pipes after a message before it sleeps; `0` sleeps at once ([proxy](bindings/proxy.md), [performance](performance.md))'),
  TRUSTGATE_PROXY_SESSION: row('unset (one session per host connection)', 'a session id', '`trustgate proxy` only: the session to judge under, as `--session <id>` (which wins); proxies of one host given one id share what the conversation was shown ([proxy](bindings/proxy.md))'),
  TRUSTGATE_UPSTREAM_AUTHORIZATION: row('unset', '`Bearer <token>`', "`trustgate proxy --upstream` only: the `Authorization` header every request to the remote server carries, unless a `--header` sets one; put it in the host's `env` for the server rather than in `args`, which other users of the machine can read"),
  TRUSTGATE_MAX_TOOLS: whole(1000, 1, 100_000, '`trustgate proxy --config` (the gateway): most tools one server may list (and at most 100 pages of its `tools/list`); past either, that server\'s tools are left out of the list, logged at error and counted in `trustgate_proxy_dropped_total{reason="too-many"}` ([proxy](bindings/proxy.md))'),
  TRUSTGATE_SERVERS: row('unset (every server: `hints: "defaults"`, no labels)', 'the path of a JSON or YAML file', 'the operator\'s entry for each server, keyed by `server.name` (`"*"` for every other server and for requests that name none): whether its tool hints are believed, the operator\'s own hints per tool, labels on all its results ([operator entries](behaviour/operator.md)); a file that does not parse or holds an unknown key stops start-up, and a reload rereads it'),
  TRUSTGATE_DESTINATION: row('unset', '`local` or `remote` (or any name policies test)', 'the `context.destination` of a request that gives none: where what the host forwards goes (the model\'s side); `--destination` for `trustgate proxy` ([labels and detectors](behaviour/labels-and-detectors.md#personal-data-marks-it-does-not-stop))'),
} as const satisfies Record<string, SettingRow | IntSetting>;

/** The whole-number settings (their defaults and bounds live in DEFAULTS). */
export type IntSettingName = { [K in keyof typeof DEFAULTS]: (typeof DEFAULTS)[K] extends IntSetting ? K : never }[keyof typeof DEFAULTS];

function watchdog(env: Env): number {
  const ms = int(env, 'TRUSTGATE_WORKER_WATCHDOG_MS');
  if (ms !== 0 && ms < MIN_WATCHDOG_MS) {
    throw new ConfigError(`TRUSTGATE_WORKER_WATCHDOG_MS must be 0 (off) or from ${MIN_WATCHDOG_MS} to 600000, got ${ms}`);
  }
  return ms;
}

function int(env: Env, name: IntSettingName): number {
  const { default: def, min, max } = DEFAULTS[name] as IntSetting;
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^[0-9]+$/.test(raw.trim())) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[]): T | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

/** `scheme://host[:port]` as browsers send it in `Origin` (lower case, no path, no trailing slash). */
const ORIGIN = /^https?:\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:[0-9]{1,5})?$/;

function origins(raw: string | undefined): readonly string[] {
  if (raw === undefined || raw.trim() === '') return Object.freeze([]);
  const list = raw.split(',').map((o) => o.trim().toLowerCase()).filter((o) => o !== '');
  for (const o of list) {
    if (!ORIGIN.test(o)) {
      throw new ConfigError(`TRUSTGATE_ALLOWED_ORIGINS must be a comma-separated list of origins such as https://ui.example.com (scheme, host, optional port; no path), got ${JSON.stringify(o)}`);
    }
  }
  return Object.freeze([...new Set(list)]);
}

/** TRUSTGATE_SESSION_STORE: `memory` or a Redis URL (checked here, connected to by the store). */
function sessionStore(raw: string | undefined): string {
  if (raw === undefined || raw === '' || raw === 'memory') return 'memory';
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const db = url?.pathname.replace(/^\//, '') ?? '';
  if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '' || !/^([0-9]{1,5})?$/.test(db) || url.search !== '' || url.hash !== '') {
    // Never echo the value: a Redis URL can hold a password.
    throw new ConfigError('TRUSTGATE_SESSION_STORE must be memory or a URL redis://[user:password@]host[:port][/db] (rediss:// for TLS)');
  }
  try {
    // The client's own reading of the URL (src/session/url.ts) must accept it too (percent-encoding of user and password).
    parseRedisUrl(raw);
  } catch (err) {
    if (err instanceof RedisUrlError) throw new ConfigError(`TRUSTGATE_SESSION_STORE: the URL ${err.message}`);
    throw err;
  }
  return raw;
}

function workers(raw: string | undefined): number | 'auto' {
  if (raw === undefined || raw === '' || raw === 'auto') return 'auto';
  const n = /^[0-9]{1,2}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 64)) throw new ConfigError(`TRUSTGATE_WORKERS must be auto or a whole number from 1 to 64, got ${JSON.stringify(raw)}`);
  return n;
}

function dialects(raw: string | undefined): readonly Dialect[] {
  if (raw === undefined || raw === '') return DIALECTS;
  try {
    return parseDialectList(raw);
  } catch (err) {
    throw new ConfigError(`TRUSTGATE_DIALECTS ${(err as Error).message}`);
  }
}

function flowKey(v: string | undefined): Uint8Array | undefined {
  if (v === undefined || v === '') return undefined;
  if (v.length < 32) throw new ConfigError('TRUSTGATE_FLOW_KEY must be at least 32 characters');
  return new TextEncoder().encode(v);
}

/** Algorithms a JWT may be signed with: asymmetric only (an HMAC key would be the public key an attacker has). */
const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

const unset = (v: string | undefined): v is undefined => v === undefined || v === '';

function jwt(env: Env): JwtSettings | undefined {
  // Checked whether or not a key set is named, as every whole-number setting is.
  const cooldownMs = int(env, 'TRUSTGATE_JWKS_COOLDOWN_MS');
  const jwks = env.TRUSTGATE_JWKS;
  const named = ['TRUSTGATE_JWT_ISSUER', 'TRUSTGATE_JWT_AUDIENCE', 'TRUSTGATE_JWT_ALGORITHMS', 'TRUSTGATE_JWT_CLAIMS'].filter((n) => !unset(env[n]));
  if (unset(jwks)) {
    if (named.length > 0) throw new ConfigError(`${named[0]} is set but TRUSTGATE_JWKS is not: set the key set the tokens are checked against`);
    return undefined;
  }
  if (/^[a-z]+:\/\//i.test(jwks)) {
    let url: URL;
    try {
      url = new URL(jwks);
    } catch {
      throw new ConfigError('TRUSTGATE_JWKS must be a file path or an https:// URL');
    }
    const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw new ConfigError('TRUSTGATE_JWKS must be an https:// URL (http:// only on loopback)');
  }
  const issuer = env.TRUSTGATE_JWT_ISSUER;
  const audience = env.TRUSTGATE_JWT_AUDIENCE;
  if (unset(issuer)) throw new ConfigError('TRUSTGATE_JWKS needs TRUSTGATE_JWT_ISSUER: the iss an access token must carry');
  if (unset(audience)) throw new ConfigError('TRUSTGATE_JWKS needs TRUSTGATE_JWT_AUDIENCE: the aud an access token must carry');
  const list = (v: string | undefined) => (unset(v) ? [] : v.split(',').map((x) => x.trim()).filter((x) => x !== ''));
  const algorithms = unset(env.TRUSTGATE_JWT_ALGORITHMS) ? ['RS256', 'PS256', 'ES256', 'EdDSA'] : list(env.TRUSTGATE_JWT_ALGORITHMS);
  for (const a of algorithms) {
    if (!(JWT_ALGORITHMS as readonly string[]).includes(a)) throw new ConfigError(`TRUSTGATE_JWT_ALGORITHMS: ${JSON.stringify(a.slice(0, 16))} is not accepted (one of ${JWT_ALGORITHMS.join(', ')}; none and HMAC never are)`);
  }
  if (algorithms.length === 0) throw new ConfigError('TRUSTGATE_JWT_ALGORITHMS names no algorithm');
  const claims = list(env.TRUSTGATE_JWT_CLAIMS);
  for (const c of claims) if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(c)) throw new ConfigError(`TRUSTGATE_JWT_CLAIMS: ${JSON.stringify(c.slice(0, 64))} is not a claim name`);
  return Object.freeze({ jwks, issuer, audience, algorithms: Object.freeze(algorithms), claims: Object.freeze(claims), cooldownMs });
}

function pinAdmins(v: string | undefined): readonly string[] | undefined {
  if (unset(v)) return undefined;
  const ids = v.split(',').map((x) => x.trim()).filter((x) => x !== '');
  if (ids.length === 0) throw new ConfigError('TRUSTGATE_PIN_ADMINS names no principal (unset it to let every principal accept pins)');
  for (const id of ids) if (id.length > 256) throw new ConfigError('TRUSTGATE_PIN_ADMINS: a principal id is at most 256 characters');
  return Object.freeze(ids);
}

function destination(v: string | undefined): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (!/^[a-z][a-z0-9-]{0,62}$/.test(v)) throw new ConfigError(`TRUSTGATE_DESTINATION must be a lower-case name such as local or remote, got ${JSON.stringify(v.slice(0, 64))}`);
  return v;
}

/** Read, validate and freeze the configuration from `env` (the process passes its environment). Throws ConfigError naming the setting. */
export function loadConfig(env: Env): Config {
  const host = env.HOST === undefined || env.HOST === '' ? '127.0.0.1' : env.HOST;
  if (isIP(host) === 0 && !/^[A-Za-z0-9.-]{1,253}$/.test(host)) {
    throw new ConfigError(`HOST must be an IP address or host name, got ${JSON.stringify(host)}`);
  }
  const token = env.TRUSTGATE_TOKEN === undefined || env.TRUSTGATE_TOKEN === '' ? undefined : env.TRUSTGATE_TOKEN;
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError('TRUSTGATE_TOKEN must be printable ASCII without spaces');
  }
  const policyDir = env.TRUSTGATE_POLICY_DIR === undefined || env.TRUSTGATE_POLICY_DIR === '' ? './policies' : env.TRUSTGATE_POLICY_DIR;
  return Object.freeze({
    port: int(env, 'PORT'),
    host,
    policyDir,
    modeOverride: oneOf(env, 'TRUSTGATE_MODE', ['audit', 'warn'] as const),
    token,
    tokensFile: unset(env.TRUSTGATE_TOKENS_FILE) ? undefined : env.TRUSTGATE_TOKENS_FILE,
    jwt: jwt(env),
    pinAdmins: pinAdmins(env.TRUSTGATE_PIN_ADMINS),
    insecureNoAuth: oneOf(env, 'TRUSTGATE_INSECURE_NO_AUTH', ['0', '1'] as const) === '1',
    quotas: Object.freeze({
      connections: int(env, 'TRUSTGATE_QUOTA_CONNECTIONS'),
      rps: int(env, 'TRUSTGATE_QUOTA_RPS'),
      inflightBytes: int(env, 'TRUSTGATE_QUOTA_INFLIGHT_BYTES'),
      sessions: int(env, 'TRUSTGATE_QUOTA_SESSIONS'),
    }),
    bodyLimit: int(env, 'TRUSTGATE_BODY_LIMIT'),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS) ?? 'info',
    maxBlocks: int(env, 'TRUSTGATE_MAX_BLOCKS'),
    maxEvidence: int(env, 'TRUSTGATE_MAX_EVIDENCE'),
    requestTimeoutMs: int(env, 'TRUSTGATE_REQUEST_TIMEOUT_MS'),
    maxString: int(env, 'TRUSTGATE_MAX_STRING'),
    maxValidationFindings: int(env, 'TRUSTGATE_MAX_VALIDATION_FINDINGS'),
    maxFindings: int(env, 'TRUSTGATE_MAX_FINDINGS'),
    allowedOrigins: origins(env.TRUSTGATE_ALLOWED_ORIGINS),
    answerBufferBytes: int(env, 'TRUSTGATE_ANSWER_BUFFER_BYTES'),
    maxInflightBytes: int(env, 'TRUSTGATE_MAX_INFLIGHT_BYTES'),
    evalBudgetMs: int(env, 'TRUSTGATE_EVAL_BUDGET_MS'),
    maxEventLoopDelayMs: int(env, 'TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS'),
    workers: workers(env.TRUSTGATE_WORKERS),
    workerWatchdogMs: watchdog(env),
    dialects: dialects(env.TRUSTGATE_DIALECTS),
    interceptHeapMb: int(env, 'TRUSTGATE_INTERCEPT_HEAP_MB'),
    sessionStore: sessionStore(env.TRUSTGATE_SESSION_STORE),
    sessionTtlSeconds: int(env, 'TRUSTGATE_SESSION_TTL'),
    maxSessions: int(env, 'TRUSTGATE_MAX_SESSIONS'),
    maxPins: int(env, 'TRUSTGATE_MAX_PINS'),
    maxFlowValues: int(env, 'TRUSTGATE_MAX_FLOW_VALUES'),
    flowKey: flowKey(env.TRUSTGATE_FLOW_KEY),
    proxyPollUs: int(env, 'TRUSTGATE_PROXY_POLL_US'),
    playground: oneOf(env, 'TRUSTGATE_PLAYGROUND', ['0', '1'] as const) === '1',
    maxTools: int(env, 'TRUSTGATE_MAX_TOOLS'),
    serversFile: env.TRUSTGATE_SERVERS === undefined || env.TRUSTGATE_SERVERS === '' ? undefined : env.TRUSTGATE_SERVERS,
    destination: destination(env.TRUSTGATE_DESTINATION),
  });
}
