/**
 * Every error leaves as application/problem+json with a registry code
 * (docs/behaviour/limits.md). Fastify's own errors are mapped onto the registry;
 * anything unexpected is a 500 that is logged without request content.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { problem, TrustgateError, type ErrorCode, type ProblemItem } from '../errors.js';
import { SessionStoreFull, SessionStoreUnavailable } from '../session/store.js';
import { routeOf } from './auth.js';

interface AjvLikeError {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/** Turn ajv errors into RFC 6901 pointers into the request body. */
function schemaErrors(list: readonly AjvLikeError[]): ProblemItem[] {
  return list.slice(0, 20).map((e) => {
    let pointer = e.instancePath ?? '';
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties' && typeof e.params?.additionalProperty === 'string') {
      const name = e.params.additionalProperty;
      pointer += '/' + name.replace(/~/g, '~0').replace(/\//g, '~1');
      message = 'is not a member of this request (check the spelling)';
    } else if (e.keyword === 'required' && typeof e.params?.missingProperty === 'string') {
      pointer += '/' + e.params.missingProperty.replace(/~/g, '~0').replace(/\//g, '~1');
      message = 'is required';
    } else if (e.keyword === 'enum' && Array.isArray(e.params?.allowedValues)) {
      message = `must be one of ${(e.params.allowedValues as unknown[]).map(String).join(', ')}`;
    }
    return { pointer, message };
  });
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'TG_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'TG_ERR_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_TYPE: 'TG_ERR_MEDIA_TYPE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'TG_ERR_BODY_MALFORMED_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'TG_ERR_BODY_MALFORMED_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'TG_ERR_BODY_MALFORMED_JSON',
  FST_ERR_CTP_EMPTY_TYPE: 'TG_ERR_MEDIA_TYPE',
};

export interface Mapped {
  code: ErrorCode;
  detail: string;
  errors?: ProblemItem[];
  headers?: Record<string, string>;
}

/** The problems of a request's body and its media type (what the 404 of a target that names no route answers instead). */
const BODY_ERRORS = /^TG_ERR_(?:BODY_|MEDIA_TYPE$)/;

/** Map any thrown error onto the registry. */
export function mapError(err: unknown, bodyLimit: number): Mapped {
  if (err instanceof TrustgateError) {
    return { code: err.code, detail: err.message, ...(err.errors ? { errors: err.errors } : {}), ...(err.headers ? { headers: err.headers } : {}) };
  }
  // A store at capacity refuses a new session rather than evicting a live one (docs/bindings/proxy.md).
  if (err instanceof SessionStoreFull) {
    return { code: 'TG_ERR_SESSION_STORE_FULL', detail: err.message, headers: { 'retry-after': '1' } };
  }
  // Fail closed: never judged without the session; the store's own message (host, operation) stays in the log.
  if (err instanceof SessionStoreUnavailable) {
    return { code: 'TG_ERR_SESSION_STORE_UNAVAILABLE', detail: 'the session store cannot be read or written; retry later', headers: { 'retry-after': '1' } };
  }
  const fe = err as Partial<FastifyError> & { validation?: AjvLikeError[] };
  if (Array.isArray(fe.validation)) {
    return { code: 'TG_ERR_BODY_SCHEMA', detail: 'request body does not match the request schema', errors: schemaErrors(fe.validation) };
  }
  const mapped = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped === 'TG_ERR_BODY_TOO_LARGE') return { code: mapped, detail: `request body is over the limit of ${bodyLimit} bytes` };
  if (mapped === 'TG_ERR_MEDIA_TYPE') return { code: mapped, detail: 'send the request body as application/json' };
  if (mapped) return { code: mapped, detail: 'request body is empty or not valid JSON' };
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 404) return { code: 'TG_ERR_ROUTE_NOT_FOUND', detail: 'no such route' };
  if (status === 408) return { code: 'TG_ERR_REQUEST_TIMEOUT', detail: 'the request took too long' };
  if (status === 413) return { code: 'TG_ERR_BODY_TOO_LARGE', detail: `request body is over the limit of ${bodyLimit} bytes` };
  if (status === 415) return { code: 'TG_ERR_MEDIA_TYPE', detail: 'send the request body as application/json' };
  if (status === 503) return { code: 'TG_ERR_SERVER_OVERLOADED', detail: 'the service is overloaded; retry later', headers: { 'retry-after': '1' } };
  if (status >= 400 && status < 500) return { code: 'TG_ERR_BODY_MALFORMED_JSON', detail: 'the request could not be read' };
  return { code: 'TG_ERR_SERVER_INTERNAL', detail: 'internal error; the request was not processed' };
}

