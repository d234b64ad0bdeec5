/**
 * Sessions and pre-call decisions over HTTP (contract section 12), against
 * baselines measured in the same run:
 *
 * - POST /v1/evaluate with `session` over the same request without one, on
 *   the memory store (target >= 0.85; with the default worker processes
 *   that is the SQLite file they share, with TRUSTGATE_WORKERS=1 in
 *   BENCH_SERVICE_ENV the one process's own Map) and on a Redis store
 *   (target >= 0.6):
 *   a redis-server of the bench's own on a free port, no persistence
 *   (test/helpers/redis.ts), or the one BENCH_REDIS_URL names; skipped, and
 *   said so, when neither is there;
 * - POST /v1/evaluate-call (a send_email call with its tool definition and
 *   a session, against the shipped policies) over the bare Fastify echo of
 *   the same body.
 *
 * Session requests rotate over BENCH_SESSIONS ids (default 100), one per
 * request in turn, so the store sees many sessions and repeated ones. The
 * ~4 KB fixture of bench/fixtures.ts is the result. Rounds and per-round
 * ratios as in bench/evaluate.ts.
 *
 * Run: npm run bench:session   (env BENCH_SECONDS, BENCH_ROUNDS,
 *      BENCH_CONNECTIONS, BENCH_SESSIONS, BENCH_REDIS_URL=redis://127.0.0.1:<port>
 *      for the Redis target, BENCH_SERVICE_ENV='{"NAME":"value"}', BENCH_START=npm|node)
 */
import autocannon, { type Result } from 'autocannon';
import { shapeText } from './fixtures.js';
import { QUICK, START_MODE, cleanup, envNumber, fmt, machine, median, startEcho, startService, table, type Proc } from './lib.js';
import { REDIS_SERVER, startRedis, type TestRedis } from '../test/helpers/redis.js';

const SECONDS = envNumber('BENCH_SECONDS', QUICK ? 2 : 5);
const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 5);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const SESSIONS = envNumber('BENCH_SESSIONS', 100);
const WARMUP_SECONDS = QUICK ? 1 : 3;
/** Started in main() when BENCH_REDIS_URL is unset and redis-server is on PATH. */
let ownRedis: TestRedis | undefined;
const SERVICE_ENV = JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>;
const HEADERS = { 'content-type': 'application/json' };

const EVALUATE = JSON.parse(shapeText('mixed-5')) as Record<string, unknown>;
const CALL = {
  call: { name: 'send_email', arguments: { to: 'someone@example.com', subject: 'Report', body: 'The weekly report is attached.' } },
  tool: {
    name: 'send_email',
    title: 'Send email',
    description: 'Send an email to one recipient',
    inputSchema: { type: 'object', properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } }, required: ['to'] },
    annotations: { readOnlyHint: false, openWorldHint: true },
  },
  server: { name: 'mail' },
  context: {},
};

interface Target {
  label: string;
  proc: Proc;
  path: string;
  /** The body of the n-th request. */
  body: (n: number) => string;
}

const fixed = (o: unknown) => {
  const text = JSON.stringify(o);
  return () => text;
};
const bodies = (o: Record<string, unknown>): ((n: number) => string) => {
  const texts = Array.from({ length: SESSIONS }, (_, i) => JSON.stringify({ ...o, session: { id: `bench-${i}` } }));
  return (n) => texts[n % texts.length]!;
};

function run(t: Target, seconds: number): Promise<Result> {
  let n = 0;
  return Promise.resolve(
    autocannon({
      url: t.proc.base + t.path,
      connections: CONNECTIONS,
      duration: seconds,
      requests: [{ method: 'POST', headers: HEADERS, setupRequest: (req) => ({ ...req, body: t.body(n++) }) }],
    }),
  );
}

