/**
 * The proxy's idle strategy (src/bindings/proxy/poll.ts): after a message
 * the event loop keeps turning for the window and then sleeps as usual;
 * it never blocks other work, never polls with a window of 0, stops for
 * good with stop(), does not keep a process alive past the window, and
 * pauses while it does not get the CPU it polls for.
 */
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { IdlePoll, POLL_CHECK_MS, POLL_MAX_PAUSE_MS, POLL_PAUSE_MS } from '../../src/bindings/proxy/poll.js';
import { PROCESS_CLOCK } from '../../src/main/poll-clock.js';

/** A clock the test moves: wall time, and the CPU time the process had (all of it unless told). */
function testClock() {
  const c = { wall: 0, cpu: 0 };
  return { c, clock: { now: () => c.wall, cpu: () => c.cpu }, advance: (ms: number, share = 1) => ((c.wall += ms), (c.cpu += ms * share)) };
}

/** Let the poller take a few turns of the event loop. */
const turns = () => sleep(2);

describe('IdlePoll', () => {
  it('polls after a touch and lets timers and I/O run meanwhile', async () => {
    const poll = new IdlePoll(60_000, testClock().clock);
    poll.touch();
    expect(poll.polling).toBe(true);
    let timerRan = false;
    setTimeout(() => (timerRan = true), 0);
    await sleep(5);
    expect(timerRan).toBe(true);
    expect(poll.polling).toBe(true);
    poll.stop();
  });

  it('stops once the window has passed since the last touch; a touch while polling extends it', async () => {
    const { clock, advance } = testClock();
    const poll = new IdlePoll(40, clock);
    poll.touch();
    advance(30);
    await turns();
    expect(poll.polling).toBe(true);
    poll.touch();
    advance(30);
    await turns();
    // 60 ms after the first touch, 30 after the second: still within the window.
    expect(poll.polling).toBe(true);
    advance(11);
    await turns();
    expect(poll.polling).toBe(false);
  });

  it('keeps polling while it has the CPU, and pauses once it did not (the CPUs are all taken)', async () => {
    const { clock, advance } = testClock();
    const poll = new IdlePoll(1_000, clock);
    poll.touch();
    advance(POLL_CHECK_MS, 0.9);
    await turns();
    expect(poll.polling).toBe(true);
    // A fair share among three busy processes on two CPUs (2/3) is having the CPU.
    advance(POLL_CHECK_MS, 0.65);
    await turns();
    expect(poll.polling).toBe(true);
    advance(POLL_CHECK_MS, 0.4);
    await turns();
    expect(poll.polling).toBe(false);
    // Paused: a message is handled, the loop sleeps at once.
    poll.touch();
    expect(poll.polling).toBe(false);
    advance(POLL_PAUSE_MS);
    poll.touch();
    expect(poll.polling).toBe(true);
    poll.stop();
  });

  it('doubles the pause on each period short of CPU in a row, up to its bound, and starts over after a good one', async () => {
    const { clock, advance } = testClock();
    const poll = new IdlePoll(1_000, clock);
    /** Poll one period with the given CPU share; how long the pause after it is (0: none). */
    const period = async (share: number) => {
      poll.touch();
      expect(poll.polling).toBe(true);
      advance(POLL_CHECK_MS, share);
      await turns();
      if (poll.polling) return 0;
      let paused = 0;
      for (poll.touch(); !poll.polling; poll.touch()) {
        advance(10);
        paused += 10;
      }
      return paused;
    };
    const pauses = [];
    for (let i = 0; i < 8; i++) pauses.push(await period(0.3));
    expect(pauses).toEqual([50, 100, 200, 400, 800, 1600, 2000, 2000].map((ms) => Math.min(ms, POLL_MAX_PAUSE_MS)));
    expect(await period(1)).toBe(0);
    expect(await period(0.3)).toBe(POLL_PAUSE_MS);
    poll.stop();
  });

  it('never polls with a window of 0 (TRUSTGATE_PROXY_POLL_US=0)', () => {
    const poll = new IdlePoll(0, PROCESS_CLOCK);
    poll.touch();
    expect(poll.polling).toBe(false);
  });

  it('stops for good on stop()', async () => {
    const poll = new IdlePoll(10_000, PROCESS_CLOCK);
    poll.touch();
    poll.stop();
    await sleep(5);
    expect(poll.polling).toBe(false);
    poll.touch();
    expect(poll.polling).toBe(false);
  });

  it('does not keep a process alive past the window', () => {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', "const { IdlePoll } = await import('./src/bindings/proxy/poll.ts'); const { PROCESS_CLOCK } = await import('./src/main/poll-clock.ts'); new IdlePoll(50, PROCESS_CLOCK).touch();"],
      { cwd: new URL('../..', import.meta.url), timeout: 20_000, encoding: 'utf8' },
    );
    expect(run.error).toBeUndefined();
    expect(run.status, run.stderr).toBe(0);
  });
});
