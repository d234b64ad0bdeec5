/**
 * A worker process of TRUSTGATE_WORKERS > 1: serves HTTP with the policy
 * set its primary sends (the bytes the primary read, compiled here), and
 * asks the primary for what concerns the whole service: reloads. Its
 * metrics go to the primary every METRICS_MS, and GET /metrics answers
 * the summed text the primary sends back as often, with no round trip per
 * scrape. Its session store it opens itself (src/main/stores.ts: the
 * database the primary made, or Redis). See primary.ts.
 */
import type { Config } from '../../config.js';
import { createMetrics, METRICS_MS, type Metrics } from '../../metrics.js';
import { compilePolicyFiles, PolicyLoadError } from '../../policy/load.js';
import { PolicyStore, type ReloadResult } from '../../policy/reload.js';
import { HEARTBEAT_MS, isMessage, type ToPrimary, type ToWorker } from './protocol.js';

type Answer = Extract<ToWorker, { kind: 'reloaded' }>;

/** How long a scrape waits for the first text from the primary (a worker just started). */
const FIRST_METRICS_MS = 5_000;

export interface WorkerParts {
  store: PolicyStore;
  metrics: Metrics;
  reloadPolicies: (source: string) => Promise<ReloadResult>;
  metricsText: () => Promise<string>;
  /** Resolves once the first policy set from the primary is in force. */
  ready: Promise<void>;
}

/** Wire this process to its primary. `fail` is called when the first policy set cannot be served. */
export function connectWorker(config: Config, log: { error(obj: object, msg: string): void; info(obj: object, msg: string): void }, fail: () => void): WorkerParts {
  const store = new PolicyStore(config.policyDir, undefined, config.serversFile);
  const metrics = createMetrics();
  const waiting = new Map<number, { resolve: (m: Answer) => void; reject: (err: Error) => void }>();
  let nextId = 1;
  let started: () => void = () => {};
  let metricsText: string | undefined;
  let metricsWaiters: Array<(text: string) => void> = [];
  const ready = new Promise<void>((resolve) => (started = resolve));

  const send = (m: ToPrimary): void => {
    if (!process.send) throw new Error('no IPC channel to the primary process');
    process.send(m);
  };
  const request = (make: (id: number) => ToPrimary): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      try {
        send(make(id));
      } catch (err) {
        waiting.delete(id);
        reject(err as Error);
      }
    });

  process.on('message', (m: unknown) => {
    if (!isMessage<ToWorker>(m)) return;
    switch (m.kind) {
      case 'policies': {
        let revision: string | undefined;
        try {
          const set = compilePolicyFiles(m.files, config.policyDir);
          store.install(set);
          revision = set.revision;
        } catch (err) {
          log.error({ errName: (err as Error)?.name }, `could not compile the policy set sent by the primary: ${(err as Error)?.message}`);
        }
        try {
          send({ kind: 'installed', id: m.id, ok: revision !== undefined, ...(revision !== undefined ? { revision } : {}) });
        } catch {
          // the primary is gone; 'disconnect' stops this process
        }
        if (revision !== undefined) started();
        else if (store.current === undefined) fail();
        return;
      }
      case 'metricsText': {
        metricsText = m.text;
        const waiters = metricsWaiters;
        metricsWaiters = [];
        for (const resolve of waiters) resolve(m.text);
        return;
      }
      case 'reloaded': {
        const w = waiting.get(m.id);
        waiting.delete(m.id);
        w?.resolve(m);
        return;
      }
    }
  });
  send({ kind: 'hello' });
  // Sent from this event loop, so a loop that stops turning stops the beats (unref: it keeps nothing alive).
  const beat = setInterval(() => {
    try {
      send({ kind: 'beat' });
    } catch {
      // the primary is gone
    }
  }, HEARTBEAT_MS);
  beat.unref();
  let pushing = false;
  const push = setInterval(() => {
    if (pushing) return;
    pushing = true;
    metrics.registry.getMetricsAsJSON().then(
      (data) => {
        pushing = false;
        try {
          send({ kind: 'metricsData', data });
        } catch {
          // the primary is gone
        }
      },
      () => (pushing = false),
    );
  }, METRICS_MS);
  push.unref();
  process.on('disconnect', () => {
    clearInterval(beat);
    clearInterval(push);
    for (const w of waiting.values()) w.reject(new Error('the primary process is gone'));
    waiting.clear();
  });

  return {
    store,
    metrics,
    ready,
    async reloadPolicies(source) {
      const m = await request((id) => ({ kind: 'reload', id, source }));
      if (m.kind !== 'reloaded') throw new Error('unexpected answer from the primary process');
      if (m.ok) return { ok: true, set: store.current!, changed: m.changed };
      const error = new PolicyLoadError(m.detail, {
        ...(m.file !== undefined ? { file: m.file } : {}),
        ...(m.rule !== undefined ? { rule: m.rule } : {}),
      });
      error.message = m.message;
      return { ok: false, error };
    },
    metricsText() {
      if (metricsText !== undefined) return Promise.resolve(metricsText);
      // Just started: the primary's first text is at most a period or two away. A scrape that
      // gets none says so (a 500) rather than answering an empty page.
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('metrics could not be gathered: no figures from the primary process yet')), FIRST_METRICS_MS);
        metricsWaiters.push((text) => {
          clearTimeout(timer);
          resolve(text);
        });
      });
    },
  };
}