async function sanity(t: Target): Promise<void> {
  const r = await fetch(t.proc.base + t.path, { method: 'POST', headers: HEADERS, body: t.body(0) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${t.label} answered ${r.status}: ${text.slice(0, 300)}`);
  if (t.path !== '/echo' && text.includes('"session"') !== t.body(0).includes('"session"')) throw new Error(`${t.label}: the answer's session does not match the request`);
}

async function main(): Promise<void> {
  ownRedis = process.env.BENCH_REDIS_URL === undefined && REDIS_SERVER ? await startRedis() : undefined;
  const REDIS_URL = process.env.BENCH_REDIS_URL ?? ownRedis?.url;
  console.log(`bench:session  ${machine()}`);
  console.log(
    `${ROUNDS} rounds x ${SECONDS} s per target; connections ${CONNECTIONS}; ${SESSIONS} session ids in turn; service started with ${START_MODE === 'npm' ? '`npm start`' : '`node dist/server.js`'}${
      REDIS_URL ? `; Redis target on ${ownRedis ? 'a redis-server of its own' : 'BENCH_REDIS_URL'}` : '; Redis target SKIPPED: no redis-server on PATH and no BENCH_REDIS_URL'
    }\n`,
  );
  const echo = await startEcho();
  const memory = await startService({ ...SERVICE_ENV, LOG_LEVEL: 'warn' });
  const redis = REDIS_URL ? await startService({ ...SERVICE_ENV, LOG_LEVEL: 'warn', TRUSTGATE_SESSION_STORE: REDIS_URL }) : undefined;

  const targets: Target[] = [
    { label: 'echo (call body)', proc: echo, path: '/echo', body: bodies(CALL) },
    { label: 'evaluate', proc: memory, path: '/v1/evaluate', body: fixed(EVALUATE) },
    { label: 'evaluate + session (memory)', proc: memory, path: '/v1/evaluate', body: bodies(EVALUATE) },
    { label: 'evaluate-call + session (memory)', proc: memory, path: '/v1/evaluate-call', body: bodies(CALL) },
  ];
  if (redis) {
    targets.push(
      { label: 'evaluate (redis service)', proc: redis, path: '/v1/evaluate', body: fixed(EVALUATE) },
      { label: 'evaluate + session (redis)', proc: redis, path: '/v1/evaluate', body: bodies(EVALUATE) },
      { label: 'evaluate-call + session (redis)', proc: redis, path: '/v1/evaluate-call', body: bodies(CALL) },
    );
  }
  for (const t of targets) await sanity(t);
  for (const t of targets) await run(t, WARMUP_SECONDS);

  const rps = new Map<string, number[]>(targets.map((t) => [t.label, []]));
  const failures = new Map<string, number>(targets.map((t) => [t.label, 0]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    const line: string[] = [];
    for (const t of order) {
      const r = await run(t, SECONDS);
      rps.get(t.label)!.push(r.requests.total / r.duration);
      failures.set(t.label, failures.get(t.label)! + r.non2xx + r.errors + r.timeouts);
      line.push(`${t.label} ${fmt(r.requests.total / r.duration)}`);
    }
    console.log(`round ${round + 1}: ${line.join(' | ')} req/s`);
  }
  await redis?.stop();
  await memory.stop();
  await echo.stop();

  console.log();
  table([['target', 'req/s (median)', 'non-2xx + errors'], ...targets.map((t) => [t.label, fmt(median(rps.get(t.label)!)), failures.get(t.label)!])]);
  const ratio = (a: string, b: string) => median(rps.get(a)!.map((x, i) => x / rps.get(b)![i]!));
  const rows: Array<Array<string | number>> = [
    ['ratio (median of per-round ratios)', 'value', 'target'],
    ['evaluate with a session / without (memory)', fmt(ratio('evaluate + session (memory)', 'evaluate'), 2), '>= 0.85'],
    ['evaluate-call / echo of the same body (memory)', fmt(ratio('evaluate-call + session (memory)', 'echo (call body)'), 2), '(reported)'],
  ];
  if (redis) {
    rows.push(['evaluate with a session / without (redis)', fmt(ratio('evaluate + session (redis)', 'evaluate (redis service)'), 2), '>= 0.6']);
    rows.push(['evaluate-call / echo of the same body (redis)', fmt(ratio('evaluate-call + session (redis)', 'echo (call body)'), 2), '(reported)']);
  }
  console.log();
  table(rows);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    await ownRedis?.close();
  });
