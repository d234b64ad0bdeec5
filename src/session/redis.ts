/**
 * The Redis session store (TRUSTGATE_SESSION_STORE=redis://...), Redis 6 or
 * later, so that several replicas share sessions and pins.
 *
 * Every write is one Lua script run by Redis itself (EVALSHA through
 * ioredis' defineCommand): the merge of mergeSession() in store.ts, and the
 * TTL touch, happen atomically on the server, so two replicas updating one
 * session at once never lose either update (no read-modify-write in the
 * client). Pins are set-if-absent inside a script too.
 *
 * Keys: `trustgate:session:<id>` (a hash; ids are validated by the routes,
 * and the prefix keeps them apart from anything else) and
 * `trustgate:pin:<JSON of [server, tool]>` (server and tool names are any
 * strings: their JSON text is an unambiguous, injective encoding, so no name
 * can reach another pair's key or another namespace).
 *
 * Strings the script compares or stores (tool names, data classes,
 * regulatory tags) travel as their JSON text: JSON.stringify escapes lone
 * surrogates and control characters, so two different JavaScript strings
 * never become the same bytes and a token never holds a newline, which
 * separates tokens in the stored lists.
 *
 * Fail closed: commands time out after `commandTimeoutMs`, nothing queues
 * while the connection is down (enableOfflineQueue false), in-flight
 * commands of a dropped connection are rejected rather than resent, and
 * every failure rejects with SessionStoreUnavailable. The client
 * reconnects by itself; healthy() is false from a failure (or a lost
 * connection) until the next success. A ping every few seconds keeps
 * healthy() true to the server's state when no requests come.
 */
import { Redis } from 'ioredis';
import { parseRedisUrl } from './url.js';
import {
  dataClassRank,
  SessionStoreUnavailable,
  type PinCheck,
  type SessionState,
  type SessionStore,
  type SessionUpdate,
} from './store.js';

export const KEY_PREFIX = 'trustgate:';

/** `session` key of an id. */
export function sessionKey(id: string): string {
  return `${KEY_PREFIX}session:${id}`;
}

/** `pin` key of a (server, tool) pair. */
export function pinKey(server: string, tool: string): string {
  return `${KEY_PREFIX}pin:${JSON.stringify([server, tool])}`;
}

/**
 * Fields of a session hash: s sensitive, u untrusted, c calls, r results,
 * t tools (JSON tokens, newline-separated), tn tool count, dc data class
 * (JSON token), dk its rank, rg regulatory tags (JSON tokens, newline-separated).
 *
 * ARGV: 1 ttl ms, 2 sensitive, 3 untrusted, 4 call, 5 tool token,
 * 6 result, 7 has data class, 8 its rank (compared), 9 the rank stored with
 * it, 10 class token, 11 regulatory tokens, 12 most tools kept.
 */
const MERGE_LUA = `
local k = KEYS[1]
local function has(list, tok)
  for x in string.gmatch(list, '[^\\n]+') do
    if x == tok then return true end
  end
  return false
end
redis.call('HSETNX', k, 'c', 0)
redis.call('HSETNX', k, 'r', 0)
if ARGV[2] == '1' then redis.call('HSET', k, 's', '1') end
if ARGV[3] == '1' then redis.call('HSET', k, 'u', '1') end
if ARGV[4] == '1' then
  redis.call('HINCRBY', k, 'c', 1)
  local tok = ARGV[5]
  local t = redis.call('HGET', k, 't') or ''
  local n = tonumber(redis.call('HGET', k, 'tn') or '0')
  if n < tonumber(ARGV[12]) and not has(t, tok) then
    if t == '' then t = tok else t = t .. '\\n' .. tok end
    redis.call('HSET', k, 't', t, 'tn', n + 1)
  end
end
if ARGV[6] == '1' then redis.call('HINCRBY', k, 'r', 1) end
if ARGV[7] == '1' then
  local dk = redis.call('HGET', k, 'dk')
  if not dk or tonumber(dk) < tonumber(ARGV[8]) then
    redis.call('HSET', k, 'dc', ARGV[10], 'dk', ARGV[9])
  end
  local rg = redis.call('HGET', k, 'rg') or ''
  for tok in string.gmatch(ARGV[11], '[^\\n]+') do
    if not has(rg, tok) then
      if rg == '' then rg = tok else rg = rg .. '\\n' .. tok end
    end
  end
  redis.call('HSET', k, 'rg', rg)
end
redis.call('PEXPIRE', k, ARGV[1])
return redis.call('HGETALL', k)
`;

