/**
 * Evidence digests: our deriveDigest() (src/evidence/digest.ts) against the
 * raw library call plus sha256 in the same process, for the ~4 KB and the
 * ~1 MB record of bench/fixtures.ts.
 *
 * - JCS: deriveDigest(record, 'jcs/rfc8785', 'sha256') vs
 *   createHash('sha256').update(canonicalize(record)).
 * - CBOR: deriveDigest(record, 'cbor/rfc8949', 'sha256') vs cborg's RFC 8949
 *   deterministic encode (rfc8949EncodeOptions) + sha256; cbor-x encode +
 *   sha256 is shown as a speed ceiling only (it is not deterministic).
 *
 * Each round runs every variant for a fixed slice of time; ours and its
 * raw baseline run back to back, the first of the pair alternating by round. MB/s counts 10^6 bytes
 * of the record's JSON text per second, the same yardstick for every
 * variant. Ratios are ours/raw per round; the median is printed.
 *
 * deriveDigest is loaded from dist/ (rebuilt first with `npm run build`),
 * as users run it; BENCH_CODE=src loads the TypeScript sources instead.
 *
 * Run: npm run bench:digest      (env BENCH_ROUNDS, BENCH_SLICE_MS, BENCH_CODE)
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { encode as cborgEncode, rfc8949EncodeOptions } from 'cborg';
import { encode as cborxEncode } from 'cbor-x';
import { record1m, record4k } from './fixtures.js';
import { CODE, QUICK, envNumber, fmt, machine, median, ours, table } from './lib.js';

const { deriveDigest } = await ours<typeof import('../src/evidence/digest.js')>('evidence/digest.js');

const ROUNDS = envNumber('BENCH_ROUNDS', QUICK ? 5 : 11);
const SLICE_MS = envNumber('BENCH_SLICE_MS', QUICK ? 100 : 250);

const sha256 = (data: string | Uint8Array): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

interface Variant {
  name: string;
  group: 'jcs' | 'cbor';
  role: 'ours' | 'raw' | 'ceiling';
  run: (record: unknown) => string;
}

const VARIANTS: Variant[] = [
  { name: 'JCS  deriveDigest', group: 'jcs', role: 'ours', run: (r) => deriveDigest(r, 'jcs/rfc8785', 'sha256').digest },
  { name: 'JCS  canonicalize + sha256', group: 'jcs', role: 'raw', run: (r) => sha256(canonicalize(r)!) },
  { name: 'CBOR deriveDigest', group: 'cbor', role: 'ours', run: (r) => deriveDigest(r, 'cbor/rfc8949', 'sha256').digest },
  { name: 'CBOR cborg rfc8949 + sha256', group: 'cbor', role: 'raw', run: (r) => sha256(cborgEncode(r, rfc8949EncodeOptions)) },
  { name: 'CBOR cbor-x + sha256 (non-det.)', group: 'cbor', role: 'ceiling', run: (r) => sha256(cborxEncode(r) as Uint8Array) },
];

/** Operations per second of one variant over one time slice (at least 3 operations). */
function slice(v: Variant, record: unknown): number {
  let n = 0;
  const t0 = performance.now();
  let dt = 0;
  while (dt < SLICE_MS || n < 3) {
    v.run(record);
    n++;
    dt = performance.now() - t0;
  }
  return n / (dt / 1000);
}

function bench(label: string, record: unknown): Array<Array<string | number>> {
  const jsonBytes = Buffer.byteLength(JSON.stringify(record));
  // Same digest from ours and the raw call: the comparison is like for like.
  const jcsSame = VARIANTS[0]!.run(record) === VARIANTS[1]!.run(record);
  const cborSame = VARIANTS[2]!.run(record) === VARIANTS[3]!.run(record);
  for (const v of VARIANTS) for (let t = performance.now(); performance.now() - t < SLICE_MS * 2; ) v.run(record);

  const ops = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Ours and its raw baseline run back to back, which goes first alternating by round.
    for (const group of ['jcs', 'cbor'] as const) {
      const pair = VARIANTS.filter((v) => v.group === group && v.role !== 'ceiling');
      if (round % 2 === 1) pair.reverse();
      for (const v of pair) ops.get(v.name)!.push(slice(v, record));
    }
    for (const v of VARIANTS.filter((w) => w.role === 'ceiling')) ops.get(v.name)!.push(slice(v, record));
  }
  const mbps = (name: string): number => (median(ops.get(name)!) * jsonBytes) / 1e6;
  const ratio = (a: string, b: string): number => median(ops.get(a)!.map((x, i) => x / ops.get(b)![i]!));
  const rows: Array<Array<string | number>> = [];
  for (const v of VARIANTS) {
    const base = VARIANTS.find((w) => w.group === v.group && w.role === 'raw')!;
    rows.push([
      `${label} (${fmt(jsonBytes)} B)`,
      v.name,
      fmt(mbps(v.name), 1),
      fmt(median(ops.get(v.name)!)),
      v.role === 'raw' ? '1.00 (baseline)' : fmt(ratio(v.name, base.name), 2),
      v.role === 'ours' ? (v.group === 'jcs' ? (jcsSame ? 'yes' : 'NO') : cborSame ? 'yes' : 'no') : '',
    ]);
  }
  return rows;
}

function main(): void {
  console.log(`bench:digest  ${machine()}`);
  console.log(`code: ${CODE}/; ${ROUNDS} rounds x ${SLICE_MS} ms slices per variant, ours and raw back to back; MB/s = 10^6 bytes of record JSON text per second\n`);
  const rows = [...bench('4 KB record', record4k()), ...bench('1 MB record', record1m())];
  table([['record', 'variant', 'MB/s', 'ops/s', 'ratio to raw', 'same digest as raw'], ...rows]);
  console.log('\ntarget: deriveDigest >= 0.8 of the raw call (JCS and CBOR)');
}

main();
