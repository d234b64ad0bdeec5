/**
 * How long a host waits for the stdio gateway before it can list tools,
 * with servers that are slow to start (as `npx` servers are: each loads its
 * package before it answers). The gateway starts its servers concurrently
 * when the host initializes, so three slow servers should cost about what
 * one costs, not three times as much. Compared in the same run: the host
 * connected to one slow server directly, the gateway over one, and the
 * gateway over three.
 *
 * Run: npm run bench:gateway-start   (env BENCH_SLOW_START_MS, default 1500; BENCH_RUNS, default 5)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { envNumber, fmt, machine, median, ROOT, table } from './lib.js';

const RUNS = envNumber('BENCH_RUNS', 5);
const SLOW = join(ROOT, 'bench/slow-server.mjs');
const CLI = join(ROOT, 'dist/cli.js');
const dir = mkdtempSync(join(tmpdir(), 'trustgate-bench-gateway-'));

function config(n: number): string {
  const file = join(dir, `servers-${n}.json`);
  const servers = Object.fromEntries(Array.from({ length: n }, (_, i) => [`s${i}`, { command: process.execPath, args: [SLOW] }]));
  writeFileSync(file, JSON.stringify({ mcpServers: servers }));
  return file;
}

/** Seconds from starting `command` to a tools/list answer holding `tools` tools. */
async function timeToTools(command: string[], tools: number): Promise<number> {
  const t0 = performance.now();
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StdioClientTransport({ command: command[0]!, args: command.slice(1), env: { ...process.env, LOG_LEVEL: 'warn' } as Record<string, string>, stderr: 'ignore' }));
  const listed = await client.listTools();
  const seconds = (performance.now() - t0) / 1000;
  await client.close();
  if (listed.tools.length !== tools) throw new Error(`expected ${tools} tools, got ${listed.tools.length}`);
  return seconds;
}

const sides: Array<[string, string[], number]> = [
  ['one slow server, directly', [process.execPath, SLOW], 1],
  ['gateway over one', [process.execPath, CLI, 'proxy', '--config', config(1)], 1],
  ['gateway over three', [process.execPath, CLI, 'proxy', '--config', config(3)], 3],
];
const times = new Map<string, number[]>(sides.map(([name]) => [name, []]));
// Interleaved, so that a slower moment of the machine falls on every side alike.
for (let run = 0; run < RUNS; run++) for (const [name, command, tools] of sides) times.get(name)!.push(await timeToTools(command, tools));

const base = median(times.get('one slow server, directly')!);
console.log(`gateway start, servers that take ${envNumber('BENCH_SLOW_START_MS', 1500)} ms to start, ${RUNS} runs; ${machine()}`);
table([
  ['side', 'median s', 'x direct'],
  ...sides.map(([name]) => [name, fmt(median(times.get(name)!), 2), fmt(median(times.get(name)!) / base, 2)]),
]);
const one = median(times.get('gateway over one')!);
console.log(`three servers / one server through the gateway: ${fmt(median(times.get('gateway over three')!) / one, 2)} (1 is fully concurrent, 3 one after the other)`);
