/**
 * The proxy's per-turn write batching (src/bindings/proxy/batch.ts) around
 * the SDK's own stdio transport: the messages of one turn leave in one
 * write, in the order they were sent, each a whole line; nothing is lost
 * or reordered across turns, and backpressure still resolves.
 */
import { Writable } from 'node:stream';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { batchedPerTurn } from '../../../src/bindings/proxy/batch.js';

/** A stream that records each write the transport's bytes arrive in. */
class Recorder extends Writable {
  readonly writes: string[] = [];
  constructor(highWaterMark = 16 * 1024) {
    super({ highWaterMark });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.writes.push(chunk.toString());
    setImmediate(cb);
  }
  override _writev(chunks: Array<{ chunk: Buffer }>, cb: (err?: Error | null) => void): void {
    this.writes.push(chunks.map((c) => c.chunk.toString()).join(''));
    setImmediate(cb);
  }
}

const message = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `line ${n}` } });
const line = (n: number): string => `${JSON.stringify(message(n))}\n`;
const nextTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

function transport(out: Writable) {
  return batchedPerTurn(new StdioServerTransport(new PassThrough(), out), () => out);
}

describe('writes batched per turn', () => {
  it('the sends of one turn leave in one write, in order', async () => {
    const out = new Recorder();
    const t = transport(out);
    await Promise.all([0, 1, 2].map((n) => t.send(message(n))));
    await nextTurn();
    expect(out.writes).toEqual([line(0) + line(1) + line(2)]);
  });

  it('sends of later turns are written in later writes, none lost or reordered (generated turns)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 12 }), async (turns) => {
        const out = new Recorder();
        const t = transport(out);
        let n = 0;
        for (const k of turns) {
          const sent: Promise<void>[] = [];
          for (let i = 0; i < k; i++) sent.push(t.send(message(n++)));
          await Promise.all(sent);
          await nextTurn();
        }
        expect(out.writes.join('')).toBe(Array.from({ length: n }, (_, i) => line(i)).join(''));
        // One write per turn that sent anything: the stream was uncorked at the end of each.
        expect(out.writes).toHaveLength(turns.filter((k) => k > 0).length);
      }),
      { numRuns: 60 },
    );
  });

  it('a send past the high-water mark still resolves, once the stream drained', async () => {
    const out = new Recorder(64);
    out.setMaxListeners(0);
    const t = transport(out);
    const sent = Array.from({ length: 20 }, (_, i) => t.send(message(i)));
    await Promise.all(sent);
    await nextTurn();
    expect(out.writes.join('')).toBe(Array.from({ length: 20 }, (_, i) => line(i)).join(''));
  });

  it('without a stream (not started, or not a stream transport) a send goes as the transport sends it', async () => {
    const out = new Recorder();
    const t = batchedPerTurn(new StdioServerTransport(new PassThrough(), out), () => undefined);
    await t.send(message(0));
    await t.send(message(1));
    await nextTurn();
    expect(out.writes).toEqual([line(0), line(1)]);
  });
});
