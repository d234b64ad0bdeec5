/** The part of autocannon 9's programmatic API the benches use (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Histogram {
    min: number;
    max: number;
    average: number;
    mean: number;
    stddev: number;
    total: number;
    p2_5: number;
    p50: number;
    p75: number;
    p90: number;
    p97_5: number;
    p99: number;
    p99_9: number;
    p99_99: number;
    p99_999: number;
  }

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    connections?: number;
    pipelining?: number;
    duration?: number;
    amount?: number;
    timeout?: number;
    overallRate?: number;
    connectionRate?: number;
    ignoreCoordinatedOmission?: boolean;
    excludeErrorStats?: boolean;
    expectBody?: string;
    bailout?: number;
    workers?: number;
    /** Requests sent in turn; `setupRequest` may rewrite each one before it is sent (bench/session.ts varies the body). */
    requests?: Array<{
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }) => {
        method?: string;
        path?: string;
        headers?: Record<string, string>;
        body?: string | Buffer;
      };
    }>;
  }

  interface Result {
    url: string;
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    duration: number;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    resets: number;
    '1xx': number;
    '2xx': number;
    '3xx': number;
    '4xx': number;
    '5xx': number;
    statusCodeStats: Record<string, { count: number }>;
    start: Date;
    finish: Date;
  }

  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }

  interface Autocannon {
    (opts: Options): Instance;
    (opts: Options, cb: (err: Error | null, result: Result) => void): Instance;
  }

  const autocannon: Autocannon;
  export default autocannon;
  export type { Histogram, Instance, Options, Result };
}