/** An error as a binding answers it: status, media type and the JSON body. */
export interface RenderedError {
  status: number;
  type: string;
  body: unknown;
}

/** How a binding answers errors on its paths instead of problem+json. */
export type ErrorRenderer = (m: Mapped) => RenderedError;

/**
 * The error renderings bindings registered, by path: an error on a route
 * whose path starts with a registered one is rendered by its binding (a
 * caller that reads any body as a tool result gets one), any other as
 * problem+json. The handler names no binding; it asks the path.
 */
export class ErrorRenderers {
  readonly #byPath = new Map<string, ErrorRenderer>();

  /** Answer errors under `path` with `render` (a binding calls this when it registers its routes). */
  register(path: string, render: ErrorRenderer): void {
    this.#byPath.set(path, render);
  }

  /** The renderer for a request path, if a binding registered one. */
  for(path: string): ErrorRenderer | undefined {
    for (const [prefix, render] of this.#byPath) if (path.startsWith(prefix)) return render;
    return undefined;
  }
}

/**
 * Answer an error the way its route must: as its binding registered
 * (ErrorRenderers), else problem+json.
 */
export function answerError(request: FastifyRequest, reply: FastifyReply, m: Mapped): FastifyReply {
  const render = request.server.errorRenderers.for(routeOf(request));
  if (render !== undefined) {
    const r = render(m);
    return reply.code(r.status).type(r.type).send(r.body);
  }
  return sendProblem(reply, m);
}

export function sendProblem(reply: FastifyReply, m: Mapped): FastifyReply {
  const body = problem(m.code, m.detail, m.errors);
  if (m.headers) reply.headers(m.headers);
  return reply.code(body.status).type('application/problem+json').send(body);
}

export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // A target that names no route is answered as one, whatever its body (Fastify reads a body for its 404 too: a
    // `POST *` with no JSON would get the body's problem, as if a route had read it).
    let m = mapError(err, bodyLimit);
    if (request.is404 && BODY_ERRORS.test(m.code)) m = { code: 'TG_ERR_ROUTE_NOT_FOUND', detail: 'no such route' };
    if (m.code === 'TG_ERR_SERVER_INTERNAL') {
      // Name and stack only: an error message may quote request content.
      const e = err as Error;
      request.log.error({ reqId: request.id, errName: e?.name, errCode: (e as FastifyError)?.code, stack: e?.stack?.split('\n').slice(1, 6).join('\n') }, 'unhandled error');
    }
    return answerError(request, reply, m);
  });
  app.setNotFoundHandler((_request, reply) => sendProblem(reply, { code: 'TG_ERR_ROUTE_NOT_FOUND', detail: 'no such route' }));
}

/**
 * Errors the HTTP parser raises before Fastify sees a request (timeouts,
 * broken framing, oversized headers) get a problem+json too. Unlike the
 * default handler, nothing of the error is logged: it can carry the raw
 * bytes of the request.
 */
const CLIENT_ERRORS: Record<string, { code: ErrorCode; reason: string; detail: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'TG_ERR_REQUEST_TIMEOUT', reason: 'Request Timeout', detail: 'the request did not arrive in time' },
  HPE_HEADER_OVERFLOW: { code: 'TG_ERR_HTTP_HEADERS_TOO_LARGE', reason: 'Request Header Fields Too Large', detail: 'the request headers are too large' },
};
const MALFORMED = { code: 'TG_ERR_HTTP_MALFORMED' as ErrorCode, reason: 'Bad Request', detail: 'the request is not valid HTTP/1.1' };

export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  answerOnSocket(socket, (err.code !== undefined ? CLIENT_ERRORS[err.code] : undefined) ?? MALFORMED);
}

