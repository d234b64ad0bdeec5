/**
 * Fewer system calls on the proxy's two stdio pipes: the messages one turn
 * of the event loop writes to a stream (several answers read in one chunk,
 * judged in the same turn) leave in one `writev` instead of one `write`
 * each. The stream is corked at the first write of a turn and uncorked once
 * that turn's I/O callbacks are done (setImmediate), so a message waits at
 * most for the rest of its own turn. Framing stays the SDK's: this only
 * decides when the bytes it wrote reach the kernel.
 */
import type { Writable } from 'node:stream';

export function coalesceWrites(stream: Writable): void {
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  let corked = false;
  const flush = (): void => {
    corked = false;
    stream.uncork();
  };
  stream.write = ((...args: unknown[]): boolean => {
    if (!corked && !stream.destroyed && !stream.writableEnded) {
      corked = true;
      stream.cork();
      setImmediate(flush);
    }
    return write(...args);
  }) as Writable['write'];
}

/** The standard input of the child a StdioClientTransport started (undefined for other transports, or before start). */
export function childStdin(transport: unknown): Writable | undefined {
  const child = (transport as { _process?: { stdin?: Writable | null } })._process;
  return child?.stdin ?? undefined;
}
