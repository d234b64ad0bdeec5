/**
 * What sessions cost (contract section 12), over HTTP, in one run:
 *
 * - POST /v1/evaluate naming a session over the same request without one,
 *   on the memory store (the default: with worker processes the primary
 *   holds it and workers ask over IPC) and on Redis (a redis-server of the
 *   bench's own on a free port, no persistence);
 * - POST /v1/evaluate-call (with a session and a tool definition, so pins
 *   are read) over the bare Fastify echo of the same body.
 *
 * Every service is started as users start it (`npm start`), LOG_LEVEL=warn
 * (no per-request log lines: the store's cost is what is measured), with
 * the default worker count. The request is the ~4 KB mixed fixture of
 * bench/fixtures.ts; the session variants add `"session": {"id": ...}`, one
 * session for the whole run (the store's work per request does not depend
 * on how many sessions there are; the memory store is a Map, Redis a hash
 * per session). Targets alternate within each round (order rotated every
 * round); ratios are taken per round and the median printed.
 *
 * Run: npm run bench:sessions   (env BENCH_SECONDS, BENCH_ROUNDS,
 *      BENCH_CONNECTIONS, BENCH_START=npm|node, BENCH_SERVICE_ENV='{"NAME":"value"}';
 *      --quick for short settings)
 */
import autocannon, { type Result } from 'autocannon';
import { evaluateRequestText } from './fixtures.js';
import { QUICK, cleanup, cpuSeconds, envNumber, fmt, machine, median, processTree, startEcho, startService, table, type Proc } from './lib.js';
import { REDIS_SERVER, startRedis, type TestRedis } from '../test/helpers/redis.js';

const SECONDS = envNumber('BENCH_SECONDS', QUICK ? 2 : 5);
const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 5);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const WARMUP_SECONDS = QUICK ? 1 : 3;
const SERVICE_ENV = JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>;
const HEADERS = { 'content-type': 'application/json' };

const EVALUATE = evaluateRequestText();
const WITH_SESSION = JSON.stringify({ ...JSON.parse(EVALUATE), session: { id: 'bench-session-1' } });
const CALL = JSON.stringify({
  call: { name: 'send_email', arguments: { to: 'someone@example.com', subject: 'hello', body: 'the report is attached' } },
  tool: {
    name: 'send_email',
    description: 'Send an email to one recipient',
    inputSchema: { type: 'object', properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } }, required: ['to'] },
    annotations: { readOnlyHint: false, openWorldHint: true },
  },
  server: { name: 'mail' },
  session: { id: 'bench-session-2' },
});

interface Target {
  label: string;
  proc: Proc;
  path: string;
  body: string;
}

interface Sample {
  rps: number;
  p99: number;
  bad: number;
  total: number;
  cpuUs: number;
}

async function measure(t: Target, seconds: number): Promise<Sample> {
  const cpu0 = cpuSeconds(t.proc.pid);
  const r: Result = await Promise.resolve(
    autocannon({ url: t.proc.base + t.path, method: 'POST', headers: HEADERS, body: t.body, connections: CONNECTIONS, duration: seconds }),
  );
  const cpu = cpuSeconds(t.proc.pid) - cpu0;
  const total = r.requests.total;
  return { rps: total / r.duration, p99: r.latency.p99, bad: r.errors + r.timeouts + r.non2xx, total, cpuUs: (cpu / Math.max(1, total)) * 1e6 };
}

async function sanity(t: Target): Promise<void> {
  const r = await fetch(t.proc.base + t.path, { method: 'POST', headers: HEADERS, body: t.body });
  const d = (await r.json()) as { session?: { id?: string; results?: number; calls?: number } };
  if (r.status !== 200) throw new Error(`${t.label}: ${r.status} ${JSON.stringify(d).slice(0, 500)}`);
  const named = (JSON.parse(t.body) as { session?: { id: string } }).session?.id;
  if (t.path !== '/echo' && named !== undefined && d.session?.id !== named) throw new Error(`${t.label}: the answer carries no session: ${JSON.stringify(d).slice(0, 300)}`);
}

