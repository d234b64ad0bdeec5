/** Every kind the masks of `specs` name. */
function kindsOf(specs: readonly MaskSpec[]): Set<string> {
  const kinds = new Set<string>();
  for (const m of specs) for (const k of m.kinds) kinds.add(k);
  return kinds;
}

/** The first mask that names `kind` (the first of all for `unchecked`, a string the deadline left unscanned). */
function specFor(specs: readonly MaskSpec[], kind: string): MaskSpec {
  return specs.find((x) => x.kinds.has(kind)) ?? specs[0]!;
}

/**
 * Masking, the second job of a forwarding: the spans of the kinds a `mask`
 * rule names (docs/behaviour/labels-and-detectors.md) replaced in every
 * string it governs, each masked string and kind listed once.
 */
import { copyWithout, setOwn } from '../../json/copy.js';
import { isRecord, own } from '../../json/record.js';
import { pointer } from '../../json/pointer.js';
import type { MaskSpec } from '../../policy/effects.js';
import { spansOf } from '../../detect/index.js';
import { binaryStretches, CHARSET, decodeTextBlob, decodeUtf8Blob, isTextualMime, mediaText } from './mime.js';
import { isLongInteger } from '../text.js';
import { Withholding, type MaskedEntry, type Tokens } from './withhold.js';

