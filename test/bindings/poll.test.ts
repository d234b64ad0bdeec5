/**
 * The proxy's idle strategy (src/bindings/proxy/poll.ts): after a message
 * the event loop keeps turning for the window and then sleeps as usual;
 * it never blocks other work, never polls with a window of 0, stops for
 * good with stop(), and does not keep a process alive past the window.
 */
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { IdlePoll } from '../../src/bindings/proxy/poll.js';

describe('IdlePoll', () => {
  it('polls after a touch and lets timers and I/O run meanwhile', async () => {
    const poll = new IdlePoll(60_000);
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
    let t = 0;
    const poll = new IdlePoll(40, () => t);
    poll.touch();
    t = 30;
    await sleep(2);
    expect(poll.polling).toBe(true);
    poll.touch();
    t = 60;
    await sleep(2);
    // 60 ms after the first touch, 30 after the second: still within the window.
    expect(poll.polling).toBe(true);
    t = 71;
    await sleep(2);
    expect(poll.polling).toBe(false);
  });

  it('never polls with a window of 0 (TRUSTGATE_PROXY_POLL_US=0)', () => {
    const poll = new IdlePoll(0);
    poll.touch();
    expect(poll.polling).toBe(false);
  });

  it('stops for good on stop()', async () => {
    const poll = new IdlePoll(10_000);
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
      ['--import', 'tsx', '--input-type=module', '-e', "const { IdlePoll } = await import('./src/bindings/proxy/poll.ts'); new IdlePoll(50).touch();"],
      { cwd: new URL('../..', import.meta.url), timeout: 20_000, encoding: 'utf8' },
    );
    expect(run.error).toBeUndefined();
    expect(run.status, run.stderr).toBe(0);
  });
});
