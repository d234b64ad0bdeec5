/**
 * Soak: a FIXED request rate against the service started as users start it
 * (`npm start`), with the ~4 KB fixture of bench/fixtures.ts, for a long
 * time. Watches memory (VmRSS of the serving node process, from /proc),
 * latency and errors over time.
 *
 * - rate: SOAK_RATE requests/s over all connections (default 200), through
 *   autocannon's `overallRate` (its overall latency histogram is corrected
 *   for coordinated omission);
 * - time: SOAK_SECONDS (default 600); a line every SOAK_SAMPLE_SECONDS
 *   (default 60) with RSS, the interval's request count, p99 and errors;
 * - errors: non-2xx answers plus socket errors and timeouts;
 * - LOG_LEVEL of the service: SOAK_LOG_LEVEL (default info, the service's
 *   default); its output goes to a temporary file.
 *
 * Run: npm run bench:soak      (SOAK_SECONDS=60 for a short check)
 */
import { statSync } from 'node:fs';
import autocannon from 'autocannon';
import { evaluateRequestText } from './fixtures.js';
import { START_MODE, cleanup, cpuSeconds, envNumber, fmt, machine, percentile, rssBytes, startService, table } from './lib.js';

const RATE = envNumber('SOAK_RATE', 200);
const SECONDS = envNumber('SOAK_SECONDS', 600);
const SAMPLE_SECONDS = envNumber('SOAK_SAMPLE_SECONDS', 60);
const CONNECTIONS = envNumber('SOAK_CONNECTIONS', 10);
const LOG_LEVEL = process.env.SOAK_LOG_LEVEL ?? 'info';
const BODY = evaluateRequestText();

const mib = (b: number): string => fmt(b / 2 ** 20, 1);

interface Interval {
  latencies: number[];
  ok: number;
  non2xx: number;
  socketErrors: number;
}

const fresh = (): Interval => ({ latencies: [], ok: 0, non2xx: 0, socketErrors: 0 });

async function main(): Promise<void> {
  console.log(`bench:soak  ${machine()}`);
  console.log(
    `${RATE} req/s for ${SECONDS} s, ${CONNECTIONS} connections, fixture ${Buffer.byteLength(BODY)} B, service LOG_LEVEL=${LOG_LEVEL} started with ${
      START_MODE === 'npm' ? '`npm start`' : '`node dist/server.js`'
    }\n`,
  );
  const svc = await startService({ LOG_LEVEL });
  const rows: Array<Array<string | number>> = [['t (s)', 'VmRSS MiB', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx', 'socket errors', 'server CPU %']];
  const rssStart = rssBytes(svc.pid);
  rows.push(['0', mib(rssStart), '', '', '', '', '', '', '', '']);

  let interval = fresh();
  let lastT = performance.now();
  let lastCpu = cpuSeconds(svc.pid);
  const t0 = performance.now();
  const rssSeries: number[] = [];
  const sample = (): void => {
    const now = performance.now();
    const secs = (now - lastT) / 1000;
    const cpu = cpuSeconds(svc.pid);
    const rss = rssBytes(svc.pid);
    rssSeries.push(rss);
    const n = interval.ok + interval.non2xx;
    const row = [
      fmt((now - t0) / 1000),
      mib(rss),
      fmt(n),
      fmt(n / secs),
      fmt(percentile(interval.latencies, 50), 1),
      fmt(percentile(interval.latencies, 99), 1),
      fmt(interval.latencies.reduce((a, b) => Math.max(a, b), 0), 1),
      interval.non2xx,
      interval.socketErrors,
      fmt(((cpu - lastCpu) / secs) * 100),
    ];
    rows.push(row);
    console.log(`  t=${row[0]} s  rss ${row[1]} MiB  ${row[3]} req/s  p99 ${row[5]} ms  non-2xx ${row[7]}  socket errors ${row[8]}`);
    interval = fresh();
    lastT = now;
    lastCpu = cpu;
  };

  const instance = autocannon({
    url: `${svc.base}/v1/evaluate`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
    connections: CONNECTIONS,
    overallRate: RATE,
    duration: SECONDS,
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) interval.ok++;
    else interval.non2xx++;
    interval.latencies.push(responseTime);
  });
  instance.on('reqError', () => {
    interval.socketErrors++;
  });
  const timer = setInterval(sample, SAMPLE_SECONDS * 1000);
  const result = await instance;
  clearInterval(timer);
  // A last, partial interval only when it is long enough to say something.
  if ((performance.now() - lastT) / 1000 >= Math.min(5, SAMPLE_SECONDS / 2)) sample();
  const rssEnd = rssBytes(svc.pid);
  let logBytes = 0;
  try {
    logBytes = statSync(svc.logFile).size;
  } catch {
    // gone
  }
  await svc.stop();

  console.log();
  table(rows);
  console.log();
  const total = result.requests.total;
  const errors = result.non2xx + result.errors + result.timeouts;
  table([
    ['summary', 'value'],
    ['requests', fmt(total)],
    ['achieved rate req/s (target)', `${fmt(total / result.duration, 1)} (${RATE})`],
    ['latency p50 / p99 / max ms (coordinated-omission corrected)', `${fmt(result.latency.p50, 1)} / ${fmt(result.latency.p99, 1)} / ${fmt(result.latency.max, 1)}`],
    ['errors: non-2xx + socket errors + timeouts', `${fmt(errors)} (${result.non2xx} + ${result.errors} + ${result.timeouts})`],
    ['RSS start (ready, idle) MiB', mib(rssStart)],
    ['RSS end MiB', mib(rssEnd)],
    ['RSS end / first sample under load', rssSeries.length > 1 ? fmt(rssEnd / rssSeries[0]!, 3) : 'n/a (run longer than one sample)'],
    ['service log written (LOG_LEVEL=' + LOG_LEVEL + ')', `${mib(logBytes)} MiB`],
  ]);
  if (errors > 0) process.exitCode = 1;
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
