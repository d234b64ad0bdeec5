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
 * With PROFILE_TOOL=perf (Linux, the `perf` program), the same load is
 * recorded by `perf record -g` on the CPU clock of the serving process
 * (node --perf-basic-prof names the JIT code), and the same tables are
 * printed from the samples. V8's own sampler counts wall time: a sample
 * taken while the process waited for a CPU is charged to whatever ran
 * next (on a shared machine, mostly `writev`). perf counts only the time
 * the process ran, every thread of it (GC helpers included), and shows the
 * kernel's part: the stage "kernel: waking the reader" is the socket
 * write's wake-up of a client that sleeps, a cross-CPU interrupt that a
 * virtual machine pays dearly. Its per-request figures are perf's (the
 * unwinding of each sample adds to them): compare them with the echo's
 * (PROFILE_TARGET=echo), taken the same way.
 *
 * Run: npm run bench:profile            (env PROFILE_SECONDS, PROFILE_LOG_LEVEL=info, PROFILE_DIR,
 *                                        PROFILE_TARGET=echo for the echo baseline, PROFILE_TOOL=perf)
 *      npm run bench:profile -- --summary some.cpuprofile [--requests N]   (summarise an existing profile)
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import autocannon, { type Result } from 'autocannon';
import { evaluateRequestText } from './fixtures.js';
import { ROOT, cleanup, envNumber, fmt, machine, startEcho, startService, table, type Proc } from './lib.js';

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

/**
 * Stages of a perf sample, in tiers: each tier is tried leaf first over the
 * whole stack before the next, so a stage named by our own code (a decide
 * step) wins over the builtins it calls and the framework frames around it.
 * perf sees no frames of functions the JIT inlined: their time is their
 * caller's.
 */
const kernel = (re: RegExp) => (f: CallFrame) => f.url === '' && re.test(f.functionName);
const PERF_TIERS: Array<Array<[string, (f: CallFrame) => boolean]>> = [
  [
    ['kernel: waking the reader (socket write wakes a sleeping client)', kernel(/^(sock_def_readable|ep_poll_callback|try_to_wake_up)$/)],
    ['socket: writev on res.end (kernel write)', kernel(/^(tcp_sendmsg|sock_write_iter|do_writev)$/)],
    ['socket: read / HTTP parser', kernel(/^(tcp_recvmsg|sock_read_iter)$/)],
    ['event loop: epoll', kernel(/^(do_epoll_wait|epoll_pwait)$/)],
    ['GC', kernel(/^v8::internal::(Heap::CollectGarbage|ScavengerCollector|Scavenger|MarkCompactCollector|ConcurrentMarking|Sweeper|MinorGCJob)/)],
  ],
  BUCKETS.filter(([name]) => !name.startsWith('framework')),
  [
    ['body: JSON.parse (parseRequestText)', kernel(/^v8::internal::Builtin_JsonParse$/)],
    ['reply: serialization (JSON.stringify)', kernel(/^v8::internal::Builtin_JsonStringify$/)],
    ['socket: read / HTTP parser', kernel(/^llhttp__internal_execute$/)],
  ],
  BUCKETS.filter(([name]) => name.startsWith('framework')),
];

/** One frame of `perf script -F ip,sym` as the profile's call frames: `JS:*name file:///path:line:col` for JIT code. */
function perfFrame(sym: string): CallFrame {
  const m = /^JS:[*~^+-]?(\S*) (\S+?):(\d+)(?::(\d+))?$/.exec(sym);
  if (m) return { functionName: m[1] === '' ? '(anonymous)' : m[1]!, url: m[2]!.startsWith('/') ? `file://${m[2]}` : m[2]!, lineNumber: Number(m[3]) - 1, columnNumber: Number(m[4] ?? 0) };
  return { functionName: sym, url: '', lineNumber: 0, columnNumber: 0 };
}

/** The samples of `perf script -F ip,sym`: a stack per blank-line-separated block, leaf first. */
export function summarisePerf(script: string, hz: number, requests?: number, top = 30): void {
  const self = new Map<string, number>();
  const group = new Map<string, number>();
  const bucket = new Map<string, number>();
  let samples = 0;
  const add = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
  for (const block of script.split(/\n\s*\n/)) {
    const frames = block
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .map((l) => perfFrame(l.replace(/^[0-9a-f]+\s+/, '')));
    if (frames.length === 0) continue;
    samples++;
    const leaf = frames[0]!;
    add(self, frameKey(leaf));
    add(group, leaf.url === '' ? (/^[a-z_]/.test(leaf.functionName) && !leaf.functionName.includes('::') ? '(kernel)' : '(native/vm)') : where(leaf.url));
    let label = 'other';
    find: for (const tier of PERF_TIERS) {
      for (const f of frames) {
        for (const [name, test] of tier) {
          if (test(f)) {
            label = name;
            break find;
          }
        }
      }
    }
    add(bucket, label);
  }
  console.log(`perf: ${fmt(samples)} samples at ${hz} Hz of CPU time (${fmt((samples / hz) * 1000)} ms on a CPU, every thread); percentages are of that\n`);
  report({ self, group, bucket }, { toMs: (n) => (n / hz) * 1000, total: samples, totalLabel: 'total on a CPU', perRequestUs: requests ? (n) => (n / hz / requests) * 1e6 : undefined, perRequestHeader: 'us/request (perf)', top, requests });
}

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
  console.log(`profile ${file}: ${fmt(total / 1000)} ms sampled, ${fmt(busy / 1000)} ms busy (${fmt((busy / total) * 100)}%), ${fmt(idle / 1000)} ms idle; percentages are of busy time\n`);
  report({ self, group, bucket }, { toMs: (us) => us / 1000, total: busy, totalLabel: 'total busy', perRequestUs: requests ? (us) => us / requests : undefined, perRequestHeader: 'us/request', top, requests });
}

