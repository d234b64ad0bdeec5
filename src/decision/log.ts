/**
 * The decision log line (contract section 9), built from an allow-list of
 * fields: identifiers, outcome, labels, finding and evidence metadata, and
 * the tool and server names. Never block content, structuredContent,
 * evidence records or policy messages (a message could echo content).
 */
import { isObject, own } from '../model.js';
import type { Decision } from './pipeline.js';

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
  blockCount: number;
  durationMs: number;
}

/** A name for the log: strings only, bounded, never anything nested. */
function nameOf(v: unknown): string | null {
  if (!isObject(v)) return null;
  const name = own(v, 'name');
  return typeof name === 'string' ? name.slice(0, 128) : null;
}

export function decisionLogEntry(d: Decision, tool: unknown, server: unknown, durationMs: number): DecisionLogEntry {
  return {
    decisionId: d.decisionId,
    outcome: d.outcome,
    policyRevision: d.policyRevision,
    protocolVersion: d.protocolVersion,
    modified: d.modified,
    requiresConsent: d.requiresConsent,
    labels: { sensitive: d.labels.sensitive, untrusted: d.labels.untrusted },
    findings: d.findings.map((f) => ({
      policy: f.policy,
      rule: f.rule,
      mode: f.mode,
      effect: f.effect,
      pointer: f.pointer,
      applied: f.applied,
      error: f.error !== undefined,
    })),
    evidence: d.evidence.map((e) => ({ pointer: e.pointer, type: e.type === null ? null : e.type.slice(0, 128), status: e.status })),
    tool: nameOf(tool),
    server: nameOf(server),
    blockCount: d.blocks.length,
    durationMs: Math.round(durationMs * 1000) / 1000,
  };
}
