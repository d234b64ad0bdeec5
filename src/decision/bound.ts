/**
 * Answers whose size is bounded by their request (docs/behaviour/decisions.md and
 * 8). A result can make every rule fire on every block from a few bytes a
 * block (`{}` blocks under a result-level `untrusted` claim: one finding, one
 * `blocks` entry and one validation finding of ~100 bytes each per 3-byte
 * block), so an answer apart from its forwarded `result` could be a hundred
 * times its request. Two bounds hold for every answer:
 *
 * - `findings` by count, like `validation`: past TRUSTGATE_MAX_FINDINGS only
 *   the first finding of each further policy, rule and mode is listed, and
 *   `findingsOmitted` counts the rest;
 * - the lists together (`findings`, `validation`, `evidence`, `blocks`,
 *   `withheld`; then `trace`, with `options.explain`, in the room they leave) by
 *   size: at most ANSWER_FACTOR times the request text plus ANSWER_SLACK.
 *   When they would be larger, each list gets a fair share (lists smaller
 *   than their share keep every entry and leave the rest to the others);
 *   `findings` and `validation` keep past their share the first entry of
 *   every kind they do not hold yet (policy, rule and mode; rule and
 *   severity), so every policy, rule and mode that matched and every rule
 *   and severity that fired stays listed. `evidence` and `blocks` keep
 *   their first entries. What is left out is counted in `findingsOmitted`,
 *   `validationOmitted`, `evidenceOmitted`, `blocksOmitted` and
 *   `withheldOmitted`.
 *
 * Only the answer is cut: policies saw every finding and every effect was
 * applied to every block it matched. Sizes are estimated from the lengths
 * of the strings an entry carries (what JSON.stringify would write, before
 * escapes), without serializing anything.
 */
import type { Decision } from './types.js';
import type { ValidationFinding } from '../mcp/findings.js';

/** Answer (apart from `result`) at most this many times the request text... */
export const ANSWER_FACTOR = 8;
/** ...plus this many characters. Together well within the contract's 10 x request + 64 KB. */
export const ANSWER_SLACK = 48 * 1024;

/** The size bound of an answer to a request text of `requestLength` characters. */
export function answerBudget(requestLength: number): number {
  return ANSWER_FACTOR * requestLength + ANSWER_SLACK;
}

/** One list of an answer: its entries, a size estimate per entry, and how entries are kinds (none: a plain prefix is kept). */
interface ListSpec<T> {
  items: readonly T[];
  size: (item: T) => number;
  kind?: (item: T) => string;
}

/** A list cut to a share: what is kept, and how many were left out. */
export interface Cut<T> {
  items: T[];
  omitted: number;
}

/**
 * Keep the entries of `items` in order while they fit in `share`; past it,
 * only the first entry of each kind not kept yet (when `kind` is given).
 */
function cutTo<T>(spec: ListSpec<T>, share: number): Cut<T> {
  const out: T[] = [];
  let used = 0;
  let omitted = 0;
  let kinds: Set<string> | undefined;
  for (const item of spec.items) {
    const n = spec.size(item);
    if (kinds === undefined && used + n <= share) {
      out.push(item);
      used += n;
      continue;
    }
    if (spec.kind === undefined) {
      omitted++;
      continue;
    }
    if (kinds === undefined) {
      kinds = new Set();
      for (const k of out) kinds.add(spec.kind(k));
    }
    const k = spec.kind(item);
    if (kinds.has(k)) omitted++;
    else {
      kinds.add(k);
      out.push(item);
    }
  }
  return { items: out, omitted };
}

/**
 * Cut several lists to one size budget, each to a fair share (water
 * filling: the smallest lists keep everything, what they leave is shared
 * by the others). Lists that fit together come back as they are.
 */
export function cutLists(budget: number, specs: ReadonlyArray<ListSpec<any>>): Array<Cut<any>> {
  const sizes = specs.map((s) => {
    let n = 0;
    for (const item of s.items) n += s.size(item);
    return n;
  });
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total <= budget) return specs.map((s) => ({ items: s.items as any[], omitted: 0 }));
  const order = specs.map((_, i) => i).sort((a, b) => sizes[a]! - sizes[b]!);
  const shares: number[] = new Array(specs.length).fill(0);
  let left = Math.max(0, budget);
  for (let j = 0; j < order.length; j++) {
    const i = order[j]!;
    const fair = left / (order.length - j);
    shares[i] = Math.min(sizes[i]!, fair);
    left -= shares[i]!;
  }
  return specs.map((s, i) => (sizes[i]! <= shares[i]! ? { items: s.items as any[], omitted: 0 } : cutTo(s, shares[i]!)));
}

/**
 * `findings` bounded by count (TRUSTGATE_MAX_FINDINGS): the first `limit`,
 * then only the first of each policy, rule and mode not listed yet.
 */
export function limitFindings<T extends { policy: string; rule: string; mode: string }>(findings: T[], limit: number): Cut<T> {
  if (findings.length <= limit) return { items: findings, omitted: 0 };
  const out = findings.slice(0, limit);
  const kinds = new Set(out.map(findingKind));
  let omitted = 0;
  for (let i = limit; i < findings.length; i++) {
    const f = findings[i]!;
    const k = findingKind(f);
    if (kinds.has(k)) omitted++;
    else {
      kinds.add(k);
      out.push(f);
    }
  }
  return { items: out, omitted };
}

