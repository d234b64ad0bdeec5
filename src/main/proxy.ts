/**
 * `trustgate proxy`: the host starts Trustgate as its stdio MCP server and
 * Trustgate starts the real server as its child (`trustgate proxy [--]
 * <command> [args...]`), or reaches it over Streamable HTTP (`--upstream
 * <url>`), or serves several as one (`--config <mcpServers file>`,
 * gateway.ts). Options and the config file are read in options.ts.
 * Standard output is the MCP channel; logs go to standard error; a child
 * server's standard error is passed through to it.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { chmodSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { loopbackAddress } from '../http/browser.js';
import { createAuthentication } from '../http/identity.js';
import { createQuotas } from '../http/quota.js';
import { checkAuthentication, startBinding, type BindingProcess } from './start.js';
import { runGateway, type GatewayFront } from '../bindings/proxy/gateway.js';
import { parseProxyArgs, UsageError, USAGE, type ProxyArgs } from '../bindings/proxy/options.js';
import { batchedPerTurn } from '../bindings/proxy/batch.js';
import { IdlePoll } from '../bindings/proxy/poll.js';
import { PROCESS_CLOCK } from './poll-clock.js';
import { McpProxy } from '../bindings/proxy/relay.js';
import { describeFailure, keepAliveMs, storeName, upstreamOf } from '../bindings/proxy/upstream.js';

/** What the environment of a proxy says, from its flags and config keys (they win over the environment). */
function envOverrides(a: ProxyArgs): Record<string, string> {
  const env: Record<string, string> = {};
  if (a.store !== undefined) env.TRUSTGATE_SESSION_STORE = a.store;
  if (a.pollUs !== undefined) env.TRUSTGATE_PROXY_POLL_US = a.pollUs;
  if (a.sessionTtl !== undefined) env.TRUSTGATE_SESSION_TTL = a.sessionTtl;
  return env;
}

/** The folder of this user's private files (tokens, session locks): 0700. */
function privateDir(): string {
  const dir = join(process.env.XDG_RUNTIME_DIR || tmpdir(), `trustgate-${userInfo().uid}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * A session named with --session on the memory store lives in this process
 * only: a second proxy given the same id would judge under a session of its
 * own, silently private to it. So the first holds the id (a lock file with
 * its pid, released at exit) and a second refuses to start, naming the
 * store; proxies that must share one session use a shared store (Redis).
 */
function holdSession(id: string): void {
  const lock = join(privateDir(), `session-${createHash('sha256').update(id).digest('hex').slice(0, 32)}.lock`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx', mode: 0o600 });
      process.once('exit', () => {
        try {
          if (readFileSync(lock, 'utf8') === String(process.pid)) unlinkSync(lock);
        } catch {
          // already gone
        }
      });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(lock, 'utf8'));
      if (Number.isSafeInteger(holder) && holder > 0 && running(holder)) {
        process.stderr.write(
          `trustgate proxy: the session given is already judged by trustgate process ${holder} on the memory store, which keeps a session in its own process: give every proxy that shares it TRUSTGATE_SESSION_STORE=redis://... (--store), or another session\n`,
        );
        process.exit(2);
      }
      // Its holder is gone: the lock is stale.
      unlinkSync(lock);
    }
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The HTTP front's authentication (docs/operations/authentication.md): the
 * configured one; on loopback without any, a token made now, written to a
 * file only this user can read, and named on standard error (as Jupyter
 * does) so that a host config can send it; beyond loopback without any, no
 * start unless TRUSTGATE_INSECURE_NO_AUTH=1.
 */
function gatewayFront(config: Config, host: string, port: number, b: BindingProcess): GatewayFront {
  const say = (line: string) => void process.stderr.write(`trustgate proxy: ${line}\n`);
  let auth = checkAuthentication(config, host, 'the gateway', { log: b.log, exit: (code) => process.exit(code), makesToken: true })!;
  if (!auth.configured && loopbackAddress(host) && !config.insecureNoAuth) {
    const token = randomBytes(32).toString('base64url');
    const file = join(privateDir(), `gateway-${port === 0 ? process.pid : port}.token`);
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    auth = createAuthentication({ token });
    say(`no authentication was configured: hosts send "Authorization: Bearer <the token in ${file}>" (only this user can read it)`);
    b.log.info({ file }, 'gateway token made');
  }
  const quotas = createQuotas(config.quotas, config);
  return {
    auth,
    quotas,
    authorizationServers: config.jwt !== undefined ? [config.jwt.issuer] : [],
    onRefused: (status, reason) => (status === 401 ? b.metrics.authRefused : b.metrics.quotaRefused).labels({ reason }).inc(),
  };
}

function usage(problem: string): never {
  process.stderr.write(`trustgate proxy: ${problem} (trustgate proxy --help)\n`);
  process.exit(2);
}

export async function runProxy(argv: string[], shippedPolicies: string): Promise<void> {
  let a: ProxyArgs;
  try {
    a = parseProxyArgs(argv, process.env);
  } catch (err) {
    if (err instanceof UsageError) usage(err.message);
    throw err;
  }
  if (a.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const b = await startBinding(a.policies, shippedPolicies, 'proxy', envOverrides(a));
  const { config, log } = b;
  if (a.session !== undefined && config.sessionStore === 'memory') holdSession(a.session);
  const sessionMode = a.session !== undefined ? 'shared (--session)' : 'one per host connection';
  log.info({ store: storeName(config.sessionStore), policies: config.policyDir, session: sessionMode, servers: a.servers.map((s) => s.name), userAudience: a.userAudience }, 'proxy starting');
  const poll = new IdlePoll(config.proxyPollUs / 1000, PROCESS_CLOCK);
  const drop = (reason: string) => b.metrics.proxyDropped.labels({ reason }).inc();
  if (a.gateway) {
    const front = a.listen === undefined ? undefined : gatewayFront(config, a.listen.host, a.listen.port, b);
    await runGateway({
      ...(front ? { front } : {}),
      args: a,
      binding: b,
      poll,
      onDrop: drop,
      host: {
        onInputEnd: (f) => void process.stdin.once('end', f),
        onStop: (f) => {
          for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, f);
        },
        say: (line) => void process.stderr.write(`${line}\n`),
        exit: (code) => process.exit(code),
        stdout: process.stdout,
      },
    });
    return;
  }
  const spec = a.servers[0]!;
  const host = batchedPerTurn(new StdioServerTransport(), () => process.stdout);
  const proxy = new McpProxy({
    core: b.core,
    host,
    upstream: upstreamOf(spec, log),
    log,
    serverName: spec.name,
    operator: spec.operator,
    destination: a.destination,
    ...(a.session !== undefined ? { sessionId: a.session } : {}),
    ...(a.userAudience ? { context: { hostShowsUserAudience: true } } : {}),
    pinTools: b.pinTools,
    decisionLog: b.decisionLog,
    keepAliveMs: keepAliveMs(config.sessionTtlSeconds),
    onActivity: () => poll.touch(),
    onDrop: drop,
    describeFailure: (err) => describeFailure(err, spec),
    onClose: () => {
      poll.stop();
      process.exit(0);
    },
  });
  process.stdin.once('end', () => void proxy.close('host'));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void proxy.close(signal));
  try {
    await proxy.start();
  } catch (err) {
    const why = describeFailure(err, spec);
    log.error({ server: spec.name, err: why }, 'could not start the server');
    process.stderr.write(`trustgate proxy: could not start the server: ${why}\n`);
    process.exit(1);
  }
  log.info({ session: proxy.sessionId }, 'proxy ready on stdio');
}
