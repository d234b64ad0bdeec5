/**
 * The trust claims of what goes out, the third job of a forwarding: the
 * flags label rules raised set `true` in the claims, a `_meta` kept as the
 * trust claim alone, and the placeholder of a withheld block carrying its
 * flags and evidenceRef on (docs/behaviour/forwarding.md).
 */
import { copyWithout, setOwn } from '../../json/copy.js';
import { hasOwn, isRecord, own } from '../../json/record.js';
import { TRUST_KEY } from '../../mcp/meta-key.js';
import type { PlannedEffect } from '../../policy/effects.js';
import { TRUST_FLAGS } from '../../annotations/claims.js';
import { raisesNothing, type Raised } from '../labels.js';
import { Masking } from './mask.js';
import { child, type Node, type Tokens } from './withhold.js';

const EVIDENCE_REF_MEMBERS = ['type', 'digest', 'canonicalization', 'schema', 'ref'] as const;

export class Claims extends Masking {
  /** `claimHolder` (a `_meta` owner) with the raised flags set `true` in its trust claim; copy on write. */
  raiseClaim(holder: Record<string, unknown>, flags: Raised, at: Tokens): Record<string, unknown> {
    const raise = TRUST_FLAGS.filter((f) => flags[f].length > 0);
    if (raise.length === 0) return holder;
    const metaIn = own(holder, '_meta');
    if (metaIn !== undefined && !isRecord(metaIn)) this.withhold(at, '_meta');
    const meta: Record<string, unknown> = isRecord(metaIn) ? copyWithout(metaIn) : {};
    const claimIn = own(meta, TRUST_KEY);
    const claim: Record<string, unknown> = isRecord(claimIn) ? copyWithout(claimIn) : {};
    for (const f of raise) claim[f] = true;
    meta[TRUST_KEY] = claim;
    const out = copyWithout(holder);
    out._meta = meta;
    return out;
  }
  /** The forwarded result with the raised flags in its claims: result-scope raises (and, before 2025-06-18, block ones) on the result, block ones on their block. */
  applyLabels(out: Record<string, unknown>, position: (index: number) => number | undefined): Record<string, unknown> {
    const raises = this.input.raises;
    if (raises === undefined || raisesNothing(raises)) return out;
    const onResult: Raised = { sensitive: raises.result.sensitive.slice(), untrusted: raises.result.untrusted.slice() };
    let content = own(out, 'content');
    let copied = false;
    for (const [index, flags] of raises.blocks) {
      const at = position(index);
      if (at === undefined) continue;
      if (!this.blockMeta || !Array.isArray(content) || !isRecord(content[at])) {
        for (const f of TRUST_FLAGS) onResult[f].push(...flags[f]);
        continue;
      }
      if (!copied) {
        content = (content as unknown[]).slice();
        copied = true;
      }
      (content as unknown[])[at] = this.raiseClaim((content as unknown[])[at] as Record<string, unknown>, flags, ['content', index]);
    }
    let res = out;
    if (copied) {
      res = copyWithout(out);
      res.content = content;
    }
    return this.raiseClaim(res, onResult, []);
  }
  /**
   * A `_meta` holding the trust claim alone (less its case-fold collisions);
   * undefined (and `_meta` listed whole) when it holds no trust claim. The
   * same object when nothing was taken out.
   */
  trustMetaOnly(meta: unknown, node: Node | true | undefined, at: Tokens): Record<string, unknown> | undefined {
    // Without a trust claim to keep, `_meta` is withheld whole (and listed so).
    if (!isRecord(meta) || !hasOwn(meta, TRUST_KEY) || child(node as Node | undefined, TRUST_KEY) === true) {
      this.withhold(at);
      return undefined;
    }
    let same = true;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(meta)) {
      const n = child(node as Node | undefined, key);
      if (key !== TRUST_KEY || n === true) {
        this.withhold(at, key);
        same = false;
        continue;
      }
      at.push(key);
      const claim = this.prune(meta[key], n, at);
      at.pop();
      if (claim !== meta[key]) same = false;
      setOwn(out, key, claim);
    }
    return same ? meta : out;
  }
  /**
   * The placeholder of a withheld block: a text block naming the rule; from
   * 2025-06-18 its claim holds the block's effective flags that are `true`
   * and the block's own first evidenceRef (its `_meta` claim's, else its
   * embedded resource's), so the label travels on.
   */
  placeholder(index: number, block: unknown, p: PlannedEffect, why?: string): Record<string, unknown> {
    const out: Record<string, unknown> = { type: 'text', text: `[content withheld by ${p.policy}/${p.rule}${why ? `: ${why}` : ''}]` };
    if (!this.blockMeta) return out;
    const claim: Record<string, unknown> = {};
    const flags = this.input.blockFlags(index);
    if (flags?.sensitive === true) claim.sensitive = true;
    if (flags?.untrusted === true) claim.untrusted = true;
    const ref = ownEvidenceRef(block);
    if (ref !== undefined) claim.evidenceRef = ref;
    if (Object.keys(claim).length > 0) out._meta = { [TRUST_KEY]: claim };
    return out;
  }
}

/** The block's own first evidenceRef, with its string EvidenceRef members only. */
function ownEvidenceRef(block: unknown): Record<string, string> | undefined {
  if (!isRecord(block)) return undefined;
  const holders: unknown[] = [own(block, '_meta')];
  const res = own(block, 'resource');
  if (own(block, 'type') === 'resource' && isRecord(res)) holders.push(own(res, '_meta'));
  for (const meta of holders) {
    if (!isRecord(meta)) continue;
    const claim = own(meta, TRUST_KEY);
    if (!isRecord(claim)) continue;
    const ref = own(claim, 'evidenceRef');
    if (!isRecord(ref)) continue;
    const out: Record<string, string> = {};
    for (const m of EVIDENCE_REF_MEMBERS) {
      const v = own(ref, m);
      if (typeof v === 'string') out[m] = v;
    }
    return out;
  }
  return undefined;
}
