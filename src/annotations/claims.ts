/**
 * Reading trust claims out of a `CallToolResult` (docs/behaviour/trust-claims.md) and
 * combining them with union semantics: once a claim says `true`, the flag
 * stays `true` for everything that claim governs.
 *
 * The reader never throws for any JSON input: shapes it does not expect
 * (a `content` that is not an array, a `_meta` that is not an object) claim
 * nothing, and the MCP validator is the one to report them. Only the
 * `trust.*` rules that belong to the claims themselves are reported here.
 *
 * The label dialects of docs/behaviour/dialects.md (`ifc`, `fides`) are read by
 * dialects.ts into the same tallies, so they join the union as claims of
 * their own; which dialects are read is the caller's choice
 * (`TRUSTGATE_DIALECTS`).
 */
import { parseDigest } from '../evidence/digest.js';
import type { EvidenceSite } from '../evidence/verify.js';
import { foldsTo } from '../mcp/casefold.js';
import { TRUST_KEY } from '../mcp/meta-key.js';
import { type Tri } from './tri.js';
import { pointer } from '../json/pointer.js';
import { hasOwn, isRecord, own } from '../json/record.js';
import { jsonType } from '../json/type-name.js';
import type { ValidationFinding } from '../mcp/findings.js';
import { DIALECTS, readFides, readIfc, type Dialect, type FidesClaims } from './dialects.js';

/** The two tri-state flags a trust claim can carry. */
export const TRUST_FLAGS = ['sensitive', 'untrusted'] as const;
/** `sensitive` or `untrusted`. */
export type TrustFlag = (typeof TRUST_FLAGS)[number];

/** Effective value of both flags for one scope. `null` means no claim. */
export interface TrustFlags {
  sensitive: Tri;
  untrusted: Tri;
}

/**
 * For each flag, the RFC 6901 pointers of the claims that produced its
 * effective value: the `true` claims when it is `true`, the `false` claims
 * when it is `false`, none when it is `null`. Pointers name the flag itself
 * (`.../trust-annotations/sensitive`) or, for data-class escalation, the
 * evidenceRef that asserted it.
 */
export interface FlagSources {
  sensitive: string[];
  untrusted: string[];
}

/** A union of flags holding only the keys whose value is not `null`. */
export interface PartialFlags {
  sensitive?: boolean;
  untrusted?: boolean;
}

/** What the claims say about one content block. */
export interface BlockReading {
  /** Index of the block in the input's `content`. */
  index: number;
  /** The block's `type`, or `''` when it is not a string. */
  type: string;
  /** Effective flags: the result-level claim united with the block's own claims. */
  sensitive: Tri;
  untrusted: Tri;
  sources: FlagSources;
  /**
   * Union of the block's own claims only (its `_meta`, its embedded
   * resource's `_meta`, misplaced `annotations` flags), without the
   * result-level claim. A redacted placeholder keeps these in its `_meta`.
   */
  ownUnion: PartialFlags;
  /** evidenceRefs in the block's own claims, in document order. */
  evidence: EvidenceSite[];
}

/** Everything the trust claims of one result say, each value traceable to its claims. */
export interface TrustReading {
  /** The result's labels: `true` if any claim anywhere says so, else the result-level claim's `false`, else `null`. */
  labels: TrustFlags;
  labelSources: FlagSources;
  /** The result-level claims on their own (the trust key's, and the dialects' ones on the whole result). */
  resultClaim: TrustFlags;
  resultClaimSources: FlagSources;
  /** What governs `structuredContent`: the result-level claims united with fides labels on `$['structuredContent']...`. */
  structuredClaim: TrustFlags;
  structuredClaimSources: FlagSources;
  blocks: BlockReading[];
  /** Every evidenceRef in the result, in document order: result-level first, then blocks in order. */
  evidence: EvidenceSite[];
  /** `trust.annotation.type`, `trust.evidenceRef.shape`, `trust.dialect.shape` and `trust.no-weakening` findings, in reading order. */
  findings: ValidationFinding[];
}

/** The pointers of the claims saying `true` and `false` for one flag within one claim set. */
interface Tally {
  t: string[];
  f: string[];
}

interface Tallies {
  sensitive: Tally;
  untrusted: Tally;
}

function newTallies(): Tallies {
  return { sensitive: { t: [], f: [] }, untrusted: { t: [], f: [] } };
}

const REQUIRED_REF_FIELDS = ['type', 'digest', 'canonicalization'] as const;

