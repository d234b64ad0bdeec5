/**
 * The decision log line (docs/operations/decision-log.md), built from an allow-list of
 * fields: identifiers, outcome, labels, finding and evidence metadata, and
 * the tool and server names. Never block content, structuredContent,
 * evidence records or policy messages (a message could echo content).
 *
 * Every line is whole and at most LOG_LINE_LIMIT bytes (docs/operations/decision-log.md): a decision whose findings and evidence would not fit is summarized,
 * its first findings and evidence outcomes listed and `findingsOmitted` /
 * `evidenceOmitted` counting the rest (with what the answer itself left
 * out). How lines of several processes stay whole is src/logger.ts's part.
 */
import type { Decision } from './types.js';
import { isRecord, own } from '../json/record.js';

export interface DecisionLogEntry {
  decisionId: string;
  outcome: Decision['outcome'];
  policyRevision: string;
  protocolVersion: string;
  modified: boolean;
  requiresConsent: boolean;
  labels: Decision['labels'];
  findings: Array<{ policy: string; rule: string; mode: string; effect: string; pointer: string; applied: boolean; error: boolean }>;
  evidence: Array<{ pointer: string; type: string | null; status: string }>;
  tool: string | null;
  server: string | null;
  /** Who asked: `principal.id` (never a token); present when authentication identified someone. */
  principal?: string;
  blockCount: number;
  /**
   * How many members the forwarded result withheld beyond whole blocks (the
   * answer's `withheld`, with `withheldOmitted`); present when any were. A
   * count, never the pointers: they hold member names, which the result's
   * sender chose.
   */
  withheldCount?: number;
  /**
   * Strings a `mask` rule changed, counted per kind (docs/behaviour/labels-and-detectors.md);
   * present when any were. Kinds and counts only, never the text or where
   * it was.
   */
  masked?: Record<string, number>;
  durationMs: number;
  /** Findings of the decision not listed here (the line's size bound, or the answer's); absent when none. */
  findingsOmitted?: number;
  /** Evidence outcomes not listed here; absent when none. */
  evidenceOmitted?: number;
  /** The session the result belongs to, when the request named one. */
  session?: string;
}

/**
 * The log line of a pre-call decision (docs/behaviour/sessions.md). The call's
 * arguments may hold the very data the policies protect, so only their
 * names are logged (at most MAX_LOGGED_ARGUMENTS, each cut to 128 characters).
 */
export interface CallLogEntry {
  decisionId: string;
  kind: 'call';
  outcome: Decision['outcome'];
  policyRevision: string;
  requiresConsent: boolean;
  findings: DecisionLogEntry['findings'];
  call: string;
  arguments: string[];
  /** How many argument names were left out past MAX_LOGGED_ARGUMENTS; present when some were. */
  argumentsOmitted?: number;
  tool: string | null;
  server: string | null;
  pin: string;
  digest?: string;
  session?: string;
  /** As DecisionLogEntry.principal. */
  principal?: string;
  durationMs: number;
}

/** A finding as a log line lists it: allow-listed members, and whether its condition errored (never the error text). */
function logFinding(f: Decision['findings'][number]): DecisionLogEntry['findings'][number] {
  return { policy: f.policy, rule: f.rule, mode: f.mode, effect: f.effect, pointer: f.pointer, applied: f.applied, error: f.error !== undefined };
}

/** Most argument names one call log line lists. */
export const MAX_LOGGED_ARGUMENTS = 64;

/** The shape of a pre-call answer the log reads (see CallDecision in core.ts). */
interface CallAnswer {
  decisionId: string;
  outcome: Decision['outcome'];
  policyRevision: string;
  requiresConsent: boolean;
  findings: Decision['findings'];
  tool: { pin: string; digest?: string };
}

