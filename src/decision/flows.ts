/**
 * The core's side of the flows (docs/behaviour/flows.md): the values a
 * request adds to its session, digested under the store's key, and what a
 * call's arguments carry of them. The store holds digests only; the key is
 * read from it once (TRUSTGATE_FLOW_KEY, or the store's own).
 */
import { argumentValues, callFlows, type CallFlows, type SeenValues } from '../flows/flows.js';
import { flowDigest, type FlowWrite } from '../flows/origin.js';
import type { FlowStore } from '../session/flows.js';

export interface SessionFlows {
  /** Records what a request showed the session; resolves whether the session's values overflowed. */
  record(id: string, seen: SeenValues | undefined, source: string): Promise<boolean>;
  /** What a call's arguments carry of its session, and whether the session's values can tell (false past its bound). */
  carried(id: string, args: Record<string, unknown>): Promise<{ flows: CallFlows; overflow: boolean }>;
  /** Whether the session's values overflowed (or the store lost them). */
  overflowed(id: string): Promise<boolean>;
  /** Forget the session's values (the host ended it). */
  forget(id: string): Promise<void>;
}

export function sessionFlows(store: FlowStore, maxValues: number): SessionFlows {
  let keyPromise: Promise<Uint8Array> | undefined;
  // The key once read: later requests digest their values without waiting a turn of the event loop for it.
  let known: Uint8Array | undefined;
  const key = (): Promise<Uint8Array> =>
    (keyPromise ??= store.key().then(
      (k) => (known = k),
      (err: unknown) => {
        keyPromise = undefined;
        throw err;
      },
    ));
  return {
    async record(id, seen, source) {
      const k = known ?? (await key());
      const writes: FlowWrite[] = [];
      if (seen !== undefined) for (const [value, bits] of seen.values) writes.push({ digest: flowDigest(k, value), bits, source });
      return (await store.record(id, writes, seen?.dropped ?? 0)).overflow;
    },
    async carried(id, args) {
      const { values, dropped } = argumentValues(args, maxValues);
      const k = known ?? (await key());
      const digests = values.map((v) => flowDigest(k, v.value));
      const read = await store.read(id, digests);
      return { flows: callFlows(values, digests, read.entries), overflow: read.overflow || dropped > 0 };
    },
    async overflowed(id) {
      return (await store.read(id, [])).overflow;
    },
    forget: (id) => store.forget(id),
  };
}
