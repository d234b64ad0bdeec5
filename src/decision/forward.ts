/**
 * What is forwarded (docs/behaviour/forwarding.md): the `result` of an answer, built
 * from what was judged. Pure: the spotlight boundary is passed in; the input
 * is never mutated.
 *
 * - Nothing applied and no member a case-insensitive host could misread:
 *   the input itself is forwarded, unknown members included (validation
 *   reports them; v1 behaviour).
 * - Only case-fold collisions (law 3): the input with those members left
 *   out, and nothing else changed.
 * - Any transforming effect applied (redact, drop, spotlight, at block or
 *   result scope): the result is rebuilt from allow-lists, per protocol
 *   revision, from the schema-derived MCP tables. The envelope keeps
 *   `content`, a boolean `isError`, a string `resultType` (from
 *   2026-07-28) and `_meta` holding the trust claim alone; everything else
 *   (`structuredContent`, which mirrors the blocks; `toolResult`; unknown
 *   members; other `_meta` entries) is withheld, since any of it may repeat
 *   what a block held. A block no effect touched is forwarded as it came
 *   (less its case-fold collisions); a redacted block becomes a placeholder
 *   built from nothing of its content; a spotlit block keeps only the
 *   members its type defines in that revision, with every reader-visible
 *   string fenced (law 2): `text`, an embedded resource's `text` (a textual
 *   `blob` is decoded and forwarded as fenced `text`, and `blob` is listed
 *   as withheld), a `resource_link`'s
 *   `name`, `title` and `description`. Exempt, as the contract says, are
 *   `type`, `mimeType`, `uri`, `annotations`, the trust claim and the
 *   base64 `data` of images and audio. `icons` of a spotlit
 *   `resource_link` are withheld, and a block spotlight cannot fence at all
 *   (a non-textual `blob`, a content item that is not an object, an
 *   embedded resource with neither `text` nor `blob`) is replaced by a
 *   placeholder.
 *
 * `withheld` lists, as RFC 6901 pointers into the request's result, every
 * member withheld beyond whole blocks that an effect redacted or dropped
 * (law 4), in document order of the pointers' tokens.
 */
import { setOwn } from '../json/copy.js';
import type { CasefoldNode } from '../mcp/casefold.js';
import type { JsonType } from '../mcp/schema-table.js';
import { hasType } from '../mcp/shape.js';
import { MCP_TABLES } from '../mcp/tables.generated.js';
import { TRUST_KEY } from '../mcp/meta-key.js';
import { type Tri } from '../annotations/tri.js';
import { pointer } from '../json/pointer.js';
import { hasOwn, isRecord, own } from '../json/record.js';
import { atLeast, type Revision } from '../mcp/revisions.js';
import { fence, masksNothing, planIsEmpty, type BlockAction, type EffectPlan, type MaskSpec, type PlannedEffect } from '../policy/effects.js';
import { DetectionCache, spansOf } from '../detect/index.js';
import { TRUST_FLAGS } from '../annotations/claims.js';
import { raisesNothing, type LabelRaises, type Raised } from './labels.js';

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
type Node = CasefoldNode;

function child(node: Node | undefined, key: string | number): Node | true | undefined {
  return node?.kids.get(String(key));
}

type Tokens = Array<string | number>;