export function callLogEntry(
  d: CallAnswer,
  callName: string,
  args: Record<string, unknown>,
  tool: unknown,
  server: unknown,
  session: string | undefined,
  durationMs: number,
): CallLogEntry {
  const names = Object.keys(args);
  const e: CallLogEntry = {
    decisionId: d.decisionId,
    kind: 'call',
    outcome: d.outcome,
    policyRevision: d.policyRevision,
    requiresConsent: d.requiresConsent,
    findings: d.findings.map(logFinding),
    call: callName.slice(0, 128),
    arguments: names.slice(0, MAX_LOGGED_ARGUMENTS).map((n) => n.slice(0, 128)),
    tool: nameOf(tool),
    server: nameOf(server),
    pin: d.tool.pin,
    durationMs: Math.round(durationMs * 1000) / 1000,
  };
  if (names.length > MAX_LOGGED_ARGUMENTS) e.argumentsOmitted = names.length - MAX_LOGGED_ARGUMENTS;
  if (d.tool.digest !== undefined) e.digest = d.tool.digest;
  if (session !== undefined) e.session = session;
  return e;
}

/** The longest decision line, in bytes. */
export const LOG_LINE_LIMIT = 64 * 1024;
/**
 * What the findings and evidence of one line may take, in characters:
 * the other members are bounded (ids, labels, names cut to 128), escapes
 * can at most double a name, and pino's prefix is short.
 */
const LIST_BUDGET = 48 * 1024;

type LogFinding = DecisionLogEntry['findings'][number];
type LogEvidence = DecisionLogEntry['evidence'][number];
const findingChars = (f: LogFinding): number => 90 + f.policy.length + f.rule.length + f.mode.length + f.effect.length + f.pointer.length;
const evidenceChars = (e: LogEvidence): number => 40 + e.pointer.length + (e.type?.length ?? 4) + e.status.length;

/** A name for the log: strings only, bounded, never anything nested. */
function nameOf(v: unknown): string | null {
  if (!isRecord(v)) return null;
  const name = own(v, 'name');
  return typeof name === 'string' ? name.slice(0, 128) : null;
}

export function decisionLogEntry(d: Decision, tool: unknown, server: unknown, durationMs: number): DecisionLogEntry {
  const entry: DecisionLogEntry = {
    decisionId: d.decisionId,
    outcome: d.outcome,
    policyRevision: d.policyRevision,
    protocolVersion: d.protocolVersion,
    modified: d.modified,
    requiresConsent: d.requiresConsent,
    labels: { sensitive: d.labels.sensitive, untrusted: d.labels.untrusted },
    findings: d.findings.map(logFinding),
    evidence: d.evidence.map((e) => ({ pointer: e.pointer, type: e.type === null ? null : e.type.slice(0, 128), status: e.status })),
    tool: nameOf(tool),
    server: nameOf(server),
    blockCount: d.blocks.length + (d.blocksOmitted ?? 0),
    durationMs: Math.round(durationMs * 1000) / 1000,
  };
  // Findings first, then evidence, in order, while they fit.
  let left = LIST_BUDGET;
  let findingsOmitted = d.findingsOmitted ?? 0;
  let evidenceOmitted = d.evidenceOmitted ?? 0;
  const fits = <T>(list: T[], size: (x: T) => number): T[] => {
    for (let i = 0; i < list.length; i++) {
      left -= size(list[i]!);
      if (left < 0) {
        left = 0;
        return list.slice(0, i);
      }
    }
    return list;
  };
  const findings = fits(entry.findings, findingChars);
  findingsOmitted += entry.findings.length - findings.length;
  entry.findings = findings;
  const evidence = fits(entry.evidence, evidenceChars);
  evidenceOmitted += entry.evidence.length - evidence.length;
  entry.evidence = evidence;
  const withheld = d.withheld.length + (d.withheldOmitted ?? 0);
  if (withheld > 0) entry.withheldCount = withheld;
  if (d.masked.length > 0) {
    // Kinds come from the detectors' closed list, never from the request.
    const counts: Record<string, number> = {};
    for (const m of d.masked) counts[m.kind] = (counts[m.kind] ?? 0) + 1;
    entry.masked = counts;
  }
  if (findingsOmitted > 0) entry.findingsOmitted = findingsOmitted;
  if (evidenceOmitted > 0) entry.evidenceOmitted = evidenceOmitted;
  return entry;
}
