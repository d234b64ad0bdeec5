/**
 * Where a process's log lines go: its own stdout, written a turn of the
 * event loop at a time (TurnBatchedDestination), or, in a worker process,
 * its primary over the IPC channel (WorkerLogDestination).
 */
import pino, { type DestinationStream } from 'pino';

/**
 * The lines logged during one turn of the event loop, handed on together
 * at the end of that turn (setImmediate) or when flushed: what both log
 * destinations below share. `handOn` gets every line pending, in order (not `emit`: pino calls a destination's emit as an event emitter's).
 */
abstract class TurnBatch implements DestinationStream {
  #pending: string[] = [];
  #scheduled = false;

  write(line: string): void {
    this.#pending.push(line);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.flushPending);
    }
  }

  /** Hand every pending line to `handOn` now (also what the end of the turn does). */
  protected readonly flushPending = (): void => {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const lines = this.#pending;
    this.#pending = [];
    this.handOn(lines);
  };

  protected get hasPending(): boolean {
    return this.#pending.length > 0;
  }

  protected abstract handOn(lines: string[]): void;
}

/**
 * The server's log destination. Lines logged during one turn of the event
 * loop are joined and written together at the end of that turn
 * (setImmediate), in one synchronous write through sonic-boom: under load
 * that is one syscall for all the decision lines of a turn, with no
 * thread-pool round trip per line. Against sonic-boom's own asynchronous
 * mode (each line written on its own once the previous write completes) or
 * its synchronous mode (a syscall per line), this halves what a decision
 * line costs (`npm run bench:log`; docs/performance.md#log-lines).
 *
 * Writes are synchronous, as pino's default destination's are: a reader that
 * stops draining stdout stalls the process rather than growing its memory.
 * Lines wait at most until the end of the current turn; flushSync() writes
 * them at once, and so does the process's `exit` event, so an exit from
 * anywhere keeps the lines logged before it.
 */
export class TurnBatchedDestination extends TurnBatch {
  readonly #out: ReturnType<typeof pino.destination>;
  readonly #maxWrite: number;

  /**
   * `maxWrite`: most bytes per write (several lines are joined up to it;
   * a longer line is still written whole, in as many writes as it takes).
   * This process must be the only writer of `fd` for lines to stay whole:
   * a pipe takes only writes of up to PIPE_BUF (4096 bytes) whole, so with
   * worker processes the primary alone writes stdout and the workers send
   * it their lines (WorkerLogDestination).
   */
  constructor(fd: number, maxWrite = Infinity) {
    super();
    this.#maxWrite = maxWrite;
    // sonic-boom keeps its own backlog (after EAGAIN, say) in writes of at most `maxWrite` too.
    this.#out = pino.destination({ dest: fd, sync: true, ...(Number.isFinite(maxWrite) ? { maxWrite } : {}) });
    // A log that cannot be written (stdout closed) must not take the service down with it.
    this.#out.on('error', () => {});
    process.once('exit', () => this.flushPending());
  }

  protected handOn(lines: string[]): void {
    if (lines.length === 1) {
      this.#out.write(lines[0]!);
      return;
    }
    if (this.#maxWrite === Infinity) {
      this.#out.write(lines.join(''));
      return;
    }
    let chunk = '';
    let bytes = 0;
    for (const line of lines) {
      const n = Buffer.byteLength(line);
      if (bytes > 0 && bytes + n > this.#maxWrite) {
        this.#out.write(chunk);
        chunk = '';
        bytes = 0;
      }
      chunk += line;
      bytes += n;
    }
    this.#out.write(chunk);
  }

  /** Write every pending line now. */
  flushSync(): void {
    this.flushPending();
    this.#out.flushSync();
  }
}

/** Bytes of log lines a worker process may have on their way to its primary; past it lines are dropped and counted. */
export const MAX_LOG_IN_FLIGHT = 16 * 1024 * 1024;

/**
 * The log destination of a worker process (TRUSTGATE_WORKERS above 1):
 * lines go to the primary over the IPC channel, and the primary alone
 * writes them to stdout, so lines of different workers never interleave
 * however long they are (docs/operations/decision-log.md). A pipe shared by several
 * writers takes a write whole only up to PIPE_BUF (4096 bytes on Linux);
 * decision lines go up to 64 KiB (LOG_LINE_LIMIT).
 *
 * Lines of one event-loop turn travel in one message. A primary that does
 * not take them (its stdout is not drained) cannot grow this process
 * without bound: past MAX_LOG_IN_FLIGHT bytes on their way, lines are
 * dropped, and once the backlog clears one line says how many were.
 */
export class WorkerLogDestination extends TurnBatch {
  #inFlight = 0;
  #dropped = 0;
  readonly #send: (text: string, sent: () => void) => void;

  readonly #pid: number;

  /** `send` hands a text of whole lines to the primary and calls `sent` once it left this process. */
  constructor(send: (text: string, sent: () => void) => void, pid = process.pid) {
    super();
    this.#send = send;
    this.#pid = pid;
  }

  protected handOn(lines: string[]): void {
    if (this.#dropped > 0 && this.#inFlight === 0) {
      lines.unshift(JSON.stringify({ level: 40, time: Date.now(), pid: this.#pid, msg: `${this.#dropped} log lines were dropped: the log output was not being read` }) + '\n');
      this.#dropped = 0;
    }
    const text = lines.join('');
    if (this.#inFlight + text.length > MAX_LOG_IN_FLIGHT) {
      this.#dropped += lines.length;
      return;
    }
    this.#inFlight += text.length;
    try {
      this.#send(text, () => (this.#inFlight -= text.length));
    } catch {
      // the primary is gone; this process stops on 'disconnect'
      this.#inFlight -= text.length;
    }
  }

  /** Send every pending line now. */
  flushSync(): void {
    this.flushPending();
  }

  /** Whether every line sent so far has left this process. */
  get idle(): boolean {
    return this.#inFlight === 0 && !this.hasPending;
  }
}
