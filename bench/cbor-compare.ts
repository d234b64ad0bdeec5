/**
 * Throughput and profile conformance of the deterministic CBOR encoder next to
 * cbor2 (`cde: true`), cborg (`rfc8949EncodeOptions`) and cbor-x (not
 * deterministic; a speed reference only).
 *
 * Run: npx tsx bench/cbor-compare.ts
 *
 * MB/s is megabytes (10^6) of the record's JSON text per second, the same
 * yardstick for every encoder. Records come from a fixed-seed generator, so
 * the inputs are identical across runs.
 */
import { encode as cbor2Encode } from 'cbor2';
import { encode as cborgEncode, rfc8949EncodeOptions } from 'cborg';
import { encode as cborxEncode } from 'cbor-x';
import { encodeDeterministic } from '../src/evidence/cbor.js';
import { record } from './fixtures.js';

type Encode = (v: unknown) => Uint8Array;

const ENCODERS: Array<[string, Encode]> = [
  ['trustgate', encodeDeterministic],
  ['cbor2 cde', (v) => cbor2Encode(v, { cde: true })],
  ['cborg rfc8949', (v) => cborgEncode(v, rfc8949EncodeOptions)],
  ['cbor-x (non-det.)', (v) => cborxEncode(v) as Uint8Array],
];

/** Median MB/s over several timed batches, after a warm-up. */
function throughput(enc: Encode, value: unknown, jsonBytes: number): number {
  const batchMs = 200;
  for (let t = performance.now(); performance.now() - t < 300; ) enc(value);
  const rates: number[] = [];
  for (let b = 0; b < 7; b++) {
    let n = 0;
    const t0 = performance.now();
    let dt = 0;
    while (dt < batchMs) {
      enc(value);
      n++;
      dt = performance.now() - t0;
    }
    rates.push((n * jsonBytes) / 1e6 / (dt / 1000));
  }
  rates.sort((a, b) => a - b);
  return rates[3]!;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Tricky values with the bytes this profile requires. */
const PROFILE_CASES: Array<[string, unknown, string]> = [
  ['float16 subnormal 2^-24', 5.960464477539063e-8, 'f90001'],
  ['integer 2^32', 2 ** 32, '1b0000000100000000'],
  ['keys b,a,aa,"" bytewise', { b: 1, a: 2, aa: 3, '': 4 }, 'a4600461610261620162616103'],
  ['keys U+10000 vs U+E000', { '\u{10000}': 1, '\uE000': 2 }, 'a263ee80800264f090808001'],
  ['-0 as integer 0', -0, '00'],
  ['100000.5 as float32', 100000.5, 'fa47c35040'],
  ['2^53 as float32', 2 ** 53, 'fa5a000000'],
];

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

function main(): void {
  const small = record(4 * 1024, 1);
  const large = record(1024 * 1024, 2);
  const smallJson = Buffer.byteLength(JSON.stringify(small));
  const largeJson = Buffer.byteLength(JSON.stringify(large));
  const ours = { small: hex(encodeDeterministic(small)), large: hex(encodeDeterministic(large)) };

  console.log(`records: ~4 KB = ${smallJson} B JSON / ${ours.small.length / 2} B CBOR; ~1 MB = ${largeJson} B JSON / ${ours.large.length / 2} B CBOR`);
  console.log(`node ${process.version}; MB/s = 10^6 bytes of JSON text per second (median of 7 batches)\n`);

  console.log(`${pad('encoder', 20)}${pad('4 KB MB/s', 12)}${pad('1 MB MB/s', 12)}${pad('same bytes as ours', 20)}`);
  for (const [name, enc] of ENCODERS) {
    const s = throughput(enc, small, smallJson);
    const l = throughput(enc, large, largeJson);
    const same = hex(enc(small)) === ours.small && hex(enc(large)) === ours.large ? 'yes' : 'no';
    console.log(`${pad(name, 20)}${pad(s.toFixed(1), 12)}${pad(l.toFixed(1), 12)}${same}`);
  }

  console.log(`\nprofile conformance (bytes required by this profile):`);
  console.log(`${pad('case', 28)}${ENCODERS.map(([n]) => pad(n, 20)).join('')}`);
  for (const [label, value, want] of PROFILE_CASES) {
    const cells = ENCODERS.map(([, enc]) => {
      let got: string;
      try {
        got = hex(enc(value));
      } catch {
        got = 'throws';
      }
      return pad(got === want ? 'ok' : `got ${got}`, 20);
    });
    console.log(`${pad(label, 28)}${cells.join('')}`);
  }
}

main();
