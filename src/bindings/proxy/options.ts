/**
 * What `trustgate proxy` is told to do: its command line and its `--config`
 * file (the `mcpServers` file hosts already use). Every setting the proxy
 * reads has a flag here or a key in that file, since hosts built on the MCP
 * SDK do not pass their environment on to the servers they start; the
 * environment is the fallback. Pure: reads the file it is named, starts
 * nothing.
 */
import { readFileSync } from 'node:fs';
import { isRecord } from '../../json/record.js';
import { checkOperatorEntry, OperatorEntryError, type OperatorEntry } from '../../trust/operator.js';

export const USAGE = `usage: trustgate proxy [options] [--] <command> [args...]
       trustgate proxy [options] --upstream <url> [--header 'Name: value']...
       trustgate proxy [options] --config <mcpServers.json> [--listen <host:port>]
options:
  --policies <dir>    policy folder (default: the shipped policies)
  --name <name>       the operator's name for the server: tool pins are kept under it
                      (default: the command line, or the URL; with --config, each server's key)
  --session <id>      the Trustgate session to use (TRUSTGATE_PROXY_SESSION); proxies of one
                      host given one id share what the conversation was shown; prefer the
                      environment or --session-file: other users can read a command line
  --session-file <f>  read the session id from this file
  --store <store>     memory or redis://host:port/db (TRUSTGATE_SESSION_STORE)
  --poll-us <n>       microseconds to keep polling after a message, 0 for none (TRUSTGATE_PROXY_POLL_US)
  --session-ttl <s>   seconds a session lives after its last use; with --listen, a host connection
                      idle that long is closed (TRUSTGATE_SESSION_TTL)
  --user-audience     the host shows blocks of audience ["user"] to its user only, never to
                      the model: forward them (default: such blocks are dropped)
  --hints <trust>     declared: believe the server's tool hints; defaults (the default): keep
                      MCP's cautious defaults wherever a declared hint would lower protection
  --labels <flags>    untrusted, sensitive or both (comma-separated): the operator's labels on
                      every result of the server
  --destination <d>   context.destination when a request gives none, e.g. local
                      (TRUSTGATE_DESTINATION)
  --header 'N: v'     a header on every request to an --upstream server
  --listen host:port  with --config: serve Streamable HTTP at http://host:port/mcp instead of stdio;
                      hosts authenticate (TRUSTGATE_TOKENS_FILE, TRUSTGATE_TOKEN, TRUSTGATE_JWKS;
                      on loopback without any, a token is made and its file named at start)
  --idle-timeout <s>  with --listen: a host connection with no request and no open stream for
                      this long is closed and its servers stopped (default 600)
  --help              this text
`;

/** A usage error: the proxy says it in one line and exits 2. */
export class UsageError extends Error {}

