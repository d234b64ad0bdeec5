/**
 * `trustgate proxy` overhead: tools/call throughput and latency through the
 * proxy against the same server directly, in one run, for a trivial tool
 * (server-everything's `echo`), at each number of calls in flight (default
 * 1, 4 and 16: a host's one call at a time, a burst, saturation).
 *
 * Four sides, each its own client and server processes: direct; through
 * the proxy as shipped; through the proxy with its idle polling off
 * (TRUSTGATE_PROXY_POLL_US=0, see src/bindings/proxy/poll.ts), so what
 * the polling buys and costs is measured in the same run; and gateway mode
 * (`trustgate proxy --config`) with two servers behind it, the calls taking
 * turns between `a__echo` and `b__echo`. Two more sides measure the floor
 * of any relay on the machine (bench/relay-floor.ts): a process that pipes
 * the bytes through unread, and one that passes each message between the
 * SDK's stdio transports as it came, judging nothing. A third process on
 * the path costs wake-ups and pipe hops whatever it does; the proxy's ratio
 * to the SDK relay ("proxy / floor") is what judging itself costs. Each round runs
 * the sides one after the other with the same concurrency, in an order
 * that turns round by round, so drift on a shared machine favours none.
 * The ratio is proxied / direct throughput (target >= 0.5 for the proxy;
 * the gateway's is printed beside it), the added p50
 * is proxied p50 - direct p50, and "proxy CPU" is the proxy process's own
 * CPU time per call (Linux, from /proc; the server it starts is not in it).
 *
 * With BENCH_BASE_CLI (the `dist/cli.js` of another build, e.g. one made
 * from an earlier commit) or BENCH_BASE_ENV (settings as JSON, e.g.
 * `{"TRUSTGATE_PROXY_POLL_US":"1000"}`), a fifth side runs the proxy of that
 * build, or of this one with those settings, so a change is compared with
 * what was before it in the same rounds.
 *
 * Run: npm run bench:proxy   (env BENCH_SECONDS per side and round, BENCH_ROUNDS,
 * BENCH_CONCURRENCY a comma-separated list; BENCH_POLICIES, the policy folder,
 * default the shipped policies; BENCH_BASE_CLI)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { envNumber, machine, median, percentile, ROOT, table } from './lib.js';

const require = createRequire(import.meta.url);
const seconds = envNumber('BENCH_SECONDS', 3);
const rounds = envNumber('BENCH_ROUNDS', 3);
const levels = (process.env.BENCH_CONCURRENCY ?? '1,4,16').split(',').map(Number);
if (levels.some((n) => !(Number.isInteger(n) && n > 0))) throw new Error('BENCH_CONCURRENCY must be a comma-separated list of whole numbers');
const policies = process.env.BENCH_POLICIES || join(ROOT, 'policies');
const everything = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const baseEnv = { ...(Object.fromEntries(Object.entries(process.env).filter((e) => e[1] !== undefined)) as Record<string, string>), LOG_LEVEL: 'warn' };

type Side = 'direct' | 'proxy' | 'proxy, no polling' | 'gateway' | 'pipe relay' | 'SDK relay' | 'base';
const baseEnvOverrides = JSON.parse(process.env.BENCH_BASE_ENV ?? '{}') as Record<string, string>;
const baseCli = process.env.BENCH_BASE_CLI ?? (process.env.BENCH_BASE_ENV ? join(ROOT, 'dist/cli.js') : undefined);
const SIDES: readonly Side[] = ['direct', 'proxy', 'proxy, no polling', 'gateway', 'pipe relay', 'SDK relay', ...(baseCli ? (['base'] as const) : [])];
const floor = join(ROOT, 'bench/relay-floor.ts');

/** The gateway's mcpServers file: server-everything twice, as `a` and `b`. */
const configDir = mkdtempSync(join(tmpdir(), 'trustgate-bench-proxy-'));
const gatewayConfig = join(configDir, 'servers.json');
writeFileSync(gatewayConfig, JSON.stringify({ mcpServers: { a: { command: process.execPath, args: [everything] }, b: { command: process.execPath, args: [everything] } } }));

interface Connected {
  client: Client;
  /** The tool of the n-th call. */
  tool: (n: number) => string;
  /** The process the client talks to (the server, or the proxy). */
  pid: number | null;
}

