/**
 * The stdio interceptor's line filter (src/bindings/interceptors/lines.ts):
 * whatever the chunking, every line within the limit passes whole and in
 * order, every line over it is dropped and reported once, and the filter
 * never holds more than the limit of one line.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineLimit } from '../../../src/bindings/interceptors/lines.js';

async function run(limit: number, chunks: Buffer[]): Promise<{ lines: string[]; oversize: number }> {
  let oversize = 0;
  const f = new LineLimit(limit, () => oversize++);
  const out: Buffer[] = [];
  f.on('data', (b: Buffer) => {
    // One push per line, each within the limit plus its newline.
    expect(b.length).toBeLessThanOrEqual(limit + 1);
    expect(b.indexOf(0x0a)).toBe(b.length - 1);
    out.push(b);
  });
  const done = new Promise<void>((resolve) => f.on('end', resolve));
  for (const c of chunks) f.write(c);
  f.end();
  await done;
  return { lines: out.map((b) => b.toString('utf8', 0, b.length - 1)), oversize };
}

describe('LineLimit', () => {
  it('passes lines within the limit, drops and reports each line over it, for any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.string({ unit: fc.constantFrom('a', 'é', '{', '"', '\r'), maxLength: 80 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 10 }),
        async (limit, lines, cuts) => {
          const text = Buffer.from(lines.map((l) => l + '\n').join(''));
          const chunks: Buffer[] = [];
          let at = 0;
          for (let i = 0; at < text.length; i++) {
            const n = cuts[i % cuts.length]!;
            chunks.push(text.subarray(at, at + n));
            at += n;
          }
          const got = await run(limit, chunks);
          const fits = (l: string) => Buffer.byteLength(l) <= limit;
          expect(got.lines).toEqual(lines.filter((l) => l.length > 0 && fits(l)));
          expect(got.oversize).toBe(lines.filter((l) => !fits(l)).length);
        },
      ),
    );
  });

  it('reports a last line over the limit that never ends', async () => {
    expect(await run(4, [Buffer.from('ok\n'), Buffer.from('x'.repeat(10))])).toEqual({ lines: ['ok'], oversize: 1 });
  });
});
