/**
 * POST /v1/evaluate over HTTP against a bare Fastify echo of the same body.
 *
 * Processes (all plain node, all on 127.0.0.1):
 * - the service started as users start it (`npm start`, which compiles
 *   src/ and runs `node dist/server.js`), twice: LOG_LEVEL=warn (no
 *   per-request log lines) and LOG_LEVEL=info (the default: request and
 *   decision log lines, written to a file);
 * - bench/echo-server.ts: Fastify, default JSON parser, one route that sends
 *   the parsed body back.
 *
 * Load: autocannon's programmatic API in this process, the ~4 KB fixture of
 * bench/fixtures.ts, BENCH_ROUNDS rounds of BENCH_SECONDS seconds per target,
 * the targets alternating within each round (order rotated every round).
 * Ratios are taken per round and the median is printed, so slow drift on a
 * shared machine hits numerator and denominator alike.
 *
 * Then RSS: a fresh service (LOG_LEVEL=warn unless BENCH_RSS_LOG_LEVEL) gets
 * 10,000 requests, then more up to 100,000 (BENCH_RSS_COUNTS="10000,100000"),
 * and VmRSS of the serving node process is read from /proc after each
 * 10,000.
 *
 * Run: npm run bench:evaluate      (env BENCH_SECONDS, BENCH_ROUNDS,
 *      BENCH_CONNECTIONS, BENCH_PIPELINING, BENCH_RSS_COUNTS, BENCH_RSS=0 to skip
 *      the RSS phase, BENCH_START=npm|node, BENCH_SERVICE_ENV='{"NAME":"value"}'
 *      for extra service settings, BENCH_FIXTURE=mixed-5|plain-text|annotated-20|untrusted-6
 *      for another request shape, BENCH_BODY=<file> for a request of your own)
 */
import autocannon, { type Result } from 'autocannon';
import { readFileSync } from 'node:fs';
import { shapeText } from './fixtures.js';
import { scanPii, scanSecrets } from '../src/detect/index.js';
import { QUICK, START_MODE, cleanup, cpuSeconds, envNumber, fmt, machine, median, processTree, rssBytes, startEcho, startService, table, type Proc } from './lib.js';

const SECONDS = envNumber('BENCH_SECONDS', QUICK ? 2 : 5);
const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 5);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const PIPELINING = envNumber('BENCH_PIPELINING', 1);
const WARMUP_SECONDS = QUICK ? 1 : 3;
const RSS_COUNTS = (process.env.BENCH_RSS_COUNTS ?? (QUICK ? '10000,30000' : '10000,100000')).split(',').map(Number);
const RSS_LOG_LEVEL = process.env.BENCH_RSS_LOG_LEVEL ?? 'warn';
const RSS = process.env.BENCH_RSS !== '0';
/** Extra environment for the service (JSON object), e.g. '{"TRUSTGATE_POLICY_DIR":"/tmp/p"}' to compare settings. */
const SERVICE_ENV = JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>;
if (RSS_COUNTS.length !== 2 || RSS_COUNTS.some((n) => !Number.isSafeInteger(n) || n <= 0) || RSS_COUNTS[0]! >= RSS_COUNTS[1]!) {
  throw new Error('BENCH_RSS_COUNTS must be two increasing counts, e.g. 10000,100000');
}

/** The request: a named shape of bench/fixtures.ts (the mixed 4 KB fixture by default) or a file's text. */
const FIXTURE = process.env.BENCH_BODY !== undefined ? `file ${process.env.BENCH_BODY}` : (process.env.BENCH_FIXTURE ?? 'mixed-5');
const BODY = process.env.BENCH_BODY !== undefined ? readFileSync(process.env.BENCH_BODY, 'utf8') : shapeText(FIXTURE);
/** Only the default fixture with the shipped policies has a known answer; anything else must answer 200. */
const KNOWN_ANSWER = FIXTURE === 'mixed-5' && Object.keys(SERVICE_ENV).length === 0;
const HEADERS = { 'content-type': 'application/json' };

interface Target {
  label: string;
  proc: Proc;
  path: string;
}

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
  /** Server CPU (user + system) per request, microseconds. */
  cpuUs: number;
  /** This (client) process's CPU use during the run, % of one core. */
  clientCpu: number;
}

function run(url: string, opts: { duration?: number; amount?: number }): Promise<Result> {
  return Promise.resolve(
    autocannon({ url, method: 'POST', headers: HEADERS, body: BODY, connections: CONNECTIONS, pipelining: PIPELINING, ...opts }),
  );
}

