/**
 * Spotlight, the fourth job of a forwarding: a spotlit block keeps only the
 * members its type defines in the revision, every reader-visible string
 * fenced with the decision's boundary (law 2); a textual blob is decoded
 * and fenced as text; a block that cannot be fenced is replaced by a
 * placeholder (docs/behaviour/forwarding.md).
 */
import { setOwn } from '../../json/copy.js';
import type { JsonType } from '../../mcp/schema-table.js';
import { hasType } from '../../mcp/shape.js';
import { MCP_TABLES } from '../../mcp/tables.generated.js';
import { hasOwn, isRecord, own } from '../../json/record.js';
import { fence, type PlannedEffect } from '../../policy/effects.js';
import { Claims } from './claims.js';
import { decodeTextBlob, isTextualMime } from './mime.js';
import { child, type Node, type Tokens } from './withhold.js';

/** Members a block of a type the revision does not define keeps under spotlight. */
const GENERIC_BLOCK: Readonly<Record<string, JsonType>> = { type: 'string', annotations: 'object', _meta: 'object' };

export class Fencing extends Claims {
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
      const kept = this.binaryResource(index, block, p, at);
      if (kept !== undefined) return kept;
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
    // A media type whose charset masked text data changed (set once every member is in).
    let mediaType: string | undefined;
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
        case 'mimeType':
          // Exempt from the fence, not from the masks: every string forwarded is read (contract section 19).
          if (typeof v === 'string') value = this.maskIf(index, v, at);
          break;
        case 'type':
          // A type no revision defines is any string the server chose: masked like the rest (a defined one holds nothing to mask).
          if (typeof v === 'string') value = this.maskIf(index, v, at);
          break;
        case 'data': {
          // Not fenced (a picture or a sound cannot be), but data whose bytes are text is masked as text (mask.ts).
          const specs = this.masksFor(index);
          const masked = specs === undefined || (type !== 'image' && type !== 'audio') ? undefined : this.maskMedia(index, b, specs, at.slice(0, -1));
          if (masked !== undefined) {
            value = masked.data;
            if (masked.mimeType !== undefined) mediaType = masked.mimeType;
          }
          break;
        }
        case 'size':
          break;
        case 'annotations': {
          const kept = this.prune(v, child(n, key), at);
          const specs = this.masksFor(index);
          value = specs === undefined ? kept : this.maskDeep(kept, specs, at, index);
          break;
        }
        case '_meta':
          value = this.trustMetaOnly(v, child(n, key), at);
          break;
        case 'name':
          // A link's name is an identifier hosts show in pickers: not fenced prose, but Trustgate's own
          // name for it, from its URI, masked like any string. A URI the masks change names nothing of
          // its own: a segment of it may hold part of what was masked where no detector reads it alone
          // (`postgres://app:<password>@db` ends in `app:<password>@db`).
          value = typeof b.uri === 'string' && this.masksChange(index, b.uri) ? linkName(undefined) : this.maskIf(index, linkName(b.uri), at);
          fenced = true;
          break;
        case 'title':
          // A display string beside the name: withheld rather than fenced into a picker.
          value = undefined;
          this.withhold(at);
          break;
        case 'text':
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
    if (mediaType !== undefined) {
      setOwn(out, 'mimeType', mediaType);
      same = false;
    }
    this.actions.set(index, fenced ? 'spotlight' : 'spotlight-skipped');
    return same ? block : out;
  }
  /**
   * A binary resource (a blob no text can be read from) cannot be fenced,
   * but what names it can be kept: the block stays an embedded resource
   * with its `uri` (masked like any uri) and `mimeType`, and `text` says
   * what was withheld in Trustgate's own words; the blob and every other
   * member are withheld (and listed). Undefined when the block is not such a
   * resource (then the whole block is replaced by a placeholder).
   */
  binaryResource(index: number, block: unknown, p: PlannedEffect, at: Tokens): Record<string, unknown> | undefined {
    if (!isRecord(block) || own(block, 'type') !== 'resource') return undefined;
    const res = own(block, 'resource');
    if (!isRecord(res) || typeof own(res, 'uri') !== 'string' || typeof own(res, 'blob') !== 'string') return undefined;
    for (const key of Object.keys(block)) if (key !== 'type' && key !== 'resource') this.withhold(at, key);
    const where: Tokens = [...at, 'resource'];
    const kept: Record<string, unknown> = {};
    setOwn(kept, 'uri', this.maskIf(index, own(res, 'uri') as string, [...where, 'uri']));
    const mime = own(res, 'mimeType');
    if (typeof mime === 'string') setOwn(kept, 'mimeType', mime);
    for (const key of Object.keys(res)) if (key !== 'uri' && !(key === 'mimeType' && typeof mime === 'string')) this.withhold(where, key);
    const bytes = Math.floor(((own(res, 'blob') as string).replace(/=+$/, '').length * 3) / 4);
    setOwn(kept, 'text', `[binary content withheld by ${p.policy}/${p.rule}: ${bytes} bytes that cannot be fenced; the uri and media type are kept]`);
    // The labels and evidence a placeholder would carry, on the block.
    const meta = own(this.placeholder(index, block, p), '_meta');
    return meta === undefined ? { type: 'resource', resource: kept } : { type: 'resource', resource: kept, _meta: meta };
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
          if (typeof v === 'string') setOwn(out, key, this.maskIf(index, v, [...at, key]));
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

/**
 * The name a spotlit `resource_link` is forwarded with: the last segment of
 * its URI's path (`file:///notes/todo.md` -> `todo.md`), else the URI itself.
 */
export function linkName(uri: unknown): string {
  if (typeof uri !== 'string' || uri === '') return 'resource';
  const path = uri.split(/[?#]/, 1)[0]!;
  return path.split('/').filter((seg) => seg !== '').at(-1) ?? uri;
}
