/**
 * `npm run bench:agentdojo`: AgentDojo's workspace and banking suites
 * replayed through the HTTP API (bench/agentdojo-replay.ts), the shipped
 * policies beside the strict set (the shipped ones with
 * examples/policies/strict-session.yaml), per suite and overall: security,
 * utility, utility under attack and the share of benign tasks that ask.
 * `BENCH_AGENTDOJO_VERBOSE=1` lists what asked and what broke through.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { buildApp } from '../src/app/app.js';
import { loadConfig } from '../src/config.js';
import { PolicyStore } from '../src/policy/reload.js';
import { replaySuite, SUITES, writeOperatorEntries, type SuiteFigures } from './agentdojo-replay.js';

const SHIPPED = fileURLToPath(new URL('../policies', import.meta.url));
const STRICT = fileURLToPath(new URL('../examples/policies/strict-session.yaml', import.meta.url));

async function figures(dir: string, label: string): Promise<SuiteFigures[]> {
  // The hints an operator would declare for the suites' tools, as the operator's entries (docs/behaviour/operator.md).
  const config = loadConfig({ TRUSTGATE_POLICY_DIR: dir, LOG_LEVEL: 'silent', TRUSTGATE_SERVERS: writeOperatorEntries(serversDir) });
  const store = new PolicyStore(dir, undefined, config.serversFile);
  await store.load();
  const app = await buildApp({ config, store, logger: pino({ level: 'silent' }) });
  await app.ready();
  try {
    const out: SuiteFigures[] = [];
    for (const s of SUITES) out.push(await replaySuite(app, s, label));
    return out;
  } finally {
    await app.close();
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

function overall(rows: SuiteFigures[]): SuiteFigures {
  const pairs = rows.reduce((a, r) => a + r.pairs, 0);
  const tasks = rows.reduce((a, r) => a + r.tasks, 0);
  const w = (f: (r: SuiteFigures) => number, by: (r: SuiteFigures) => number, n: number) => rows.reduce((a, r) => a + f(r) * by(r), 0) / n;
  return {
    suite: 'overall',
    pairs,
    tasks,
    security: w((r) => r.security, (r) => r.pairs, pairs),
    utility: w((r) => r.utility, (r) => r.tasks, tasks),
    utilityUnderAttack: w((r) => r.utilityUnderAttack, (r) => r.pairs, pairs),
    benignConsent: w((r) => r.benignConsent, (r) => r.tasks, tasks),
    breaches: rows.flatMap((r) => r.breaches),
    asked: rows.flatMap((r) => r.asked),
  };
}

const strictDir = mkdtempSync(join(tmpdir(), 'trustgate-strict-'));
const serversDir = mkdtempSync(join(tmpdir(), 'trustgate-servers-'));
try {
  for (const f of readdirSync(SHIPPED)) if (/\.(ya?ml|json)$/.test(f)) copyFileSync(join(SHIPPED, f), join(strictDir, f));
  copyFileSync(STRICT, join(strictDir, 'strict-session.yaml'));
  const shipped = await figures(SHIPPED, 'shipped');
  const strict = await figures(strictDir, 'strict');
  const lines = ['| suite | set | security | utility | utility under attack | benign tasks asking |', '|---|---|---|---|---|---|'];
  for (const [set, rows] of [['shipped', shipped], ['strict', strict]] as const) {
    for (const r of [...rows, overall(rows)]) lines.push(`| ${r.suite} (${r.tasks} tasks, ${r.pairs} pairs) | ${set} | ${pct(r.security)} | ${pct(r.utility)} | ${pct(r.utilityUnderAttack)} | ${pct(r.benignConsent)} |`);
  }
  process.stdout.write(lines.join('\n') + '\n\nCaMeL (arXiv:2503.18813): 77 % of AgentDojo tasks solved with provable security; 84 % with no defence.\n');
  if (process.env.BENCH_AGENTDOJO_VERBOSE === '1') {
    const all = overall(shipped);
    process.stdout.write(`\nshipped, benign tasks that asked:\n${all.asked.map((a) => `  ${a}`).join('\n')}\nshipped, breaches:\n${all.breaches.map((a) => `  ${a}`).join('\n')}\n`);
  }
} finally {
  rmSync(strictDir, { recursive: true, force: true });
  rmSync(serversDir, { recursive: true, force: true });
}
