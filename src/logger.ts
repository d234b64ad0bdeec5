/**
 * pino options shared by the server and the tests. Request logs carry the
 * method, the path without its query (a gateway may send the token there)
 * and the status; never headers or bodies.
 */
import pino, { type DestinationStream, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.js';

interface ReqLike {
  method?: string;
  url?: string;
  id?: string;
}

export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    base: { service: 'trustgate', pid: process.pid },
    serializers: {
      req: (req: ReqLike) => ({ id: req.id, method: req.method, path: (req.url ?? '').split('?')[0] }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  };
}

/**
 * The server's log destination. Lines logged during one turn of the event
 * loop are joined and written together at the end of that turn
 * (setImmediate), in one synchronous write through sonic-boom: under load
 * that is one syscall for all the decision lines of a turn, with no
 * thread-pool round trip per line. Against sonic-boom's own asynchronous
 * mode (each line written on its own once the previous write completes) or
 * its synchronous mode (a syscall per line), this halves what a decision
 * line costs: 6.5 µs instead of 12 (`npm run bench:log`).
 *
 * Writes are synchronous, as pino's default destination's are: a reader that
 * stops draining stdout stalls the process rather than growing its memory.
 * Lines wait at most until the end of the current turn; flushSync() writes
 * them at once, and so does the process's `exit` event, so an exit from
 * anywhere keeps the lines logged before it.
 */
export class TurnBatchedDestination implements DestinationStream {
  readonly #out: ReturnType<typeof pino.destination>;
  #pending: string[] = [];
  #scheduled = false;

  constructor(fd: number) {
    this.#out = pino.destination({ dest: fd, sync: true });
    // A log that cannot be written (stdout closed) must not take the service down with it.
    this.#out.on('error', () => {});
    process.once('exit', () => this.#flush());
  }

  write(line: string): void {
    this.#pending.push(line);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join('');
    this.#pending = [];
    this.#out.write(text);
  };

  /** Write every pending line now. */
  flushSync(): void {
    this.#flush();
    this.#out.flushSync();
  }
}
