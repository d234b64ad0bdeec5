/**
 * How the cost of a decision grows with the number of content blocks.
 *
 * Results of 1, 10, 100 and 1,000 blocks from bench/fixtures.ts
 * (requestWithBlocks: five block kinds in turn, every 4th block untrusted,
 * every 10th with its own evidenceRef and record, a result-level data-class
 * claim) are decided with the shipped policies (loadPolicyDir('policies')),
 * in this process, three ways:
 *
 * - decide: src/decision/result.ts decideResult() on the parsed request;
 * - text->answer: parseRequestText (pre-parse scan + JSON.parse), decide(),
 *   JSON.stringify of the decision: the work a request's size drives;
 * - http (inject): the whole Fastify app (buildApp, LOG_LEVEL=warn) through
 *   app.inject(): body parser, schema validation, decide, serializer.
 *
 * Sizes alternate within each round (order rotated every round). Printed:
 * time per decision, cost per block, and the ratio of the per-block cost at
 * 1,000 blocks to that at 10 (median of per-round ratios; target <= 2).
 *
 * Our code is loaded from dist/ (rebuilt first with `npm run build`), as
 * users run it; BENCH_CODE=src loads the TypeScript sources instead.
 *
 * Run: npm run bench:scale      (env BENCH_ROUNDS, BENCH_SLICE_MS, BENCH_SCALE_HTTP=0 to skip inject, BENCH_CODE)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { EvaluateRequest } from '../src/decision/types.js';
import type { PolicySet } from '../src/policy/load.js';
import { requestWithBlocks } from './fixtures.js';
import { CODE, QUICK, ROOT, envNumber, fmt, machine, median, ours, table } from './lib.js';

const { buildApp } = await ours<typeof import('../src/app/app.js')>('app/app.js');
const { loadConfig } = await ours<typeof import('../src/config.js')>('config.js');
const { decideResult: decide } = await ours<typeof import('../src/decision/result.js')>('decision/result.js');
const { parseRequestText } = await ours<typeof import('../src/json/parse.js')>('json/parse.js');
const { loadPolicyDir } = await ours<typeof import('../src/policy/load.js')>('policy/load.js');
const { PolicyStore } = await ours<typeof import('../src/policy/reload.js')>('policy/reload.js');

const SIZES = [1, 10, 100, 1000] as const;
const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 7);
const SLICE_MS = envNumber('BENCH_SLICE_MS', QUICK ? 150 : 400);
const HTTP = process.env.BENCH_SCALE_HTTP !== '0';
const POLICY_DIR = join(ROOT, 'policies');

type Op = () => unknown | Promise<unknown>;

interface Case {
  n: number;
  text: string;
  ops: Record<string, Op>;
}

// Fixed per run: decide() takes them as inputs (runDecision makes fresh ones per request).
const DECISION_ID = randomUUID();
const BOUNDARY = randomBytes(16).toString('hex');

function options(policies: PolicySet) {
  return { policies, decisionId: DECISION_ID, boundary: BOUNDARY, maxBlocks: 10_000, maxEvidence: 1_000 };
}

/** Microseconds per operation over one slice of time (at least 3 operations). */
async function slice(op: Op): Promise<number> {
  let n = 0;
  const t0 = performance.now();
  let dt = 0;
  while (dt < SLICE_MS || n < 3) {
    const r = op();
    if (r instanceof Promise) await r;
    n++;
    dt = performance.now() - t0;
  }
  return (dt * 1000) / n;
}

async function main(): Promise<void> {
  console.log(`bench:scale  ${machine()}`);
  const policies = await loadPolicyDir(POLICY_DIR);
  console.log(
    `code: ${CODE}/; shipped policies: ${policies.policies.map((p) => p.id).join(', ')}; ${ROUNDS} rounds x ${SLICE_MS} ms slices; sizes alternating\n`,
  );

  let app: FastifyInstance | undefined;
  if (HTTP) {
    // Overload protection off: it answers 503 when this loop is busy, which is not what is measured here.
    const config = loadConfig({ TRUSTGATE_POLICY_DIR: POLICY_DIR, LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
    const store = new PolicyStore(config.policyDir);
    await store.load();
    app = await buildApp({ config, store });
    await app.ready();
  }

  const cases: Case[] = SIZES.map((n) => {
    const text = JSON.stringify(requestWithBlocks(n));
    const parsed = JSON.parse(text) as EvaluateRequest;
    const ops: Record<string, Op> = {
      decide: () => decide(parsed, options(policies)),
      'text->answer': () => {
        const { value, scan } = parseRequestText(text);
        return JSON.stringify(decide(value as EvaluateRequest, { ...options(policies), scan }));
      },
    };
    if (app) {
      const a = app;
      ops['http (inject)'] = async () => {
        const res = await a.inject({ method: 'POST', url: '/v1/evaluate', headers: { 'content-type': 'application/json' }, payload: text });
        if (res.statusCode !== 200) throw new Error(`inject answered ${res.statusCode} for ${n} blocks: ${res.body.slice(0, 300)}`);
        return res.body;
      };
    }
    return { n, text, ops };
  });

  // Check the fixture does what the bench assumes: no deny, every evidenceRef verified.
  for (const c of cases) {
    const d = decide(JSON.parse(c.text) as EvaluateRequest, options(policies));
    if (d.outcome === 'deny' || d.evidence.some((e) => e.status !== 'verified')) {
      throw new Error(`${c.n} blocks: outcome ${d.outcome}, evidence ${d.evidence.map((e) => e.status).join(',')}`);
    }
  }

  const variants = Object.keys(cases[0]!.ops);
  for (const c of cases) for (const v of variants) await slice(c.ops[v]!); // warm-up

  // us[variant][size] = per-round microseconds per decision
  const us = new Map<string, Map<number, number[]>>(variants.map((v) => [v, new Map(SIZES.map((n) => [n, [] as number[]]))]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + round) % cases.length]!;
      for (const v of variants) us.get(v)!.get(c.n)!.push(await slice(c.ops[v]!));
    }
  }

  const rows: Array<Array<string | number>> = [['blocks', 'request bytes', ...variants.flatMap((v) => [`${v} us/decision`, `${v} us/block`])]];
  for (const c of cases) {
    rows.push([
      fmt(c.n),
      fmt(Buffer.byteLength(c.text)),
      ...variants.flatMap((v) => {
        const t = median(us.get(v)!.get(c.n)!);
        return [fmt(t, 1), fmt(t / c.n, 2)];
      }),
    ]);
  }
  table(rows);

  console.log();
  const ratioRows: Array<Array<string | number>> = [['per-block cost ratio (median of per-round ratios)', ...variants]];
  for (const [hi, lo] of [
    [1000, 10],
    [100, 10],
  ] as const) {
    ratioRows.push([
      `${fmt(hi)} blocks / ${lo} blocks`,
      ...variants.map((v) => {
        const a = us.get(v)!.get(hi)!;
        const b = us.get(v)!.get(lo)!;
        return fmt(median(a.map((x, i) => x / hi / (b[i]! / lo))), 2);
      }),
    ]);
  }
  table(ratioRows);
  console.log('\ntarget: per-block cost at 1,000 blocks within 2x of that at 10 blocks');
  await app?.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
