/**
 * CPU profile of POST /v1/evaluate under load, summarised.
 *
 * Builds (npm run build), starts `node --cpu-prof --cpu-prof-dir=<dir>
 * dist/server.js` with the shipped policies as one process
 * (TRUSTGATE_WORKERS=1: a profile is one process's, and a worker's work is
 * the same as the one process's), drives the ~4 KB fixture with
 * autocannon for PROFILE_SECONDS (default 15), stops the service with
 * SIGTERM so V8 writes the .cpuprofile, and prints:
 *
 * - the top functions by self time;
 * - self time grouped by where the code lives (our dist/ files, each npm
 *   package, node internals, GC, idle);
 * - busy time split into request-path stages (body parse, schema
 *   validation, decide and its parts, serialization, logging, socket
 *   writes...), each sample counted once, per request when the count is known.
 *
 * Run: npm run bench:profile            (env PROFILE_SECONDS, PROFILE_LOG_LEVEL=info, PROFILE_DIR,
 *                                        PROFILE_TARGET=echo for the echo baseline)
 *      npm run bench:profile -- --summary some.cpuprofile [--requests N]   (summarise an existing profile)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import autocannon from 'autocannon';
import { evaluateRequestText } from './fixtures.js';
import { ROOT, cleanup, envNumber, fmt, machine, startEcho, startService, table } from './lib.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function where(url: string): string {
  if (url === '') return '(native/vm)';
  const path = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  if (path.startsWith('node:')) return 'node internals';
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  return relative(ROOT, path);
}

function frameKey(f: CallFrame): string {
  const name = f.functionName || '(anonymous)';
  if (f.url === '') return name;
  return `${name}  ${where(f.url)}:${f.lineNumber + 1}`;
}

/**
 * Buckets of the request path. Each sample goes to the bucket of the
 * innermost frame (leaf first, walking towards the root) that matches one,
 * so every sample is counted once.
 */
