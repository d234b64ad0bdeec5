/**
 * How many CPUs this process may use: the affinity mask (what
 * os.availableParallelism reports) capped by the cgroup CPU quota, as a
 * container's CPU limit is. Go's runtime and Envoy size their workers the
 * same way; a Node process sees the host's CPUs otherwise.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { MAX_AUTO_WORKERS, type Config } from '../../config.js';

/**
 * The CPU quota of a cgroup, in CPUs (rounded up), from the text of
 * cgroup v2 `cpu.max` (`<quota> <period>` or `max <period>`); undefined when
 * unlimited or unreadable.
 */
export function quotaCpus(cpuMax: string): number | undefined {
  const [quota, period] = cpuMax.trim().split(/\s+/);
  const q = Number(quota);
  const p = Number(period ?? '100000');
  if (quota === 'max' || !(q > 0) || !(p > 0)) return undefined;
  return Math.max(1, Math.ceil(q / p));
}

function readQuota(): number | undefined {
  try {
    return quotaCpus(readFileSync('/sys/fs/cgroup/cpu.max', 'utf8'));
  } catch {
    // cgroup v1 or no cgroup file system
  }
  try {
    const quota = readFileSync('/sys/fs/cgroup/cpu/cpu.cfs_quota_us', 'utf8').trim();
    const period = readFileSync('/sys/fs/cgroup/cpu/cpu.cfs_period_us', 'utf8').trim();
    return quotaCpus(`${quota === '-1' ? 'max' : quota} ${period}`);
  } catch {
    return undefined;
  }
}

/** CPUs this process may use (at least 1). */
export function usableCpus(): number {
  const quota = readQuota();
  const cpus = availableParallelism();
  return Math.max(1, quota === undefined ? cpus : Math.min(cpus, quota));
}

/** The number of serving processes for a TRUSTGATE_WORKERS setting. */
export function workerCount(setting: Config['workers'], cpus: () => number = usableCpus): number {
  return setting === 'auto' ? Math.min(MAX_AUTO_WORKERS, cpus()) : setting;
}
