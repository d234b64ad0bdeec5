/**
 * `trustgate proxy` overhead: tools/call throughput and latency through the
 * proxy against the same server directly, in one run, for a trivial tool
 * (server-everything's `echo`). Each round runs both sides one after the
 * other with the same concurrency; the ratio is proxied / direct
 * throughput (target >= 0.5), and the added p50 is proxied p50 - direct p50.
 *
 * Run: npm run bench:proxy   (env BENCH_SECONDS per side and round, BENCH_ROUNDS, BENCH_CONCURRENCY;
 * BENCH_POLICIES, the policy folder, default the shipped policies)
 */
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { envNumber, machine, median, percentile, ROOT, table } from './lib.js';

const require = createRequire(import.meta.url);
const seconds = envNumber('BENCH_SECONDS', 3);
const rounds = envNumber('BENCH_ROUNDS', 3);
const concurrency = envNumber('BENCH_CONCURRENCY', 4);
const policies = process.env.BENCH_POLICIES || join(ROOT, 'policies');
const everything = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const env = { ...(Object.fromEntries(Object.entries(process.env).filter((e) => e[1] !== undefined)) as Record<string, string>), LOG_LEVEL: 'warn' };

async function connect(proxied: boolean): Promise<Client> {
  const args = proxied ? [join(ROOT, 'dist/cli.js'), 'proxy', '--policies', policies, '--', process.execPath, everything] : [everything];
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, env, stderr: 'ignore' }));
  return client;
}

async function measure(client: Client): Promise<{ rps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      const r = await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
      latencies.push(performance.now() - t);
      if (r.isError) throw new Error('echo failed');
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return { rps: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const [direct, proxied] = await Promise.all([connect(false), connect(true)]);
  try {
    // Warm both paths (first-seen pins, then the JIT: a round's worth of calls each, not measured).
    for (let i = 0; i < 200; i++) await Promise.all([direct, proxied].map((c) => c.callTool({ name: 'echo', arguments: { message: 'warm' } })));
    await measure(direct);
    await measure(proxied);
    const rows: Array<Array<string | number>> = [['round', 'direct req/s', 'proxy req/s', 'ratio', 'direct p50 ms', 'proxy p50 ms', 'added p50 ms', 'proxy p99 ms']];
    const ratios: number[] = [];
    const added: number[] = [];
    for (let r = 1; r <= rounds; r++) {
      // Alternate which side goes first, so drift on a shared machine favours neither.
      const first = await measure(r % 2 === 1 ? direct : proxied);
      const second = await measure(r % 2 === 1 ? proxied : direct);
      const [d, p] = r % 2 === 1 ? [first, second] : [second, first];
      ratios.push(p.rps / d.rps);
      added.push(p.p50 - d.p50);
      rows.push([r, d.rps.toFixed(0), p.rps.toFixed(0), (p.rps / d.rps).toFixed(2), d.p50.toFixed(3), p.p50.toFixed(3), (p.p50 - d.p50).toFixed(3), p.p99.toFixed(3)]);
    }
    console.log(`bench:proxy on ${machine()}: tools/call echo, ${concurrency} in flight, ${seconds} s per side and round, policies ${policies}`);
    table(rows);
    console.log(`median throughput ratio proxy/direct: ${median(ratios).toFixed(2)} (target >= 0.5); median added p50: ${median(added).toFixed(3)} ms`);
  } finally {
    await Promise.all([direct.close(), proxied.close()]);
  }
}

await main();