/** The session, touching its TTL; an empty list when there is none. ARGV: 1 ttl ms. */
const GET_LUA = `
local k = KEYS[1]
if redis.call('PEXPIRE', k, ARGV[1]) == 0 then return {} end
return redis.call('HGETALL', k)
`;

/** Pin ARGV[1] when nothing is pinned; answers what was pinned before (false when nothing). */
const PIN_LUA = `
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1])
return false
`;

interface Scripts {
  tgMerge(key: string, ...args: (string | number)[]): Promise<string[]>;
  tgGet(key: string, ttl: number): Promise<string[]>;
  tgPin(key: string, digest: string): Promise<string | null>;
}

export interface RedisStoreOptions {
  /** `redis://[user:password@]host[:port][/db]` (or `rediss://` for TLS). */
  url: string;
  ttlMs: number;
  /** A command not answered in this time fails (SessionStoreUnavailable). */
  commandTimeoutMs?: number;
  /** How often an idle client checks that the server answers. */
  pingMs?: number;
  maxTools?: number;
  /** Called once per failed operation (the store-errors metric). */
  onError?: (operation: string) => void;
  /** Told when the server becomes unreachable and when it is back (never with session content). */
  onHealth?: (healthy: boolean, reason: string) => void;
}

/** The state a session hash holds (HGETALL as a flat list); undefined when empty. */
export function stateFromHash(flat: readonly string[]): SessionState | undefined {
  if (flat.length === 0) return undefined;
  const h = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) h.set(flat[i]!, flat[i + 1]!);
  const tokens = (f: string): string[] => {
    const v = h.get(f);
    return v === undefined || v === '' ? [] : v.split('\n').map((t) => JSON.parse(t) as string);
  };
  const state: SessionState = {
    sensitive: h.get('s') === '1',
    untrusted: h.get('u') === '1',
    calls: Number(h.get('c') ?? 0),
    results: Number(h.get('r') ?? 0),
    tools: tokens('t'),
  };
  const dc = h.get('dc');
  // The store keeps the union in arrival order; the answer is sorted, as mergeSession's is.
  if (dc !== undefined) state.dataClass = { class: JSON.parse(dc) as string, regulatory: tokens('rg').sort() };
  return state;
}

/** The script's arguments for an update. */
export function mergeArgs(u: SessionUpdate, ttlMs: number, maxTools: number): (string | number)[] {
  const dc = u.dataClass;
  return [
    ttlMs,
    u.sensitive === true ? '1' : '0',
    u.untrusted === true ? '1' : '0',
    u.call ? '1' : '0',
    u.call ? JSON.stringify(u.call.tool) : '',
    u.result ? '1' : '0',
    dc ? '1' : '0',
    dc ? dc.rank : 0,
    dc ? dataClassRank(dc.class) : 0,
    dc ? JSON.stringify(dc.class) : '',
    dc ? dc.regulatory.map((r) => JSON.stringify(r.toLowerCase())).join('\n') : '',
    maxTools,
  ];
}

export class RedisSessionStore implements SessionStore {
  private readonly client: Redis & Scripts;
  private readonly ttlMs: number;
  private readonly maxTools: number;
  private readonly ping: NodeJS.Timeout;
  /** A command failed since the last success (the connection may still look open: a server that hangs). */
  private failing = false;
  private closed = false;
  private lastHealth = true;

