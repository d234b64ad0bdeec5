/**
 * Hostile clients against the service as users run it (`node dist/server.js`
 * after `npm run build`, default settings but the body limit of contract v2,
 * TRUSTGATE_BODY_LIMIT=8388608, stdout a pipe read by this process, as
 * `docker logs` or a log shipper reads it). One line per class of contract
 * sections 8 and 9:
 *
 * - pointer bomb: a long member name above an evidence record that repeats
 *   a name many times (one ~1 MB request);
 * - slow readers: connections that send an evaluate request with a large
 *   answer and never read it;
 * - log lines: concurrent decisions whose log line is larger than a pipe
 *   takes whole (PIPE_BUF), every stdout line parsed;
 * - answer amplification: a small request whose decision lists a finding,
 *   a block and a validation finding per tiny block;
 * - cross origin: a cross-site form POST to /v1/policies/reload and a
 *   text/plain body to the interceptor route;
 * - bad target: `/%zz?token=...`, which must be a problem+json that does not
 *   echo the query.
 *
 * For each: the request's size, the worker's peak RSS growth (the largest
 * growth of any serving process, sampled every 50 ms from /proc) and time,
 * and whether the service answered the next request. Then the ratio of
 * evaluate throughput during a /metrics flood to without it, and during a
 * /healthz flood of the same size (same connections), in the same run.
 *
 * Bounded in time (about a minute and a half): every request has a timeout,
 * and a service that died is started again before the next class, so the
 * bench reports rather than hangs.
 *
 * Run: npm run bench:hostile   (env HOSTILE_FLOOD_SECONDS (3), HOSTILE_ROUNDS (4),
 *      HOSTILE_CONNECTIONS (10), HOSTILE_SERVICE_ENV='{"TRUSTGATE_WORKERS":"1"}')
 */
import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { shapeText } from './fixtures.js';
import { ROOT, envNumber, fmt, freePort, machine, median, processTree, sleep, table } from './lib.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const FLOOD_SECONDS = envNumber('HOSTILE_FLOOD_SECONDS', 3);
const ROUNDS = envNumber('HOSTILE_ROUNDS', 4);
const CONNECTIONS = envNumber('HOSTILE_CONNECTIONS', 10);
const SERVICE_ENV = JSON.parse(process.env.HOSTILE_SERVICE_ENV ?? '{}') as Record<string, string>;
const MB = 1024 * 1024;

// ---------------------------------------------------------------- the service

interface Service {
  child: ChildProcess;
  pid: number;
  base: string;
  port: number;
  exited: boolean;
  /** Log statistics since the last reset. */
  log: { lines: number; unparseable: number; over64k: number; longest: number; decisions: number };
  resetLog(): void;
  stop(): Promise<void>;
}

const LINE_LIMIT = 64 * 1024;

async function startService(): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', TRUSTGATE_BODY_LIMIT: '8388608', ...SERVICE_ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const fresh = () => ({ lines: 0, unparseable: 0, over64k: 0, longest: 0, decisions: 0 });
  const s: Service = {
    child,
    pid: child.pid!,
    port,
    base: `http://127.0.0.1:${port}`,
    exited: false,
    log: fresh(),
    resetLog: () => (s.log = fresh()),
    stop: async () => {
      if (s.exited) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => {
        for (const p of processTree(s.pid).reverse()) {
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }, 5000);
      await gone;
      clearTimeout(t);
    },
  };
  child.once('exit', () => (s.exited = true));
  // Lines are judged as they come and never kept: a bomb's log must not fill this process.
  let partial: Buffer[] = [];
  let partialLength = 0;
  const judgeLine = (line: string): void => {
    if (line === '') return;
    s.log.lines++;
    s.log.longest = Math.max(s.log.longest, Buffer.byteLength(line));
    if (Buffer.byteLength(line) > LINE_LIMIT) s.log.over64k++;
    try {
      const j = JSON.parse(line) as { msg?: unknown };
      if (j.msg === 'decision') s.log.decisions++;
    } catch {
      s.log.unparseable++;
    }
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    let at = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, at);
      if (nl < 0) break;
      const piece = chunk.subarray(at, nl);
      const line = partialLength > 0 ? Buffer.concat([...partial, piece]).toString('utf8') : piece.toString('utf8');
      partial = [];
      partialLength = 0;
      judgeLine(line);
      at = nl + 1;
    }
    if (at < chunk.length) {
      partial.push(chunk.subarray(at));
      partialLength += chunk.length - at;
    }
  });
  child.stderr!.on('data', () => {});
  const deadline = Date.now() + 60_000;
  while (!s.exited && Date.now() < deadline) {
    try {
      const r = await fetch(`${s.base}/readyz`, { signal: AbortSignal.timeout(1000) });
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch {
      // not yet
    }
    await sleep(100);
  }
  // Every worker listening (the primary logs nothing we wait for at warn, so give it a moment).
  await sleep(1500);
  return s;
}

