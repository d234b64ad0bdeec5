/**
 * The proxy's idle strategy: poll a little before sleeping, unless the
 * machine has no CPU to spare for it.
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
 * Polling pays only while a CPU is free for it. On a machine whose CPUs are
 * all taken, a polling process is descheduled while it polls, and takes
 * CPU the host and the server are waiting for. So the poller keeps count:
 * of every 20 ms spent polling, it must have had the CPU for half; when it
 * had less, it stops polling for 50 ms, doubled on each such period in a
 * row up to 2 s, and sleeps at once meanwhile. Half, not more: a host, the
 * proxy and a server all busy on 2 CPUs each get about two thirds of one,
 * and polling still pays there (a bar of 80 % stopped it about 40 % of the
 * time at 4 calls in flight: docs/performance.md#proxy-polling-and-batching).
 * Less than half means more busy processes than CPUs can serve.
 *
 * The window (1 ms by default) must outlast the server's turnaround: the
 * proxy forwards a call and waits for its answer, and a fast local tool
 * answers in 0.1 to 0.3 ms on a busy 2-CPU machine, later than a 100 µs
 * window, which left the proxy asleep when the answer came
 * (docs/performance.md#proxy-polling-and-batching).
 *
 * What it costs: at most the window in CPU time after the last message of
 * a burst, nothing while the connection is idle. TRUSTGATE_PROXY_POLL_US=0
 * turns it off. bench/proxy.ts measures both ways in one run.
 */
/** Polling time over which the CPU share is judged, ms. */
export const POLL_CHECK_MS = 20;
/** The share of polling time the process must have had the CPU for. */
export const POLL_MIN_SHARE = 0.5;
/** The first pause after a period short of CPU, ms; it doubles up to POLL_MAX_PAUSE_MS. */
export const POLL_PAUSE_MS = 50;
export const POLL_MAX_PAUSE_MS = 2_000;

export interface PollClock {
  /** Wall time, ms. */
  now(): number;
  /** CPU time this process has used, ms. */
  cpu(): number;
}

export class IdlePoll {
  readonly #windowMs: number;
  readonly #clock: PollClock;
  /** When the last message came or went. */
  #last = 0;
  #polling = false;
  #stopped = false;
  /** Wall and CPU time at the start of the polling not yet counted. */
  #fromWall = 0;
  #fromCpu = 0;
  /** Polling time counted toward the next judgement, and the CPU time had in it. */
  #wall = 0;
  #cpu = 0;
  /** No polling before this time (a pause after a period short of CPU). */
  #pausedUntil = 0;
  #pause = POLL_PAUSE_MS;

  /**
   * @param windowMs how long to keep polling after the last message, ms; 0 never polls.
   * @param clock wall and CPU time: the process's (src/main/poll-clock.ts), or a test's own.
   */
  constructor(windowMs: number, clock: PollClock) {
    this.#windowMs = windowMs;
    this.#clock = clock;
  }

  /** Whether the event loop is being kept turning now. */
  get polling(): boolean {
    return this.#polling;
  }

  /** A message came in or went out: keep polling for the window from now. */
  touch(): void {
    if (this.#windowMs <= 0 || this.#stopped) return;
    const t = this.#clock.now();
    this.#last = t;
    if (this.#polling || t < this.#pausedUntil) return;
    this.#polling = true;
    this.#fromWall = t;
    this.#fromCpu = this.#clock.cpu();
    setImmediate(this.#turn);
  }

  /** Stop for good (the connection closed). */
  stop(): void {
    this.#stopped = true;
  }

  readonly #turn = (): void => {
    const t = this.#clock.now();
    const over = this.#stopped || t - this.#last >= this.#windowMs;
    if (over || t - this.#fromWall >= POLL_CHECK_MS) {
      const cpu = this.#clock.cpu();
      this.#wall += t - this.#fromWall;
      this.#cpu += cpu - this.#fromCpu;
      this.#fromWall = t;
      this.#fromCpu = cpu;
      if (this.#wall >= POLL_CHECK_MS && !this.#hadTheCpu(t)) {
        this.#polling = false;
        return;
      }
    }
    if (over) this.#polling = false;
    else setImmediate(this.#turn);
  };

  /** Judge the polling counted so far: false (and a pause) when the process did not have the CPU for it. */
  #hadTheCpu(t: number): boolean {
    const share = this.#cpu / this.#wall;
    this.#wall = 0;
    this.#cpu = 0;
    if (share >= POLL_MIN_SHARE) {
      this.#pause = POLL_PAUSE_MS;
      return true;
    }
    this.#pausedUntil = t + this.#pause;
    this.#pause = Math.min(this.#pause * 2, POLL_MAX_PAUSE_MS);
    return false;
  }
}
