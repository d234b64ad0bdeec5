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
 * Never forget silently (docs/bindings/proxy.md): a session key outlives its
 * TTL by one more TTL (its forgotten window), in which a use reads it as
 * forgotten; the marker key `trustgate:store` tells when Redis lost its data
 * (see PRELUDE). Redis's own eviction must not drop keys (`maxmemory-policy
 * noeviction`): a dropped marker reads as a loss, a dropped session cannot
 * be noticed.
 *
 * Keys: `trustgate:session:<id>` (a hash; ids are validated by the routes,
 * and the prefix keeps them apart from anything else), `trustgate:store`,
 * `trustgate:pins` (how many pins are held) and
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
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseRedisUrl } from './url.js';
import { failClosedRedis, firstConnection, untilReady } from './redis-client.js';
import {
  dataClassRank,
  mergedFor,
  SessionStoreFull,
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
 * The start of every session script: Redis's clock, and the store marker
 * KEYS[2] (`trustgate:store`, a hash: `epoch`, a random id made when the
 * marker was created; `lost`, ms until which an id not found reads as
 * forgotten). ARGV: 1 ttl ms, 2 the epoch this client knows ('' before its
 * first answer), 3 a fresh epoch for a marker that is missing.
 *
 * A marker that is missing or carries another epoch than a client knew
 * means the store lost its data (a restart without persistence, FLUSHALL,
 * or the marker evicted): every session live then would have expired
 * within one TTL, so until now + TTL every id not found reads as forgotten
 * (what Trustgate cannot know, it assumes tainted).
 */
const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local known = ARGV[2]
local epoch = redis.call('HGET', KEYS[2], 'epoch')
local lost = tonumber(redis.call('HGET', KEYS[2], 'lost') or '0')
local changed = false
if not epoch then
  epoch = ARGV[3]
  redis.call('HSET', KEYS[2], 'epoch', epoch)
  changed = known ~= ''
elseif known ~= '' and epoch ~= known then
  changed = true
end
if changed and lost < now + ttl then
  lost = now + ttl
  redis.call('HSET', KEYS[2], 'lost', lost)
end
`;

/**
 * The session KEYS[1] as the store holds it: a key whose expiry (field e,
 * ms) has passed is in its forgotten window (the key itself lives one more
 * TTL): its labels are dropped; a key not found while the store's loss is
 * recent reads as forgotten too. A forgotten session is written as one
 * (f, s, u set) and is then used like any other.
 */
const SESSION = `
local k = KEYS[1]
local forgotten = false
local e = redis.call('HGET', k, 'e')
if e then
  if tonumber(e) <= now then
    redis.call('DEL', k)
    forgotten = true
  end
elseif now < lost and redis.call('EXISTS', k) == 0 then
  forgotten = true
end
if forgotten then
  redis.call('HSET', k, 'f', '1', 's', '1', 'u', '1', 'c', 0, 'r', 0)
end
local function touch()
  redis.call('HSET', k, 'e', now + ttl)
  redis.call('PEXPIRE', k, 2 * ttl)
end
`;

/**
 * Fields of a session hash: f forgotten, s sensitive, u untrusted, c calls,
 * r results, t tools (JSON tokens, newline-separated), tn tool count, dc
 * data class (JSON token), dk its rank, rg regulatory tags (JSON tokens,
 * newline-separated), e when the TTL runs out (ms, Redis's clock).
 *
 * ARGV (after the prelude's three): 4 sensitive, 5 untrusted, 6 call,
 * 7 tool token, 8 result, 9 has data class, 10 its rank (compared), 11 the
 * rank stored with it, 12 class token, 13 regulatory tokens, 14 most tools kept,
 * 15 the writer's owner key. A session another owner holds (field o) is
 * answered as it is, unchanged: the caller rejects with SessionNotOwned.
 */
const MERGE_LUA = `${PRELUDE}${SESSION}
local function has(list, tok)
  for x in string.gmatch(list, '[^\\n]+') do
    if x == tok then return true end
  end
  return false
end
local o = redis.call('HGET', k, 'o')
if o and o ~= ARGV[15] then return {epoch, redis.call('HGETALL', k)} end
redis.call('HSET', k, 'o', ARGV[15])
redis.call('HSETNX', k, 'c', 0)
redis.call('HSETNX', k, 'r', 0)
if ARGV[4] == '1' then redis.call('HSET', k, 's', '1') end
if ARGV[5] == '1' then redis.call('HSET', k, 'u', '1') end
if ARGV[6] == '1' then
  redis.call('HINCRBY', k, 'c', 1)
  local tok = ARGV[7]
  local tl = redis.call('HGET', k, 't') or ''
  local n = tonumber(redis.call('HGET', k, 'tn') or '0')
  if n < tonumber(ARGV[14]) and not has(tl, tok) then
    if tl == '' then tl = tok else tl = tl .. '\\n' .. tok end
    redis.call('HSET', k, 't', tl, 'tn', n + 1)
  end
end
if ARGV[8] == '1' then redis.call('HINCRBY', k, 'r', 1) end
if ARGV[9] == '1' then
  local dk = redis.call('HGET', k, 'dk')
  if not dk or tonumber(dk) < tonumber(ARGV[10]) then
    redis.call('HSET', k, 'dc', ARGV[12], 'dk', ARGV[11])
  end
  local rg = redis.call('HGET', k, 'rg') or ''
  for tok in string.gmatch(ARGV[13], '[^\\n]+') do
    if not has(rg, tok) then
      if rg == '' then rg = tok else rg = rg .. '\\n' .. tok end
    end
  end
  redis.call('HSET', k, 'rg', rg)
end
touch()
return {epoch, redis.call('HGETALL', k)}
`;

