/**
 * The state of one forwarding (src/decision/forward.ts) and its first job:
 * what is withheld. Every member left out beyond whole blocks is listed as
 * an RFC 6901 pointer (law 4), bounded like validation findings, and a
 * member a case-insensitive host could misread (a case-fold collision) is
 * pruned. The layers above add masking (mask.ts), the trust claims of what
 * goes out (claims.ts) and spotlight fences (fence.ts).
 */
import { setOwn } from '../../json/copy.js';
import type { CasefoldNode } from '../../mcp/casefold.js';
import { pointer } from '../../json/pointer.js';
import { isRecord } from '../../json/record.js';
import { atLeast, type Revision } from '../../mcp/revisions.js';
import type { BlockAction, EffectPlan } from '../../policy/effects.js';
import { DetectionCache } from '../../detect/index.js';
import type { Tri } from '../../annotations/tri.js';
import type { LabelRaises } from '../labels.js';

export interface ForwardInput {
  result: Record<string, unknown>;
  revision: Revision;
  plan: EffectPlan;
  /** The tree of the result's case-fold collisions (findCasefoldCollisions), absent when it has none. */
  collisions: CasefoldNode | undefined;
  /** Pointers listed in `withheld` at most; the rest are counted in `omitted`. */
  maxWithheld: number;
  /** Per-decision random boundary for spotlight fences. */
  boundary: string;
  /** Each block's effective flags (data-class escalation included), for placeholders' claims. */
  blockFlags: (index: number) => { sensitive: Tri; untrusted: Tri } | undefined;
  /** The decision's scans (mask spans); a fresh cache when absent. */
  detection?: DetectionCache | undefined;
  /** What the applied label rules raised: forwarded as `true` in the trust claims (docs/behaviour/labels-and-detectors.md). */
  raises?: LabelRaises | undefined;
}

/** One string a mask rule changed (the answer's `masked`). */
export interface MaskedEntry {
  pointer: string;
  kind: string;
  policy: string;
  rule: string;
}

export interface Forwarded {
  result: Record<string, unknown>;
  /** False exactly when `result` is the input itself. */
  modified: boolean;
  /** The action each touched block went through, by input index. */
  actions: Map<number, BlockAction>;
  /** Pointers of what was withheld beyond whole redacted or dropped blocks, sorted. */
  withheld: string[];
  /** Pointers left out of `withheld` past `maxWithheld`. */
  omitted: number;
  /** Each masked string and kind, bounded like `withheld`. */
  masked: MaskedEntry[];
  /** Entries left out of `masked` past `maxWithheld`. */
  maskedOmitted: number;
  /** Input indexes of the blocks a mask rule changed. */
  maskedBlocks: Set<number>;
}

/** The case-fold tree below one object; `true` marks a member to withhold. */
export type Node = CasefoldNode;

export function child(node: Node | undefined, key: string | number): Node | true | undefined {
  return node?.kids.get(String(key));
}

export type Tokens = Array<string | number>;

export function compareTokens(a: Tokens, b: Tokens): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    if (typeof x === 'number') return -1;
    if (typeof y === 'number') return 1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** One forwarding: its input, what it withholds and what each block went through. */
export class Withholding {
  readonly withheld: Tokens[] = [];
  omitted = 0;
  readonly actions = new Map<number, BlockAction>();
  readonly blockMeta: boolean;
  readonly detection: DetectionCache;

  constructor(readonly input: ForwardInput) {
    this.blockMeta = atLeast(input.revision, '2025-06-18');
    this.detection = input.detection ?? new DetectionCache();
  }

  withhold(at: Tokens, key?: string | number): void {
    // Bounded like validation: a pointer costs its depth, and a hostile result may hold a collision in every object.
    if (this.withheld.length >= this.input.maxWithheld) {
      this.omitted++;
      return;
    }
    this.withheld.push(key === undefined ? at.slice() : [...at, key]);
  }
  pointers(): string[] {
    return this.withheld.sort(compareTokens).map((t) => pointer(...t));
  }
  /** `v` less its case-fold collisions (the same value when it has none). */
  prune(v: unknown, node: Node | true | undefined, at: Tokens): unknown {
    if (node === undefined || node === true) return v;
    if (Array.isArray(v)) {
      return v.map((item, i) => {
        at.push(i);
        const out = this.prune(item, node.kids.get(String(i)), at);
        at.pop();
        return out;
      });
    }
    if (!isRecord(v)) return v;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(v)) {
      const n = node.kids.get(key);
      if (n === true) {
        this.withhold(at, key);
        continue;
      }
      at.push(key);
      setOwn(out, key, this.prune(v[key], n, at));
      at.pop();
    }
    return out;
  }
}
