/**
 * TRUSTGATE_SESSION_STORE=redis://... parsed into connection options, apart
 * from the client so that reading the configuration loads no Redis client.
 */
import type { RedisOptions } from 'ioredis';

/** A redis:// URL that does not parse; the message never repeats a password. */
export class RedisUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisUrlError';
  }
}

/** ioredis connection options from `redis://[user:password@]host[:port][/db]`. */
export function parseRedisUrl(raw: string): Pick<RedisOptions, 'host' | 'port' | 'username' | 'password' | 'db' | 'tls'> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new RedisUrlError('is not a URL (expected redis://[user:password@]host:port[/db])');
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new RedisUrlError(`must start with redis:// or rediss://, got ${u.protocol}//`);
  if (u.hostname === '') throw new RedisUrlError('names no host');
  if (u.search !== '' || u.hash !== '') throw new RedisUrlError('takes no query or fragment');
  const path = u.pathname.replace(/^\//, '');
  if (path !== '' && !/^[0-9]{1,5}$/.test(path)) throw new RedisUrlError('path must be a database number (redis://host:port/0)');
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  let username: string | undefined;
  let password: string | undefined;
  try {
    if (u.username !== '') username = decodeURIComponent(u.username);
    if (u.password !== '') password = decodeURIComponent(u.password);
  } catch {
    throw new RedisUrlError('user or password is not valid percent-encoding');
  }
  return {
    host,
    port: u.port === '' ? 6379 : Number(u.port),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    db: path === '' ? 0 : Number(path),
    ...(u.protocol === 'rediss:' ? { tls: { servername: host } } : {}),
  };
}