async function main(): Promise<void> {
  console.log(`bench:sessions  ${machine()}`);
  console.log(`${ROUNDS} rounds x ${SECONDS} s per target; connections ${CONNECTIONS}; LOG_LEVEL=warn; evaluate body ${Buffer.byteLength(EVALUATE)} B, evaluate-call body ${Buffer.byteLength(CALL)} B\n`);
  if (!REDIS_SERVER) throw new Error('bench:sessions needs redis-server on PATH (Debian package redis-server) for its Redis variant');

  let redis: TestRedis | undefined;
  try {
    redis = await startRedis();
    const echo = await startEcho();
    const memory = await startService({ ...SERVICE_ENV, LOG_LEVEL: 'warn' });
    const onRedis = await startService({ ...SERVICE_ENV, LOG_LEVEL: 'warn', TRUSTGATE_SESSION_STORE: redis.url });
    const workers = processTree(memory.pid).length - 1;
    console.log(`service worker processes: ${workers === 0 ? 'none (one process serves)' : workers} (TRUSTGATE_WORKERS=${SERVICE_ENV.TRUSTGATE_WORKERS ?? 'auto'}); redis-server ${redis.url}\n`);

    const targets: Target[] = [
      { label: 'echo (evaluate-call body)', proc: echo, path: '/echo', body: CALL },
      { label: 'memory: evaluate, no session', proc: memory, path: '/v1/evaluate', body: EVALUATE },
      { label: 'memory: evaluate, session', proc: memory, path: '/v1/evaluate', body: WITH_SESSION },
      { label: 'memory: evaluate-call', proc: memory, path: '/v1/evaluate-call', body: CALL },
      { label: 'redis: evaluate, no session', proc: onRedis, path: '/v1/evaluate', body: EVALUATE },
      { label: 'redis: evaluate, session', proc: onRedis, path: '/v1/evaluate', body: WITH_SESSION },
      { label: 'redis: evaluate-call', proc: onRedis, path: '/v1/evaluate-call', body: CALL },
    ];
    for (const t of targets) await sanity(t);
    for (const t of targets) await measure(t, WARMUP_SECONDS);

    const samples = new Map<string, Sample[]>(targets.map((t) => [t.label, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      for (const t of order) samples.get(t.label)!.push(await measure(t, SECONDS));
      console.log(`round ${round + 1}: ${targets.map((t) => `${t.label} ${fmt(samples.get(t.label)![round]!.rps)}`).join(' | ')} req/s`);
    }

    const at = (label: string): Sample[] => samples.get(label)!;
    console.log();
    table([
      ['target', 'req/s (median)', 'p99 ms', 'errors + non-2xx', 'requests', 'server CPU us/req'],
      ...targets.map((t) => {
        const s = at(t.label);
        return [t.label, fmt(median(s.map((x) => x.rps))), fmt(median(s.map((x) => x.p99)), 1), s.reduce((a, x) => a + x.bad, 0), s.reduce((a, x) => a + x.total, 0), fmt(median(s.map((x) => x.cpuUs)))];
      }),
    ]);
    const ratio = (num: string, den: string): string => fmt(median(at(num).map((s, i) => s.rps / at(den)[i]!.rps)), 2);
    console.log();
    table([
      ['ratio (median of per-round throughput ratios)', 'value', 'target'],
      ['memory: evaluate with session / without', ratio('memory: evaluate, session', 'memory: evaluate, no session'), '>= 0.85'],
      ['redis: evaluate with session / without', ratio('redis: evaluate, session', 'redis: evaluate, no session'), '>= 0.6'],
      ['memory: evaluate-call / echo', ratio('memory: evaluate-call', 'echo (evaluate-call body)'), ''],
      ['redis: evaluate-call / echo', ratio('redis: evaluate-call', 'echo (evaluate-call body)'), ''],
    ]);
  } finally {
    await cleanup();
    await redis?.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
