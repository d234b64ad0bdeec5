/**
 * The values sessions have seen (flows.ts) in Redis, shared by replicas:
 * one hash per session, `trustgate:flows:<id>`, field = digest, value =
 * `<bits>|<source>\t<source>...`, with the count under `!n` and the
 * overflow mark under `!o` (digests are base64url: no field of theirs
 * starts with `!`). Every write is one Lua script run by Redis itself, so
 * replicas merging into one session at once never lose a write; the hash
 * lives two TTLs after its last use. The store's random flow key is
 * `trustgate:flowkey`, set once (SET NX), so every replica digests alike.
 */
import type { Redis } from 'ioredis';
import { MAX_SOURCES, newFlowKey, type FlowEntry, type FlowWrite } from '../flows/origin.js';
import type { FlowRead, FlowStore, FlowStoreOptions } from './flows.js';
import { SessionStoreUnavailable } from './store.js';
import { failClosedRedis, firstConnection } from './redis-client.js';

const KEY = 'trustgate:flowkey';
const PREFIX = 'trustgate:flows:';
/** Writes per script call: a result's values go in chunks, each merged atomically (merges commute). */
const CHUNK = 2_000;

const RECORD_LUA = `
local k = KEYS[1]
local max = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local was = redis.call('HGET', k, '!o') == '1'
local over = was or tonumber(ARGV[3]) > 0
local n = tonumber(redis.call('HGET', k, '!n') or '0')
for i = 4, #ARGV, 3 do
  local d = ARGV[i]
  local bits = tonumber(ARGV[i + 1])
  local src = ARGV[i + 2]
  local v = redis.call('HGET', k, d)
  if v then
    local sep = string.find(v, '|', 1, true)
    local old = tonumber(string.sub(v, 1, sep - 1))
    local srcs = string.sub(v, sep + 1)
    local count = 0
    local has = false
    if srcs ~= '' then
      for s in string.gmatch(srcs, '[^\\t]+') do
        count = count + 1
        if s == src then has = true end
      end
    end
    if src ~= '' and not has and count < ${MAX_SOURCES} then
      if srcs == '' then srcs = src else srcs = srcs .. '\\t' .. src end
    end
    redis.call('HSET', k, d, bit.bor(old, bits) .. '|' .. srcs)
  elseif n < max then
    n = n + 1
    redis.call('HSET', k, d, bits .. '|' .. src)
  else
    over = true
  end
end
redis.call('HSET', k, '!n', n)
if over then redis.call('HSET', k, '!o', '1') end
redis.call('PEXPIRE', k, ttl)
if over and not was then return 2 end
if over then return 1 end
return 0
`;

type Scripts = { tgFlows(key: string, ...args: Array<string | number>): Promise<number> };

/** A source as stored: no separator of the stored form in it. */
const cleanSource = (s: string) => s.replace(/[\t|]/g, ' ');

export class RedisFlowStore implements FlowStore {
  readonly #client: Redis & Scripts;
  #key: Promise<Uint8Array> | undefined;

  constructor(
    url: string,
    private readonly opts: FlowStoreOptions & { commandTimeoutMs: number },
  ) {
    this.#client = failClosedRedis(url, opts.commandTimeoutMs, 'trustgate-flows') as Redis & Scripts;
    this.#client.defineCommand('tgFlows', { numberOfKeys: 1, lua: RECORD_LUA });
    this.#client.on('error', () => {});
    if (opts.key !== undefined) this.#key = Promise.resolve(opts.key);
  }

  async #run<T>(operation: string, f: () => Promise<T>): Promise<T> {
    try {
      await firstConnection(this.#client, this.opts.commandTimeoutMs);
      return await f();
    } catch (err) {
      throw new SessionStoreUnavailable(`the flow store failed (${operation}): ${(err as Error)?.message ?? 'error'}`);
    }
  }

  key(): Promise<Uint8Array> {
    this.#key ??= this.#run('key', async () => {
      await this.#client.set(KEY, newFlowKey().toString('base64'), 'NX');
      const v = await this.#client.get(KEY);
      if (v === null) throw new Error('the flow key vanished');
      return new Uint8Array(Buffer.from(v, 'base64'));
    }).catch((err: unknown) => {
      this.#key = undefined;
      throw err;
    });
    return this.#key;
  }

  record(id: string, writes: readonly FlowWrite[], dropped: number): Promise<{ overflow: boolean }> {
    return this.#run('record', async () => {
      const ttl = 2 * this.opts.ttlMs;
      let overflow = false;
      let first = false;
      for (let i = 0; i === 0 || i < writes.length; i += CHUNK) {
        const args: Array<string | number> = [this.opts.maxValues, ttl, i === 0 ? dropped : 0];
        for (const w of writes.slice(i, i + CHUNK)) args.push(w.digest, w.bits, cleanSource(w.source));
        const r = await this.#client.tgFlows(PREFIX + id, ...args);
        if (r > 0) overflow = true;
        if (r === 2) first = true;
      }
      if (first) this.opts.onOverflow?.();
      return { overflow };
    });
  }

  read(id: string, digests: readonly string[]): Promise<FlowRead> {
    return this.#run('read', async () => {
      const k = PREFIX + id;
      const [values] = await Promise.all([this.#client.hmget(k, '!o', ...digests), this.#client.pexpire(k, 2 * this.opts.ttlMs)]);
      const entries = new Map<string, FlowEntry>();
      for (let i = 0; i < digests.length; i++) {
        const v = values[i + 1];
        if (v === null || v === undefined) continue;
        const sep = v.indexOf('|');
        entries.set(digests[i]!, { bits: Number(v.slice(0, sep)), sources: v.slice(sep + 1) === '' ? [] : v.slice(sep + 1).split('\t') });
      }
      return { entries, overflow: values[0] === '1' };
    });
  }

  forget(id: string): Promise<void> {
    return this.#run('forget', async () => {
      await this.#client.del(PREFIX + id);
    });
  }

  async close(): Promise<void> {
    try {
      await this.#client.quit();
    } catch {
      this.#client.disconnect();
    }
  }
}
