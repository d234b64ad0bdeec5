/**
 * `npm run bench:flows`: what following values costs (docs/behaviour/flows.md),
 * through the app's HTTP routes in one process (inject), memory store,
 * shipped policies, sides alternating round by round:
 *
 * - POST /v1/evaluate-call carrying 64 argument values, in a session that
 *   holds 20,000 values, against the same call in an empty session
 *   (target: within 2x);
 * - POST /v1/evaluate of the ~4 KB fixture naming a session (its values
 *   recorded) against the same request without one (target >= 0.8).
 *
 * Env: BENCH_ROUNDS (default 7), BENCH_REQUESTS per side and round (default 400).
 */
import pino from 'pino';
import { buildApp } from '../src/app/app.js';
import { loadConfig } from '../src/config.js';
import { PolicyStore } from '../src/policy/reload.js';
import { evaluateRequest } from './fixtures.js';
import { envNumber, machine, median } from './lib.js';

const ROUNDS = envNumber('BENCH_ROUNDS', 7);
const REQUESTS = envNumber('BENCH_REQUESTS', 400);

const config = loadConfig({ TRUSTGATE_POLICY_DIR: new URL('../policies', import.meta.url).pathname, LOG_LEVEL: 'silent', TRUSTGATE_MAX_SESSIONS: '100000' });
const store = new PolicyStore(config.policyDir);
await store.load();
const app = await buildApp({ config, store, logger: pino({ level: 'silent' }) });
await app.ready();

const inject = async (url: string, body: string): Promise<void> => {
  const r = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: body });
  if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body.slice(0, 200)}`);
};

// A session holding 20,000 values: results of 1,000 identifiers each.
const full = 'flows-full';
for (let i = 0; i < 20; i++) {
  const text = Array.from({ length: 1000 }, (_, j) => `rec-${i}-${j}`).join(' ');
  await inject('/v1/evaluate', JSON.stringify({ result: { content: [{ type: 'text', text }] }, tool: { name: 'db', annotations: { openWorldHint: false } }, session: { id: full } }));
}
const args = { recipients: Array.from({ length: 32 }, (_, i) => `user${i}@corp.example`), ids: Array.from({ length: 32 }, (_, i) => `rec-${i % 20}-${i}`) };
const tool = { name: 'send', annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true } };
const callIn = (session: string) => JSON.stringify({ call: { name: 'send', arguments: args }, tool, session: { id: session } });
let n = 0;
const sides = {
  'call, 20,000 values': () => inject('/v1/evaluate-call', callIn(full)),
  'call, empty session': () => inject('/v1/evaluate-call', callIn(`flows-empty-${n++}`)),
  'evaluate, session': () => inject('/v1/evaluate', JSON.stringify({ ...evaluateRequest(), session: { id: `flows-eval-${n++ % 100}` } })),
  'evaluate, no session': () => inject('/v1/evaluate', JSON.stringify(evaluateRequest())),
};

const times: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, run] of Object.entries(sides)) {
    const t0 = performance.now();
    for (let i = 0; i < REQUESTS; i++) await run();
    // Round 0 warms up.
    if (round > 0) times[name]!.push((performance.now() - t0) / REQUESTS);
  }
}
await app.close();
const us = (k: string) => median(times[k]!) * 1000;
const ratios = (a: string, b: string) => median(times[a]!.map((x, i) => x / times[b]![i]!));
process.stdout.write(`${machine()}\n`);
for (const k of Object.keys(sides)) process.stdout.write(`${k.padEnd(24)} ${us(k).toFixed(0)} µs/request (median of ${ROUNDS} rounds)\n`);
process.stdout.write(`call 20,000 values / empty session: ${ratios('call, 20,000 values', 'call, empty session').toFixed(2)} (target <= 2)\n`);
process.stdout.write(`evaluate no session / with session (throughput with/without): ${ratios('evaluate, no session', 'evaluate, session').toFixed(2)} (target >= 0.8)\n`);
