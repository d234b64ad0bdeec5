import { Writable } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { coalesceWrites } from '../../../src/bindings/proxy/coalesce.js';

/** A stream that records each call that reaches its "kernel" (one _write or one _writev). */
function recorder(): { stream: Writable; calls: string[][] } {
  const calls: string[][] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      calls.push([chunk.toString()]);
      cb();
    },
    writev(chunks, cb) {
      calls.push(chunks.map((c) => (c.chunk as Buffer).toString()));
      cb();
    },
  });
  return { stream, calls };
}

describe('coalesceWrites', () => {
  it('the messages of one turn reach the stream in one call, in order, and nothing waits past the turn', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), async (turns) => {
        const { stream, calls } = recorder();
        coalesceWrites(stream);
        for (const messages of turns) {
          for (const m of messages) stream.write(m);
          await turn();
        }
        expect(calls).toEqual(turns);
      }),
    );
  });

  it('a stream ended within a turn still gets everything written before the end', async () => {
    const { stream, calls } = recorder();
    coalesceWrites(stream);
    stream.write('a');
    stream.write('b');
    stream.end();
    await turn();
    expect(calls.flat()).toEqual(['a', 'b']);
  });
});
