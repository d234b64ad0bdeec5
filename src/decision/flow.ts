/**
 * What a decision forwarded, as a session takes it in (docs/behaviour/sessions.md):
 * the labels of the blocks that reach the model (fenced ones included: the
 * model still reads them) and of `structuredContent` when it is forwarded
 * or when a block that may mirror it is,
 * and the most restrictive verified data class among them. Withheld blocks
 * (dropped, redacted) and withheld structuredContent add nothing.
 */
import type { TrustAssessment } from '../trust/assess.js';
import { DATA_CLASS_TYPE, readDataClass } from '../evidence/dataclass.js';
import { hasOwn } from '../json/record.js';
import type { BlockAction } from '../policy/effects.js';
import { dataClassRank } from '../session/store.js';
import { addValues, contentBits, seenValues, type SeenValues } from '../flows/flows.js';
import { isRecord, own } from '../json/record.js';
import { blockText, stringsOf } from './text.js';

/** The labels a forwarded result carries into its session. */
export interface ForwardedFlow {
  sensitive: boolean;
  untrusted: boolean;
  /** The most restrictive verified class forwarded (first of equal rank) and the union of every forwarded record's `regulatory`. */
  dataClass?: { class: string; rank: number; regulatory: string[] };
  /** The values of what reached the model, with their origin bits (docs/behaviour/flows.md); present when values were asked for. */
  seen?: SeenValues;
}

/** The strings a reader is shown of one block: its text (a textual blob decoded), a link's name, title, description and URI. */
function shownStrings(block: unknown): string[] {
  const out = [blockText(block)];
  if (!isRecord(block)) return out;
  for (const k of ['uri', 'name', 'title', 'description']) {
    const v = own(block, k);
    if (typeof v === 'string') out.push(v);
  }
  const res = own(block, 'resource');
  if (isRecord(res) && typeof own(res, 'uri') === 'string') out.push(own(res, 'uri') as string);
  return out;
}

/**
 * The flow of one decision that was not denied. `forwarded` is the result
 * as it leaves (also when the answer leaves it out as unchanged: the host
 * then forwards its own, equal copy); `actions` the effect applied per block.
 */
export function forwardedFlow(
  trust: TrustAssessment,
  actions: ReadonlyMap<number, BlockAction>,
  forwarded: Record<string, unknown>,
  hadStructured = false,
  values?: { result: Record<string, unknown>; max: number; until?: (() => boolean) | undefined },
): ForwardedFlow {
  const flow: ForwardedFlow = { sensitive: false, untrusted: false };
  const reached = new Set<number>();
  for (const b of trust.blocks) {
    const a = actions.get(b.index);
    if (a === 'drop' || a === 'redact') continue;
    reached.add(b.index);
    if (b.sensitive === true) flow.sensitive = true;
    if (b.untrusted === true) flow.untrusted = true;
  }
  // A `content` that is not a list of blocks has no block labels: what it carries is the result's (fail closed).
  const odd = hasOwn(forwarded, 'content') && forwarded.content !== undefined && !Array.isArray(forwarded.content);
  if (odd) {
    if (trust.labels.sensitive === true) flow.sensitive = true;
    if (trust.labels.untrusted === true) flow.untrusted = true;
  }
  // MCP asks a server that returns structuredContent to mirror it in a text block: a block that reaches the
  // model may hold structuredContent's text even when structuredContent itself is withheld, so its labels
  // (a result-level claim, a fides label on $['structuredContent']) travel with the blocks (docs/bindings/proxy.md).
  const structured = (hasOwn(forwarded, 'structuredContent') && forwarded.structuredContent !== undefined) || odd || (hadStructured && reached.size > 0);
  if (structured) {
    if (trust.structured.sensitive === true) flow.sensitive = true;
    if (trust.structured.untrusted === true) flow.untrusted = true;
  }
  // Result-level records govern every block and structuredContent; a block's own only that block.
  const resultReached = reached.size > 0 || structured;
  let best: ForwardedFlow['dataClass'];
  const regulatory = new Set<string>();
  for (const o of trust.evidence) {
    if (o.status !== 'verified' || o.type !== DATA_CLASS_TYPE) continue;
    if (o.scope === 'result' ? !resultReached : !reached.has(o.scope)) continue;
    const dc = readDataClass(o.record);
    for (const r of dc.regulatory) regulatory.add(r);
    const rank = dataClassRank(dc.class);
    if (best === undefined || rank > best.rank) best = { class: dc.class, rank, regulatory: [] };
  }
  if (best !== undefined) {
    best.regulatory = [...regulatory].sort();
    flow.dataClass = best;
    // A verified class other than public makes its scope sensitive (docs/behaviour/trust-claims.md#data-classes-data-classv1); the block labels already say so.
  }
  if (values !== undefined) {
    // What reached the model, block by block with the block's labels (fenced blocks count: the model reads them).
    // Past the decision's deadline the read stops and the session overflows (flows.ts): no result holds the process longer by its values.
    const seen = seenValues(values.until);
    const content = own(values.result, 'content');
    if (Array.isArray(content)) {
      for (const b of trust.blocks) {
        if (!reached.has(b.index)) continue;
        const bits = contentBits(b.untrusted === true, b.sensitive === true);
        for (const s of shownStrings(content[b.index])) addValues(seen, s, bits, values.max);
      }
    } else if (odd) {
      for (const s of stringsOf(content)) addValues(seen, s, contentBits(trust.labels.untrusted === true, trust.labels.sensitive === true), values.max);
    }
    if (structured) {
      const bits = contentBits(trust.structured.untrusted === true, trust.structured.sensitive === true);
      for (const s of stringsOf(own(values.result, 'structuredContent'))) addValues(seen, s, bits, values.max);
    }
    flow.seen = seen;
  }
  return flow;
}