/** The session, touching its TTL; an empty list when there is none or another owner (ARGV[4], field o) holds it. */
const GET_LUA = `${PRELUDE}${SESSION}
if redis.call('EXISTS', k) == 0 then return {epoch, {}} end
local o = redis.call('HGET', k, 'o')
if o and o ~= ARGV[4] then return {epoch, {}} end
touch()
return {epoch, redis.call('HGETALL', k)}
`;

/**
 * End a session (1 when one was held, 0 when none or another owner holds
 * it, ARGV[4]): what it was shown is dropped and the id reads as forgotten,
 * still its owner's, for one more TTL (a key in its forgotten window, or
 * one not found while the store's loss is recent, reads as forgotten and
 * is ended the same way).
 */
const DELETE_LUA = `${PRELUDE}
local k = KEYS[1]
local e = redis.call('HGET', k, 'e')
local live = e and tonumber(e) > now
if not e and not (now < lost and redis.call('EXISTS', k) == 0) then return {epoch, 0} end
local o = redis.call('HGET', k, 'o')
if live and o and o ~= ARGV[4] then return {epoch, 0} end
if not (live and o) then o = ARGV[4] end
redis.call('DEL', k)
redis.call('HSET', k, 'f', '1', 's', '1', 'u', '1', 'c', 0, 'r', 0, 'o', o, 'e', now + ttl)
redis.call('PEXPIRE', k, 2 * ttl)
return {epoch, 1}
`;

/** Learn the store's epoch (at connection), noticing a loss while the connection was down. */
const EPOCH_LUA = `${PRELUDE}
return {epoch, 0}
`;

/**
 * Pin ARGV[1] when nothing is pinned and fewer than ARGV[2] pins are held
 * (KEYS[2] counts them; pins never expire); answers what was pinned before,
 * false when it pinned, 0 when the bound refused the pin.
 */
const PIN_LUA = `
local v = redis.call('GET', KEYS[1])
if v then return v end
if tonumber(redis.call('GET', KEYS[2]) or '0') >= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[2])
return false
`;

