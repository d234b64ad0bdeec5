/**
 * The baseline for bench/evaluate.ts: bare Fastify (the same major version
 * the service uses) with one route that parses the JSON body with Fastify's
 * default parser and sends it back. No logging, no schemas, no plugins.
 *
 * Run: node --import tsx bench/echo-server.ts   (PORT, HOST; default 127.0.0.1:8081)
 * Prints `{"listening":<port>,"pid":<pid>}` on stdout once it listens.
 */
import Fastify from 'fastify';

const port = Number(process.env.PORT ?? 8081);
const host = process.env.HOST ?? '127.0.0.1';
// Same body limit as the service's default (TRUSTGATE_BODY_LIMIT).
const app = Fastify({ logger: false, bodyLimit: 8_388_608 });

app.post('/echo', async (request) => request.body);
app.get('/readyz', async () => ({ status: 'ready' }));

const stop = (): void => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

await app.listen({ port, host });
process.stdout.write(`${JSON.stringify({ listening: port, pid: process.pid })}\n`);
