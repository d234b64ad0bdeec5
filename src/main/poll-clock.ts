/** The clock the proxy's idle poll judges its CPU share by (src/bindings/proxy/poll.ts): this process's. */
import { performance } from 'node:perf_hooks';
import type { PollClock } from '../bindings/proxy/poll.js';

export const PROCESS_CLOCK: PollClock = {
  now: () => performance.now(),
  cpu: () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  },
};
