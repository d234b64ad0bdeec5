/**
 * Browsers cannot drive the sidecar (docs/behaviour/limits.md). With no token
 * (the default) a web page the user opens could otherwise POST to a local
 * Trustgate: a form or a `fetch(..., { mode: 'no-cors' })` needs no CORS
 * permission to *send*, and `text/plain`, form and multipart bodies need no
 * preflight. So, on every route and before any other work:
 *
 * - a request target whose query cannot be decoded (`?token=%zz`) is a
 *   400 `TG_ERR_REQUEST_TARGET` that never repeats it (a path the router
 *   cannot decode is caught by frameworkErrorHandler in ./error-handler.ts);
 * - an `Origin` other than the service's own (`http://` or `https://`
 *   followed by the request's `Host`, when that Host is a loopback name or
 *   address: any other Host could be a rebinding page's own name, see
 *   ownOrigin), or `Sec-Fetch-Site: cross-site` or
 *   `same-site`, is a 403 `TG_ERR_CROSS_ORIGIN`, unless
 *   TRUSTGATE_ALLOWED_ORIGINS lists the origin; a listed origin gets the CORS
 *   headers a browser needs (preflight included) and nothing more;
 * - `text/plain`, `application/x-www-form-urlencoded` and
 *   `multipart/form-data` are 415 `TG_ERR_MEDIA_TYPE`, with or without a
 *   body (a form posts to /v1/policies/reload without one).
 *
 * On the interceptor route these answer as an `isError` result (answerError).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { answerError } from './error-handler.js';

/** What an HTML form or a page's simple request can send without a preflight. */
const SIMPLE_TYPES = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

/** The media type of a Content-Type header, lower case, without parameters. */
export function mediaType(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const semi = header.indexOf(';');
  return (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
}

/** Whether a query string decodes (percent-escapes well formed, UTF-8 valid). */
export function decodableQuery(query: string): boolean {
  if (!query.includes('%')) return true;
  try {
    decodeURIComponent(query.replace(/\+/g, ' '));
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `origin` is the service's own: `http://` or `https://` and the
 * request's Host, where that Host names this machine's loopback (localhost,
 * a `.localhost` name, 127.0.0.0/8, [::1]). Any other Host proves nothing: a
 * page can point its own name at the service's address (DNS rebinding), and
 * its requests then carry an Origin equal to their Host. Such origins are
 * served only when TRUSTGATE_ALLOWED_ORIGINS lists them.
 */
export function ownOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined || host === '') return false;
  const h = host.toLowerCase();
  if (!loopbackHost(h)) return false;
  return origin === `http://${h}` || origin === `https://${h}`;
}

const LOOPBACK_V4 = /^127\.(?:\d{1,3})\.(?:\d{1,3})\.(?:\d{1,3})$/;

/** Whether a bind address (no port) is on the loopback interface only. */
export function loopbackAddress(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** A Host header (`name[:port]`, `[v6][:port]`) that names the loopback interface. */
function loopbackHost(host: string): boolean {
  let name = host;
  if (name.startsWith('[')) {
    const end = name.indexOf(']');
    if (end < 0) return false;
    const rest = name.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return false;
    return name.slice(1, end) === '::1';
  }
  const colon = name.indexOf(':');
  if (colon >= 0) {
    if (!/^\d{1,5}$/.test(name.slice(colon + 1))) return false;
    name = name.slice(0, colon);
  }
  return name === 'localhost' || name.endsWith('.localhost') || LOOPBACK_V4.test(name);
}

/** The headers a browser sends that tell where a request comes from. */
export interface OriginHeaders {
  origin?: string | string[] | undefined;
  host?: string | undefined;
  'sec-fetch-site'?: string | string[] | undefined;
}

/**
 * Where a request stands as a browser request: `refused` when it comes from
 * a web page of another origin (an Origin other than the service's own, see
 * ownOrigin, or `Sec-Fetch-Site: cross-site`/`same-site`) that `allowed` does
 * not list; `listed` when `allowed` lists its Origin. A request that carries
 * neither header (not from a browser) is neither.
 */
export function browserOrigin(headers: OriginHeaders, allowed: ReadonlySet<string>): { refused: boolean; listed: boolean } {
  const rawOrigin = headers.origin;
  const site = headers['sec-fetch-site'];
  if (rawOrigin === undefined && site === undefined) return { refused: false, listed: false };
  const origin = typeof rawOrigin === 'string' ? rawOrigin.trim().toLowerCase() : undefined;
  const listed = origin !== undefined && allowed.has(origin);
  // An Origin header sent twice (an array) is no origin of the service's own.
  const foreignOrigin = rawOrigin !== undefined && !listed && (origin === undefined || !ownOrigin(origin, headers.host));
  const foreignSite = (site === 'cross-site' || site === 'same-site' || Array.isArray(site)) && !listed;
  return { refused: foreignOrigin || foreignSite, listed };
}

export function registerBrowserGuard(app: FastifyInstance, config: Pick<Config, 'allowedOrigins'>): void {
  const allowed = new Set(config.allowedOrigins);
  app.addHook('onRequest', (request: FastifyRequest, reply, done) => {
    const url = request.url;
    const q = url.indexOf('?');
    if (q >= 0 && !decodableQuery(url.slice(q + 1))) {
      answerError(request, reply, { code: 'TG_ERR_REQUEST_TARGET', detail: 'the query of the request target holds a malformed percent-escape' });
      return;
    }
    const headers = request.headers;
    const { refused, listed } = browserOrigin(headers, allowed);
    if (refused) {
      answerError(request, reply, {
        code: 'TG_ERR_CROSS_ORIGIN',
        detail: 'requests from web pages of other origins are refused (TRUSTGATE_ALLOWED_ORIGINS lists the ones served)',
      });
      return;
    }
    if (listed) {
      reply.header('access-control-allow-origin', headers.origin);
      reply.header('vary', 'Origin');
      if (request.method === 'OPTIONS') {
        reply
          .code(204)
          .header('access-control-allow-methods', 'GET, POST')
          .header('access-control-allow-headers', 'authorization, content-type')
          .header('access-control-max-age', '600')
          .send();
        return;
      }
    }
    const type = mediaType(headers['content-type']);
    if (type !== undefined && SIMPLE_TYPES.has(type)) {
      answerError(request, reply, { code: 'TG_ERR_MEDIA_TYPE', detail: 'send the request body as application/json' });
      return;
    }
    done();
  });
}