function compareTokens(a: Tokens, b: Tokens): number {
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

/** Whether a media type is text a reader could be handed (docs/behaviour/forwarding.md): text/*, JSON, XML and their +json/+xml kin. */
export function isTextualMime(mime: unknown): boolean {
  if (typeof mime !== 'string') return false;
  const semi = mime.indexOf(';');
  const essence = (semi < 0 ? mime : mime.slice(0, semi)).trim().toLowerCase();
  const slash = essence.indexOf('/');
  if (slash <= 0 || slash === essence.length - 1) return false;
  return (
    essence.startsWith('text/') ||
    essence === 'application/json' ||
    essence === 'application/xml' ||
    essence.endsWith('+json') ||
    essence.endsWith('+xml')
  );
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The text of a textual blob: RFC 4648 base64, decoded with the mimeType's charset (UTF-8 when none or unknown); undefined when not base64. */
export function decodeTextBlob(blob: string, mime: string): string | undefined {
  if (!BASE64.test(blob)) return undefined;
  const bytes = Buffer.from(blob, 'base64');
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(mime);
  try {
    return new TextDecoder(m ? m[1] : 'utf-8').decode(bytes);
  } catch {
    // An encoding label TextDecoder does not know.
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** Members a block of a type the revision does not define keeps under spotlight. */
const GENERIC_BLOCK: Readonly<Record<string, JsonType>> = { type: 'string', annotations: 'object', _meta: 'object' };

const EVIDENCE_REF_MEMBERS = ['type', 'digest', 'canonicalization', 'schema', 'ref'] as const;

/** One forwarding: the withheld pointers it collects and the options it needs. */
class Builder {
  readonly withheld: Tokens[] = [];
  omitted = 0;
  readonly actions = new Map<number, BlockAction>();
  readonly blockMeta: boolean;
  readonly masked: MaskedEntry[] = [];
  maskedOmitted = 0;
  readonly maskedBlocks = new Set<number>();
  /** Kinds a block-scope mask replaced somewhere, with the rule that did: `structuredContent` strings holding them are masked too. */
  readonly blockMaskedKinds = new Map<string, MaskSpec>();
  readonly detection: DetectionCache;

  constructor(readonly input: ForwardInput) {
    this.blockMeta = atLeast(input.revision, '2025-06-18');
    this.detection = input.detection ?? new DetectionCache();
  }

  /** The mask rules that govern block `index` (scope result first), or undefined. */
  masksFor(index: number): MaskSpec[] | undefined {
    const own = this.input.plan.blockMasks.get(index);
    const all = this.input.plan.resultMasks;
    if (own === undefined) return all.length > 0 ? all : undefined;
    return all.length > 0 ? all.concat(own) : own;
  }

  /**
   * `s` with every span of the masked kinds replaced by `[<kind> withheld
   * by <policy>/<rule>]` (the first rule that names the kind); the same
   * string when it holds none. Each masked kind is listed once per string.
   */
  maskString(s: string, specs: readonly MaskSpec[], at: Tokens, block?: number): string {
    if (s.length === 0) return s;
    const kinds = new Set<string>();
    for (const m of specs) for (const k of m.kinds) kinds.add(k);
    const spans = spansOf(this.detection, s, kinds);
    if (spans.length === 0) return s;
    let out = '';
    let from = 0;
    const listed = new Set<string>();
    for (const sp of spans) {
      const m = specs.find((x) => x.kinds.has(sp.kind))!;
      out += s.slice(from, sp.start) + `[${sp.kind} withheld by ${m.policy}/${m.rule}]`;
      from = sp.end;
      if (block !== undefined && !this.input.plan.resultMasks.includes(m) && !this.blockMaskedKinds.has(sp.kind)) this.blockMaskedKinds.set(sp.kind, m);
      if (listed.has(sp.kind)) continue;
      listed.add(sp.kind);
      if (this.masked.length >= this.input.maxWithheld) this.maskedOmitted++;
      else this.masked.push({ pointer: pointer(...at), kind: sp.kind, policy: m.policy, rule: m.rule });
    }
    if (block !== undefined) this.maskedBlocks.add(block);
    return out + s.slice(from);
  }

  /** `s` masked by the rules governing block `index`, if any. */
  maskIf(index: number, s: string, at: Tokens): string {
    const specs = this.masksFor(index);
    return specs === undefined ? s : this.maskString(s, specs, at, index);
  }

  /** Whether a member name holds a span of the masked kinds (the member is then withheld whole). */
  nameHolds(name: string, specs: readonly MaskSpec[]): boolean {
    const kinds = new Set<string>();
    for (const m of specs) for (const k of m.kinds) kinds.add(k);
    return spansOf(this.detection, name, kinds).length > 0;
  }

  /** Every string inside `v` masked (copy on write): the same value when nothing was masked. */
  maskDeep(v: unknown, specs: readonly MaskSpec[], at: Tokens, block?: number): unknown {
    if (typeof v === 'string') return this.maskString(v, specs, at, block);
    if (Array.isArray(v)) {
      let out: unknown[] | undefined;
      for (let i = 0; i < v.length; i++) {
        at.push(i);
        const x = this.maskDeep(v[i], specs, at, block);
        at.pop();
        if (x !== v[i]) (out ??= v.slice())[i] = x;
      }
      return out ?? v;
    }
    if (!isRecord(v)) return v;
    let out: Record<string, unknown> | undefined;
    for (const key of Object.keys(v)) {
      if (this.nameHolds(key, specs)) {
        out ??= copyOwn(v);
        delete out[key];
        this.withhold(at, key);
        if (block !== undefined) this.maskedBlocks.add(block);
        continue;
      }
      at.push(key);
      const x = this.maskDeep(v[key], specs, at, block);
      at.pop();
      if (x !== v[key]) setOwn((out ??= copyOwn(v)), key, x);
    }
    return out ?? v;
  }

  /**
   * A block with its strings masked: every string but `type`, the base64
   * `data` of images and audio and a blob that is not text; a textual blob
   * holding a span is forwarded as masked `text` (the blob withheld).
   */
  maskBlock(index: number, block: unknown, specs: readonly MaskSpec[]): unknown {
    if (!isRecord(block)) return this.maskDeep(block, specs, ['content', index], index);
    const type = own(block, 'type');
    const at: Tokens = ['content', index];
    let out: Record<string, unknown> | undefined;
    for (const key of Object.keys(block)) {
      const v = block[key];
      if (key === 'type' || (key === 'data' && (type === 'image' || type === 'audio'))) continue;
      let x: unknown;
      if (this.nameHolds(key, specs)) {
        out ??= copyOwn(block);
        delete out[key];
        this.withhold(at, key);
        this.maskedBlocks.add(index);
        continue;
      }
      at.push(key);
      if (key === 'resource' && type === 'resource' && isRecord(v)) x = this.maskResource(index, v, specs, at);
      else x = this.maskDeep(v, specs, at, index);
      at.pop();
      if (x !== v) setOwn((out ??= copyOwn(block)), key, x);
    }
    return out ?? block;
  }

  maskResource(index: number, res: Record<string, unknown>, specs: readonly MaskSpec[], at: Tokens): Record<string, unknown> {
    let out: Record<string, unknown> | undefined;
    for (const key of Object.keys(res)) {
      const v = res[key];
      if (key === 'blob') {
        const mime = own(res, 'mimeType');
        if (typeof v !== 'string' || !isTextualMime(mime) || typeof own(res, 'text') === 'string') continue;
        const text = decodeTextBlob(v, mime as string);
        if (text === undefined) continue;
        at.push(key);
        const masked = this.maskString(text, specs, at, index);
        at.pop();
        if (masked !== text) {
          out ??= copyOwn(res);
          delete out.blob;
          setOwn(out, 'text', masked);
          this.withhold(at, key);
        }
        continue;
      }
      at.push(key);
      const x = this.maskDeep(v, specs, at, index);
      at.pop();
      if (x !== v) setOwn((out ??= copyOwn(res)), key, x);
    }
    return out ?? res;
  }

  /** `structuredContent` masked: by every result-scope mask, and where it holds a kind a block-scope mask replaced. */
  maskStructured(v: unknown): unknown {
    const specs: MaskSpec[] = this.input.plan.resultMasks.slice();
    for (const [kind, m] of this.blockMaskedKinds) specs.push({ kinds: new Set([kind]), policy: m.policy, rule: m.rule });
    if (specs.length === 0) return v;
    return this.maskDeep(v, specs, ['structuredContent']);
  }

  /** `claimHolder` (a `_meta` owner) with the raised flags set `true` in its trust claim; copy on write. */
  raiseClaim(holder: Record<string, unknown>, flags: Raised, at: Tokens): Record<string, unknown> {
    const raise = TRUST_FLAGS.filter((f) => flags[f].length > 0);
    if (raise.length === 0) return holder;
    const metaIn = own(holder, '_meta');
    if (metaIn !== undefined && !isRecord(metaIn)) this.withhold(at, '_meta');
    const meta: Record<string, unknown> = isRecord(metaIn) ? copyOwn(metaIn) : {};
    const claimIn = own(meta, TRUST_KEY);
    const claim: Record<string, unknown> = isRecord(claimIn) ? copyOwn(claimIn) : {};
    for (const f of raise) claim[f] = true;
    meta[TRUST_KEY] = claim;
    const out = copyOwn(holder);
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
      res = copyOwn(out);
      res.content = content;
    }
    return this.raiseClaim(res, onResult, []);
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

  /** Whether spotlight can forward any part of this block fenced (else it is replaced by a placeholder). */
  fenceable(block: unknown): boolean {
    if (!isRecord(block)) return false;
    if (own(block, 'type') !== 'resource') return true;
    const res = own(block, 'resource');
    if (!isRecord(res)) return false;
    if (typeof own(res, 'text') === 'string') return true;
    const blob = own(res, 'blob');
    const mime = own(res, 'mimeType');
    return typeof blob === 'string' && isTextualMime(mime) && decodeTextBlob(blob, mime as string) !== undefined;
  }

  /** A spotlit block: the members its type defines, reader-visible strings fenced. The input block when nothing changed. */
  spotlight(index: number, block: unknown, p: PlannedEffect, node: Node | true | undefined): unknown {
    const at: Tokens = ['content', index];
    if (!this.fenceable(block)) {
      this.actions.set(index, 'spotlight');
      this.withhold(at);
      return this.placeholder(index, block, p, 'it cannot be fenced');
    }
    const b = block as Record<string, unknown>;
    const type = own(b, 'type');
    const shape = typeof type === 'string' ? own(MCP_TABLES[this.input.revision].blocks, type) : undefined;
    const members = (shape as { members: Readonly<Record<string, JsonType>> } | undefined)?.members ?? GENERIC_BLOCK;
    const n = node === true ? undefined : node;
    const out: Record<string, unknown> = {};
    let same = true;
    let fenced = false;
    for (const key of Object.keys(b)) {
      const v = b[key];
      const t = hasOwn(members, key) ? members[key] : undefined;
      if (child(n, key) === true || t === undefined || !hasType(v, t) || (key === '_meta' && !this.blockMeta)) {
        this.withhold(at, key);
        same = false;
        continue;
      }
      at.push(key);
      let value: unknown = v;
      switch (key) {
        case 'uri':
          value = this.maskIf(index, v as string, at);
          break;
        case 'type':
        case 'mimeType':
        case 'data':
        case 'size':
          break;
        case 'annotations':
          value = this.prune(v, child(n, key), at);
          break;
        case '_meta':
          value = this.trustMetaOnly(v, child(n, key), at);
          break;
        case 'text':
        case 'name':
        case 'title':
        case 'description':
          // Precedence on one block: mask, then spotlight fences what is left (docs/behaviour/labels-and-detectors.md).
          value = fence(this.maskIf(index, v as string, at), this.input.boundary);
          fenced = true;
          break;
        case 'resource':
          value = this.spotlightResource(v as Record<string, unknown>, child(n, key), at, index);
          fenced = true;
          break;
        default:
          // `icons`, and any member a later table adds: not judged, so not forwarded.
          value = undefined;
          this.withhold(at);
      }
      at.pop();
      if (value !== v) same = false;
      if (value !== undefined) setOwn(out, key, value);
    }
    this.actions.set(index, fenced ? 'spotlight' : 'spotlight-skipped');
    return same ? block : out;
  }

  /** The embedded resource of a spotlit block: text fenced, a textual blob decoded into fenced text, the rest withheld. */
  spotlightResource(res: Record<string, unknown>, node: Node | true | undefined, at: Tokens, index: number): Record<string, unknown> {
    const textVariant = typeof own(res, 'text') === 'string';
    const n = node === true ? undefined : node;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(res)) {
      const v = res[key];
      if (child(n, key) === true) {
        this.withhold(at, key);
        continue;
      }
      switch (key) {
        case 'uri':
        case 'mimeType':
          if (typeof v === 'string') setOwn(out, key, key === 'uri' ? this.maskIf(index, v, [...at, key]) : v);
          else this.withhold(at, key);
          break;
        case '_meta': {
          if (!this.blockMeta) {
            this.withhold(at, key);
            break;
          }
          at.push(key);
          const meta = this.trustMetaOnly(v, child(n, key), at);
          at.pop();
          if (meta !== undefined) setOwn(out, key, meta);
          break;
        }
        case 'text':
          setOwn(out, 'text', fence(this.maskIf(index, v as string, [...at, key]), this.input.boundary));
          break;
        case 'blob':
          // A text resource's blob is not one of its members; a blob resource
          // is fenceable only with a textual mimeType (checked before), and
          // its decoded text takes the blob's place. Either way the member
          // `blob` is not forwarded, so it is listed.
          if (!textVariant) setOwn(out, 'text', fence(this.maskIf(index, decodeTextBlob(v as string, res.mimeType as string)!, [...at, key]), this.input.boundary));
          this.withhold(at, key);
          break;
        default:
          this.withhold(at, key);
      }
    }
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

function copyOwn(v: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) setOwn(out, key, v[key]);
  return out;
}

/** The result to forward for one decision (see the module comment). */
export function forward(input: ForwardInput): Forwarded {
  const { result, plan } = input;
  const tree = input.collisions;
  const b = new Builder(input);
  const done = (out: Record<string, unknown>, modified: boolean): Forwarded => ({
    result: out,
    modified,
    actions: b.actions,
    withheld: modified ? b.pointers() : [],
    omitted: modified ? b.omitted : 0,
    masked: b.masked,
    maskedOmitted: b.maskedOmitted,
    maskedBlocks: b.maskedBlocks,
  });
  const labelsNothing = input.raises === undefined || raisesNothing(input.raises);
  if (planIsEmpty(plan)) {
    if (!tree && masksNothing(plan) && labelsNothing) return done(result, false);
    // No block is rebuilt: the result (less its case-fold collisions) with its strings masked and its claims raised (docs/behaviour/labels-and-detectors.md).
    let out = tree ? (b.prune(result, tree, []) as Record<string, unknown>) : result;
    if (!masksNothing(plan)) {
      const content = own(out, 'content');
      let next: Record<string, unknown> | undefined;
      if (Array.isArray(content)) {
        let blocks: unknown[] | undefined;
        for (let i = 0; i < content.length; i++) {
          const specs = b.masksFor(i);
          if (specs === undefined) continue;
          const x = b.maskBlock(i, content[i], specs);
          if (x !== content[i]) (blocks ??= content.slice())[i] = x;
        }
        if (blocks !== undefined) setOwn((next = copyOwn(out)), 'content', blocks);
      }
      for (const key of Object.keys(out)) {
        if (key === 'content') continue;
        const v = out[key];
        // Scope result masks every string of the result; scope block reaches structuredContent where it holds a masked kind.
        const x = key === 'structuredContent' ? b.maskStructured(v) : plan.resultMasks.length > 0 ? b.maskDeep(v, plan.resultMasks, [key]) : v;
        if (x !== v) setOwn((next ??= copyOwn(out)), key, x);
      }
      if (next !== undefined) out = next;
    }
    out = b.applyLabels(out, (i) => i);
    return done(out, out !== result);
  }

  let out: Record<string, unknown> = {};
  let changed = false;
  const positions = new Map<number, number>();
  for (const key of Object.keys(result)) {
    const v = result[key];
    const n = child(tree, key);
    if (n === true) {
      b.withhold([], key);
      continue;
    }
    switch (key) {
      case 'content': {
        if (!Array.isArray(v)) {
          // Only a result-scope effect reaches a content that is not an array: nothing of it is judged.
          b.withhold([], key);
          setOwn(out, key, []);
          break;
        }
        const next: unknown[] = [];
        for (let i = 0; i < v.length; i++) {
          const block: unknown = v[i];
          const p = plan.blocks.get(i);
          const bn = child(n, i);
          if (p?.effect !== 'drop') positions.set(i, next.length);
          if (!p) {
            let kept = b.prune(block, bn, ['content', i]);
            const specs = b.masksFor(i);
            if (specs !== undefined) kept = b.maskBlock(i, kept, specs);
            if (kept !== block) changed = true;
            next.push(kept);
          } else if (p.effect === 'drop') {
            b.actions.set(i, 'drop');
            changed = true;
          } else if (p.effect === 'redact') {
            b.actions.set(i, 'redact');
            next.push(b.placeholder(i, block, p));
            changed = true;
          } else {
            const kept = b.spotlight(i, block, p, bn);
            if (kept !== block) changed = true;
            next.push(kept);
          }
        }
        setOwn(out, key, next);
        break;
      }
      case 'isError':
        if (typeof v === 'boolean') setOwn(out, key, v);
        else b.withhold([], key);
        break;
      case 'resultType':
        if (typeof v === 'string' && atLeast(input.revision, '2026-07-28')) setOwn(out, key, v);
        else b.withhold([], key);
        break;
      case '_meta': {
        const meta = b.trustMetaOnly(v, n, ['_meta']);
        if (meta !== v) changed = true;
        if (meta !== undefined) setOwn(out, key, meta);
        break;
      }
      default:
        // structuredContent (it mirrors the blocks), toolResult, unknown members.
        b.withhold([], key);
    }
  }
  if (!changed && b.withheld.length === 0 && b.omitted === 0 && labelsNothing) return done(result, false);
  // A result with no content (the compatibility `toolResult` form, say) that a
  // result-scope effect rebuilt still goes out as a CallToolResult.
  if (!hasOwn(out, 'content')) setOwn(out, 'content', []);
  out = b.applyLabels(out, (i) => positions.get(i));
  return done(out, true);
}
