import { describe, expect, it } from 'vitest';
import { quotaCpus, usableCpus, workerCount } from '../../../src/main/cluster/cpus.js';
import { MAX_AUTO_WORKERS } from '../../../src/config.js';
import { availableParallelism } from 'node:os';

describe('CPUs a worker count is sized to', () => {
  it.each([
    ['max 100000', undefined],
    ['200000 100000', 2],
    ['150000 100000', 2], // 1.5 CPUs: a second worker still has half a CPU to run on
    ['50000 100000', 1],
    ['100000', 1], // period left out: the kernel default of 100000
    ['garbage', undefined],
    ['0 100000', undefined],
  ])('cgroup cpu.max %j is %s CPUs', (text, cpus) => {
    expect(quotaCpus(text)).toBe(cpus);
  });

  it('never reports more than the affinity mask allows, nor fewer than one', () => {
    const n = usableCpus();
    expect(n).toBeGreaterThanOrEqual(1);
    expect(n).toBeLessThanOrEqual(availableParallelism());
  });

  it('auto is one worker per usable CPU, at most MAX_AUTO_WORKERS; a number is taken as it is', () => {
    expect(workerCount('auto', () => 1)).toBe(1);
    expect(workerCount('auto', () => 2)).toBe(2);
    expect(workerCount('auto', () => 64)).toBe(MAX_AUTO_WORKERS);
    expect(workerCount(8, () => 1)).toBe(8);
  });
});