async function connect(side: Side): Promise<Connected> {
  const cli = [side === 'base' ? baseCli! : join(ROOT, 'dist/cli.js'), 'proxy', '--policies', policies];
  const args =
    side === 'direct'
      ? [everything]
      : side === 'gateway'
        ? [...cli, '--config', gatewayConfig]
        : side === 'pipe relay' || side === 'SDK relay'
          ? ['--import', 'tsx', floor, side === 'pipe relay' ? 'pipe' : 'sdk', '--', process.execPath, everything]
          : [...cli, '--', process.execPath, everything];
  const env = side === 'proxy, no polling' ? { ...baseEnv, TRUSTGATE_PROXY_POLL_US: '0' } : side === 'base' ? { ...baseEnv, ...baseEnvOverrides } : baseEnv;
  const client = new Client({ name: 'bench', version: '1' });
  const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: 'ignore', cwd: ROOT });
  await client.connect(transport);
  // As a host does: a tool the server did not list is denied by the shipped policies (session/deny-unlisted-tool).
  await client.listTools();
  const tool = side === 'gateway' ? (n: number) => (n % 2 === 0 ? 'a__echo' : 'b__echo') : () => 'echo';
  return { client, tool, pid: transport.pid };
}

/** CPU time of a process so far, ms (utime + stime); undefined off Linux. */
function cpuMs(pid: number | null): number | undefined {
  if (pid === null) return undefined;
  try {
    // Fields 14 and 15 of stat, counted after the command name, in clock ticks (USER_HZ, 100 a second on Linux).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  /** CPU µs per call of the process the client talks to. */
  cpuPerCall: number | undefined;
}

async function measure(c: Connected, concurrency: number): Promise<Run> {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  let n = 0;
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      const r = await c.client.callTool({ name: c.tool(n++), arguments: { message: 'hello' } });
      latencies.push(performance.now() - t);
      if (r.isError) throw new Error(`echo failed: ${JSON.stringify(r.content).slice(0, 300)}`);
    }
  };
  const cpu0 = cpuMs(c.pid);
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  const cpu1 = cpuMs(c.pid);
  return {
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    cpuPerCall: cpu0 === undefined || cpu1 === undefined ? undefined : ((cpu1 - cpu0) * 1000) / latencies.length,
  };
}

const us = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(1));

