/**
 * `options.omitUnmodifiedResult`: what leaving out an unchanged result saves.
 * The ~4 KB fixture without its untrusted claim passes unchanged under the
 * shipped policies; it is sent with and without the option, alternating
 * rounds against one service, and compared with the bare echo.
 *
 * Run: npm run bench:omit   (env BENCH_SECONDS, BENCH_ROUNDS)
 */
import autocannon from 'autocannon';
import { evaluateRequest, TRUST_KEY } from './fixtures.js';
import { cleanup, envNumber, fmt, machine, median, startEcho, startService, table } from './lib.js';

const seconds = envNumber('BENCH_SECONDS', 5);
const rounds = envNumber('BENCH_ROUNDS', 3);

function unmodified(): Record<string, unknown> {
  const body = evaluateRequest() as unknown as { result: { content: Array<Record<string, unknown>> } };
  for (const block of body.result.content) {
    const meta = block._meta as Record<string, unknown> | undefined;
    if (meta) delete meta[TRUST_KEY];
  }
  return body as unknown as Record<string, unknown>;
}

async function run(url: string, body: string): Promise<number> {
  const r = await autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: 10, duration: seconds });
  if (r.errors > 0 || r.non2xx > 0) throw new Error(`errors ${r.errors}, non-2xx ${r.non2xx}`);
  return r.requests.average;
}

try {
  console.log(`bench:omit  ${machine()}`);
  const svc = await startService({ LOG_LEVEL: 'info' });
  const echo = await startEcho();
  const plain = unmodified();
  const without = JSON.stringify(plain);
  const withOpt = JSON.stringify({ ...plain, options: { omitUnmodifiedResult: true } });
  const check = await (await fetch(`${svc.base}/v1/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: withOpt })).json();
  if ((check as { modified: boolean }).modified !== false) throw new Error('the fixture must pass unchanged');
  const res: Record<string, number[]> = { echo: [], full: [], omitted: [] };
  for (let i = 0; i < rounds; i++) {
    res.echo!.push(await run(`${echo.base}/echo`, without));
    res.full!.push(await run(`${svc.base}/v1/evaluate`, without));
    res.omitted!.push(await run(`${svc.base}/v1/evaluate`, withOpt));
  }
  const e = median(res.echo!);
  table([
    ['variant', 'req/s (median)', 'ratio to echo'],
    ['echo', fmt(e), '1.00'],
    ['evaluate, result returned', fmt(median(res.full!)), fmt(median(res.full!) / e, 2)],
    ['evaluate, omitUnmodifiedResult', fmt(median(res.omitted!)), fmt(median(res.omitted!) / e, 2)],
  ]);
} finally {
  await cleanup();
}
