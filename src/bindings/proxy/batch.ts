/**
 * One system call for the messages of one event-loop turn toward the host.
 *
 * The SDK's stdio transports write each message as it is sent. With
 * several calls in flight, the answers the proxy judged in one turn (one
 * read from the server can hold several) would each make their own write,
 * and wake the host for each. The host's transport, wrapped here, corks its
 * stream at the first send of a turn and uncorks it once the turn's I/O
 * callbacks and microtasks have run (`setImmediate`), so the stream writes
 * them together (`writev`). Framing and the transport stay the SDK's; only
 * when bytes leave changes, and not their order: the stream keeps writes in
 * the order they were made.
 *
 * Only toward the host. A request toward the server goes at once: the
 * server works on it while the proxy judges the next, and holding it to the
 * end of the turn cost throughput at 4 calls in flight
 * (docs/performance.md#proxy-polling-and-batching).
 *
 * A message sent alone is delayed by the rest of its turn, not by a timer:
 * the immediate runs before the event loop waits for anything again.
 * Backpressure is the stream's own: a corked write past its high-water mark
 * returns false and the SDK waits for `drain` as it would.
 */
import type { Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/**
 * Wrap `t.send` so that the sends of one turn leave in one write.
 * @param stream the stream the transport writes to, looked up at each turn's first send; undefined sends as the transport does.
 */
export function batchedPerTurn<T extends Transport>(t: T, stream: () => Writable | undefined): T {
  const send = t.send.bind(t);
  let corked: Writable | undefined;
  const uncork = (): void => {
    const s = corked;
    corked = undefined;
    s?.uncork();
  };
  t.send = (message, options) => {
    if (corked === undefined) {
      const s = stream();
      if (s !== undefined && s.writable) {
        s.cork();
        corked = s;
        setImmediate(uncork);
      }
    }
    return send(message, options);
  };
  return t;
}
