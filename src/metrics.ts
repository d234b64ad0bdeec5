/**
 * Prometheus metrics (docs/bindings/http.md), on a registry of the app's own so
 * that several apps in one process (tests) never share counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * How old GET /metrics figures may be: an app answers from a copy it makes at
 * most this often, and with worker processes the workers send their metrics
 * to the primary, and the primary every worker the summed text, this often
 * (src/main/cluster/). A scrape then costs no more than a health check,
 * whatever the scrape rate, and its figures are at most about two periods old.
 */
export const METRICS_MS = 1_000;

export interface Metrics {
  registry: Registry;
  decisions: Counter<'outcome'>;
  evaluationSeconds: Histogram;
  evidence: Counter<'status'>;
  reloads: Counter<'result'>;
  /** Sessions held by the memory store; reported by the process that holds it (the primary with worker processes), 0 elsewhere. */
  sessionsLive: Gauge;
  sessionEvictions: Counter<'reason'>;
  sessionStoreErrors: Counter<'backend' | 'operation'>;
  /** What the sessions-live gauge reads when scraped; set by the process that holds the memory store. */
  sessionCount?: () => number;
  /** Sessions whose values overflowed TRUSTGATE_MAX_FLOW_VALUES (each counted once; docs/behaviour/flows.md). */
  flowOverflows: Counter;
  /** Pre-call decisions (/v1/evaluate-call and the bindings over it), by outcome. */
  callDecisions: Counter<'outcome'>;
  /** Tool pin checks, by status (first-seen, match, changed, unavailable). */
  toolPins: Counter<'status'>;
  /** Requests refused with 503 TG_ERR_OVERLOADED: the bytes in flight were at TRUSTGATE_MAX_INFLIGHT_BYTES. */
  admissionsRefused: Counter;
  /** Bytes of requests being decided and answers not yet sent, as {@link Metrics.inflight} reads them when scraped. */
  inflightBytes: Gauge;
  /** What the inflight-bytes gauge reads when scraped; set by the admission hooks (src/http/admission.ts). */
  inflight?: () => number;
  /** New sessions refused because the store held TRUSTGATE_MAX_SESSIONS (503 TG_ERR_SESSION_STORE_FULL). */
  sessionsRefused: Counter;
  /** New pins refused because the store held TRUSTGATE_MAX_PINS (the call was `pin: "unavailable"`). */
  pinsRefused: Counter;
  /** Messages the MCP proxy did not pass on (an answer nobody waits for, a method it does not pass, withheld), by reason. */
  proxyDropped: Counter<'reason'>;
  /** Requests refused 401, by reason (missing, unknown, malformed, expired, invalid); never a token. */
  authRefused: Counter<'reason'>;
  /** Requests refused 429 because their principal was past a quota, by reason (rate, bytes, connections). */
  quotaRefused: Counter<'reason'>;
}

