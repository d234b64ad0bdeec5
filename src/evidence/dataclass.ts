/**
 * The known evidence type `data-class.v1` (docs/behaviour/trust-claims.md): a verified
 * record that classifies the data a scope carries. Only verified records
 * are read here; a record that merely claims a class proves nothing.
 */
import { isRecord, own } from '../json/record.js';

/** The evidence `type` this module reads. */
export const DATA_CLASS_TYPE = 'data-class.v1';

/** The one class that does not make a scope sensitive. */
export const PUBLIC_CLASS = 'public';

/** The class just above public: sensitive, but not a claim that asks before the result reaches the model (docs/behaviour/labels-and-detectors.md#personal-data-marks-it-does-not-stop). */
export const INTERNAL_CLASS = 'internal';

/**
 * Class reported for a verified record whose `class` is not a string (or
 * which is not an object at all): the drafts' own name for "not
 * established", and it counts as non-public.
 */
export const UNREADABLE_CLASS = 'unknown';

/** What one verified `data-class.v1` record says. */
export interface DataClassRecord {
  /** The record's `class` as written, or `unknown` when it is not a string. */
  class: string;
  /** True unless `class` is exactly `public`: unknown and unreadable classes count as sensitive (fail closed). */
  nonPublic: boolean;
  /** `regulatory` strings, lower-cased, de-duplicated, in order of first appearance; non-strings are skipped. */
  regulatory: string[];
  /** `labels` strings, when the record holds an array. */
  labels?: string[];
  /** `policyRef`, when it is a string. */
  policyRef?: string;
}

/** The `dataClass` policy variable of a scope governed by at least one verified record. */
export interface DataClass {
  class: string;
  regulatory: string[];
}

/** `dataClass` of a scope: a DataClass, or an empty object when no verified record governs it. */
export type ScopeDataClass = DataClass | Record<string, never>;

/**
 * Read a verified `data-class.v1` record. Never throws. Class names are
 * compared exactly (`Public` is not `public`), since loosening a
 * classification by guessing would fail open.
 */
export function readDataClass(record: unknown): DataClassRecord {
  if (!isRecord(record)) return { class: UNREADABLE_CLASS, nonPublic: true, regulatory: [] };
  const cls = own(record, 'class');
  const out: DataClassRecord = {
    class: typeof cls === 'string' ? cls : UNREADABLE_CLASS,
    nonPublic: cls !== PUBLIC_CLASS,
    regulatory: [],
  };
  addRegulatory(out.regulatory, own(record, 'regulatory'));
  const labels = own(record, 'labels');
  if (Array.isArray(labels)) out.labels = labels.filter((l): l is string => typeof l === 'string');
  const policyRef = own(record, 'policyRef');
  if (typeof policyRef === 'string') out.policyRef = policyRef;
  return out;
}

/**
 * What a `data-class.v1` evidenceRef that cannot be checked (status
 * `unsupported` or `malformed`) stands for: class `unknown`, which counts as
 * sensitive (docs/behaviour/forwarding.md: fail closed).
 */
export function unreadableDataClass(): DataClassRecord {
  return { class: UNREADABLE_CLASS, nonPublic: true, regulatory: [] };
}

/**
 * Combine the records governing one scope, in document order: the first
 * non-public class (else `public`) and the union of their `regulatory`
 * lists. An empty object when there are none.
 */
export function mergeDataClasses(records: readonly DataClassRecord[]): ScopeDataClass {
  if (records.length === 0) return {};
  let cls: string | undefined;
  const regulatory: string[] = [];
  for (const r of records) {
    if (cls === undefined && r.nonPublic) cls = r.class;
    for (const item of r.regulatory) if (!regulatory.includes(item)) regulatory.push(item);
  }
  return { class: cls ?? PUBLIC_CLASS, regulatory };
}

function addRegulatory(into: string[], value: unknown): void {
  if (!Array.isArray(value)) return;
  for (const item of value) {
    if (typeof item !== 'string') continue;
    const lower = item.toLowerCase();
    if (!into.includes(lower)) into.push(lower);
  }
}