let service: Service;

/** The service is up (answers /healthz in 2 s), else it is started again. */
async function ensureService(): Promise<string> {
  if (service !== undefined && !service.exited) {
    try {
      const r = await fetch(`${service.base}/healthz`, { signal: AbortSignal.timeout(2000) });
      await r.arrayBuffer();
      if (r.status === 200) return '';
    } catch {
      // dead or stuck
    }
    await service.stop();
  }
  service = await startService();
  return 'restarted';
}

// ---------------------------------------------------------------- measuring

function rssOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Serving processes: the workers, or the process itself with TRUSTGATE_WORKERS=1. */
function servingPids(): number[] {
  const tree = processTree(service.pid);
  return tree.length > 1 ? tree.slice(1) : tree;
}

/** Sample the RSS of every serving process; stop() gives the largest growth of any of them, in bytes. */
function watchRss(): { stop(): number } {
  const base = new Map<number, number>();
  const peak = new Map<number, number>();
  const sample = () => {
    for (const pid of servingPids()) {
      const r = rssOf(pid);
      if (!Number.isFinite(r)) continue;
      if (!base.has(pid)) base.set(pid, r);
      peak.set(pid, Math.max(peak.get(pid) ?? 0, r));
    }
  };
  sample();
  const timer = setInterval(sample, 50);
  return {
    stop() {
      clearInterval(timer);
      sample();
      let growth = 0;
      for (const [pid, p] of peak) growth = Math.max(growth, p - base.get(pid)!);
      return growth;
    },
  };
}

interface Reply {
  status: number;
  type: string;
  body: string;
  error?: string;
}

async function send(path: string, body: string | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }, ms = 30_000): Promise<Reply> {
  try {
    const r = await fetch(service.base + path, { method: 'POST', headers, body, signal: AbortSignal.timeout(ms) });
    return { status: r.status, type: r.headers.get('content-type') ?? '', body: await r.text() };
  } catch (err) {
    return { status: 0, type: '', body: '', error: (err as Error).name === 'TimeoutError' ? 'timeout' : 'connection failed' };
  }
}

const SMALL = JSON.stringify({ result: { content: [{ type: 'text', text: 'hello' }] } });

/** Whether the service answers an ordinary evaluate request (within 10 s). */
async function nextAnswered(): Promise<string> {
  const r = await send('/v1/evaluate', SMALL, undefined, 10_000);
  return r.status === 200 ? 'yes' : `NO (${r.error ?? r.status})`;
}

interface Row {
  name: string;
  requestBytes: number;
  rss: number;
  seconds: number;
  next: string;
  observed: string;
}
const rows: Row[] = [];

async function measureClass(name: string, requestBytes: number, run: () => Promise<string>): Promise<void> {
  const restarted = await ensureService();
  service.resetLog();
  const w = watchRss();
  const t0 = performance.now();
  let observed: string;
  try {
    observed = await run();
  } catch (err) {
    observed = `bench error: ${(err as Error).message}`;
  }
  const seconds = (performance.now() - t0) / 1000;
  const rss = w.stop();
  const next = await nextAnswered();
  rows.push({ name, requestBytes, rss, seconds, next, observed: (restarted ? '(service restarted before) ' : '') + observed });
  console.error(`  ${name}: ${observed}`);
}

// ---------------------------------------------------------------- the requests

/** A long member name above an evidence record that repeats one name (an evidenceRef names the record): ~`bytes` in all. */
function pointerBomb(bytes: number): string {
  const name = 'n'.repeat(bytes / 4);
  const repeats = Math.floor((bytes - name.length) / 6);
  const ref = `{"type":"data-class.v1","digest":"sha256:${'0'.repeat(64)}","canonicalization":"jcs/rfc8785","ref":"r"}`;
  return `{"result":{"_meta":{"${K}":{"evidenceRef":${ref}}},"content":[]},"evidence":[{"ref":"r","record":{"${name}":{${'"a":1,'.repeat(repeats - 1)}"a":1}}}]}`;
}