export function createMetrics(defaultMetrics = true): Metrics {
  const registry = new Registry();
  if (defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'trustgate_' });
  const m: Metrics = {
    registry,
    decisions: new Counter({
      name: 'trustgate_decisions_total',
      help: 'Decisions made, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    evaluationSeconds: new Histogram({
      name: 'trustgate_evaluation_duration_seconds',
      help: 'Time to decide one request, from parsed body to answer',
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers: [registry],
    }),
    evidence: new Counter({
      name: 'trustgate_evidence_total',
      help: 'evidenceRefs checked, by status',
      labelNames: ['status'],
      registers: [registry],
    }),
    reloads: new Counter({
      name: 'trustgate_policy_reloads_total',
      help: 'Policy reloads, by result (success or failure)',
      labelNames: ['result'],
      registers: [registry],
    }),
    sessionsLive: new Gauge({
      name: 'trustgate_sessions_live',
      help: 'Sessions held by the memory session store (0 with Redis, where Redis holds them)',
      registers: [registry],
      collect() {
        this.set(m.sessionCount?.() ?? 0);
      },
    }),
    sessionEvictions: new Counter({
      name: 'trustgate_session_evictions_total',
      help: 'Sessions whose labels the memory session store dropped, by reason (ttl: unused for TRUSTGATE_SESSION_TTL; a later use reads them as forgotten)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    sessionStoreErrors: new Counter({
      name: 'trustgate_session_store_errors_total',
      help: 'Session store operations that failed (the request got 503), by backend and operation',
      labelNames: ['backend', 'operation'],
      registers: [registry],
    }),
    flowOverflows: new Counter({
      name: 'trustgate_flow_overflow_total',
      help: 'Sessions whose values passed TRUSTGATE_MAX_FLOW_VALUES (each counted once): they read flowsOverflow, and every argument counts as untrusted',
      registers: [registry],
    }),
    callDecisions: new Counter({
      name: 'trustgate_call_decisions_total',
      help: 'Pre-call decisions made, by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    toolPins: new Counter({
      name: 'trustgate_tool_pins_total',
      help: 'Tool definitions checked against their pin, by status (first-seen, match, changed, unavailable)',
      labelNames: ['status'],
      registers: [registry],
    }),
    admissionsRefused: new Counter({
      name: 'trustgate_admissions_refused_total',
      help: 'Requests refused with 503 TG_ERR_OVERLOADED because the bytes in flight were at TRUSTGATE_MAX_INFLIGHT_BYTES',
      registers: [registry],
    }),
    inflightBytes: new Gauge({
      name: 'trustgate_inflight_bytes',
      help: 'Bytes of requests being decided and of answers not yet sent (summed over worker processes)',
      registers: [registry],
      collect() {
        this.set(m.inflight?.() ?? 0);
      },
    }),
    authRefused: new Counter({
      name: 'trustgate_auth_refused_total',
      help: 'Requests refused with 401, by reason (missing, unknown, malformed, expired, invalid); the token is never recorded',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    quotaRefused: new Counter({
      name: 'trustgate_quota_refused_total',
      help: 'Requests refused with 429 because their principal was past a quota, by reason (rate, bytes, connections, sessions)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    sessionsRefused: new Counter({
      name: 'trustgate_sessions_refused_total',
      help: 'New sessions refused because the store held TRUSTGATE_MAX_SESSIONS (503 TG_ERR_SESSION_STORE_FULL); no live session is ever evicted',
      registers: [registry],
    }),
    pinsRefused: new Counter({
      name: 'trustgate_pins_refused_total',
      help: 'New tool pins refused because the store held TRUSTGATE_MAX_PINS (pin "unavailable", the call denied); no pin is ever evicted',
      registers: [registry],
    }),
    proxyDropped: new Counter({
      name: 'trustgate_proxy_dropped_total',
      help: 'Messages the MCP proxy did not pass on, by reason (unknown-id, repeated, method, withheld, malformed, host-unknown-id, too-many, too-deep)',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
  return m;
}

const children = new WeakMap<Metrics, { outcome: Map<string, { inc(): void }>; status: Map<string, { inc(): void }> }>();

/**
 * Count one decision. Labelled children are looked up once per label value
 * and kept, instead of hashing the labels on every request.
 */
export function recordDecision(m: Metrics, outcome: string, evidence: ReadonlyArray<{ status: string }>, seconds: number): void {
  let c = children.get(m);
  if (c === undefined) {
    c = { outcome: new Map(), status: new Map() };
    children.set(m, c);
  }
  let o = c.outcome.get(outcome);
  if (o === undefined) c.outcome.set(outcome, (o = m.decisions.labels({ outcome })));
  o.inc();
  m.evaluationSeconds.observe(seconds);
  for (const e of evidence) {
    let st = c.status.get(e.status);
    if (st === undefined) c.status.set(e.status, (st = m.evidence.labels({ status: e.status })));
    st.inc();
  }
}