async function measure(t: Target, seconds: number): Promise<Sample> {
  const cpu0 = cpuSeconds(t.proc.pid);
  const client0 = process.cpuUsage();
  const wall0 = performance.now();
  const r = await run(t.proc.base + t.path, { duration: seconds });
  const wall = (performance.now() - wall0) / 1000;
  const client = process.cpuUsage(client0);
  const cpu = cpuSeconds(t.proc.pid) - cpu0;
  const total = r.requests.total;
  return {
    rps: total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    total,
    cpuUs: (cpu / Math.max(1, total)) * 1e6,
    clientCpu: ((client.user + client.system) / 1e6 / wall) * 100,
  };
}

/** One request through each target, checking that it answers what the bench assumes. */
async function sanity(service: Proc, echo: Proc): Promise<void> {
  const r = await fetch(`${service.base}/v1/evaluate`, { method: 'POST', headers: HEADERS, body: BODY });
  const d = (await r.json()) as { outcome?: string; modified?: boolean; validation?: unknown[]; evidence?: Array<{ status: string }> };
  const expected = !KNOWN_ANSWER || (d.outcome === 'allow' && d.modified === true && d.validation?.length === 0 && d.evidence?.[0]?.status === 'verified');
  if (r.status !== 200 || !expected) {
    throw new Error(
      KNOWN_ANSWER
        ? `the fixture no longer gives allow/modified/verified with the shipped policies: ${r.status} ${JSON.stringify(d).slice(0, 500)}`
        : `the service did not answer 200 for ${FIXTURE}: ${r.status} ${JSON.stringify(d).slice(0, 500)}`,
    );
  }
  const e = await fetch(`${echo.base}/echo`, { method: 'POST', headers: HEADERS, body: BODY });
  const text = await e.text();
  // The echo sends back what JSON.parse made of the body, serialized again.
  if (e.status !== 200 || text !== JSON.stringify(JSON.parse(BODY))) throw new Error(`echo server did not echo the body (${e.status})`);
}

async function rssPhase(): Promise<{ rows: Array<[number, number]>; idle: number }> {
  const svc = await startService({ ...SERVICE_ENV, LOG_LEVEL: RSS_LOG_LEVEL });
  try {
    const idle = rssBytes(svc.pid);
    const rows: Array<[number, number]> = [];
    const [first, last] = RSS_COUNTS as [number, number];
    const step = Math.min(10_000, first);
    let done = 0;
    while (done < last) {
      const n = Math.min(step, last - done);
      const r = await run(`${svc.base}/v1/evaluate`, { amount: n });
      if (r.non2xx + r.errors > 0) console.log(`  (rss phase: ${r.non2xx} non-2xx, ${r.errors} errors in ${n} requests)`);
      done += n;
      if (done % step === 0 || done === last) rows.push([done, rssBytes(svc.pid)]);
    }
    return { rows, idle };
  } finally {
    await svc.stop();
  }
}

