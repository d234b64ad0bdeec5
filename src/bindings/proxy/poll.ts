/**
 * The proxy's idle strategy: poll a little before sleeping.
 *
 * Every proxied call crosses two more pipes, and each crossing wakes the
 * process on the other end. A process whose event loop has gone to sleep
 * in the kernel takes far longer to wake than to handle a message (tens of
 * microseconds on a virtual machine, where waking an idle CPU costs an
 * interrupt between CPUs), so a sleeping proxy adds more latency than
 * judging does. After each message the proxy therefore keeps its event
 * loop turning (non-blocking polls of its descriptors, `setImmediate`) for
 * `windowMs`, then sleeps as usual: an answer that comes within the window
 * (a fast local tool, the host's next call of a burst) is read at once.
 *
 * What it costs: at most the window in CPU time after the last message of
 * a burst, nothing while the connection is idle. TRUSTGATE_PROXY_POLL_US=0
 * turns it off. bench/proxy.ts measures both ways in one run.
 */
import { performance } from 'node:perf_hooks';

export class IdlePoll {
  readonly #windowMs: number;
  readonly #now: () => number;
  #last = 0;
  #polling = false;
  #stopped = false;

  /**
   * @param windowMs how long to keep polling after the last message, ms; 0 never polls.
   * @param now the clock, ms (tests pass their own).
   */
  constructor(windowMs: number, now: () => number = () => performance.now()) {
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** Whether the event loop is being kept turning now. */
  get polling(): boolean {
    return this.#polling;
  }

  /** A message came in or went out: keep polling for the window from now. */
  touch(): void {
    if (this.#windowMs <= 0 || this.#stopped) return;
    this.#last = this.#now();
    if (this.#polling) return;
    this.#polling = true;
    setImmediate(this.#turn);
  }

  /** Stop for good (the connection closed). */
  stop(): void {
    this.#stopped = true;
  }

  readonly #turn = (): void => {
    if (!this.#stopped && this.#now() - this.#last < this.#windowMs) setImmediate(this.#turn);
    else this.#polling = false;
  };
}
