/**
 * V8's heap limit in the default start (docs/operations/admission.md#sizing):
 * derived from the budget of bytes in flight, as the Kubernetes example
 * sets it, so that V8 collects before a burst of large requests (or
 * clients that never read) grows a process far past the documented sizing.
 * Without a limit V8 sizes its heap from the machine's memory (4 GiB here),
 * and collects late. An operator's own `--max-old-space-size` (on the
 * command line or in NODE_OPTIONS) is kept.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/** Set in the environment of a process started with the derived limit, so that it is not started again. */
export const HEAP_DERIVED_ENV = 'TRUSTGATE_HEAP_DERIVED';

/**
 * The heap limit, MiB, for a budget of bytes in flight: twelve times it,
 * at least 256 (384 for the default 32 MiB: the decision holds a few times
 * its request, and V8 needs room above the live set to collect without
 * stalling).
 */
export function heapMbFor(maxInflightBytes: number): number {
  return Math.max(256, Math.ceil((12 * maxInflightBytes) / 1_048_576));
}

/** Whether the operator set a heap limit of their own. */
export function heapLimitGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((a) => /^--max[-_]old[-_]space[-_]size(=|$)/.test(a));
}

/** The argument that sets it. */
export function heapFlag(maxInflightBytes: number): string {
  return `--max-old-space-size=${heapMbFor(maxInflightBytes)}`;
}

/**
 * Run this script again under the derived limit, as a child that inherits
 * standard input and output, passing on the signals that stop or reload it,
 * and end with its status. Resolves never (the process ends with the child).
 */
export function restartWithHeap(maxInflightBytes: number): Promise<never> {
  const child = spawn(process.execPath, [heapFlag(maxInflightBytes), ...process.execArgv, ...process.argv.slice(1)], {
    // The channel closes when this process ends in any way, SIGKILL included: the child then stops (endWithParent).
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [HEAP_DERIVED_ENV]: '1' },
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  return new Promise<never>(() => {
    child.once('exit', (code, signal) => process.exit(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0)));
  });
}

/**
 * In the process restartWithHeap started: stop as on SIGTERM (finishing
 * what it accepted) when the process that started it is gone, however it
 * ended, rather than serve on as an orphan nobody can stop by the pid they
 * know. The channel does not keep the process alive.
 */
export function endWithParent(): void {
  if (process.env[HEAP_DERIVED_ENV] !== '1' || process.channel === undefined) return;
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
