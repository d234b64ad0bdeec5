/**
 * Browsers cannot drive the sidecar (contract section 8). With no token
 * (the default) a web page the user opens could otherwise POST to a local
 * Trustgate: a form or a `fetch(..., { mode: 'no-cors' })` needs no CORS
 * permission to *send*, and `text/plain`, form and multipart bodies need no
 * preflight. So, on every route and before any other work:
 *
 * - a request target whose query cannot be decoded (`?token=%zz`) is a
 *   400 `TG_ERR_REQUEST_TARGET` that never repeats it (a path the router
 *   cannot decode is caught by frameworkErrorHandler in ./errors.ts);
 * - an `Origin` other than the service's own (`http://` or `https://`
 *   followed by the request's `Host`), or `Sec-Fetch-Site: cross-site` or
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
import type { Config } from '../../config.js';
import { answerError } from './errors.js';

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

function ownOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined || host === '') return false;
  const h = host.toLowerCase();
  return origin === `http://${h}` || origin === `https://${h}`;
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
    const rawOrigin = headers.origin;
    const site = headers['sec-fetch-site'];
    if (rawOrigin !== undefined || site !== undefined) {
      const origin = typeof rawOrigin === 'string' ? rawOrigin.trim().toLowerCase() : undefined;
      const listed = origin !== undefined && allowed.has(origin);
      const foreignOrigin = origin !== undefined && !listed && !ownOrigin(origin, headers.host);
      const foreignSite = (site === 'cross-site' || site === 'same-site') && !listed;
      if (foreignOrigin || foreignSite) {
        answerError(request, reply, {
          code: 'TG_ERR_CROSS_ORIGIN',
          detail: 'requests from web pages of other origins are refused (TRUSTGATE_ALLOWED_ORIGINS lists the ones served)',
        });
        return;
      }
      if (listed) {
        reply.header('access-control-allow-origin', rawOrigin);
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
    }
    const type = mediaType(headers['content-type']);
    if (type !== undefined && SIMPLE_TYPES.has(type)) {
      answerError(request, reply, { code: 'TG_ERR_MEDIA_TYPE', detail: 'send the request body as application/json' });
      return;
    }
    done();
  });
}
