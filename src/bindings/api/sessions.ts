/**
 * Sessions and tool pins for operators (docs/behaviour/sessions.md):
 * `GET`/`DELETE /v1/sessions/{id}` show and end a session; `GET /v1/pins`
 * shows what is pinned for a (server, tool) pair and `PUT /v1/pins`
 * accepts a definition, replacing the pin (after a `changed`, once the
 * operator has checked the new definition).
 */
import type { FastifyInstance } from 'fastify';
import { TrustgateError } from '../../errors.js';
import { acceptPinSchema, deleteSessionSchema, getPinSchema, getSessionSchema, type PinAcceptBody, type PinQuery, type SessionParams, type UserWordsBody, userWordsSchema } from '../../wire/sessions.js';

function notFound(id: string): TrustgateError {
  return new TrustgateError('TG_ERR_SESSION_NOT_FOUND', `no session has id ${JSON.stringify(id)} (never used, unused for two TTLs, or another principal's)`);
}

export function sessionRoutes(app: FastifyInstance): void {
  const { sessions, core } = app.trustgate;

  app.get<{ Params: SessionParams }>(
    '/v1/sessions/:id',
    { schema: getSessionSchema },
    async (request) => {
      const s = await core.session(request.params.id, request.principal);
      if (s === undefined) throw notFound(request.params.id);
      return s;
    },
  );

  app.delete<{ Params: SessionParams }>(
    '/v1/sessions/:id',
    { schema: deleteSessionSchema },
    async (request, reply) => {
      if (!(await core.endSession(request.params.id, request.principal))) throw notFound(request.params.id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: SessionParams; Body: UserWordsBody }>('/v1/sessions/:id/user', { schema: userWordsSchema }, (request) => core.userWords(request.params.id, request.body.text, request.principal));

  app.get<{ Querystring: PinQuery }>(
    '/v1/pins',
    { schema: getPinSchema },
    async (request) => {
      const server = request.query.server ?? '';
      const tool = request.query.tool;
      const digest = await sessions.getPin(server, tool);
      if (digest === undefined) throw new TrustgateError('TG_ERR_PIN_NOT_FOUND', 'nothing is pinned for that server and tool');
      return { server, tool, digest };
    },
  );

  // Accepting a pin vouches for a tool definition for every session and binding on the store: only the principals the
  // operator names may (TRUSTGATE_PIN_ADMINS; unset: every principal).
  const admins = app.trustgate.config.pinAdmins;
  app.put<{ Body: PinAcceptBody }>(
    '/v1/pins',
    { schema: acceptPinSchema },
    async (request) => {
      if (admins !== undefined && !admins.includes(request.principal.id)) {
        request.log.warn({ principal: request.principal.id.slice(0, 256) }, 'tool pin refused: the principal is not in TRUSTGATE_PIN_ADMINS');
        throw new TrustgateError('TG_ERR_PIN_FORBIDDEN', 'this principal may not accept tool pins (TRUSTGATE_PIN_ADMINS)');
      }
      const server = request.body.server ?? '';
      const { tool } = request.body;
      const digest = request.body.digest.toLowerCase();
      const previous = (await sessions.getPin(server, tool)) ?? null;
      await sessions.acceptPin(server, tool, digest);
      request.log.info({ server: server.slice(0, 128), tool: tool.slice(0, 128), digest, previous, principal: request.principal.id.slice(0, 256) }, 'tool pin accepted');
      return { server, tool, digest, previous };
    },
  );
}
