/**
 * Lines of standard input held to the body limit, for the stdio interceptor
 * server. The SDK's stdio transport closes itself when its buffer passes
 * `maxBufferSize`, so one over-limit line would end the server for every
 * request after it. This filter sits between standard input and the
 * transport: it passes each whole line (at most `limit` bytes) on, one push
 * per line, and drops a line over the limit as it arrives (holding at most
 * `limit` bytes of it, never the rest), calling `onOversize` once the line
 * ends so that the binding answers it with a JSON-RPC error and keeps
 * serving.
 */
import { Transform, type TransformCallback } from 'node:stream';

const NL = 0x0a;

export class LineLimit extends Transform {
  /** The start of the line being read (whole chunks, joined when the line ends). */
  private parts: Buffer[] = [];
  private length = 0;
  /** The line being read is over the limit: its bytes are dropped until its newline. */
  private dropping = false;

  constructor(
    private readonly limit: number,
    private readonly onOversize: () => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NL, start);
      const end = nl === -1 ? chunk.length : nl;
      if (!this.dropping) {
        this.length += end - start;
        if (this.length > this.limit) {
          this.dropping = true;
          this.parts = [];
        } else if (end > start) this.parts.push(chunk.subarray(start, end));
      }
      if (nl === -1) break;
      if (this.dropping) this.onOversize();
      else if (this.length > 0) this.push(Buffer.concat([...this.parts, Buffer.from('\n')]));
      this.parts = [];
      this.length = 0;
      this.dropping = false;
      start = nl + 1;
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    // A last line without its newline is no message (the transport would never read it either).
    if (this.dropping) this.onOversize();
    this.parts = [];
    done();
  }
}
