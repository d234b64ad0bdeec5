/**
 * The Redis client every store of a serving process opens (redis.ts for
 * sessions and pins, flows-redis.ts for the values sessions have seen,
 * http/quota.ts for the shared quotas), set
 * to fail closed: commands time out, nothing queues while the connection is
 * down, a command whose request failed is never resent, and the client
 * reconnects by itself. Loaded only with a Redis store.
 */
import { Redis } from 'ioredis';
import { parseRedisUrl } from './url.js';

/** Clients that have been connected at least once. */
const connectedOnce = new WeakSet<Redis>();

export function failClosedRedis(url: string, timeoutMs: number, connectionName: string): Redis {
  const client = new Redis({
    ...parseRedisUrl(url),
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(timeoutMs, 2_000),
    // Fail at once while the connection is down; never resend a command whose request already failed.
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    // Reconnect forever, quickly at first, then every 2 s.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    // RESP2: what every Redis 6+ speaks, without a HELLO round trip.
    protocol: 2,
    lazyConnect: false,
    connectionName,
    disableClientInfo: true,
  });
  client.once('ready', () => connectedOnce.add(client));
  return client;
}

/** Resolves once `client` is connected; rejects after `ms`. */
export function untilReady(client: Redis, ms: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error('Redis did not connect in time'));
    }, ms);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}

/**
 * Before a client's first connection, wait for it (at most `ms`): a request
 * that comes right after start-up is answered, not refused. Once connected,
 * nothing waits: a lost connection fails commands at once (fail closed).
 */
export function firstConnection(client: Redis, ms: number): Promise<void> {
  return connectedOnce.has(client) ? Promise.resolve() : untilReady(client, ms);
}