/** `/_meta/<trust key>`, escaped once: every claim pointer ends with it. */
const META_CLAIM = pointer('_meta', TRUST_KEY);

/** Scratch state threaded through one reading. */
interface Reader {
  findings: ValidationFinding[];
  evidence: EvidenceSite[];
}

/**
 * Read the trust claims of a `CallToolResult` and combine them (docs/behaviour/trust-claims.md and docs/behaviour/dialects.md), in the dialects listed (default: all of them).
 * Never throws for any JSON input; reads own properties only, so
 * `__proto__` and `constructor` keys are plain data.
 */
export function readTrust(result: unknown, dialects: readonly Dialect[] = DIALECTS): TrustReading {
  const reader: Reader = { findings: [], evidence: [] };
  const res = newTallies();
  const readK = dialects.includes('trust-annotations');
  const readIfcLabels = dialects.includes('ifc');
  let fides: FidesClaims | undefined;

  if (isRecord(result)) {
    const meta = own(result, '_meta');
    if (isRecord(meta)) {
      if (readK) readMeta(reader, res, meta, '');
      if (readIfcLabels) readIfc(meta, '/_meta', res, reader.findings);
      if (dialects.includes('fides')) fides = readFides(result, meta, reader.findings);
    }
  }
  if (fides !== undefined) addTallies(res, fides.result);
  // What governs every block from above: the result-level claims, and fides' `$['content']`.
  const above = fides === undefined ? res : unitedTallies(res, fides.content);

  const content = isRecord(result) ? own(result, 'content') : undefined;
  const blocks: BlockReading[] = [];
  // Block-level `true` pointers across every block, for the result's labels.
  const anyTrue = { sensitive: [] as string[], untrusted: [] as string[] };

  if (Array.isArray(content)) {
    // One scratch tally for every block: combineBlock copies what it keeps.
    const mine = newTallies();
    // What a block without claims of its own gets: the claims from above, resolved once.
    const plain = { sensitive: resolve(above.sensitive.t, above.sensitive.f), untrusted: resolve(above.untrusted.t, above.untrusted.f) };
    for (let i = 0; i < content.length; i++) {
      const block: unknown = content[i];
      clearTallies(mine);
      const evidenceStart = reader.evidence.length;
      let type = '';
      if (isRecord(block)) {
        const t = own(block, 'type');
        if (typeof t === 'string') type = t;
        const meta = own(block, '_meta');
        if (isRecord(meta)) {
          if (readK) readMeta(reader, mine, meta, `/content/${i}`, i);
          if (readIfcLabels) readIfc(meta, `/content/${i}/_meta`, mine, reader.findings);
        }
        if (type === 'resource') {
          const resource = own(block, 'resource');
          const rmeta = isRecord(resource) ? own(resource, '_meta') : undefined;
          if (isRecord(rmeta)) {
            if (readK) readMeta(reader, mine, rmeta, `/content/${i}/resource`, i);
            if (readIfcLabels) readIfc(rmeta, `/content/${i}/resource/_meta`, mine, reader.findings);
          }
        }
        const annotations = own(block, 'annotations');
        if (readK && isRecord(annotations)) readMisplaced(mine, annotations, `/content/${i}/annotations`);
      }
      const labelled = fides?.blocks.get(i);
      if (labelled !== undefined) addTallies(mine, labelled);
      blocks.push(
        emptyTallies(mine)
          ? plainBlock(i, type, plain, reader.evidence.length > evidenceStart ? reader.evidence.slice(evidenceStart) : [])
          : combineBlock(reader, i, type, above, mine, reader.evidence.slice(evidenceStart)),
      );
      for (const flag of TRUST_FLAGS) {
        for (const p of mine[flag].t) anyTrue[flag].push(p);
      }
    }
  }

  const labels: TrustFlags = { sensitive: null, untrusted: null };
  const labelSources: FlagSources = { sensitive: [], untrusted: [] };
  const resultClaim: TrustFlags = { sensitive: null, untrusted: null };
  const resultClaimSources: FlagSources = { sensitive: [], untrusted: [] };
  const structuredClaim: TrustFlags = { sensitive: null, untrusted: null };
  const structuredClaimSources: FlagSources = { sensitive: [], untrusted: [] };
  for (const flag of TRUST_FLAGS) {
    const level = resolve(res[flag].t, res[flag].f);
    resultClaim[flag] = level.value;
    resultClaimSources[flag] = level.sources;
    const structured = fides === undefined ? level : resolve(res[flag].t.concat(fides.structured[flag].t), res[flag].f.concat(fides.structured[flag].f));
    structuredClaim[flag] = structured.value;
    structuredClaimSources[flag] = structured.sources;
    const trues = fides === undefined ? res[flag].t.concat(anyTrue[flag]) : res[flag].t.concat(fides.content[flag].t, anyTrue[flag], fides.structured[flag].t);
    const all = resolve(trues, res[flag].f);
    labels[flag] = all.value;
    labelSources[flag] = all.sources;
  }

  return {
    labels,
    labelSources,
    resultClaim,
    resultClaimSources,
    structuredClaim,
    structuredClaimSources,
    blocks,
    evidence: reader.evidence,
    findings: reader.findings,
  };
}

