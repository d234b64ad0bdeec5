/**
 * Peak RSS under concurrent big requests, against the budget of bytes in
 * flight (TRUSTGATE_MAX_INFLIGHT_BYTES; src/http/admission.ts).
 *
 * One service process (TRUSTGATE_WORKERS=1, LOG_LEVEL=warn, no event-loop
 * shedding so that only the budget holds requests back, the default
 * budget unless BENCH_SERVICE_ENV sets one), then, each on a fresh process:
 * - fan-out: BENCH_CLIENTS (300) concurrent requests of BENCH_REQUEST_KB
 *   (260) KB each, every client reading its answer;
 * - the same with a fifth as many clients sending 2 MB each;
 * - never read: 40 clients each send a 2 MB request and never read their
 *   answer (closed at TRUSTGATE_REQUEST_TIMEOUT_MS, 5 s here).
 * For each: answers by status, peak RSS (VmHWM) of the serving process, its
 * growth over the idle process (VmRSS), and that growth as a multiple of the
 * budget. BENCH_SERVICE_ENV='{"TRUSTGATE_MAX_INFLIGHT_BYTES":"68719476736"}'
 * shows the same without a budget worth the name.
 *
 * Run: npm run bench:admission
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { DEFAULT_MAX_INFLIGHT_BYTES } from '../src/config.js';
import { cleanup, envNumber, fmt, machine, sleep, startService, table } from './lib.js';

const CLIENTS = envNumber('BENCH_CLIENTS', 300);
const REQUEST_KB = envNumber('BENCH_REQUEST_KB', 260);
const SERVICE_ENV = JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>;
const BUDGET = Number(SERVICE_ENV.TRUSTGATE_MAX_INFLIGHT_BYTES ?? DEFAULT_MAX_INFLIGHT_BYTES);

/** VmRSS (now) or VmHWM (the peak since start) of a process, bytes. */
function rss(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

const request = (kb: number): string =>
  JSON.stringify({
    result: { content: Array.from({ length: Math.max(1, Math.round((kb * 1024) / 20_020)) }, (_, i) => ({ type: 'text', text: String.fromCharCode(97 + (i % 26)).repeat(20_000) })) },
  });
let body = request(REQUEST_KB);

const fanOut = (base: string): Promise<Record<string, number>> => fanOutN(base, CLIENTS);

async function fanOutN(base: string, clients: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  await Promise.all(
    Array.from({ length: clients }, async () => {
      let key: string;
      try {
        const r = await fetch(`${base}/v1/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await r.arrayBuffer();
        key = String(r.status);
      } catch {
        key = 'failed';
      }
      counts[key] = (counts[key] ?? 0) + 1;
    }),
  );
  return counts;
}

async function neverRead(base: string): Promise<Record<string, number>> {
  const { hostname, port } = new URL(base);
  const sockets: Socket[] = [];
  for (let i = 0; i < 40; i++) {
    const s = connect(Number(port), hostname);
    s.on('error', () => {});
    s.write(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    s.pause();
    sockets.push(s);
  }
  // Until the service has closed every one of them (the request timeout), or 30 s.
  const until = Date.now() + 30_000;
  let seen = false;
  let refused = 0;
  while (Date.now() < until) {
    const r = await fetch(`${base}/readyz`);
    const a = ((await r.json()) as { admission?: { inflightBytes: number; refused: number } }).admission;
    if (a === undefined) continue;
    refused = a.refused;
    if (a.inflightBytes > 0) seen = true;
    else if (seen) break;
    await sleep(100);
  }
  for (const s of sockets) s.destroy();
  return { clients: 40, refused };
}

async function main(): Promise<void> {
  console.log(machine());
  console.log(`budget ${fmt(BUDGET / 1048576)} MiB\n`);
  const rows: Array<Array<string | number>> = [['scenario', 'answers', 'idle RSS', 'peak RSS', 'growth', 'growth / budget']];
  const big = request(2048);
  for (const [name, run, text] of [
    [`fan-out: ${CLIENTS} concurrent, ${REQUEST_KB} KB`, fanOut, body],
    [`fan-out: ${Math.round(CLIENTS / 5)} concurrent, 2 MB`, (base: string) => fanOutN(base, Math.round(CLIENTS / 5)), big],
    [`40 clients that never read, 2 MB`, neverRead, big],
  ] as const) {
    body = text;
    const svc = await startService({ LOG_LEVEL: 'warn', TRUSTGATE_WORKERS: '1', TRUSTGATE_REQUEST_TIMEOUT_MS: '5000', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', ...SERVICE_ENV }, []);
    await sleep(500);
    const idle = rss(svc.pid, 'VmRSS');
    const answers = await run(svc.base);
    const peak = rss(svc.pid, 'VmHWM');
    rows.push([name, JSON.stringify(answers), `${fmt(idle / 1048576)} MB`, `${fmt(peak / 1048576)} MB`, `${fmt((peak - idle) / 1048576)} MB`, fmt((peak - idle) / BUDGET, 2)]);
    await svc.stop();
  }
  table(rows);
}

main().then(
  () => cleanup(),
  async (err: unknown) => {
    console.error(err);
    await cleanup();
    process.exit(1);
  },
);