/** A problem written on the socket itself, then the socket closed. */
function answerOnSocket(socket: Socket, e: { code: ErrorCode; reason: string; detail: string }): void {
  const p = problem(e.code, e.detail);
  const body = JSON.stringify(p);
  // Only when nothing was written yet: a request already being answered
  // (say, its body broke off mid-way) keeps the answer it got.
  if (socket.writable && socket.bytesWritten === 0) {
    socket.write(
      `HTTP/1.1 ${p.status} ${e.reason}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * What Node answers itself, answered as the service answers: a request
 * whose `Expect` names something other than `100-continue` is answered as
 * any other (RFC 9110, section 10.1.1: a server may ignore it; Node's own
 * answer is an empty 417 of no type), and a CONNECT (a tunnel, which this
 * service never makes) gets a 404 problem on its socket (Node's own is to
 * close it with nothing said).
 */
export function registerServerAnswers(server: Server): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    // (The socket is handed over with no listener of the server's: a client that resets it is no error of the process.)
    socket.on('error', () => undefined);
    // (A CONNECT's socket is the connection's own, a net.Socket; Node types it as a Duplex.)
    answerOnSocket(socket as Socket, { code: 'TG_ERR_ROUTE_NOT_FOUND', reason: 'Not Found', detail: 'this service makes no tunnel (CONNECT)' });
  });
}

/**
 * What a request's head must say before anything of it is read:
 *
 * - its host, once (RFC 9112, section 3.2: an HTTP/1.1 request with no
 *   `Host`, any request with two, or a `Host` that is no host, is a 400):
 *   the 400 problem+json of every other malformed request, and its
 *   connection closed. (Node's own check answers an empty 400 of no type,
 *   and keeps the first of two hosts; the server is made with it off,
 *   `requireHostHeader: false`, so that this one answers.) HTTP/1.0 needs
 *   no host;
 * - a body in no content coding: a `Content-Encoding` other than
 *   `identity` is a 415 `TG_ERR_MEDIA_TYPE` with `Accept-Encoding:
 *   identity` (RFC 9110, section 15.5.16), not compressed bytes read as
 *   JSON.
 */
export function registerRequestHead(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const r = request.raw;
    const host = hostProblem(r);
    if (host !== undefined) {
      reply.header('connection', 'close');
      answerError(request, reply, { code: 'TG_ERR_HTTP_MALFORMED', detail: host });
      return;
    }
    const coding = r.headers['content-encoding'];
    if (coding !== undefined && !coding.split(',').every((c) => c.trim().toLowerCase() === 'identity')) {
      reply.header('accept-encoding', 'identity');
      answerError(request, reply, { code: 'TG_ERR_MEDIA_TYPE', detail: 'send the request body with no content coding (Content-Encoding: identity or none)' });
      return;
    }
    done();
  });
}

/** A host as RFC 9110 section 7.2 writes it: uri-host (an IP literal, or a reg-name, which holds IPv4) and an optional port. */
const HOST = /^(?:\[[0-9A-Za-z:.%_~-]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;

/** Why a request's head does not name its host as it must, or undefined. */
function hostProblem(r: IncomingMessage): string | undefined {
  let count = 0;
  for (let i = 0; i < r.rawHeaders.length; i += 2) if (r.rawHeaders[i]!.toLowerCase() === 'host') count++;
  if (count > 1) return 'a request names its host once (one Host header)';
  const host = r.headers.host;
  if (host === undefined) return r.httpVersionMajor === 1 && r.httpVersionMinor >= 1 ? 'an HTTP/1.1 request names its host (a Host header)' : undefined;
  return HOST.test(host) ? undefined : 'the Host header names no host';
}

/**
 * Fastify's `frameworkErrors`: a request target the router cannot decode
 * (`/%zz`) gets a problem+json (or what the binding of its path registered
 * in `renderers`) instead of Fastify's own JSON, which repeats the whole
 * target, query and token included (docs/behaviour/limits.md). Written on the
 * raw response: the request matched no route, so nothing route-specific may run.
 */
export function frameworkErrorHandler(renderers: ErrorRenderers): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void {
  return (error, request, reply) => {
    const m: Mapped =
      error.code === 'FST_ERR_BAD_URL'
        ? { code: 'TG_ERR_REQUEST_TARGET', detail: 'the request target holds a malformed percent-escape' }
        : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? { code: 'TG_ERR_REQUEST_TARGET', detail: 'a path segment of the request target is too long' }
          : { code: 'TG_ERR_HTTP_MALFORMED', detail: 'the request could not be routed' };
    const render = renderers.for((request.raw.url ?? '').split('?')[0]!);
    const r: RenderedError = render !== undefined ? render(m) : { status: 400, type: 'application/problem+json', body: problem(m.code, m.detail) };
    const body = JSON.stringify(r.body);
    const res = reply.raw;
    if (res.headersSent) return void res.destroy();
    res.writeHead(r.status, { 'content-type': `${r.type}; charset=utf-8`, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
}