function clearTallies(t: Tallies): void {
  // Most blocks claim nothing: leave empty lists as they are (setting a length costs more than the check).
  if (t.sensitive.t.length > 0) t.sensitive.t = [];
  if (t.sensitive.f.length > 0) t.sensitive.f = [];
  if (t.untrusted.t.length > 0) t.untrusted.t = [];
  if (t.untrusted.f.length > 0) t.untrusted.f = [];
}

function emptyTallies(t: Tallies): boolean {
  return t.sensitive.t.length + t.sensitive.f.length + t.untrusted.t.length + t.untrusted.f.length === 0;
}

/** A block with no claims of its own: the claims from above, resolved once for every such block (`sources` copied, so no two blocks share one). */
function plainBlock(index: number, type: string, above: Record<TrustFlag, { value: Tri; sources: string[] }>, evidence: EvidenceSite[]): BlockReading {
  return {
    index,
    type,
    sensitive: above.sensitive.value,
    untrusted: above.untrusted.value,
    sources: { sensitive: above.sensitive.sources.slice(), untrusted: above.untrusted.sources.slice() },
    ownUnion: {},
    evidence,
  };
}

/** Add `more`'s pointers to `into`. */
function addTallies(into: Tallies, more: Tallies): void {
  for (const flag of TRUST_FLAGS) {
    for (const p of more[flag].t) into[flag].t.push(p);
    for (const p of more[flag].f) into[flag].f.push(p);
  }
}

/** A new tally holding `a`'s pointers, then `b`'s. */
function unitedTallies(a: Tallies, b: Tallies): Tallies {
  return {
    sensitive: { t: a.sensitive.t.concat(b.sensitive.t), f: a.sensitive.f.concat(b.sensitive.f) },
    untrusted: { t: a.untrusted.t.concat(b.untrusted.t), f: a.untrusted.f.concat(b.untrusted.f) },
  };
}

/** Union rule: any `true` wins, else any `false`, else no claim. */
function resolve(trueSources: string[], falseSources: string[]): { value: Tri; sources: string[] } {
  if (trueSources.length > 0) return { value: true, sources: trueSources.slice() };
  if (falseSources.length > 0) return { value: false, sources: falseSources.slice() };
  return { value: null, sources: [] };
}

function combineBlock(
  reader: Reader,
  index: number,
  type: string,
  res: Tallies,
  mine: Tallies,
  evidence: EvidenceSite[],
): BlockReading {
  const out: BlockReading = {
    index,
    type,
    sensitive: null,
    untrusted: null,
    sources: { sensitive: [], untrusted: [] },
    ownUnion: {},
    evidence,
  };
  for (const flag of TRUST_FLAGS) {
    const r = res[flag];
    const m = mine[flag];
    const eff = resolve(r.t.concat(m.t), r.f.concat(m.f));
    out[flag] = eff.value;
    out.sources[flag] = eff.sources;
    if (m.t.length > 0) out.ownUnion[flag] = true;
    else if (m.f.length > 0) out.ownUnion[flag] = false;
    // Only a result-level `true` makes a block's `false` a weakening attempt;
    // two block-level claims that disagree are an ordinary union.
    if (r.t.length > 0) {
      for (const p of m.f) {
        reader.findings.push({
          rule: 'trust.no-weakening',
          severity: 'warning',
          pointer: p,
          message: `block-level ${flag}: false is ignored because the result-level claim says ${flag}: true (a block may only strengthen)`,
        });
      }
    }
  }
  return out;
}

/**
 * The claims of one `_meta` object (at `base` + `/_meta`): the trust key's,
 * then any key that only case folding makes the trust key (an upper-case
 * trust key, which a case-insensitive host reads as the claim). Such a key
 * is withheld from the forwarded result (rule `mcp.member.casefold`) and is
 * read fail closed: every flag it names counts as `true`, whatever its value.
 */