export class Masking extends Withholding {
  readonly masked: MaskedEntry[] = [];
  maskedOmitted = 0;
  readonly maskedBlocks = new Set<number>();
  /** Kinds a block-scope mask replaced somewhere, with the rule that did: `structuredContent` strings holding them are masked too. */
  readonly blockMaskedKinds = new Map<string, MaskSpec>();

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
    const kinds = kindsOf(specs);
    const spans = spansOf(this.detection, s, kinds);
    if (spans.length === 0) return s;
    let out = '';
    let from = 0;
    const listed = new Set<string>();
    for (const sp of spans) {
      // A string the decision's deadline left unscanned (kind `unchecked`) is masked whole by the first rule that asked.
      const m = specFor(specs, sp.kind);
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
  /** Whether the rules governing block `index` would mask anything in `s` (nothing is listed). */
  masksChange(index: number, s: string): boolean {
    const specs = this.masksFor(index);
    return specs !== undefined && s.length > 0 && this.nameHolds(s, specs);
  }
  /** `s` masked by the rules governing block `index`, if any. */
  maskIf(index: number, s: string, at: Tokens): string {
    const specs = this.masksFor(index);
    return specs === undefined ? s : this.maskString(s, specs, at, index);
  }
  /** Whether a member name holds a span of the masked kinds (the member is then withheld whole). */
  nameHolds(name: string, specs: readonly MaskSpec[]): boolean {
    const kinds = kindsOf(specs);
    return spansOf(this.detection, name, kinds).length > 0;
  }
  /** Every string inside `v` masked (copy on write): the same value when nothing was masked. */
  maskDeep(v: unknown, specs: readonly MaskSpec[], at: Tokens, block?: number): unknown {
    if (typeof v === 'string') return this.maskString(v, specs, at, block);
    if (isLongInteger(v)) {
      // A card number written as a number is replaced, as in a string, by the placeholder (a string).
      const written = String(v);
      const masked = this.maskString(written, specs, at, block);
      return masked === written ? v : masked;
    }
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
        out ??= copyWithout(v);
        delete out[key];
        this.withhold(at, key);
        if (block !== undefined) this.maskedBlocks.add(block);
        continue;
      }
      at.push(key);
      const x = this.maskDeep(v[key], specs, at, block);
      at.pop();
      if (x !== v[key]) setOwn((out ??= copyWithout(v)), key, x);
    }
    return out ?? v;
  }
  /**
   * A block with its strings masked: every string but the base64 `data` of
   * images and audio that is not text and a blob that is not text (`type` too: a type no
   * revision defines is any string the server chose); a textual blob
   * holding a span is forwarded as masked `text` (the blob withheld), a
   * binary one whose stretches of text hold one as a placeholder `text`.
   */
  maskBlock(index: number, block: unknown, specs: readonly MaskSpec[]): unknown {
    if (!isRecord(block)) return this.maskDeep(block, specs, ['content', index], index);
    const type = own(block, 'type');
    const at: Tokens = ['content', index];
    let out: Record<string, unknown> | undefined;
    for (const key of Object.keys(block)) {
      const v = block[key];
      if (key === 'data' && (type === 'image' || type === 'audio')) {
        const masked = this.maskMedia(index, block, specs, at);
        if (masked !== undefined) {
          out ??= copyWithout(block);
          setOwn(out, 'data', masked.data);
          if (masked.mimeType !== undefined) setOwn(out, 'mimeType', masked.mimeType);
        }
        continue;
      }
      let x: unknown;
      if (this.nameHolds(key, specs)) {
        out ??= copyWithout(block);
        delete out[key];
        this.withhold(at, key);
        this.maskedBlocks.add(index);
        continue;
      }
      at.push(key);
      if (key === 'resource' && type === 'resource' && isRecord(v)) x = this.maskResource(index, v, specs, at);
      else x = this.maskDeep(v, specs, at, index);
      at.pop();
      if (x !== v) setOwn((out ??= copyWithout(block)), key, x);
    }
    return out ?? block;
  }
  /**
   * An image's or audio's `data` whose bytes are text (text under a
   * picture's media type, an SVG) masked as text: undefined when it is not
   * text or nothing was masked; else the masked text's bytes in UTF-8 as
   * base64, and the media type with a `charset` it names said to be UTF-8.
   */
  maskMedia(index: number, block: Record<string, unknown>, specs: readonly MaskSpec[], at: Tokens): { data: string; mimeType?: string } | undefined {
    const text = mediaText(block);
    if (text === undefined) return undefined;
    at.push('data');
    const masked = this.maskString(text, specs, at, index);
    at.pop();
    if (masked === text) return undefined;
    const mime = own(block, 'mimeType');
    const data = Buffer.from(masked, 'utf8').toString('base64');
    return typeof mime === 'string' && CHARSET.test(mime) ? { data, mimeType: mime.replace(CHARSET, '; charset=utf-8') } : { data };
  }
  maskResource(index: number, res: Record<string, unknown>, specs: readonly MaskSpec[], at: Tokens): Record<string, unknown> {
    let out: Record<string, unknown> | undefined;
    for (const key of Object.keys(res)) {
      const v = res[key];
      if (key === 'blob') {
        const mime = own(res, 'mimeType');
        if (typeof v !== 'string' || typeof own(res, 'text') === 'string') continue;
        // A blob of any media type whose bytes are UTF-8 text is read as text (a credential in an "octet-stream"),
        // forwarded as its masked text where it holds a masked kind. Bytes that are no text: where their stretches of
        // text hold one, the blob is withheld whole (its bytes cannot be masked in place without breaking what they
        // encode), a placeholder in its place.
        const text = isTextualMime(mime) ? decodeTextBlob(v, mime as string) : decodeUtf8Blob(v);
        let kept: string | undefined;
        if (text !== undefined) {
          at.push(key);
          const masked = this.maskString(text, specs, at, index);
          at.pop();
          if (masked !== text) kept = masked;
        } else {
          const stretches = isTextualMime(mime) ? undefined : binaryStretches(v);
          if (stretches !== undefined) kept = this.maskBinary(index, stretches, specs, [...at, key], v);
        }
        if (kept !== undefined) {
          out ??= copyWithout(res);
          delete out.blob;
          setOwn(out, 'text', kept);
          this.withhold(at, key);
        }
        continue;
      }
      at.push(key);
      const x = this.maskDeep(v, specs, at, index);
      at.pop();
      if (x !== v) setOwn((out ??= copyWithout(res)), key, x);
    }
    return out ?? res;
  }
  /**
   * The placeholder of a binary blob whose stretches of text `stretches`
   * hold a masked kind (each kind listed as maskString lists it), or
   * undefined when they hold none.
   */
  maskBinary(index: number, stretches: string, specs: readonly MaskSpec[], at: Tokens, blob: string): string | undefined {
    const kinds = kindsOf(specs);
    const first = spansOf(this.detection, stretches, kinds)[0];
    if (first === undefined) return undefined;
    this.maskString(stretches, specs, at, index);
    const m = specFor(specs, first.kind);
    const bytes = Math.floor((blob.replace(/=+$/, '').length * 3) / 4);
    return `[${first.kind} withheld by ${m.policy}/${m.rule}: binary content of ${bytes} bytes that holds it; the uri and media type are kept]`;
  }
  /** `structuredContent` masked: by every result-scope mask, and where it holds a kind a block-scope mask replaced. */
  maskStructured(v: unknown): unknown {
    const specs: MaskSpec[] = this.input.plan.resultMasks.slice();
    for (const [kind, m] of this.blockMaskedKinds) specs.push({ kinds: new Set([kind]), policy: m.policy, rule: m.rule });
    if (specs.length === 0) return v;
    return this.maskDeep(v, specs, ['structuredContent']);
  }
}
