/**
 * Matching evidenceRefs to the records a request supplies and re-deriving
 * their digests (docs/behaviour/trust-claims.md, "EvidenceRef").
 *
 * Checks run in this order; the first that applies decides the status:
 *
 * 1. the evidenceRef is not an object, or `type`, `digest` or
 *    `canonicalization` is missing or not a string: `malformed`;
 * 2. the digest's alg is not a known one: `unsupported`;
 * 3. the digest does not parse (no `alg:`, wrong length, not hex): `malformed`;
 * 4. the canonicalization is not a known one: `unsupported`;
 * 5. no entry matches (by digest, then by ref), or the matching entry
 *    carries no record: `unresolved`;
 * 6. the record cannot be canonicalized (not I-JSON, a lone surrogate,
 *    nesting deeper than 128 levels below the record): `malformed`;
 * 7. the re-derived digest equals the expected one: `verified`, else `mismatch`.
 *
 * Steps 1 and 3 are exactly the `trust.evidenceRef.shape` checks, so an
 * evidenceRef is `malformed` before re-derivation if and only if the reader
 * reported its shape: a broken digest stays `malformed` whatever the
 * canonicalization says.
 */
import type { Canonicalization, DigestAlgorithm } from './algorithms.js';
import type { EvidenceStatus } from './status.js';
import { isRecord, own } from '../json/record.js';
import { CanonicalizationError, canonicalForm, digestOf, isCanonicalization, parseDigest } from './digest.js';

/** Where an evidenceRef was found and what it holds (not yet checked beyond shape). */
export interface EvidenceSite {
  /** RFC 6901 pointer to the `evidenceRef` member. */
  pointer: string;
  /** `'result'` for the result-level claim, else the index of the block whose claim holds it. */
  scope: 'result' | number;
  /** The evidenceRef value as written, whatever its JSON type. */
  value: unknown;
}

/** One member of the request's `evidence` array, as the HTTP layer hands it over. */
export interface EvidenceEntry {
  digest?: unknown;
  ref?: unknown;
  record?: unknown;
  /** False when the entry had no `record` member (JSON `null` is a record). */
  hasRecord: boolean;
  /** set by the HTTP layer when the record's request text is not I-JSON (repeated member name, a number of integral value outside ±(2^53-1)) */
  ijsonViolation?: string;
  /** True when the request text nests no deeper than a record may (MAX_RECORD_DEPTH), so the record's depth needs no walk. */
  shallow?: boolean;
}

/** The verdict on one evidenceRef. */
export interface EvidenceOutcome {
  /** RFC 6901 pointer to the evidenceRef. */
  pointer: string;
  scope: 'result' | number;
  /** The evidenceRef's `type` when it is a string. */
  type: string | null;
  /** The evidenceRef's `canonicalization` when it is a string. */
  canonicalization: string | null;
  status: EvidenceStatus;
  /** The evidenceRef's digest, normalised to lower-case hex, when it parses. */
  expected?: string;
  /** The digest re-derived from the record with the evidenceRef's alg, when one was computed. */
  derived?: string;
  /** The evidenceRef's `schema` when it is a string. */
  schema?: string;
  /** The evidenceRef's `ref` when it is a string. */
  ref?: string;
  /** Why the status is not `verified`; never quotes record or claim content. */
  message?: string;
  /** verified record, kept for data-class handling; never logged */
  record?: unknown;
  /** Index of the matched entry in the request's `evidence`. */
  entryIndex?: number;
}

/** Outcome of canonicalizing and hashing one entry's record, memoised per call. */
type Derivation = { ok: true; digest: string } | { ok: false; message: string };

/**
 * Verify every evidenceRef site against the supplied entries. Returns one
 * outcome per site, in the order of `sites`. Never throws: unknown `type`
 * values verify like any other, and a record that cannot be canonicalized
 * is `malformed`. Each distinct (entry, canonicalization) is canonicalized
 * at most once per call and each (entry, canonicalization, alg) hashed at
 * most once, since several refs may name one record.
 */