  constructor(private readonly opts: RedisStoreOptions) {
    this.ttlMs = opts.ttlMs;
    this.maxTools = opts.maxTools ?? 1000;
    const timeout = opts.commandTimeoutMs ?? 1_000;
    this.client = new Redis({
      ...parseRedisUrl(opts.url),
      commandTimeout: timeout,
      connectTimeout: Math.max(timeout, 2_000),
      // Fail at once while the connection is down; never resend a command whose request already failed.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      // Reconnect forever, quickly at first, then every 2 s.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
      // RESP2: what every Redis 6+ speaks, without a HELLO round trip.
      protocol: 2,
      lazyConnect: false,
      connectionName: 'trustgate',
      disableClientInfo: true,
    }) as Redis & Scripts;
    this.client.defineCommand('tgMerge', { numberOfKeys: 1, lua: MERGE_LUA });
    this.client.defineCommand('tgGet', { numberOfKeys: 1, lua: GET_LUA });
    this.client.defineCommand('tgPin', { numberOfKeys: 1, lua: PIN_LUA });
    // Without a listener, ioredis reports every connection error on stderr.
    this.client.on('error', (err: Error) => this.health(false, err.message));
    this.client.on('close', () => this.health(false, 'connection closed'));
    this.client.on('ready', () => {
      this.failing = false;
      this.health(true, 'connected');
    });
    this.ping = setInterval(() => {
      if (this.client.status !== 'ready') return;
      this.client.ping().then(
        () => this.ok(),
        () => this.fail(),
      );
    }, opts.pingMs ?? 2_000);
    this.ping.unref();
  }

  /** Resolves once connected (or rejects after `ms`): for callers that want to wait at start-up. */
  async waitReady(ms: number): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        this.client.off('ready', onReady);
        reject(new SessionStoreUnavailable('the Redis session store did not answer in time'));
      }, ms);
      const onReady = (): void => {
        clearTimeout(t);
        resolve();
      };
      this.client.once('ready', onReady);
    });
  }

  private health(healthy: boolean, reason: string): void {
    if (this.closed || healthy === this.lastHealth) return;
    this.lastHealth = healthy;
    this.opts.onHealth?.(healthy, reason);
  }

  private ok(): void {
    if (this.failing) {
      this.failing = false;
      this.health(true, 'answering again');
    }
  }

  private fail(): void {
    this.failing = true;
    this.health(false, 'a command failed');
  }

  /** Run one operation; every failure becomes SessionStoreUnavailable (the cause's message names no content). */
  private async run<T>(operation: string, f: () => Promise<T>): Promise<T> {
    if (this.closed) throw new SessionStoreUnavailable('the session store is closed');
    try {
      const v = await f();
      this.ok();
      return v;
    } catch (err) {
      this.fail();
      this.opts.onError?.(operation);
      throw new SessionStoreUnavailable(`the Redis session store failed (${operation}): ${(err as Error)?.message ?? String(err)}`);
    }
  }

  get(id: string): Promise<SessionState | undefined> {
    return this.run('get', async () => stateFromHash(await this.client.tgGet(sessionKey(id), this.ttlMs)));
  }

  update(id: string, update: SessionUpdate): Promise<SessionState> {
    return this.run('update', async () => {
      const state = stateFromHash(await this.client.tgMerge(sessionKey(id), ...mergeArgs(update, this.ttlMs, this.maxTools)));
      if (!state) throw new Error('the merge script answered no state');
      return state;
    });
  }

  delete(id: string): Promise<boolean> {
    return this.run('delete', async () => (await this.client.del(sessionKey(id))) > 0);
  }

  checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    return this.run('pin', async () => {
      const before = await this.client.tgPin(pinKey(server, tool), digest);
      if (before === null) return { status: 'first-seen', pinned: digest };
      return { status: before === digest ? 'match' : 'changed', pinned: before };
    });
  }

  acceptPin(server: string, tool: string, digest: string): Promise<void> {
    return this.run('pin', async () => {
      await this.client.set(pinKey(server, tool), digest);
    });
  }

  getPin(server: string, tool: string): Promise<string | undefined> {
    return this.run('pin', async () => (await this.client.get(pinKey(server, tool))) ?? undefined);
  }

  healthy(): boolean {
    return !this.closed && this.client.status === 'ready' && !this.failing;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.ping);
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