async function main(): Promise<void> {
  console.log(`bench:evaluate  ${machine()}`);
  console.log(
    `fixture ${FIXTURE}, ${Buffer.byteLength(BODY)} B; ${ROUNDS} rounds x ${SECONDS} s per target; connections ${CONNECTIONS}, pipelining ${PIPELINING}; service started with ${
      START_MODE === 'npm' ? '`npm start`' : '`node dist/server.js`'
    }${Object.keys(SERVICE_ENV).length > 0 ? `; service env ${JSON.stringify(SERVICE_ENV)}` : ''}\n`,
  );

  const echo = await startEcho();
  // One after the other: each `npm start` compiles src/ first.
  const warn = await startService({ ...SERVICE_ENV, LOG_LEVEL: 'warn' });
  const info = await startService({ ...SERVICE_ENV, LOG_LEVEL: 'info' });
  const single = await startService({ TRUSTGATE_WORKERS: '1', ...SERVICE_ENV, LOG_LEVEL: 'info' });
  await sanity(warn, echo);
  await sanity(info, echo);
  await sanity(single, echo);
  const workers = processTree(info.pid).length - 1;
  console.log(`service worker processes: ${workers === 0 ? 'none (one process serves)' : workers} (TRUSTGATE_WORKERS=${SERVICE_ENV.TRUSTGATE_WORKERS ?? 'auto'})\n`);

  const targets: Target[] = [
    { label: 'echo', proc: echo, path: '/echo' },
    { label: 'evaluate (LOG_LEVEL=warn)', proc: warn, path: '/v1/evaluate' },
    { label: 'evaluate (LOG_LEVEL=info)', proc: info, path: '/v1/evaluate' },
    { label: 'evaluate (LOG_LEVEL=info, TRUSTGATE_WORKERS=1)', proc: single, path: '/v1/evaluate' },
  ];
  for (const t of targets) await measure(t, WARMUP_SECONDS);

  const samples = new Map<string, Sample[]>(targets.map((t) => [t.label, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    const line: string[] = [];
    for (const t of order) {
      const s = await measure(t, SECONDS);
      samples.get(t.label)!.push(s);
      line.push(`${t.label.replace('evaluate ', '')} ${fmt(s.rps)}`);
    }
    console.log(`round ${round + 1}: ${line.join(' | ')} req/s`);
  }
  await single.stop();
  await info.stop();
  await warn.stop();
  await echo.stop();

  const at = (label: string): Sample[] => samples.get(label)!;
  const e = at('echo');
  console.log();
  table([
    ['target', 'req/s (median)', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'requests', 'server CPU us/req', 'client CPU %'],
    ...targets.map((t) => {
      const s = at(t.label);
      return [
        t.label,
        fmt(median(s.map((x) => x.rps))),
        fmt(median(s.map((x) => x.p50)), 1),
        fmt(median(s.map((x) => x.p99)), 1),
        s.reduce((a, x) => a + x.errors, 0),
        s.reduce((a, x) => a + x.non2xx, 0),
        s.reduce((a, x) => a + x.total, 0),
        fmt(median(s.map((x) => x.cpuUs))),
        fmt(median(s.map((x) => x.clientCpu))),
      ];
    }),
  ]);

  const ratio = (label: string, f: (s: Sample, base: Sample) => number): number => median(at(label).map((s, i) => f(s, e[i]!)));
  console.log();
  table([
    ['ratio (median of per-round ratios)', 'LOG_LEVEL=warn', 'LOG_LEVEL=info', 'info, one process', 'target'],
    [
      'throughput evaluate/echo',
      fmt(ratio('evaluate (LOG_LEVEL=warn)', (s, b) => s.rps / b.rps), 2),
      fmt(ratio('evaluate (LOG_LEVEL=info)', (s, b) => s.rps / b.rps), 2),
      fmt(ratio('evaluate (LOG_LEVEL=info, TRUSTGATE_WORKERS=1)', (s, b) => s.rps / b.rps), 2),
      '>= 0.6 (aim 0.8)',
    ],
    [
      'server CPU per request echo/evaluate',
      fmt(ratio('evaluate (LOG_LEVEL=warn)', (s, b) => b.cpuUs / s.cpuUs), 2),
      fmt(ratio('evaluate (LOG_LEVEL=info)', (s, b) => b.cpuUs / s.cpuUs), 2),
      fmt(ratio('evaluate (LOG_LEVEL=info, TRUSTGATE_WORKERS=1)', (s, b) => b.cpuUs / s.cpuUs), 2),
      '(all processes; client-independent)',
    ],
  ]);

  detectorThroughput();
  if (!RSS) return;
  console.log(`\nRSS of the service, every process summed (fresh service, LOG_LEVEL=${RSS_LOG_LEVEL}):`);
  const { rows, idle } = await rssPhase();
  table([['after requests', 'VmRSS MiB'], ['0 (ready, idle)', fmt(idle / 2 ** 20, 1)], ...rows.map(([n, b]) => [fmt(n), fmt(b / 2 ** 20, 1)])]);
  const [first, last] = RSS_COUNTS as [number, number];
  const rssFirst = rows.find(([n]) => n === first)?.[1] ?? NaN;
  const rssLast = rows.find(([n]) => n === last)?.[1] ?? NaN;
  console.log(`RSS ratio after ${fmt(last)} / after ${fmt(first)}: ${fmt(rssLast / rssFirst, 3)}  (target <= 1.10)`);
}

/**
 * The content detectors (contract section 16) in this process, on 1 MB of
 * text: log-like prose with a credential and some personal data every ~4 KB.
 * The best of 5 runs of each scanner; MB/s of UTF-16 text (1 MB = 10^6
 * characters).
 */
function detectorThroughput(): void {
  const unit =
    '2026-12-01T10:00:00Z INFO request id=42 user=jane.doe@example.com fetched https://example.com/docs/page?x=1 in 12 ms; ' +
    'the quick brown fox jumps over the lazy dog, order 1234 shipped to +44 20 7946 0958. '.repeat(30) +
    'config: AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE card 4111 1111 1111 1111\n';
  const text = unit.repeat(Math.ceil(1_000_000 / unit.length)).slice(0, 1_000_000);
  const best = (f: (s: string) => unknown) => {
    let ms = Infinity;
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      f(text);
      ms = Math.min(ms, performance.now() - t0);
    }
    return ms;
  };
  const secrets = best(scanSecrets);
  const pii = best(scanPii);
  console.log(
    `\ndetectors on 1 MB of text (best of 5, this process): secrets() ${fmt(1000 / secrets, 1)} MB/s, pii() ${fmt(1000 / pii, 1)} MB/s, both ${fmt(1000 / (secrets + pii), 1)} MB/s`,
  );
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
