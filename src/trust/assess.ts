/**
 * The trust view of one result: claims read with union semantics, evidence
 * verified, and verified `data-class.v1` records applied. Everything a
 * policy evaluator binds (`result`, `block`, `evidence`, `dataClass`) and
 * everything a response carries (`labels`, `blocks[]`, `evidence[]`) is
 * read straight off the TrustAssessment without walking the result again.
 */
import { readTrust, type FlagSources, type PartialFlags, type TrustFlags } from '../annotations/claims.js';
import type { Dialect } from '../annotations/dialects.js';
import type { Tri } from '../annotations/tri.js';
import type { EvidenceStatus } from '../evidence/status.js';
import type { ValidationFinding } from '../mcp/findings.js';
import { DATA_CLASS_TYPE, INTERNAL_CLASS, mergeDataClasses, readDataClass, unreadableDataClass, type DataClassRecord, type ScopeDataClass } from '../evidence/dataclass.js';
import { verifyEvidence, type EvidenceEntry, type EvidenceOutcome } from '../evidence/verify.js';

/** One evidenceRef as policies see it (the `evidence` variable's items). */
export interface EvidenceSummary {
  type: string | null;
  status: EvidenceStatus;
  canonicalization: string | null;
  pointer: string;
}

/** The trust state of one scope (the result, or one block). */
export interface ScopeTrust {
  /** Effective flags after union and data-class escalation; `null` when nothing claims the flag. */
  sensitive: Tri;
  untrusted: Tri;
  /** Exactly the flags whose effective value is not `null` (the policies' `asserted` map). */
  asserted: PartialFlags;
  /** Pointers of the claims (flags or evidenceRefs) that produced each effective value. */
  sources: FlagSources;
  /**
   * evidenceRefs governing the scope, in document order: for a block, the
   * result-level ones then its own; for the result, every one in the result.
   * Items are shared between scopes; treat them as read-only.
   */
  evidence: EvidenceSummary[];
  /** From verified `data-class.v1` evidence governing the scope; `{}` when none. */
  dataClass: ScopeDataClass;
}

/** The trust state of one content block. */
export interface BlockTrust extends ScopeTrust {
  /** Index in the input's `content`. */
  index: number;
  /** The block's `type`, `''` when it is not a string. */
  type: string;
  /** Union of the block's own claims only, for a redacted placeholder's `_meta`. */
  ownUnion: PartialFlags;
}

/** Everything Trustgate knows about the trust of one result. */
export interface TrustAssessment {
  /** The result's labels (same values as `result.sensitive`/`result.untrusted`), ready for the response. */
  labels: TrustFlags;
  /**
   * Sensitive by what the result says of itself, not by what a rule found:
   * a trust claim anywhere in it, or verified (or unreadable) data-class
   * evidence of a class above `internal` (policies' `result.claimed.sensitive`).
   */
  claimedSensitive: boolean;
  /** The result scope: labels, their sources, all evidence, the result-wide data class. */
  result: ScopeTrust;
  /**
   * What governs `structuredContent`: the result-level claims (and fides
   * labels on `$['structuredContent']`), made sensitive by result-level
   * non-public data-class evidence.
   */
  structured: TrustFlags;
  /** One entry per input block, in input order. */
  blocks: BlockTrust[];
  /** Every evidenceRef's outcome, in document order (result-level first, then blocks in order). */
  evidence: EvidenceOutcome[];
  /**
   * `trust.annotation.type`, `trust.evidenceRef.shape`, `trust.dialect.shape`,
   * `trust.no-weakening` in reading order, then `trust.sensitive.missing` in evidence order.
   */
  findings: ValidationFinding[];
}

/**
 * Read, verify and apply the trust annotations of a `CallToolResult`.
 * Never throws for any JSON input.
 *
 * A `data-class.v1` evidenceRef whose status is `unsupported` or
 * `malformed` cannot say what class the data has: it counts as a record of
 * class `unknown` (docs/behaviour/forwarding.md), without a finding of its own (the
 * decision's `evidence` carries its status; the shipped evidence policy
 * flags it).
 *
 * A verified `data-class.v1` record whose class is not `public` asserts
 * `sensitive: true` on every scope it governs (result-level evidence: the
 * result and every block; block-level evidence: that block and hence the
 * result's labels). Each such evidenceRef governing a scope whose claims
 * did not already make it sensitive is reported once, as
 * `trust.sensitive.missing` at the evidenceRef's pointer.
 */