/** Every block untrusted (a result-level claim), each block as small as JSON allows. */
function amplifier(blocks: number, extraText = ''): string {
  const content = new Array(blocks).fill('{}');
  if (extraText !== '') content.unshift(JSON.stringify({ type: 'text', text: extraText }));
  return `{"result":{"_meta":{"${K}":{"untrusted":true}},"content":[${content.join(',')}]}}`;
}

/** Size of an evaluate answer without its `result`. */
function sizeWithoutResult(body: string): number {
  try {
    const j = JSON.parse(body) as Record<string, unknown>;
    delete j.result;
    return Buffer.byteLength(JSON.stringify(j));
  } catch {
    return NaN;
  }
}

function rawRequest(path: string, body: string, headers: Record<string, string> = {}): Buffer {
  const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`];
  for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
  return Buffer.from(head.join('\r\n') + '\r\n\r\n' + body);
}

// ---------------------------------------------------------------- classes

async function bomb(): Promise<void> {
  const body = pointerBomb(1024 * 1024);
  await measureClass('pointer bomb (evaluate evidence)', body.length, async () => {
    const r = await send('/v1/evaluate', body, undefined, 40_000);
    if (r.status === 200) {
      const d = JSON.parse(r.body) as { evidence: Array<{ status: string }> };
      return `200, evidence ${d.evidence.map((e) => e.status).join(', ')}`;
    }
    return r.error ?? `status ${r.status}`;
  });
}

async function slowReaders(): Promise<void> {
  const COUNT = 40;
  // Answers far larger than a loopback connection's kernel buffers: the rest waits in the worker.
  const body = amplifier(9_000, 'x'.repeat(4_000_000));
  await measureClass(`slow readers (${COUNT} connections, never read)`, body.length * COUNT, async () => {
    const sockets: Array<{ s: Socket; closed: boolean; bytes: number }> = [];
    const payload = rawRequest('/v1/evaluate', body);
    for (let i = 0; i < COUNT; i++) {
      const entry = { s: connect(service.port, '127.0.0.1'), closed: false, bytes: 0 };
      entry.s.on('error', () => {});
      entry.s.on('close', () => (entry.closed = true));
      entry.s.on('data', (d: Buffer) => (entry.bytes += d.length));
      entry.s.write(payload);
      entry.s.pause();
      sockets.push(entry);
    }
    // The default TRUSTGATE_REQUEST_TIMEOUT_MS is 10 s; wait past it, then read what is left.
    await sleep(13_000);
    for (const e of sockets) e.s.resume();
    await sleep(2000);
    const closed = sockets.filter((e) => e.closed).length;
    const most = Math.max(...sockets.map((e) => e.bytes));
    for (const e of sockets) e.s.destroy();
    return `${closed}/${COUNT} closed by the service after the timeout; largest answer part read ${fmt(most / MB, 1)} MB`;
  });
}

async function logLines(): Promise<void> {
  const REQUESTS = 300;
  const body = amplifier(1000);
  await measureClass(`log lines (${REQUESTS} concurrent decisions)`, body.length * REQUESTS, async () => {
    let next = 0;
    const worker = async () => {
      while (next < REQUESTS) {
        next++;
        await send('/v1/evaluate', body, undefined, 20_000);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    await sleep(1000);
    const l = service.log;
    return `${l.decisions} decision lines; ${l.unparseable} of ${l.lines} lines unparseable, ${l.over64k} over 64 KB, longest ${fmt(l.longest / 1024)} KB`;
  });
}

async function amplification(): Promise<void> {
  const body = amplifier(10_000);
  await measureClass('answer amplification', body.length, async () => {
    const r = await send('/v1/evaluate', body);
    await sleep(500);
    if (r.status !== 200) return r.error ?? `status ${r.status}`;
    const without = sizeWithoutResult(r.body);
    return `answer ${fmt(r.body.length / 1024)} KB, without result ${fmt(without / 1024)} KB = ${fmt(without / body.length, 1)} x the request; longest log line ${fmt(service.log.longest / 1024)} KB`;
  });
}

async function crossOrigin(): Promise<void> {
  await measureClass('cross-origin form POST', 0, async () => {
    // What a page's fetch(url, { method: 'POST', mode: 'no-cors' }) sends: an Origin and no body.
    const bare = await send('/v1/policies/reload', undefined, { origin: 'http://evil.example' });
    const form = await send('/v1/policies/reload', 'a=1', { origin: 'null', 'content-type': 'application/x-www-form-urlencoded' });
    const plain = await send('/v1/interceptors/docker-mcp-gateway', JSON.stringify({ content: [{ type: 'text', text: 'x' }] }), { 'content-type': 'text/plain' });
    const what = plain.body.includes('"isError":true') ? 'isError' : plain.body === '' ? 'passed (decided)' : 'replaced (decided)';
    return `reload from a foreign Origin: no body ${bare.status}, form ${form.status}; interceptor text/plain: ${plain.status} ${what}`;
  });
}

async function badTarget(): Promise<void> {
  await measureClass('undecodable target', 0, async () => {
    const a = await send('/%zz?token=s3cret', '{}');
    const b = await send('/v1/evaluate?token=%zz', SMALL);
    const echoes = a.body.includes('s3cret') ? 'echoes the token' : 'no echo';
    return `/%zz?token=...: ${a.status} ${a.type.split(';')[0]} (${echoes}); /v1/evaluate?token=%zz: ${b.status}`;
  });
}

// ---------------------------------------------------------------- floods

async function throughput(path: string, seconds: number, body?: string): Promise<number> {
  const r = await autocannon({
    url: service.base + path,
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 5,
  });
  return r.requests.total / seconds;
}

async function floods(): Promise<{ metrics: number; healthz: number; alone: number[]; withMetrics: number[]; withHealthz: number[]; metricsRps: number[]; healthzRps: number[] }> {
  await ensureService();
  const body = shapeText('mixed-5');
  const out = { metrics: NaN, healthz: NaN, alone: [] as number[], withMetrics: [] as number[], withHealthz: [] as number[], metricsRps: [] as number[], healthzRps: [] as number[] };
  await throughput('/v1/evaluate', 2, body);
  const rm: number[] = [];
  const rh: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const alone = await throughput('/v1/evaluate', FLOOD_SECONDS, body);
    const [withMetrics, metricsRps] = await Promise.all([throughput('/v1/evaluate', FLOOD_SECONDS, body), throughput('/metrics', FLOOD_SECONDS)]);
    const [withHealthz, healthzRps] = await Promise.all([throughput('/v1/evaluate', FLOOD_SECONDS, body), throughput('/healthz', FLOOD_SECONDS)]);
    out.alone.push(alone);
    out.withMetrics.push(withMetrics);
    out.withHealthz.push(withHealthz);
    out.metricsRps.push(metricsRps);
    out.healthzRps.push(healthzRps);
    rm.push(withMetrics / alone);
    rh.push(withHealthz / alone);
  }
  out.metrics = median(rm);
  out.healthz = median(rh);
  return out;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  console.log(machine());
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const started = performance.now();
  await ensureService();
  const guard = setTimeout(() => {
    console.error('bench:hostile: over 5 minutes; stopping');
    void service.stop().finally(() => process.exit(1));
  }, 300_000);
  guard.unref();

  await bomb();
  await slowReaders();
  await logLines();
  await amplification();
  await crossOrigin();
  await badTarget();
  const f = await floods();

  console.log(`\nservice: node dist/server.js, default settings but TRUSTGATE_BODY_LIMIT=8388608${Object.keys(SERVICE_ENV).length ? ' + ' + JSON.stringify(SERVICE_ENV) : ''}; workers: ${servingPids().length}`);
  table([
    ['class', 'request', 'peak RSS growth', 'time', 'next answered', 'observed'],
    ...rows.map((r) => [r.name, r.requestBytes === 0 ? '-' : `${fmt(r.requestBytes / 1024)} KB`, `${fmt(r.rss / MB)} MB`, `${fmt(r.seconds, 1)} s`, r.next, r.observed]),
  ]);
  console.log('');
  table([
    ['evaluate throughput (4 KB fixture), median of rounds', 'ratio', 'evaluate req/s per round', 'flood req/s per round'],
    ['alone', '1.00', f.alone.map((x) => fmt(x)).join(' / '), '-'],
    [`during a /metrics flood (${CONNECTIONS} connections)`, fmt(f.metrics, 2), f.withMetrics.map((x) => fmt(x)).join(' / '), f.metricsRps.map((x) => fmt(x)).join(' / ')],
    [`during a /healthz flood (${CONNECTIONS} connections)`, fmt(f.healthz, 2), f.withHealthz.map((x) => fmt(x)).join(' / '), f.healthzRps.map((x) => fmt(x)).join(' / ')],
  ]);
  console.log(`\n${fmt((performance.now() - started) / 1000)} s in all`);
  clearTimeout(guard);
  await service.stop();
}

main().catch(async (err: unknown) => {
  console.error(err);
  await service?.stop();
  process.exit(1);
});
