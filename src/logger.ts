/**
 * pino options shared by the server and the tests. Request logs carry the
 * method, the path without its query (a gateway may send the token there)
 * and the status; never headers or bodies.
 */
import type { LoggerOptions } from 'pino';
import type { LogLevel } from './config.js';

interface ReqLike {
  method?: string;
  url?: string;
  id?: string;
}

export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    base: { service: 'trustgate', pid: process.pid },
    serializers: {
      req: (req: ReqLike) => ({ id: req.id, method: req.method, path: (req.url ?? '').split('?')[0] }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  };
}
