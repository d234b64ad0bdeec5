/**
 * The Redis client every store of a serving process opens (redis.ts for
 * sessions and pins, flows-redis.ts for the values sessions have seen), set
 * to fail closed: commands time out, nothing queues while the connection is
 * down, a command whose request failed is never resent, and the client
 * reconnects by itself. Loaded only with a Redis store.
 */
import { Redis } from 'ioredis';
import { parseRedisUrl } from './url.js';

export function failClosedRedis(url: string, timeoutMs: number, connectionName: string): Redis {
  return new Redis({
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
}