export function assessTrust(result: unknown, entries: readonly EvidenceEntry[], dialects?: readonly Dialect[]): TrustAssessment {
  const reading = readTrust(result, dialects);
  const outcomes = verifyEvidence(reading.evidence, entries);
  const findings = reading.findings.slice();

  const summaries: EvidenceSummary[] = [];
  const resultSummaries: EvidenceSummary[] = [];
  const blockSummaries = new Map<number, EvidenceSummary[]>();
  const allClasses: DataClassRecord[] = [];
  const resultClasses: DataClassRecord[] = [];
  const blockClasses = new Map<number, DataClassRecord[]>();
  // Non-public verified evidenceRefs: their pointers escalate `sensitive`.
  const resultEscalators: EvidenceOutcome[] = [];
  const blockEscalators = new Map<number, EvidenceOutcome[]>();
  const allEscalators: string[] = [];
  // data-class.v1 evidenceRefs that could not be checked: they escalate, but
  // trust.sensitive.missing speaks of verified records only.
  const unchecked = new Set<string>();

  for (const o of outcomes) {
    const s: EvidenceSummary = { type: o.type, status: o.status, canonicalization: o.canonicalization, pointer: o.pointer };
    summaries.push(s);
    if (o.scope === 'result') resultSummaries.push(s);
    else push(blockSummaries, o.scope, s);
    if (o.type !== DATA_CLASS_TYPE) continue;
    let dc: DataClassRecord;
    if (o.status === 'verified') dc = readDataClass(o.record);
    else if (o.status === 'unsupported' || o.status === 'malformed') {
      // It cannot say what class the data has: class unknown, sensitive (docs/behaviour/forwarding.md).
      dc = unreadableDataClass();
      unchecked.add(o.pointer);
    } else continue;
    allClasses.push(dc);
    if (o.scope === 'result') resultClasses.push(dc);
    else push(blockClasses, o.scope, dc);
    if (!dc.nonPublic) continue;
    allEscalators.push(o.pointer);
    if (o.scope === 'result') resultEscalators.push(o);
    else push(blockEscalators, o.scope, o);
  }
  const resultEscalatorPointers = resultEscalators.map((o) => o.pointer);

  // Result-level non-public evidence is reported when any scope it governs
  // was not already sensitive by its claims; settled during the block pass.
  let resultEvidenceUncovered = reading.labels.sensitive !== true;
  // Escalating evidenceRefs to report, by pointer (unique per evidenceRef).
  const uncovered = new Set<string>();
  const blocks: BlockTrust[] = [];
  for (const b of reading.blocks) {
    if (b.sensitive !== true) resultEvidenceUncovered = true;
    const own = blockEscalators.get(b.index);
    if (own !== undefined && b.sensitive !== true) {
      for (const o of own) uncovered.add(o.pointer);
    }
    const escalators = own === undefined ? resultEscalatorPointers : resultEscalatorPointers.concat(own.map((o) => o.pointer));
    const sources: FlagSources = { sensitive: b.sources.sensitive, untrusted: b.sources.untrusted };
    const sensitive = escalate(b.sensitive, sources, escalators);
    const mine = blockSummaries.get(b.index);
    const classes = blockClasses.get(b.index);
    blocks.push({
      index: b.index,
      type: b.type,
      sensitive,
      untrusted: b.untrusted,
      asserted: asserted(sensitive, b.untrusted),
      sources,
      evidence: mine === undefined ? resultSummaries.slice() : resultSummaries.concat(mine),
      dataClass: mergeDataClasses(classes === undefined ? resultClasses : resultClasses.concat(classes)),
      ownUnion: b.ownUnion,
    });
  }
  if (resultEvidenceUncovered) {
    for (const o of resultEscalators) uncovered.add(o.pointer);
  }
  if (uncovered.size > 0) {
    for (const o of outcomes) if (uncovered.has(o.pointer) && !unchecked.has(o.pointer)) findings.push(missingFinding(o.pointer, o.scope === 'result'));
  }

  const labelSources: FlagSources = { sensitive: reading.labelSources.sensitive, untrusted: reading.labelSources.untrusted };
  const labelSensitive = escalate(reading.labels.sensitive, labelSources, allEscalators);
  const labels: TrustFlags = { sensitive: labelSensitive, untrusted: reading.labels.untrusted };

  const structured: TrustFlags = {
    sensitive: resultEscalators.length > 0 ? true : reading.structuredClaim.sensitive,
    untrusted: reading.structuredClaim.untrusted,
  };

  return {
    labels,
    claimedSensitive: reading.labels.sensitive === true || allClasses.some((c) => c.nonPublic && c.class !== INTERNAL_CLASS),
    result: {
      sensitive: labels.sensitive,
      untrusted: labels.untrusted,
      asserted: asserted(labels.sensitive, labels.untrusted),
      sources: labelSources,
      evidence: summaries,
      dataClass: mergeDataClasses(allClasses),
    },
    structured,
    blocks,
    evidence: outcomes,
    findings,
  };
}

/** Make `sensitive` true when non-public evidence governs; its pointers join (or replace) the sources. */
function escalate(value: Tri, sources: FlagSources, escalators: string[]): Tri {
  if (escalators.length === 0) return value;
  sources.sensitive = value === true ? sources.sensitive.concat(escalators) : escalators.slice();
  return true;
}

function asserted(sensitive: Tri, untrusted: Tri): PartialFlags {
  const out: PartialFlags = {};
  if (sensitive !== null) out.sensitive = sensitive;
  if (untrusted !== null) out.untrusted = untrusted;
  return out;
}

function missingFinding(p: string, resultLevel: boolean): ValidationFinding {
  return {
    rule: 'trust.sensitive.missing',
    severity: 'warning',
    pointer: p,
    message:
      resultLevel
        ? 'verified data-class evidence names a class other than public, but the result and its blocks are not all claimed sensitive: true; they are treated as sensitive'
        : 'verified data-class evidence names a class other than public, but the block is not claimed sensitive: true; it is treated as sensitive',
  };
}

function push<T>(map: Map<number, T[]>, key: number, value: T): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}