const BUCKETS: Array<[string, (f: CallFrame) => boolean]> = [
  ['logging: pino / sonic-boom (request + decision lines)', (f) => /\/node_modules\/(pino|sonic-boom|pino-std-serializers|thread-stream)\//.test(f.url)],
  ['randomness: randomUUID / randomBytes', (f) => f.functionName === 'randomUUID' || f.functionName === 'randomBytes' || f.functionName === 'newBoundary'],
  ['metrics: prom-client', (f) => f.url.includes('/prom-client/')],
  ['decide: validateMcp', (f) => f.functionName === 'validateMcp'],
  ['decide: assessTrust (claims, evidence digests)', (f) => f.functionName === 'assessTrust'],
  ['decide: evaluatePolicies (CEL activations + eval)', (f) => f.functionName === 'evaluatePolicies'],
  ['decide: applyEffects', (f) => f.functionName === 'applyEffects'],
  ['decide: the rest (result decision glue, outputs)', (f) => f.functionName === 'decideResult' && f.url.includes('/decision/result.js')],
  ['runDecision: the rest (decision log entry, timing)', (f) => f.functionName === 'runDecision'],
  ['body: pre-parse scan (scanJson)', (f) => f.functionName === 'scanJson'],
  ['body: JSON.parse (parseRequestText)', (f) => f.functionName === 'parseRequestText'],
  ['body: schema validation (ajv, Fastify validation)', (f) => f.url.includes('/fastify/lib/validation.js') || f.url.includes('/ajv/')],
  ['reply: serialization (fast-json-stringify)', (f) => f.url.includes('/fast-json-stringify/') || (f.functionName === 'serialize' && f.url.includes('/fastify/lib/reply.js'))],
  ['socket: writev on res.end (kernel write)', (f) => f.functionName === 'writev' || f.functionName === 'writevGeneric'],
  ['socket: read / HTTP parser', (f) => f.functionName === 'onStreamRead' || f.functionName === 'execute' || f.url.includes('_http_common')],
  ['framework: fastify, find-my-way, node http, streams', (f) => /\/node_modules\/(fastify|find-my-way|avvio|light-my-request|@fastify\/[^/]+)\//.test(f.url) || /^node:(_http|net|internal\/streams|internal\/http|events|internal\/process)/.test(f.url)],
];

export function summarise(file: string, requests?: number, top = 30): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) byId.set(n.id, n);
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map<string, number>();
  const group = new Map<string, number>();
  const bucket = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    // The delta before the next sample is the time this sample stands for.
    const dt = p.timeDeltas[i + 1] ?? 0;
    const node = byId.get(p.samples[i]!)!;
    total += dt;
    const f = node.callFrame;
    if (f.functionName === '(idle)') {
      idle += dt;
      continue;
    }
    const k = frameKey(f);
    self.set(k, (self.get(k) ?? 0) + dt);
    const g = f.functionName.startsWith('(') ? f.functionName : where(f.url);
    group.set(g, (group.get(g) ?? 0) + dt);
    let label = f.functionName === '(garbage collector)' ? 'GC' : f.functionName === '(program)' ? '(program): V8/native outside JS' : 'other';
    find: for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const cf = byId.get(id)!.callFrame;
      for (const [name, test] of BUCKETS) {
        if (test(cf)) {
          label = name;
          break find;
        }
      }
    }
    bucket.set(label, (bucket.get(label) ?? 0) + dt);
  }
  const busy = total - idle;
  const pct = (us: number): string => `${fmt((us / busy) * 100, 1)}%`;
  const ms = (us: number): string => fmt(us / 1000);
  console.log(`profile ${file}: ${ms(total)} ms sampled, ${ms(busy)} ms busy (${fmt((busy / total) * 100)}%), ${fmt(idle / 1000)} ms idle; percentages are of busy time\n`);

  console.log(`top ${top} functions by self time:`);
  table([['function  location:line', 'self ms', 'self %'], ...[...self].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => [k, ms(v), pct(v)])]);

  console.log('\nself time by where the code lives:');
  table([['code', 'self ms', 'self %'], ...[...group].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => [k, ms(v), pct(v)])]);

  const perReq = (v: number): string => (requests ? fmt(v / requests, 1) : '');
  console.log(`\nwhere the time goes (each sample once, by its innermost recognised stage)${requests ? `; ${fmt(requests)} requests` : ''}:`);
  table([
    ['stage', 'ms', '%', requests ? 'us/request' : ''],
    ...[...bucket].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, ms(v), pct(v), perReq(v)]),
    ['total busy', ms(busy), '100%', perReq(busy)],
  ]);
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--summary');
  if (at >= 0) {
    const rq = process.argv.indexOf('--requests');
    summarise(process.argv[at + 1]!, rq >= 0 ? Number(process.argv[rq + 1]) : undefined);
    return;
  }
  const seconds = envNumber('PROFILE_SECONDS', 15);
  const dir = process.env.PROFILE_DIR ?? '/tmp/prof';
  const level = process.env.PROFILE_LOG_LEVEL ?? 'info';
  // PROFILE_TARGET=echo profiles the bare Fastify echo baseline instead, for comparison.
  const echo = process.env.PROFILE_TARGET === 'echo';
  mkdirSync(dir, { recursive: true });
  console.log(
    `bench:profile  ${machine()}\n${
      echo ? `node --cpu-prof --cpu-prof-dir=${dir} --import tsx bench/echo-server.ts` : `npm run build, then node --cpu-prof --cpu-prof-dir=${dir} dist/server.js (LOG_LEVEL=${level})`
    }; ${seconds} s of load, 10 connections, the ~4 KB fixture\n`,
  );
  if (!echo) execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const before = new Set(readdirSync(dir));
  const profArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const svc = echo ? await startEcho(profArgs) : await startService({ LOG_LEVEL: level, TRUSTGATE_WORKERS: '1' }, profArgs);
  const body = evaluateRequestText();
  const r = await autocannon({
    url: `${svc.base}${echo ? '/echo' : '/v1/evaluate'}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: 10,
    duration: seconds,
  });
  console.log(`load: ${fmt(r.requests.total)} requests, ${fmt(r.requests.total / r.duration)} req/s, ${r.non2xx} non-2xx, ${r.errors} errors\n`);
  await svc.stop();
  const fresh = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
    .map((f) => join(dir, f))
    // The main thread's profile is the largest (a loader worker thread writes its own).
    .sort((a, b) => statSync(b).size - statSync(a).size);
  if (fresh.length === 0) throw new Error(`no .cpuprofile written to ${dir}`);
  summarise(fresh[0]!, r.requests.total);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