function readMeta(reader: Reader, tally: Tallies, meta: Record<string, unknown>, base: string, scope: 'result' | number = 'result'): void {
  readClaim(reader, tally, own(meta, TRUST_KEY), base + META_CLAIM, scope);
  for (const key of Object.keys(meta)) {
    if (!foldsTo(key, TRUST_KEY)) continue;
    const claim = meta[key];
    if (!isRecord(claim)) continue;
    const at = base + pointer('_meta', key);
    for (const k of Object.keys(claim)) {
      for (const flag of TRUST_FLAGS) if (k === flag || foldsTo(k, flag)) tally[flag].t.push(at + pointer(k));
    }
  }
}

/** Read one claim object at `base` into `tally`, collecting its evidenceRef. */
function readClaim(reader: Reader, tally: Tallies, claim: unknown, base: string, scope: 'result' | number): void {
  if (claim === undefined) return;
  if (!isRecord(claim)) {
    reader.findings.push({
      rule: 'trust.annotation.type',
      severity: 'error',
      pointer: base,
      message: `trust claim must be an object, found ${jsonType(claim)}; it claims nothing`,
    });
    return;
  }
  for (const flag of TRUST_FLAGS) {
    const v = own(claim, flag);
    if (v === undefined) continue;
    const p = `${base}/${flag}`;
    if (v === true) tally[flag].t.push(p);
    else if (v === false) tally[flag].f.push(p);
    else {
      // Fail closed: a producer that meant to say something about this flag
      // most likely meant to restrict.
      tally[flag].t.push(p);
      reader.findings.push({
        rule: 'trust.annotation.type',
        severity: 'error',
        pointer: p,
        message: `${flag} must be a boolean, found ${jsonType(v)}; it counts as true`,
      });
    }
  }
  // A flag name that only case folding makes `sensitive` or `untrusted`
  // (`ſensitive`) is read by case-insensitive hosts as that flag: it counts
  // as `true` whatever its value, so that it can never loosen a label.
  for (const k of Object.keys(claim)) {
    for (const flag of TRUST_FLAGS) if (foldsTo(k, flag)) tally[flag].t.push(base + pointer(k));
  }
  if (hasOwn(claim, 'evidenceRef')) {
    const value = claim['evidenceRef'];
    const p = `${base}/evidenceRef`;
    reader.evidence.push({ pointer: p, scope, value });
    checkEvidenceRefShape(reader.findings, value, p);
  }
}

/**
 * Trust flags written inside a block's MCP `annotations`. The MCP validator
 * reports the misplacement; here a `true` (or any non-boolean) still counts
 * so that a misplaced restriction is never lost, while a misplaced `false`
 * cannot loosen anything.
 */
function readMisplaced(tally: Tallies, annotations: Record<string, unknown>, base: string): void {
  for (const flag of TRUST_FLAGS) {
    const v = own(annotations, flag);
    if (v === undefined || v === false) continue;
    tally[flag].t.push(`${base}/${flag}`);
  }
}

/** Report `trust.evidenceRef.shape` problems. An unknown digest alg is not one (it is `unsupported`). */
function checkEvidenceRefShape(findings: ValidationFinding[], ref: unknown, p: string): void {
  if (!isRecord(ref)) {
    findings.push({
      rule: 'trust.evidenceRef.shape',
      severity: 'error',
      pointer: p,
      message: `evidenceRef must be an object with string type, digest and canonicalization, found ${jsonType(ref)}`,
    });
    return;
  }
  for (const field of REQUIRED_REF_FIELDS) {
    const v = own(ref, field);
    if (v === undefined) {
      findings.push({
        rule: 'trust.evidenceRef.shape',
        severity: 'error',
        pointer: p,
        message: `evidenceRef lacks the required member ${field}`,
      });
    } else if (typeof v !== 'string') {
      findings.push({
        rule: 'trust.evidenceRef.shape',
        severity: 'error',
        pointer: `${p}/${field}`,
        message: `evidenceRef ${field} must be a string, found ${jsonType(v)}`,
      });
    } else if (field === 'digest') {
      const parsed = parseDigest(v);
      if (!parsed.ok && parsed.status === 'malformed') {
        findings.push({ rule: 'trust.evidenceRef.shape', severity: 'error', pointer: `${p}/digest`, message: parsed.message });
      }
    }
  }
}

