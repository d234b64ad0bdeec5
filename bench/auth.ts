/**
 * POST /v1/evaluate with a JWT access token against the same with a static
 * token, one service process serving both (TRUSTGATE_WORKERS=1,
 * LOG_LEVEL=warn): what checking a JWT costs once its key is cached.
 *
 * The service gets a tokens file and a JWKS file (an RS256 key made here);
 * the JWT is signed with that key, as an authorization server would. Load:
 * autocannon in this process, the ~4 KB fixture of bench/fixtures.ts,
 * BENCH_ROUNDS rounds of BENCH_SECONDS seconds, the two alternating within
 * each round (order rotated every round); the ratio (JWT over static,
 * requests per second) is taken per round and the median printed.
 *
 * Run: npm run bench:auth   (env BENCH_SECONDS, BENCH_ROUNDS, BENCH_CONNECTIONS)
 */
import autocannon from 'autocannon';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { shapeText } from './fixtures.js';
import { QUICK, cleanup, envNumber, fmt, machine, median, startService, table } from './lib.js';

const SECONDS = envNumber('BENCH_SECONDS', QUICK ? 2 : 5);
const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 3 : 5);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10);
const BODY = shapeText('mixed-5');

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-bench-auth-'));
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }] }));
  const STATIC = 'bench-static-token-0123456789abcdef';
  writeFileSync(join(dir, 'tokens'), `bench ${STATIC}\n`);
  const jwt = await new SignJWT({ scope: 'read' })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'at+jwt' })
    .setIssuer('https://issuer.bench')
    .setAudience('trustgate')
    .setSubject('bench-host')
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  const svc = await startService({
    LOG_LEVEL: 'warn',
    TRUSTGATE_WORKERS: '1',
    TRUSTGATE_TOKENS_FILE: join(dir, 'tokens'),
    TRUSTGATE_JWKS: join(dir, 'jwks.json'),
    TRUSTGATE_JWT_ISSUER: 'https://issuer.bench',
    TRUSTGATE_JWT_AUDIENCE: 'trustgate',
  });
  try {
    const targets = [
      { label: 'static token', token: STATIC },
      { label: 'JWT (key cached)', token: jwt },
    ];
    const load = async (token: string, seconds: number) => {
      const r = await autocannon({ url: `${svc.base}/v1/evaluate`, method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: BODY, connections: CONNECTIONS, duration: seconds });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`answers other than 200: ${r.non2xx} non-2xx, ${r.errors} errors`);
      return r.requests.average;
    };
    for (const t of targets) await load(t.token, QUICK ? 1 : 3);
    const ratios: number[] = [];
    const rows: Array<Array<string | number>> = [['round', ...targets.map((t) => `${t.label} req/s`), 'JWT / static']];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      const rps = new Map<string, number>();
      for (const t of order) rps.set(t.label, await load(t.token, SECONDS));
      const ratio = rps.get('JWT (key cached)')! / rps.get('static token')!;
      ratios.push(ratio);
      rows.push([round + 1, ...targets.map((t) => fmt(rps.get(t.label)!)), fmt(ratio, 3)]);
    }
    process.stdout.write(`${machine()}\n/v1/evaluate, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s, one process\n`);
    table(rows);
    process.stdout.write(`median JWT / static: ${fmt(median(ratios), 3)} (bar: at least 0.9)\n`);
  } finally {
    await svc.stop();
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(cleanup);