export const findingKind = (f: { policy: string; rule: string; mode: string }): string => `${f.mode}\u0000${f.policy}\u0000${f.rule}`;
export const validationKind = (v: ValidationFinding): string => `${v.severity}\u0000${v.rule}`;

const len = (s: string | null | undefined): number => (typeof s === 'string' ? s.length : 4);

/** Estimated JSON size of one finding of an answer. */
export function findingSize(f: { policy: string; rule: string; mode: string; effect: string; scope?: string; pointer: string; message?: string; error?: string | boolean }): number {
  return 110 + f.policy.length + f.rule.length + f.mode.length + f.effect.length + len(f.pointer) + len(f.message) + (typeof f.error === 'string' ? f.error.length + 12 : 0);
}

export function validationSize(v: ValidationFinding): number {
  return 50 + v.rule.length + v.severity.length + v.pointer.length + v.message.length;
}

export function evidenceSize(e: { pointer: string; type: string | null; canonicalization?: string | null; status: string; expected?: string; derived?: string; message?: string }): number {
  return 90 + e.pointer.length + len(e.type) + len(e.canonicalization) + e.status.length + len(e.expected) + len(e.derived) + len(e.message);
}

export function blockSize(b: { type: string; actions: readonly string[]; sources?: { sensitive: readonly string[]; untrusted: readonly string[] } }): number {
  let n = 85 + b.type.length;
  for (const a of b.actions) n += a.length + 3;
  if (b.sources !== undefined) {
    n += 40;
    for (const p of b.sources.sensitive) n += p.length + 3;
    for (const p of b.sources.untrusted) n += p.length + 3;
  }
  return n;
}

/** Estimated JSON size of one trace entry (`options.explain`). */
/** Bytes one `masked` entry takes in the answer, at most. */
export function maskedSize(x: { pointer: string; kind: string; policy: string; rule: string }): number {
  return 50 + x.pointer.length + x.kind.length + x.policy.length + x.rule.length;
}

export function traceSize(e: { policy: string; rule: string; scope: string; pointer: string; value: boolean | string }): number {
  return 60 + e.policy.length + e.rule.length + e.scope.length + e.pointer.length + (typeof e.value === 'string' ? e.value.length + 2 : 5);
}

const traceKind = (e: { policy: string; rule: string }): string => `${e.policy}\u0000${e.rule}`;

/**
 * Bound a decision's lists in place (see the top of this file); the
 * `...Omitted` counts add to any set before (validation's count bound).
 */
export function boundDecision(d: Decision, maxFindings = Infinity, budget = Infinity): void {
  const limited = limitFindings(d.findings, maxFindings);
  d.findings = limited.items;
  let findingsOmitted = limited.omitted;
  if (Number.isFinite(budget)) {
    // The members around the lists: ids, labels, flags (a few hundred characters).
    const rest = 600 + d.policyRevision.length;
    const [f, v, e, b, w, m] = cutLists(budget - rest, [
      { items: d.findings, size: findingSize, kind: findingKind },
      { items: d.validation, size: validationSize, kind: validationKind },
      { items: d.evidence, size: evidenceSize },
      { items: d.blocks, size: blockSize },
      // A pointer repeats every member name above it: 1000 of them under one long name would be 1000 copies of it.
      { items: d.withheld, size: (p: string) => p.length + 3 },
      { items: d.masked, size: maskedSize },
    ]);
    d.findings = f!.items;
    findingsOmitted += f!.omitted;
    d.validation = v!.items;
    if (v!.omitted > 0) d.validationOmitted = (d.validationOmitted ?? 0) + v!.omitted;
    d.evidence = e!.items;
    if (e!.omitted > 0) d.evidenceOmitted = e!.omitted;
    d.blocks = b!.items;
    if (b!.omitted > 0) d.blocksOmitted = b!.omitted;
    d.withheld = w!.items;
    if (w!.omitted > 0) d.withheldOmitted = (d.withheldOmitted ?? 0) + w!.omitted;
    d.masked = m!.items;
    if (m!.omitted > 0) d.maskedOmitted = (d.maskedOmitted ?? 0) + m!.omitted;
    if (d.trace !== undefined) {
      // The trace gets what the other lists leave, so asking for it never cuts them; past that it keeps
      // the first entry of every rule (a count the policy set fixes), so every rule evaluated stays listed.
      let used = 0;
      for (const x of d.findings) used += findingSize(x);
      for (const x of d.validation) used += validationSize(x);
      for (const x of d.evidence) used += evidenceSize(x);
      for (const x of d.blocks) used += blockSize(x);
      for (const x of d.withheld) used += x.length + 3;
      for (const x of d.masked) used += maskedSize(x);
      const [t] = cutLists(budget - rest - used, [{ items: d.trace, size: traceSize, kind: traceKind }]);
      d.trace = t!.items;
      if (t!.omitted > 0) d.traceOmitted = t!.omitted;
    }
  }
  if (findingsOmitted > 0) d.findingsOmitted = findingsOmitted;
}

/** /v1/validate's list under the same size bound; returns how many were left out. */
export function boundValidation(list: ValidationFinding[], budget: number): Cut<ValidationFinding> {
  return cutLists(budget - 200, [{ items: list, size: validationSize, kind: validationKind }])[0]!;
}