/** Set the pin (an operator's): 1, or 0 when the pair is new and ARGV[2] pins are held. */
const ACCEPT_LUA = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  if tonumber(redis.call('GET', KEYS[2]) or '0') >= tonumber(ARGV[2]) then return 0 end
  redis.call('INCR', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`;

/** The store marker (see PRELUDE). */
export const STORE_KEY = `${KEY_PREFIX}store`;
/** How many pins are held. */
export const PIN_COUNT_KEY = `${KEY_PREFIX}pins`;

type Epoch<T> = [string, T];

interface Scripts {
  tgMerge(key: string, store: string, ...args: (string | number)[]): Promise<Epoch<string[]>>;
  tgGet(key: string, store: string, ttl: number, known: string, fresh: string, owner: string): Promise<Epoch<string[]>>;
  tgDelete(key: string, store: string, ttl: number, known: string, fresh: string, owner: string): Promise<Epoch<number>>;
  tgEpoch(store: string, store2: string, ttl: number, known: string, fresh: string): Promise<Epoch<number>>;
  tgPin(key: string, count: string, digest: string, max: number): Promise<string | number | null>;
  tgAccept(key: string, count: string, digest: string, max: number): Promise<number>;
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
  /** Most pins; a new pin past it is refused. */
  maxPins?: number;
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
    forgotten: h.get('f') === '1',
    sensitive: h.get('s') === '1',
    untrusted: h.get('u') === '1',
    calls: Number(h.get('c') ?? 0),
    results: Number(h.get('r') ?? 0),
    tools: tokens('t'),
  };
  const owner = h.get('o');
  if (owner !== undefined) state.owner = owner;
  const dc = h.get('dc');
  // The store keeps the union in arrival order; the answer is sorted, as mergeSession's is.
  if (dc !== undefined) state.dataClass = { class: JSON.parse(dc) as string, regulatory: tokens('rg').sort() };
  return state;
}

/** The script's arguments for an update, after the prelude's. */
export function mergeArgs(u: SessionUpdate, maxTools: number): (string | number)[] {
  const dc = u.dataClass;
  return [
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
    u.owner ?? '',
  ];
}

/**
 * Whether the Redis server has the database the URL names: ioredis
 * selects it on connecting and, when the server refuses (`ERR DB index is
 * out of range`), goes on with database 0, where every replica configured
 * with another number would meet it. Answers the server's refusal, or
 * undefined when the database is there or the server cannot be asked in
 * `timeoutMs` (then requests fail closed until it answers, as ever).
 */
export async function missingDatabase(url: string, timeoutMs: number): Promise<string | undefined> {
  const { db = 0, ...opts } = parseRedisUrl(url);
  if (db === 0) return undefined;
  const client = new Redis({ ...opts, db: 0, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs, commandTimeout: timeoutMs, protocol: 2 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch {
    client.disconnect();
    return undefined;
  }
  try {
    await client.select(db);
    return undefined;
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    // Only the server's refusal of the number counts; a timeout or a dropped connection says nothing about it.
    return /\bDB index\b|\bout of range\b|invalid DB/i.test(message) ? `database ${db}: ${message}` : undefined;
  } finally {
    client.disconnect();
  }
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
  /** The store marker's epoch as this client last saw it ('' before the first answer). */
  private epoch = '';
  private readonly maxPins: number;
  /** How long a command may take; also how long a request waits for the first connection. */
  private readonly timeoutMs: number;

  constructor(private readonly opts: RedisStoreOptions) {
    this.ttlMs = opts.ttlMs;
    this.maxTools = opts.maxTools ?? 1000;
    this.maxPins = opts.maxPins ?? Number.MAX_SAFE_INTEGER;
    this.timeoutMs = opts.commandTimeoutMs ?? 1_000;
    this.client = failClosedRedis(opts.url, this.timeoutMs, 'trustgate') as Redis & Scripts;
    this.client.defineCommand('tgMerge', { numberOfKeys: 2, lua: MERGE_LUA });
    this.client.defineCommand('tgGet', { numberOfKeys: 2, lua: GET_LUA });
    this.client.defineCommand('tgDelete', { numberOfKeys: 2, lua: DELETE_LUA });
    this.client.defineCommand('tgEpoch', { numberOfKeys: 2, lua: EPOCH_LUA });
    this.client.defineCommand('tgPin', { numberOfKeys: 2, lua: PIN_LUA });
    this.client.defineCommand('tgAccept', { numberOfKeys: 2, lua: ACCEPT_LUA });
    // Without a listener, ioredis reports every connection error on stderr.
    this.client.on('error', (err: Error) => this.health(false, err.message));
    this.client.on('close', () => this.health(false, 'connection closed'));
    this.client.on('ready', () => {
      this.failing = false;
      this.health(true, 'connected');
      // Learn the epoch at once (a loss while the connection was down is noticed here); a failure waits for the next use.
      this.client.tgEpoch(STORE_KEY, STORE_KEY, this.ttlMs, this.epoch, randomUUID()).then(
        (r) => this.learn(r),
        () => undefined,
      );
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
    await untilReady(this.client, ms).catch(() => {
      throw new SessionStoreUnavailable('the Redis session store did not answer in time');
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
      await firstConnection(this.client, this.timeoutMs);
      const v = await f();
      this.ok();
      return v;
    } catch (err) {
      this.fail();
      this.opts.onError?.(operation);
      throw new SessionStoreUnavailable(`the Redis session store failed (${operation}): ${(err as Error)?.message ?? String(err)}`);
    }
  }

  /** Keep the epoch a script answered; answer its payload. */
  private learn<T>(r: Epoch<T>): T {
    if (typeof r[0] === 'string' && r[0] !== '') this.epoch = r[0];
    return r[1];
  }

  get(id: string, owner?: string): Promise<SessionState | undefined> {
    return this.run('get', async () => stateFromHash(this.learn(await this.client.tgGet(sessionKey(id), STORE_KEY, this.ttlMs, this.epoch, randomUUID(), owner ?? ''))));
  }

  async update(id: string, update: SessionUpdate): Promise<SessionState> {
    const state = await this.run('update', async () => {
      const r = await this.client.tgMerge(sessionKey(id), STORE_KEY, this.ttlMs, this.epoch, randomUUID(), ...mergeArgs(update, this.maxTools));
      const state = stateFromHash(this.learn(r));
      if (!state) throw new Error('the merge script answered no state');
      return state;
    });
    return mergedFor(state, update);
  }

  delete(id: string, owner?: string): Promise<boolean> {
    return this.run('delete', async () => this.learn(await this.client.tgDelete(sessionKey(id), STORE_KEY, this.ttlMs, this.epoch, randomUUID(), owner ?? '')) > 0);
  }

  checkPin(server: string, tool: string, digest: string): Promise<PinCheck> {
    return this.run('pin', async () => {
      const before = await this.client.tgPin(pinKey(server, tool), PIN_COUNT_KEY, digest, this.maxPins);
      if (before === null) return { status: 'first-seen', pinned: digest };
      if (typeof before === 'number') return { status: 'unavailable', pinned: digest };
      return { status: before === digest ? 'match' : 'changed', pinned: before };
    });
  }

  async acceptPin(server: string, tool: string, digest: string): Promise<void> {
    const set = await this.run('pin', () => this.client.tgAccept(pinKey(server, tool), PIN_COUNT_KEY, digest, this.maxPins));
    if (set === 0) throw new SessionStoreFull(`the store holds TRUSTGATE_MAX_PINS (${this.maxPins}) pins: no new pin`);
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
