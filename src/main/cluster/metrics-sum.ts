/**
 * The primary's metrics duty (primary.ts): GET /metrics sees the whole
 * service whichever worker a scrape reaches. Workers send their metrics
 * every METRICS_MS; the primary sums them with its own (prom-client's
 * aggregation) and sends every worker the summed text, which a scrape
 * answers as is, so a flood of scrapes makes no work here or on the other
 * workers. Counters of workers that exited are kept as last collected, so
 * the sums never go down (which Prometheus would read as a reset).
 */
import type { Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { METRICS_MS, type Metrics } from '../../metrics.js';
import { sendTo } from './broadcast.js';

export class MetricsSum {
  /** Counters and histograms of workers that have exited, as last collected (what a worker counted after its last collection is lost with it). */
  #retired: object[] = [];
  readonly #lastCollected = new Map<Worker, object[]>();
  /** Whether a worker sent metrics since the text was last made. */
  #fresh = false;
  #summing = false;
  readonly #publish: NodeJS.Timeout;

  constructor(
    private readonly live: ReadonlySet<Worker>,
    private readonly metrics: Metrics,
    log: Logger,
    closing: () => boolean,
  ) {
    // Every METRICS_MS: the summed text to every worker, when some worker sent new figures.
    this.#publish = setInterval(() => {
      if (!this.#fresh || this.#summing || closing()) return;
      this.#fresh = false;
      this.#summing = true;
      this.#text().then(
        (text) => {
          this.#summing = false;
          for (const w of this.live) sendTo(w, { kind: 'metricsText', text });
        },
        (err: unknown) => {
          this.#summing = false;
          log.error({ errName: (err as Error)?.name }, 'could not gather metrics');
        },
      );
    }, METRICS_MS);
    this.#publish.unref();
  }

  /** A live worker's metrics (`registry.getMetricsAsJSON()`). */
  collected(w: Worker, data: object[]): void {
    if (!this.live.has(w)) return;
    this.#lastCollected.set(w, data);
    this.#fresh = true;
  }

  /** A worker exited: its counters and histograms stay in the sums, as last collected. */
  retire(w: Worker): void {
    const last = this.#lastCollected.get(w);
    this.#lastCollected.delete(w);
    if (!last) return;
    // Metrics of one name are summed wherever they stand in the lists aggregated, so appending is enough.
    this.#retired = [...this.#retired, ...last.filter((m) => ['counter', 'histogram'].includes(String((m as { type?: unknown }).type)))];
  }

  async #text(): Promise<string> {
    // Keep the retired list to one entry a metric however many workers have exited.
    if (this.#retired.length > 64) this.#retired = await AggregatorRegistry.aggregate([this.#retired]).getMetricsAsJSON();
    const all = [await this.metrics.registry.getMetricsAsJSON(), this.#retired, ...this.#lastCollected.values()];
    const text = await AggregatorRegistry.aggregate(all).metrics();
    // Summing start times means nothing, so prom-client leaves them out; the service started when this process did.
    return text + (await this.metrics.registry.getSingleMetricAsString('trustgate_process_start_time_seconds')) + '\n';
  }
}
