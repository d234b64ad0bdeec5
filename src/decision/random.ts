/**
 * Random hex from the CSPRNG, drawn from a pooled buffer refilled 4 KiB at a
 * time: one randomBytes call per use (a spotlight boundary per decision, an
 * id per proxied request) cost more than the rest of the work around it.
 * Every call gets bytes no other call got.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

/** `bytes` (at most 4096) fresh random bytes, as lower-case hex. */
export function randomHex(bytes: number): string {
  if (poolOffset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}
