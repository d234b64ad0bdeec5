/**
 * Effect `label` (docs/behaviour/labels-and-detectors.md): flags a policy raises where the
 * server sent none. Label rules run first, over the claims the result
 * carries; what their applied matches raise joins the union of claims
 * (labels only go up), so every other rule, the forwarded claims,
 * placeholders and the session read the raised flags. Provenance names the
 * rule as `policy:<policy>/<rule>`.
 */
import { TRUST_FLAGS, type FlagSources, type TrustFlag } from '../annotations/claims.js';
import type { BlockTrust, TrustAssessment } from '../trust/assess.js';
import type { Tri } from '../annotations/tri.js';

/** Per flag, the provenance of the label rules that raised it. */
export type Raised = Record<TrustFlag, string[]>;

/** What the applied label rules of one decision raised: on the whole result, and per block index. */
export interface LabelRaises {
  result: Raised;
  blocks: Map<number, Raised>;
}

export function noRaises(): LabelRaises {
  return { result: { sensitive: [], untrusted: [] }, blocks: new Map() };
}

/** Record an applied label match: scope `result` raises the result (every block and `structuredContent`), scope `block` its block. */
export function addRaise(r: LabelRaises, flags: Readonly<{ sensitive?: true; untrusted?: true }>, policy: string, rule: string, blockIndex: number | undefined): void {
  const source = `policy:${policy}/${rule}`;
  let into = r.result;
  if (blockIndex !== undefined) {
    let b = r.blocks.get(blockIndex);
    if (b === undefined) r.blocks.set(blockIndex, (b = { sensitive: [], untrusted: [] }));
    into = b;
  }
  for (const f of TRUST_FLAGS) if (flags[f] === true && !into[f].includes(source)) into[f].push(source);
}

export function raisesNothing(r: LabelRaises): boolean {
  return r.result.sensitive.length === 0 && r.result.untrusted.length === 0 && r.blocks.size === 0;
}

/** The flags a block was raised to, with what raised them: the result's raises and its own. */
export function blockRaised(r: LabelRaises, index: number): Raised {
  const own = r.blocks.get(index);
  if (own === undefined) return r.result;
  return { sensitive: r.result.sensitive.concat(own.sensitive), untrusted: r.result.untrusted.concat(own.untrusted) };
}

function raiseFlag(value: Tri, sources: string[], by: string[]): { value: Tri; sources: string[] } {
  if (by.length === 0) return { value, sources };
  return { value: true, sources: value === true ? sources.concat(by) : by.slice() };
}

/** The assessment with the raised flags joined in (a new object; the input is not changed). */
export function raiseTrust(trust: TrustAssessment, r: LabelRaises): TrustAssessment {
  if (raisesNothing(r)) return trust;
  const all: Raised = { sensitive: r.result.sensitive.slice(), untrusted: r.result.untrusted.slice() };
  const blocks: BlockTrust[] = trust.blocks.map((b) => {
    const by = blockRaised(r, b.index);
    if (by.sensitive.length === 0 && by.untrusted.length === 0) return b;
    for (const f of TRUST_FLAGS) for (const s of by[f]) if (!all[f].includes(s)) all[f].push(s);
    const s = raiseFlag(b.sensitive, b.sources.sensitive, by.sensitive);
    const u = raiseFlag(b.untrusted, b.sources.untrusted, by.untrusted);
    const asserted = { ...b.asserted };
    if (s.value !== null) asserted.sensitive = s.value;
    if (u.value !== null) asserted.untrusted = u.value;
    return { ...b, sensitive: s.value, untrusted: u.value, sources: { sensitive: s.sources, untrusted: u.sources }, asserted };
  });
  const ls = raiseFlag(trust.labels.sensitive, trust.result.sources.sensitive, all.sensitive);
  const lu = raiseFlag(trust.labels.untrusted, trust.result.sources.untrusted, all.untrusted);
  const sources: FlagSources = { sensitive: ls.sources, untrusted: lu.sources };
  const asserted = { ...trust.result.asserted };
  if (ls.value !== null) asserted.sensitive = ls.value;
  if (lu.value !== null) asserted.untrusted = lu.value;
  return {
    ...trust,
    labels: { sensitive: ls.value, untrusted: lu.value },
    result: { ...trust.result, sensitive: ls.value, untrusted: lu.value, asserted, sources },
    structured: {
      sensitive: r.result.sensitive.length > 0 ? true : trust.structured.sensitive,
      untrusted: r.result.untrusted.length > 0 ? true : trust.structured.untrusted,
    },
    blocks,
  };
}
