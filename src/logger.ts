/**
 * pino options shared by the server and the tests, and the decision line
 * writer (decisionLines). The destinations a process writes its lines to are process code:
 * src/main/log-destinations.ts. Request logs carry the
 * method, the path without its query (a gateway may send the token there)
 * and the status; never headers or bodies.
 */
import pino, { type DestinationStream, type LoggerOptions } from 'pino';

/** The levels LOG_LEVEL takes (pino's). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

interface ReqLike {
  method?: string;
  url?: string;
  id?: string;
}

/**
 * `pid`: the process id every line names (the process passes its own;
 * without it lines name none).
 */
export function loggerOptions(level: LogLevel, pid?: number): LoggerOptions {
  return {
    level,
    base: pid === undefined ? { service: 'trustgate' } : { service: 'trustgate', pid },
    serializers: {
      req: (req: ReqLike) => ({ id: req.id, method: req.method, path: (req.url ?? '').split('?')[0] }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  };
}

/** A decision log line writer (see decisionLineWriter). */
export type LineWriter = (entry: object) => void;

const writers = new WeakMap<object, LineWriter>();

/** A decision log entry with the characters JSON escapes: the check line of decisionLineWriter. */
const PROBE = {
  decisionId: 'probe "\\\n\u0001',
  outcome: 'allow',
  policyRevision: 'sha256:0',
  protocolVersion: '2025-06-18',
  modified: false,
  requiresConsent: true,
  labels: { sensitive: null, untrusted: true },
  findings: [{ policy: 'p', rule: 'r', mode: 'enforce', effect: 'flag', pointer: '/content/0', applied: true, error: false }],
  evidence: [{ pointer: '', type: null, status: 'verified' }],
  tool: 'naïve 🙂',
  server: null,
  blockCount: 3,
  durationMs: 0.125,
};

/**
 * Writes `logger.info(entry, 'decision')` lines — the decision log's one
 * line per decision — with a single JSON.stringify of the entry instead of
 * pino's member-by-member serialization, at less than half its cost
 * (docs/performance.md#log-lines). The line is pino's own, byte for byte: the
 * level, time and bindings prefix and the ending come from the logger, and
 * before the writer is used, it renders a probe entry and compares it with
 * what pino itself renders for the same entry and time. When the logger does
 * anything this shortcut would skip (serializers, redaction or formatters for
 * these members, mixins, hooks, a multistream), or pino's internals are not
 * what this expects, lines go through `logger.info` as usual.
 */
export function decisionLineWriter(logger: pino.Logger): LineWriter {
  let w = writers.get(logger);
  if (w === undefined) {
    w = fastWriter(logger) ?? ((entry) => logger.info(entry, 'decision'));
    writers.set(logger, w);
  }
  return w;
}

function fastWriter(logger: pino.Logger): LineWriter | undefined {
  const s = pino.symbols;
  const l = logger as unknown as Record<symbol, unknown>;
  const stream = l[s.streamSym] as (DestinationStream & Record<symbol, unknown>) | undefined;
  const lsCache = l[s.lsCacheSym] as Record<number, string> | undefined;
  const time = l[s.timeSym];
  const chindings = l[s.chindingsSym];
  const end = l[s.endSym];
  const asJson = l[s.asJsonSym];
  const hooks = l[s.hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  const formatters = l[s.formattersSym] as { log?: unknown } | undefined;
  const level = pino.levels.values.info!;
  if (
    stream === undefined ||
    typeof stream.write !== 'function' ||
    stream[s.needsMetadataGsym] === true ||
    typeof lsCache?.[level] !== 'string' ||
    typeof time !== 'function' ||
    typeof chindings !== 'string' ||
    typeof end !== 'string' ||
    typeof asJson !== 'function' ||
    l[s.mixinSym] ||
    l[s.nestedKeySym] ||
    l[(s as unknown as Record<string, symbol>).msgPrefixSym!] ||
    hooks?.logMethod ||
    hooks?.streamWrite ||
    formatters?.log ||
    l[s.messageKeySym] !== 'msg'
  ) {
    return undefined;
  }
  const prefix = lsCache[level]!;
  const now = time as () => string;
  const render = (entry: object, t: string): string =>
    prefix + t + chindings + ',' + JSON.stringify(entry).slice(1, -1) + ',"msg":"decision"' + end;
  const t = now();
  if (render(PROBE, t) !== (asJson as (o: object, m: string, n: number, t: string) => string).call(logger, PROBE, 'decision', level, t)) {
    return undefined;
  }
  return (entry) => {
    stream.write(render(entry, now()));
  };
}

/** The decision line writer of a logger, or undefined when its level drops decision lines (the core then builds none). */
export function decisionLines(log: pino.Logger): ((entry: object) => void) | undefined {
  if ((pino.levels.values[log.level] ?? Infinity) > pino.levels.values.info!) return undefined;
  const write = decisionLineWriter(log);
  return write;
}