export function verifyEvidence(sites: EvidenceSite[], entries: readonly EvidenceEntry[]): EvidenceOutcome[] {
  const outcomes: EvidenceOutcome[] = [];
  if (sites.length === 0) return outcomes;

  // The first entry with a lower-cased digest, else with a ref. A few entries are searched in
  // place; past that, maps are built once, so that matching stays linear in sites + entries.
  let byDigest: Map<string, number> | undefined;
  let byRef: Map<string, number> | undefined;
  if (entries.length > FEW_ENTRIES) {
    byDigest = new Map();
    byRef = new Map();
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (typeof e.digest === 'string') {
        const d = e.digest.toLowerCase();
        if (!byDigest.has(d)) byDigest.set(d, i);
      }
      if (typeof e.ref === 'string' && !byRef.has(e.ref)) byRef.set(e.ref, i);
    }
  }
  const match = (digest: string, ref: string | undefined): number | undefined => {
    if (byDigest !== undefined) return byDigest.get(digest) ?? (ref === undefined ? undefined : byRef!.get(ref));
    for (let i = 0; i < entries.length; i++) {
      const d = entries[i]!.digest;
      if (typeof d === 'string' && d.toLowerCase() === digest) return i;
    }
    if (ref !== undefined) for (let i = 0; i < entries.length; i++) if (entries[i]!.ref === ref) return i;
    return undefined;
  };

  // Memos only when a second evidenceRef could reuse them.
  const formMemo = sites.length > 1 ? new Map<string, Canonical>() : undefined;
  const digestMemo = sites.length > 1 ? new Map<string, Derivation>() : undefined;
  const derive = (index: number, scheme: Canonicalization, alg: DigestAlgorithm): Derivation => {
    const key = `${index}\u0000${scheme}\u0000${alg}`;
    const hit = digestMemo?.get(key);
    if (hit) return hit;
    const formKey = `${index}\u0000${scheme}`;
    let form = formMemo?.get(formKey);
    if (form === undefined) {
      form = canonicalize(entries[index]!, scheme);
      formMemo?.set(formKey, form);
    }
    const out: Derivation = form.ok ? { ok: true, digest: digestOf(form.form, alg) } : form;
    digestMemo?.set(key, out);
    return out;
  };

  for (const site of sites) outcomes.push(verifyOne(site, entries, match, derive));
  return outcomes;
}

/** Up to this many evidence entries are searched in place rather than through maps. */
const FEW_ENTRIES = 8;

/** The canonical form of an entry's record (JCS text or CBOR bytes), or why it has none. */
type Canonical = { ok: true; form: string | Uint8Array } | { ok: false; message: string };

function canonicalize(entry: EvidenceEntry, scheme: Canonicalization): Canonical {
  if (entry.ijsonViolation !== undefined) {
    // The parsed record no longer shows what the producer hashed, so no
    // digest derived from it can be trusted either way.
    return {
      ok: false,
      message: 'the evidence record is not I-JSON (a repeated member name or an integer outside ±(2^53-1)); it cannot be re-derived',
    };
  }
  try {
    return { ok: true, form: canonicalForm(entry.record, scheme, entry.shallow === true) };
  } catch (err) {
    if (err instanceof CanonicalizationError) return { ok: false, message: `the evidence record cannot be canonicalized: ${err.message}` };
    // Any other failure is a defect on our side; still answer for this
    // evidenceRef alone rather than fail the whole decision.
    return { ok: false, message: 'the evidence record cannot be canonicalized' };
  }
}

function verifyOne(
  site: EvidenceSite,
  entries: readonly EvidenceEntry[],
  match: (digest: string, ref: string | undefined) => number | undefined,
  derive: (index: number, scheme: Canonicalization, alg: DigestAlgorithm) => Derivation,
): EvidenceOutcome {
  const out: EvidenceOutcome = { pointer: site.pointer, scope: site.scope, type: null, canonicalization: null, status: 'malformed' };
  const ref = site.value;
  if (!isRecord(ref)) {
    out.message = 'evidenceRef is not an object';
    return out;
  }
  const type = own(ref, 'type');
  const digest = own(ref, 'digest');
  const canonicalization = own(ref, 'canonicalization');
  const schema = own(ref, 'schema');
  const locator = own(ref, 'ref');
  if (typeof type === 'string') out.type = type;
  if (typeof canonicalization === 'string') out.canonicalization = canonicalization;
  if (typeof schema === 'string') out.schema = schema;
  if (typeof locator === 'string') out.ref = locator;

  const missing: string[] = [];
  if (typeof type !== 'string') missing.push('type');
  if (typeof digest !== 'string') missing.push('digest');
  if (typeof canonicalization !== 'string') missing.push('canonicalization');
  if (missing.length > 0 || typeof digest !== 'string' || typeof canonicalization !== 'string') {
    out.message = `evidenceRef ${missing.join(', ')} must be present and a string`;
    return out;
  }

  const parsed = parseDigest(digest);
  if (!parsed.ok) {
    out.status = parsed.status;
    out.message = parsed.message;
    return out;
  }
  out.expected = parsed.normalized;
  if (!isCanonicalization(canonicalization)) {
    out.status = 'unsupported';
    out.message = 'canonicalization is not one of jcs/rfc8785, cbor/rfc8949';
    return out;
  }

  const index = match(parsed.normalized, typeof locator === 'string' ? locator : undefined);
  if (index === undefined) {
    out.status = 'unresolved';
    out.message = 'no evidence entry matches this digest or ref';
    return out;
  }
  out.entryIndex = index;
  // The first match decides, as the contract says; an entry without a
  // record is a host saying it cannot supply one.
  if (!entries[index]!.hasRecord) {
    out.status = 'unresolved';
    out.message = 'the matching evidence entry carries no record';
    return out;
  }

  const d = derive(index, canonicalization, parsed.alg);
  if (!d.ok) {
    out.status = 'malformed';
    out.message = d.message;
    return out;
  }
  out.derived = d.digest;
  if (d.digest === parsed.normalized) {
    out.status = 'verified';
    out.record = entries[index]!.record;
  } else {
    out.status = 'mismatch';
    out.message = 'the re-derived digest differs from the evidenceRef digest';
  }
  return out;
}
