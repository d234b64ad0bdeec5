/**
 * Sessions and tool pins for operators (docs/behaviour/sessions.md):
 * `GET`/`DELETE /v1/sessions/{id}` show and end a session; `GET /v1/pins`
 * shows what is pinned for a (server, tool) pair and `PUT /v1/pins`
 * accepts a definition, replacing the pin (after a `changed`, once the
 * operator has checked the new definition).
 */
import type { FastifyInstance } from 'fastify';
import { sessionView } from '../../decision/core.js';
import { TrustgateError } from '../../errors.js';
import { PIN_DIGEST_PATTERN } from '../../session/pins.js';
import { v1Security, problemReplies } from '../../http/schemas.js';

const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { $ref: 'SessionId#' } },
} as const;

const pinName = {
  server: { type: 'string', maxLength: 1024, description: '`server.name` as the calls send it; `""` (the default) for calls without a server' },
  tool: { type: 'string', maxLength: 1024, description: '`tool.name` of the definition (the call name when the definition has none)' },
} as const;

const pinReply = {
  type: 'object',
  required: ['server', 'tool', 'digest'],
  properties: {
    server: { type: 'string' },
    tool: { type: 'string' },
    digest: { type: 'string', description: 'The pinned digest (`tool.digest` of /v1/evaluate-call answers)' },
    previous: { type: ['string', 'null'], description: 'PUT only: the digest pinned before, null when there was none' },
  },
} as const;

function notFound(id: string): TrustgateError {
  return new TrustgateError('TG_ERR_SESSION_NOT_FOUND', `no session has id ${JSON.stringify(id)} (never used, ended, or unused for two TTLs)`);
}

export function sessionRoutes(app: FastifyInstance): void {
  const { sessions } = app.trustgate;

  app.get<{ Params: { id: string } }>(
    '/v1/sessions/:id',
    {
      schema: {
        operationId: 'getSession',
        security: v1Security,
        tags: ['sessions'],
        summary: 'Show what a session has been shown',
        description:
          'Reading a session is a use: it starts its TRUSTGATE_SESSION_TTL again. A session whose labels the store lost (its TTL ran out and it is used within one more TTL; with Redis, any id not held for one TTL after Redis lost its data) reads as `forgotten: true` with `untrusted` and `sensitive` true, until it is ended. 404 (TG_ERR_SESSION_NOT_FOUND) when no session has the id: never used, ended, or unused for two TTLs. No store evicts a session to make room.',
        params: idParams,
        response: { 200: { $ref: 'Session#' }, ...problemReplies(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const s = await sessions.get(request.params.id);
      if (s === undefined) throw notFound(request.params.id);
      return sessionView(request.params.id, s);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/sessions/:id',
    {
      schema: {
        operationId: 'deleteSession',
        security: v1Security,
        tags: ['sessions'],
        summary: 'End a session',
        description:
          'Its labels and counts are dropped; a later request naming the same id starts a new, clean session (this is how a host clears a `forgotten` session). Tool pins are not per session and stay. 204 when a session was ended (a forgotten one included), 404 (TG_ERR_SESSION_NOT_FOUND) when there was none.',
        params: idParams,
        response: { 204: { type: 'null', description: 'The session was ended' }, ...problemReplies(400, 401, 404, 503) },
      },
    },
    async (request, reply) => {
      if (!(await sessions.delete(request.params.id))) throw notFound(request.params.id);
      return reply.code(204).send();
    },
  );

  app.get<{ Querystring: { server?: string; tool: string } }>(
    '/v1/pins',
    {
      schema: {
        operationId: 'getPin',
        security: v1Security,
        tags: ['sessions'],
        summary: 'Show the digest pinned for a tool of a server',
        description: 'The pin of a (`server`, `tool`) pair (`server` `""` for calls without one); 404 (TG_ERR_PIN_NOT_FOUND) before any definition was pinned for it.',
        querystring: { type: 'object', additionalProperties: false, required: ['tool'], properties: pinName },
        response: { 200: pinReply, ...problemReplies(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const server = request.query.server ?? '';
      const tool = request.query.tool;
      const digest = await sessions.getPin(server, tool);
      if (digest === undefined) throw new TrustgateError('TG_ERR_PIN_NOT_FOUND', 'nothing is pinned for that server and tool');
      return { server, tool, digest };
    },
  );

  app.put<{ Body: { server?: string; tool: string; digest: string } }>(
    '/v1/pins',
    {
      schema: {
        operationId: 'acceptPin',
        security: v1Security,
        tags: ['sessions'],
        summary: 'Accept a tool definition: pin its digest for (server, tool)',
        description:
          'For an operator who has reviewed a definition reported `changed`: send the `tool.digest` of that /v1/evaluate-call answer. Later calls with that definition are `match`; the one pinned before becomes `changed`. Also pins a pair never seen.',
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['tool', 'digest'],
          properties: {
            ...pinName,
            digest: { type: 'string', pattern: PIN_DIGEST_PATTERN, description: '`sha256:` and 64 hex digits (upper case is accepted and lower-cased)' },
          },
        },
        response: { 200: pinReply, ...problemReplies(400, 401, 415, 503) },
        // 503 TG_ERR_SESSION_STORE_FULL: a new pair while TRUSTGATE_MAX_PINS pins are held (no pin is evicted).
      },
    },
    async (request) => {
      const server = request.body.server ?? '';
      const { tool } = request.body;
      const digest = request.body.digest.toLowerCase();
      const previous = (await sessions.getPin(server, tool)) ?? null;
      await sessions.acceptPin(server, tool, digest);
      request.log.info({ server: server.slice(0, 128), tool: tool.slice(0, 128), digest, previous }, 'tool pin accepted');
      return { server, tool, digest, previous };
    },
  );
}