/**
 * The three tables both summaries print: top functions by self time, self
 * time by where the code lives, and time per request-path stage. Amounts are
 * in the summary's own unit (µs of a V8 profile, samples of perf).
 */
function report(
  maps: { self: Map<string, number>; group: Map<string, number>; bucket: Map<string, number> },
  o: { toMs: (v: number) => number; total: number; totalLabel: string; perRequestUs: ((v: number) => number) | undefined; perRequestHeader: string; top: number; requests: number | undefined },
): void {
  const ms = (v: number): string => fmt(o.toMs(v));
  const pct = (v: number): string => `${fmt((v / o.total) * 100, 1)}%`;
  const perReq = (v: number): string => (o.perRequestUs ? fmt(o.perRequestUs(v), 1) : '');
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  console.log(`top ${o.top} functions by self time:`);
  table([['function  location:line', 'self ms', 'self %'], ...sorted(maps.self).slice(0, o.top).map(([k, v]) => [k, ms(v), pct(v)])]);
  console.log('\nself time by where the code lives:');
  table([['code', 'self ms', 'self %'], ...sorted(maps.group).slice(0, 25).map(([k, v]) => [k, ms(v), pct(v)])]);
  console.log(`\nwhere the time goes (each sample once, by its innermost recognised stage)${o.requests ? `; ${fmt(o.requests)} requests` : ''}:`);
  table([
    ['stage', 'ms', '%', o.perRequestUs ? o.perRequestHeader : ''],
    ...sorted(maps.bucket).map(([k, v]) => [k, ms(v), pct(v), perReq(v)]),
    [o.totalLabel, ms(o.total), '100%', perReq(o.total)],
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
  const perf = process.env.PROFILE_TOOL === 'perf';
  const flags = perf ? '--perf-basic-prof' : `--cpu-prof --cpu-prof-dir=${dir}`;
  console.log(
    `bench:profile  ${machine()}\n${echo ? `node ${flags} --import tsx bench/echo-server.ts` : `npm run build, then node ${flags} dist/server.js (LOG_LEVEL=${level})`}${
      perf ? ', recorded by perf record -g on its CPU clock' : ''
    }; ${seconds} s of load, 10 connections, the ~4 KB fixture\n`,
  );
  if (!echo) execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (perf) return perfMain(echo, level, seconds, dir);
  const before = new Set(readdirSync(dir));
  const profArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  const svc = await startTarget(echo, level, profArgs);
  const r = await load(svc, echo, seconds);
  await svc.stop();
  const fresh = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
    .map((f) => join(dir, f))
    // The main thread's profile is the largest (a loader worker thread writes its own).
    .sort((a, b) => statSync(b).size - statSync(a).size);
  if (fresh.length === 0) throw new Error(`no .cpuprofile written to ${dir}`);
  summarise(fresh[0]!, r.requests.total);
}

/** The service (one process) or the echo, started with `nodeArgs`. */
function startTarget(echo: boolean, level: string, nodeArgs: string[]): Promise<Proc> {
  return echo ? startEcho(nodeArgs) : startService({ LOG_LEVEL: level, TRUSTGATE_WORKERS: '1' }, nodeArgs);
}

/** `seconds` of the ~4 KB fixture from 10 connections; the load line is printed unless `say` is false. */
async function load(svc: Proc, echo: boolean, seconds: number, say = true): Promise<Result> {
  const r = await autocannon({
    url: `${svc.base}${echo ? '/echo' : '/v1/evaluate'}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: evaluateRequestText(),
    connections: 10,
    duration: seconds,
  });
  if (say) console.log(`load: ${fmt(r.requests.total)} requests, ${fmt(r.requests.total / r.duration)} req/s, ${r.non2xx} non-2xx, ${r.errors} errors\n`);
  return r;
}

/** PROFILE_TOOL=perf: see the top of this file. */
async function perfMain(echo: boolean, level: string, seconds: number, dir: string): Promise<void> {
  const HZ = 2999;
  const args = ['--perf-basic-prof'];
  const svc = await startTarget(echo, level, args);
  const data = join(dir, `perf-${svc.pid}.data`);
  try {
    // Warm: the JIT settles before the recording starts.
    await load(svc, echo, 3, false);
    const rec = spawn('perf', ['record', '-q', '-F', String(HZ), '-g', '-p', String(svc.pid), '-o', data], { stdio: ['ignore', 'ignore', 'inherit'] });
    // A perf that cannot be started reports 'error' and may never report 'exit'.
    const ended = new Promise<void>((resolve) => {
      rec.on('exit', () => resolve());
      rec.on('error', (err) => {
        console.error(`perf record: ${err.message}`);
        resolve();
      });
    });
    await new Promise((r) => setTimeout(r, 300));
    const r = await load(svc, echo, seconds);
    rec.kill('SIGINT');
    await ended;
    if (!statSync(data, { throwIfNoEntry: false })) throw new Error('perf record wrote nothing (is perf installed, and perf_event_paranoid <= 2?)');
    // Symbols of the JIT code come from /tmp/perf-<pid>.map, which the process writes while it runs.
    const script = execFileSync('perf', ['script', '-i', data, '-F', 'ip,sym'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
    summarisePerf(script, HZ, r.requests.total);
  } finally {
    await svc.stop();
    rmSync(data, { force: true });
    rmSync(`/tmp/perf-${svc.pid}.map`, { force: true });
    for (const f of readdirSync(ROOT)) if (f.startsWith('isolate-') && f.includes(`-${svc.pid}-`) && f.endsWith('-v8.log')) rmSync(join(ROOT, f), { force: true });
  }
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