/** One server behind the proxy. */
export type ServerSpec = (
  | { name: string; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { name: string; url: URL; headers: Record<string, string> }
) & {
  /** The operator's entry for the server (`--hints`/`--labels`, or its `trustgate` member in a gateway config); else TRUSTGATE_SERVERS's. */
  operator?: OperatorEntry;
};

export interface ProxyArgs {
  help: boolean;
  policies?: string;
  session?: string;
  store?: string;
  pollUs?: string;
  /** Seconds a session lives after its last use (checked where the configuration is read). */
  sessionTtl?: string;
  /** `--idle-timeout`: seconds a host connection of the HTTP front may sit unused (default 600). */
  idleTimeoutSeconds?: number;
  userAudience: boolean;
  /** Set with --config: the host sees every server as one, tools named `<name>__<tool>`. */
  gateway: boolean;
  listen?: { host: string; port: number };
  /** `context.destination` of requests that give none (`--destination`, `trustgate.destination`). */
  destination?: string;
  servers: ServerSpec[];
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A server's name in a gateway: it prefixes its tools (`<name>__<tool>`), so it holds no `__`. */
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function header(h: string, where: string): [string, string] {
  const colon = h.indexOf(':');
  if (colon <= 0) throw new UsageError(`${where} needs 'Name: value'`);
  const name = h.slice(0, colon).trim();
  const value = h.slice(colon + 1).trim();
  if (!HEADER_NAME.test(name) || /[\r\n\0]/.test(value)) throw new UsageError(`${where} is not a valid header: ${JSON.stringify(name.slice(0, 64))}`);
  return [name.toLowerCase(), value];
}

function url(raw: string, where: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new UsageError(`${where} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`${where} must be an http or https URL`);
  return u;
}

/** Authorization from TRUSTGATE_UPSTREAM_AUTHORIZATION (kept off the command line) unless a header sets it. */
function withAuthorization(headers: Record<string, string>, env: NodeJS.ProcessEnv): Record<string, string> {
  const auth = env.TRUSTGATE_UPSTREAM_AUTHORIZATION;
  if (auth !== undefined && auth !== '' && headers.authorization === undefined) {
    if (/[\r\n\0]/.test(auth)) throw new UsageError('TRUSTGATE_UPSTREAM_AUTHORIZATION is not a valid header value');
    headers.authorization = auth;
  }
  return headers;
}

const FLAGS_WITH_VALUE = new Set(['--policies', '--name', '--session', '--session-file', '--idle-timeout', '--store', '--poll-us', '--session-ttl', '--upstream', '--header', '--config', '--listen', '--hints', '--labels', '--destination']);

/**
 * Reads the command line. Options come first; the server's command starts
 * at `--` or at the first word that is not an option (so `trustgate proxy
 * npx -y server` works where a host or inspector took the `--` away).
 * @throws UsageError
 */
export function parseProxyArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ProxyArgs {
  const out: ProxyArgs = { help: false, userAudience: false, gateway: false, servers: [] };
  const values = new Map<string, string>();
  const headers: Record<string, string> = {};
  let command: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      command = argv.slice(i + 1);
      break;
    }
    if (a === '--help' || a === '-h') {
      out.help = true;
      continue;
    }
    if (a === '--user-audience') {
      out.userAudience = true;
      continue;
    }
    if (FLAGS_WITH_VALUE.has(a)) {
      const v = argv[i + 1];
      if (v === undefined || v === '--' || (v.startsWith('--') && a !== '--header')) throw new UsageError(`${a} needs a value`);
      i++;
      if (a === '--header') {
        const [n, value] = header(v, '--header');
        headers[n] = value;
      } else if (values.has(a)) throw new UsageError(`${a} is given twice`);
      else values.set(a, v);
      continue;
    }
    if (a.startsWith('-')) throw new UsageError(`unknown option ${JSON.stringify(a.slice(0, 64))}`);
    command = argv.slice(i);
    break;
  }
  if (out.help) return out;
  const opt = (k: string) => values.get(k);
  if (opt('--policies') !== undefined) out.policies = opt('--policies');
  if (opt('--store') !== undefined) out.store = opt('--store');
  if (opt('--poll-us') !== undefined) out.pollUs = opt('--poll-us');
  if (opt('--session-ttl') !== undefined) out.sessionTtl = opt('--session-ttl');
  if (opt('--session') !== undefined && opt('--session-file') !== undefined) throw new UsageError('give one of --session and --session-file');
  const session = opt('--session') ?? sessionFromFile(opt('--session-file')) ?? (env.TRUSTGATE_PROXY_SESSION || undefined);
  if (session !== undefined) out.session = session;
  const idle = opt('--idle-timeout');
  if (idle !== undefined) {
    if (!/^[0-9]{1,7}$/.test(idle) || Number(idle) < 1) throw new UsageError('--idle-timeout is a whole number of seconds from 1 to 9999999');
    out.idleTimeoutSeconds = Number(idle);
  }
  if (opt('--listen') !== undefined) out.listen = listenOf(opt('--listen')!);
  if (opt('--destination') !== undefined) out.destination = destinationOf(opt('--destination')!, '--destination');
  const flagEntry = entryOfFlags(opt('--hints'), opt('--labels'));

  const config = opt('--config');
  const upstream = opt('--upstream');
  const ways = [config !== undefined, upstream !== undefined, command.length > 0].filter(Boolean).length;
  if (ways === 0) throw new UsageError('name the server to start (a command), or give --upstream <url> or --config <file>');
  if (ways > 1) throw new UsageError('give one of: a command, --upstream <url>, --config <file>');
  if (out.listen && config === undefined) throw new UsageError('--listen needs --config');
  if (Object.keys(headers).length > 0 && upstream === undefined) throw new UsageError('--header needs --upstream');
  if (config !== undefined) {
    if (opt('--name') !== undefined) throw new UsageError('--name does not go with --config: each server is named by its key');
    if (flagEntry !== undefined) throw new UsageError('--hints and --labels do not go with --config: give each server a "trustgate" member');
    out.gateway = true;
    readConfig(config, out, env);
    return out;
  }
  if (upstream !== undefined) {
    const u = url(upstream, '--upstream');
    out.servers.push({ name: opt('--name') ?? `${u.origin}${u.pathname}`, url: u, headers: withAuthorization(headers, env), ...(flagEntry ? { operator: flagEntry } : {}) });
    return out;
  }
  // The server gets the environment the host gave Trustgate (API keys and the like), and its working directory.
  out.servers.push({ name: opt('--name') ?? command.join(' '), command: command[0]!, args: command.slice(1), env: envOf(env), ...(flagEntry ? { operator: flagEntry } : {}) });
  return out;
}

/** The session id a file holds (its first line, trimmed); a file that cannot be read is a usage error naming it. */
function sessionFromFile(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--session-file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const id = text.split(/\r?\n/, 1)[0]!.trim();
  if (id === '') throw new UsageError(`--session-file ${file} holds no session id`);
  return id;
}

/** `--hints` and `--labels` as an operator entry; undefined when neither is given. */
function entryOfFlags(hints: string | undefined, labels: string | undefined): OperatorEntry | undefined {
  if (hints === undefined && labels === undefined) return undefined;
  if (hints !== undefined && hints !== 'declared' && hints !== 'defaults') throw new UsageError('--hints is declared or defaults');
  const flags: { untrusted?: boolean; sensitive?: boolean } = {};
  for (const f of labels === undefined ? [] : labels.split(',')) {
    if (f !== 'untrusted' && f !== 'sensitive') throw new UsageError('--labels is untrusted, sensitive or untrusted,sensitive');
    flags[f] = true;
  }
  return { ...(hints !== undefined ? { hints } : {}), ...(labels !== undefined ? { labels: flags } : {}) };
}

function destinationOf(v: string, where: string): string {
  if (!/^[a-z][a-z0-9-]{0,62}$/.test(v)) throw new UsageError(`${where} is a lower-case name such as local or remote`);
  return v;
}

function envOf(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

function listenOf(raw: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(raw);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new UsageError('--listen needs host:port (e.g. 127.0.0.1:8931)');
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/**
 * The `--config` file: `{"mcpServers": {"<name>": {"command", "args",
 * "env", "cwd"} | {"url", "headers"}, each with an optional "trustgate"
 * member: the operator's entry for that server}, "trustgate": {...}}`. The
 * optional top-level `trustgate` member holds the proxy's own settings
 * (`policies`, `store`, `session`, `pollUs`, `sessionTtl`, `userAudience`,
 * `listen`, `destination`); a flag given on the command line wins over it.
 */
function readConfig(path: string, out: ProxyArgs, env: NodeJS.ProcessEnv): void {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new UsageError(`--config ${JSON.stringify(path)}: ${e.code === 'ENOENT' ? 'no such file' : e instanceof SyntaxError ? `not JSON (${e.message})` : e.message}`);
  }
  const where = `--config ${JSON.stringify(path)}`;
  if (!isRecord(doc) || !isRecord(doc.mcpServers)) throw new UsageError(`${where}: needs an object "mcpServers"`);
  const own = doc.trustgate;
  if (own !== undefined) {
    if (!isRecord(own)) throw new UsageError(`${where}: "trustgate" must be an object`);
    const known = new Set(['policies', 'store', 'session', 'pollUs', 'sessionTtl', 'userAudience', 'listen', 'destination']);
    for (const k of Object.keys(own)) if (!known.has(k)) throw new UsageError(`${where}: unknown setting "trustgate.${k.slice(0, 64)}" (settings: ${[...known].join(', ')})`);
    const str = (k: string): string | undefined => {
      if (own[k] === undefined) return undefined;
      if (typeof own[k] !== 'string' || own[k] === '') throw new UsageError(`${where}: "trustgate.${k}" must be a string`);
      return own[k] as string;
    };
    out.policies ??= str('policies');
    out.store ??= str('store');
    out.session ??= str('session');
    for (const k of ['pollUs', 'sessionTtl'] as const) {
      if (own[k] === undefined) continue;
      if (typeof own[k] !== 'number' && typeof own[k] !== 'string') throw new UsageError(`${where}: "trustgate.${k}" must be a number`);
      out[k] ??= String(own[k]);
    }
    if (own.userAudience !== undefined) {
      if (typeof own.userAudience !== 'boolean') throw new UsageError(`${where}: "trustgate.userAudience" must be true or false`);
      out.userAudience ||= own.userAudience;
    }
    const listen = str('listen');
    if (listen !== undefined) out.listen ??= listenOf(listen);
    const destination = str('destination');
    if (destination !== undefined) out.destination ??= destinationOf(destination, `${where}: "trustgate.destination"`);
  }
  const names = Object.keys(doc.mcpServers);
  if (names.length === 0) throw new UsageError(`${where}: "mcpServers" names no server`);
  const keys = new Set(names);
  for (const name of names) {
    const s = doc.mcpServers[name];
    const at = `${where}: server ${JSON.stringify(name.slice(0, 64))}`;
    if (!SERVER_NAME.test(name) || name.includes('__')) throw new UsageError(`${at}: a name is 1 to 64 of A-Z a-z 0-9 _ . - and holds no "__" (it prefixes the tools: <name>__<tool>)`);
    // `a` + `__` + `_send` and `a_` + `__` + `send` are one name: keys that differ by a trailing `_` could meet.
    if (keys.has(`${name}_`)) throw new UsageError(`${where}: servers ${JSON.stringify(name)} and ${JSON.stringify(`${name}_`)} could give two tools one name (<name>__<tool>); rename one`);
    if (!isRecord(s)) throw new UsageError(`${at}: must be an object`);
    let operator: OperatorEntry | undefined;
    if (s.trustgate !== undefined) {
      try {
        operator = checkOperatorEntry(s.trustgate, '');
      } catch (err) {
        if (err instanceof OperatorEntryError) throw new UsageError(`${at}: "trustgate": ${err.message}`);
        throw err;
      }
    }
    const entry = operator === undefined ? {} : { operator };
    if (typeof s.url === 'string') {
      const headers: Record<string, string> = {};
      if (s.headers !== undefined) {
        if (!isRecord(s.headers)) throw new UsageError(`${at}: "headers" must be an object of strings`);
        for (const [k, v] of Object.entries(s.headers)) {
          if (typeof v !== 'string') throw new UsageError(`${at}: "headers" must be an object of strings`);
          const [n, value] = header(`${k}: ${v}`, `${at}: header`);
          headers[n] = value;
        }
      }
      out.servers.push({ name, url: url(s.url, `${at}: "url"`), headers, ...entry });
      continue;
    }
    if (typeof s.command !== 'string' || s.command === '') throw new UsageError(`${at}: needs "command" (or "url")`);
    if (s.args !== undefined && !(Array.isArray(s.args) && s.args.every((a) => typeof a === 'string'))) throw new UsageError(`${at}: "args" must be a list of strings`);
    if (s.env !== undefined && !(isRecord(s.env) && Object.values(s.env).every((v) => typeof v === 'string'))) throw new UsageError(`${at}: "env" must be an object of strings`);
    if (s.cwd !== undefined && typeof s.cwd !== 'string') throw new UsageError(`${at}: "cwd" must be a string`);
    out.servers.push({
      name,
      command: s.command,
      args: (s.args as string[] | undefined) ?? [],
      // As hosts do: the server's own env over the proxy's.
      env: { ...envOf(env), ...((s.env as Record<string, string> | undefined) ?? {}) },
      ...(typeof s.cwd === 'string' ? { cwd: s.cwd } : {}),
      ...entry,
    });
  }
}