async function main(): Promise<void> {
  const connected = await Promise.all(SIDES.map(connect));
  const sides = new Map(SIDES.map((s, i) => [s, connected[i]!]));
  try {
    // Warm every path (first-seen pins, then the JIT), not measured.
    for (let i = 0; i < 200; i++) await Promise.all(connected.map((c) => c.client.callTool({ name: c.tool(i), arguments: { message: 'warm' } })));
    for (const c of connected) await measure(c, levels[0]!);
    console.log(`bench:proxy on ${machine()}: tools/call echo, ${seconds} s per side and round, policies ${policies}`);
    const summary: Array<Array<string | number>> = [
      ['in flight', 'ratio', 'added p50 ms', 'ratio, no polling', 'added p50 ms, no polling', 'proxy CPU µs/call', 'no polling', 'ratio, gateway', 'added p50 ms, gateway', 'gateway CPU µs/call', 'pipe relay', 'SDK relay', 'SDK relay CPU µs/call', 'proxy / floor'],
    ];
    const verdict: number[] = [];
    const gateway: number[] = [];
    const floors: string[] = [];
    for (const concurrency of levels) {
      const rows: Array<Array<string | number>> = [
        ['round', 'direct req/s', 'proxy req/s', 'ratio', 'no polling req/s', 'ratio', 'gateway req/s', 'ratio', 'pipe relay', 'SDK relay', 'direct p50 ms', 'proxy p50 ms', 'no polling p50 ms', 'gateway p50 ms', 'proxy p99 ms'],
      ];
      const base = { ratio: [] as number[], cpu: [] as number[] };
      const got = { ratio: [] as number[], added: [] as number[], ratioOff: [] as number[], addedOff: [] as number[], cpu: [] as number[], cpuOff: [] as number[], ratioGw: [] as number[], addedGw: [] as number[], cpuGw: [] as number[], ratioPipe: [] as number[], ratioSdk: [] as number[], cpuSdk: [] as number[], overFloor: [] as number[] };
      for (let r = 0; r < rounds; r++) {
        const run = new Map<Side, Run>();
        for (let k = 0; k < SIDES.length; k++) {
          const side = SIDES[(r + k) % SIDES.length]!;
          run.set(side, await measure(sides.get(side)!, concurrency));
        }
        const d = run.get('direct')!;
        const p = run.get('proxy')!;
        const o = run.get('proxy, no polling')!;
        const g = run.get('gateway')!;
        got.ratio.push(p.rps / d.rps);
        got.added.push(p.p50 - d.p50);
        got.ratioOff.push(o.rps / d.rps);
        got.addedOff.push(o.p50 - d.p50);
        if (p.cpuPerCall !== undefined) got.cpu.push(p.cpuPerCall);
        if (o.cpuPerCall !== undefined) got.cpuOff.push(o.cpuPerCall);
        got.ratioGw.push(g.rps / d.rps);
        got.addedGw.push(g.p50 - d.p50);
        if (g.cpuPerCall !== undefined) got.cpuGw.push(g.cpuPerCall);
        const pipe = run.get('pipe relay')!;
        const sdk = run.get('SDK relay')!;
        got.ratioPipe.push(pipe.rps / d.rps);
        got.ratioSdk.push(sdk.rps / d.rps);
        got.overFloor.push(p.rps / sdk.rps);
        if (sdk.cpuPerCall !== undefined) got.cpuSdk.push(sdk.cpuPerCall);
        const b = run.get('base');
        if (b) {
          base.ratio.push(b.rps / d.rps);
          if (b.cpuPerCall !== undefined) base.cpu.push(b.cpuPerCall);
        }
        rows.push([
          r + 1,
          d.rps.toFixed(0),
          p.rps.toFixed(0),
          (p.rps / d.rps).toFixed(2),
          o.rps.toFixed(0),
          (o.rps / d.rps).toFixed(2),
          g.rps.toFixed(0),
          (g.rps / d.rps).toFixed(2),
          (pipe.rps / d.rps).toFixed(2),
          (sdk.rps / d.rps).toFixed(2),
          d.p50.toFixed(3),
          p.p50.toFixed(3),
          o.p50.toFixed(3),
          g.p50.toFixed(3),
          p.p99.toFixed(3),
        ]);
      }
      console.log(`\n${concurrency} in flight`);
      table(rows);
      verdict.push(median(got.ratio));
      summary.push([
        concurrency,
        median(got.ratio).toFixed(2),
        median(got.added).toFixed(3),
        median(got.ratioOff).toFixed(2),
        median(got.addedOff).toFixed(3),
        us(got.cpu.length > 0 ? median(got.cpu) : undefined),
        us(got.cpuOff.length > 0 ? median(got.cpuOff) : undefined),
        median(got.ratioGw).toFixed(2),
        median(got.addedGw).toFixed(3),
        us(got.cpuGw.length > 0 ? median(got.cpuGw) : undefined),
        median(got.ratioPipe).toFixed(2),
        median(got.ratioSdk).toFixed(2),
        us(got.cpuSdk.length > 0 ? median(got.cpuSdk) : undefined),
        median(got.overFloor).toFixed(2),
      ]);
      gateway.push(median(got.ratioGw));
      floors.push(`${concurrency}: pipe ${median(got.ratioPipe).toFixed(2)}, SDK ${median(got.ratioSdk).toFixed(2)}`);
      if (baseCli) {
        console.log(`base (${baseCli} ${JSON.stringify(baseEnvOverrides)}) at ${concurrency} in flight: ratio ${median(base.ratio).toFixed(2)} (rounds ${base.ratio.map((r) => r.toFixed(2)).join(', ')}), CPU ${us(median(base.cpu))} µs/call; this build ${median(got.ratio).toFixed(2)} (rounds ${got.ratio.map((r) => r.toFixed(2)).join(', ')}), CPU ${us(median(got.cpu))} µs/call`);
      }
    }
    console.log('\nmedians over the rounds');
    table(summary);
    console.log(`lowest median throughput ratio proxy/direct over ${levels.join(', ')} in flight: ${Math.min(...verdict).toFixed(2)} (target >= 0.5)`);
    console.log(`floor of any relay on this machine (a third process judging nothing) / direct, median ratio by calls in flight: ${floors.join('; ')}`);
    console.log(`gateway (two servers behind one trustgate proxy --config) / direct, median ratio at ${levels.join(', ')} in flight: ${gateway.map((g) => g.toFixed(2)).join(', ')}`);
  } finally {
    await Promise.all(connected.map((c) => c.client.close()));
    rmSync(configDir, { recursive: true, force: true });
  }
}

await main();
