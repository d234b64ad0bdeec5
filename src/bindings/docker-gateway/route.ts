/**
 * POST /v1/interceptors/docker-mcp-gateway (docs/bindings/docker-gateway.md). The
 * gateway ignores the status and reads any non-empty body as the tool
 * result, so this route never answers problem+json: every error is a 200
 * with an `isError` result (fail closed), nothing applied is a 200 with an
 * empty body. It accepts the token as the `token` query parameter too,
 * since the gateway sends no custom headers; request logs drop the query.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { interceptAnswer, interceptError, type InterceptAnswer } from './answer.js';
import { decisionLogger, plainJson } from '../../http/decisions.js';
import { isRecord } from '../../json/record.js';
import { bearerToken } from '../../http/auth.js';
import { admitByQuota } from '../../http/bearer.js';
import { jsonBodyParser } from '../../http/body.js';
import { answerError } from '../../http/error-handler.js';
import { mediaType } from '../../http/browser.js';
import { TrustgateError } from '../../errors.js';
import { dockerMcpGatewayInterceptorSchema } from '../../wire/docker-gateway.js';

/** The Docker MCP Gateway interceptor route (docs/bindings/docker-gateway.md): it answers every error as an isError result, never problem+json. */
export const INTERCEPTOR_PATH = '/v1/interceptors/docker-mcp-gateway';

function send(reply: FastifyReply, answer: InterceptAnswer): FastifyReply {
  reply.code(200);
  if (answer.kind === 'pass') return reply.send();
  return reply.type('application/json').send(answer.result);
}

export async function interceptorRoutes(app: FastifyInstance): Promise<void> {
  const { core, auth, quotas, metrics } = app.trustgate;
  // The gateway reads any body as the tool result: every error here is an isError result with status 200 (fail closed).
  app.errorRenderers.register(INTERCEPTOR_PATH, (m) => ({ status: 200, type: 'application/json', body: interceptError(m.code, m.detail).result }));
  // Whatever the gateway sends is read as text and judged here, so a wrong
  // content type is answered like any other error on this route (answerError
  // in the shared error handler turns every error here into an isError result).
  // JSON, or no content type at all (the gateway sends none); text/plain, form and multipart
  // bodies are refused on every route (src/http/browser.ts), any other type here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const type = mediaType(request.headers['content-type']);
    if (type !== undefined && type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
      done(new TrustgateError('TG_ERR_MEDIA_TYPE', 'send the result as application/json, or with no content type'), undefined);
      return;
    }
    jsonBodyParser(request, body, done);
  });
  if (auth.configured) {
    app.addHook('onRequest', async (request, reply) => {
      const query = request.query as Record<string, unknown> | undefined;
      const fromQuery = typeof query?.token === 'string' ? query.token : undefined;
      const who = await auth.authenticateToken(bearerToken(request.headers.authorization) ?? fromQuery);
      if (!who.ok) {
        metrics.authRefused.labels({ reason: who.reason }).inc();
        return answerError(request, reply, { code: 'TG_ERR_AUTH_TOKEN', detail: 'the interceptor URL lacks an accepted token' });
      }
      request.principal = who.principal;
    });
  }
  // Quotas as on every other route; a refusal is an isError result here too.
  app.addHook('onRequest', async (request, reply) => {
    await admitByQuota(request, reply, quotas, metrics);
  });
  app.post(
    INTERCEPTOR_PATH,
    {
      schema: dockerMcpGatewayInterceptorSchema,
      config: { checksOwnToken: true },
      // The body is judged in the handler so that a non-object answers like any other error here.
      validatorCompiler: () => () => true,
      serializerCompiler: plainJson,
    },
    async (request, reply) => {
      const body = request.body;
      if (!isRecord(body)) {
        return answerError(request, reply, { code: 'TG_ERR_BODY_SCHEMA', detail: 'the body is not a JSON object' });
      }
      // The gateway sends no session: a decision here reads and raises none.
      const decision = await core.evaluateResult({ request: { result: body }, scan: request.jsonScan, log: decisionLogger(request), principal: request.principal });
      return send(reply, interceptAnswer(decision, (request.jsonScan?.duplicateKeys.count ?? 0) > 0));
    },
  );
}
