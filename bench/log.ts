/**
 * What one decision log line costs, by log destination, on a server-like
 * loop: each simulated request parses the ~4 KB fixture, serializes it back
 * (the work around a decision) and logs the fixture's real decision entry at
 * info; the event loop turns every 10 requests, as it does between batches
 * of requests under load, so asynchronous writes complete and batches form.
 *
 * Variants (all pino with the service's options, writing to a temporary file):
 * - none: no log call (the baseline, measured in the same run);
 * - sonic-boom async: pino.destination({ sync: false }), one write per line
 *   (or per group of lines queued while a write is in flight);
 * - sonic-boom sync: pino.destination({ sync: true }), one syscall per line;
 * - turn-batched: src/main/log-destinations.ts TurnBatchedDestination, the lines of one
 *   event-loop turn joined into one synchronous write at its end;
 * - turn-batched + line writer (what the service does): the same
 *   destination, lines rendered by src/logger.ts decisionLineWriter (one
 *   JSON.stringify of the entry) instead of pino's member-by-member
 *   serialization.
 *
 * CPU time of the whole process (thread pool included) per request, min and
 * median over rounds; the variants alternate within each round. The cost of
 * a line is the variant minus the baseline.
 *
 * Run: npm run bench:log      (env BENCH_ROUNDS, BENCH_REQUESTS)
 */
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { evaluateRequestText } from './fixtures.js';
import { CODE, QUICK, envNumber, fmt, machine, median, ours, table } from './lib.js';

const { decisionLineWriter, loggerOptions } = await ours<typeof import('../src/logger.js')>('logger.js');
const { TurnBatchedDestination } = await ours<typeof import('../src/main/log-destinations.js')>('main/log-destinations.js');
const { parseRequestText } = await ours<typeof import('../src/json/parse.js')>('json/parse.js');
const { createDecisionCore } = await ours<typeof import('../src/decision/core.js')>('decision/core.js');
const { decisionLogEntry } = await ours<typeof import('../src/decision/log.js')>('decision/log.js');
const { PolicyStore } = await ours<typeof import('../src/policy/reload.js')>('policy/reload.js');

const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 9);
const REQUESTS = envNumber('BENCH_REQUESTS', QUICK ? 5_000 : 20_000);

const text = evaluateRequestText();
const store = new PolicyStore(new URL('../policies', import.meta.url).pathname);
await store.load();
const config = { modeOverride: undefined, maxBlocks: 10_000, maxEvidence: 1_000, maxString: 65_536, maxValidationFindings: 1_000, maxFindings: 1_000, evalBudgetMs: 250, dialects: ['trust-annotations', 'ifc', 'fides'] as const, maxFlowValues: 20_000 };
const { value, scan } = parseRequestText(text);
const body = value as import('../src/decision/types.js').EvaluateRequest;
const core = createDecisionCore({ config, policies: () => store.current });
const entry = decisionLogEntry(await core.evaluateResult({ request: body, scan }), body.tool, body.server, 0.1234);

const dir = mkdtempSync(join(tmpdir(), 'trustgate-bench-log-'));
const fd = (name: string) => openSync(join(dir, name), 'w');
const logger = (dest: pino.DestinationStream) => pino(loggerOptions('info'), dest);

const VARIANTS: Array<[string, () => void]> = [
  ['none (baseline)', () => {}],
  ['sonic-boom async', ((l) => () => l.info(entry, 'decision'))(logger(pino.destination({ dest: fd('async'), sync: false })))],
  ['sonic-boom sync', ((l) => () => l.info(entry, 'decision'))(logger(pino.destination({ dest: fd('sync'), sync: true })))],
  ['turn-batched', ((l) => () => l.info(entry, 'decision'))(logger(new TurnBatchedDestination(fd('batched'))))],
  ['turn-batched + line writer (service)', ((w) => () => w(entry))(decisionLineWriter(logger(new TurnBatchedDestination(fd('writer')))))],
];

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** CPU µs per simulated request. */
async function run(log: () => void): Promise<number> {
  const c0 = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    JSON.stringify(parseRequestText(text).value);
    log();
    if (i % 10 === 9) await turn();
  }
  await turn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / REQUESTS;
}

console.log(`bench:log  ${machine()}`);
console.log(`${ROUNDS} rounds x ${REQUESTS} simulated requests per variant; code from ${CODE}; decision line ${JSON.stringify(entry).length} B of entry\n`);
const samples = new Map<string, number[]>(VARIANTS.map(([name]) => [name, []]));
for (const [, log] of VARIANTS) await run(log); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]!);
  for (const [name, log] of order) samples.get(name)!.push(await run(log));
}
rmSync(dir, { recursive: true, force: true });

const base = Math.min(...samples.get('none (baseline)')!);
table([
  ['variant', 'CPU µs/request min', 'median', 'ratio to baseline (min)', 'line cost µs (min - baseline min)'],
  ...VARIANTS.map(([name]) => {
    const v = samples.get(name)!;
    const min = Math.min(...v);
    return [name, fmt(min, 1), fmt(median(v), 1), fmt(min / base, 2), name.startsWith('none') ? '' : fmt(min - base, 1)];
  }),
]);
