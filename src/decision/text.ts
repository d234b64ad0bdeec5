/**
 * Content as a policy input (docs/behaviour/labels-and-detectors.md): `block.text` is the text
 * a block shows, `result.text` every string of the result a host will see (the blocks' texts, their
 * other strings, the envelope's members, `structuredContent`'s names and strings), joined with newlines.
 */
import { isRecord, own } from '../json/record.js';
import { TRUST_KEY } from '../mcp/meta-key.js';
import { binaryStretches, decodeTextBlob, decodeUtf8Blob, isTextualMime, mediaText } from './forward/mime.js';

/** The text of a text block or embedded text resource, a textual blob decoded, a binary blob's stretches of text, an image's or audio's data that is text (docs/behaviour/labels-and-detectors.md#content-as-a-policy-input), `""` otherwise. */
export function blockText(block: unknown): string {
  if (!isRecord(block)) return '';
  const type = own(block, 'type');
  if (type === 'text') {
    const t = own(block, 'text');
    return typeof t === 'string' ? t : '';
  }
  if (type === 'image' || type === 'audio') return mediaText(block) ?? '';
  if (type !== 'resource') return '';
  const res = own(block, 'resource');
  if (!isRecord(res)) return '';
  const t = own(res, 'text');
  if (typeof t === 'string') return t;
  const blob = own(res, 'blob');
  const mime = own(res, 'mimeType');
  if (typeof blob !== 'string') return '';
  // A blob of any media type that decodes to valid UTF-8 is text a reader may be shown; one that does not, its
  // stretches of text (an archive holding a `.env`).
  if (!isTextualMime(mime)) return decodeUtf8Blob(blob) ?? binaryStretches(blob) ?? '';
  return decodeTextBlob(blob, mime as string) ?? '';
}

/** A block's members a host shows as text one beside the other (a resource link's). */
const SHOWN_SIDE_BY_SIDE: ReadonlySet<string> = new Set(['name', 'title', 'description']);

/**
 * The other strings of a block a host will see, beside its text
 * (blockText): every member name and string value (annotations, `_meta`
 * but the trust claim, a resource link's name, title, URI and
 * description, and `type`: a block of a type no revision defines is
 * forwarded as it came), without the base64 `data` of images and audio
 * (blockText reads it where it is text), and what blockText already reads (`text`, a resource's `text` or blob).
 * With `shown`, the places in `out` of the block's name, title and description, in their order.
 */
export function otherStrings(block: unknown, out: string[] = [], shown?: number[]): string[] {
  if (!isRecord(block)) return stringsOf(block, out, true, true);
  const type = own(block, 'type');
  for (const key of Object.keys(block)) {
    if ((key === 'text' && type === 'text') || (key === 'data' && (type === 'image' || type === 'audio'))) continue;
    out.push(key);
    const v = block[key];
    // The text a host shows of a link (its name, title and description, one beside the other): where in `out`.
    if (shown !== undefined && typeof v === 'string' && SHOWN_SIDE_BY_SIDE.has(key)) shown.push(out.length);
    if (key === '_meta' && isRecord(v)) {
      metaStrings(v, out);
      continue;
    }
    if (key === 'resource' && type === 'resource' && isRecord(v)) {
      for (const k of Object.keys(v)) {
        out.push(k);
        if (k !== 'text' && k !== 'blob') stringsOf(v[k], out, true, true);
      }
      continue;
    }
    stringsOf(v, out, true, true);
  }
  return out;
}

/** Every member name of a `_meta` and every string inside it but the trust claim's (its digests and URLs are read as claims). */
function metaStrings(meta: Record<string, unknown>, out: string[]): void {
  for (const k of Object.keys(meta)) {
    out.push(k);
    if (k !== TRUST_KEY) stringsOf(meta[k], out, true, true);
  }
}

/**
 * The strings of a result outside its blocks and `structuredContent` (read
 * apart): every other member's name and strings, its `_meta` as a block's.
 * A result of no blocks is forwarded with these members as they came, so
 * they are read as the rest is.
 */
export function envelopeStrings(result: Record<string, unknown>, out: string[] = []): string[] {
  for (const key of Object.keys(result)) {
    if (key === 'content' || key === 'structuredContent') continue;
    out.push(key);
    const v = result[key];
    if (key === '_meta' && isRecord(v)) metaStrings(v, out);
    else stringsOf(v, out, true, true);
  }
  return out;
}

/**
 * The parts of a result read as the JSON they are sent as, member names
 * beside their values (DetectionCache.readStructure): `structuredContent`,
 * the envelope's other members (its `_meta` but the trust claim) and each
 * block's members but what blockText reads (a text block's `text`, an
 * image's `data`, a resource's `text` or `blob`). A value a name names,
 * `{"password": "..."}`, is known only there.
 */
export function namedStructures(result: Record<string, unknown>, blocks: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  const structured = own(result, 'structuredContent');
  if (isRecord(structured) || Array.isArray(structured)) out.push(structured);
  // (Made without a prototype: a member named `__proto__` is data here as everywhere.)
  const envelope: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(result)) {
    if (key === 'content' || key === 'structuredContent') continue;
    const v = result[key];
    envelope[key] = key === '_meta' && isRecord(v) ? without(v, TRUST_KEY) : v;
  }
  out.push(envelope);
  for (const b of blocks) {
    if (!isRecord(b)) continue;
    const type = own(b, 'type');
    const view: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(b)) {
      if ((key === 'text' && type === 'text') || (key === 'data' && (type === 'image' || type === 'audio'))) continue;
      const v = b[key];
      view[key] = key === 'resource' && type === 'resource' && isRecord(v) ? without(without(v, 'text'), 'blob') : key === '_meta' && isRecord(v) ? without(v, TRUST_KEY) : v;
    }
    out.push(view);
  }
  return out;
}

/** `o` without its member `key` (a copy where it has one). */
function without(o: Record<string, unknown>, key: string): Record<string, unknown> {
  if (!Object.hasOwn(o, key)) return o;
  const copy: Record<string, unknown> = Object.create(null);
  for (const k of Object.keys(o)) if (k !== key) copy[k] = o[k];
  return copy;
}

/**
 * Whether a JSON number may be personal data or an account a detector reads
 * (a phone, card, SSN or account number written as a number): an integer of
 * 7 digits or more. Smaller ones (counts, sizes, priorities) are not read.
 */
export function isLongInteger(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && Math.abs(x) >= 1e6;
}

/**
 * Every string value inside `v`, in document order; with `names`, every
 * member name too, before its value; with `numbers`, every long integer
 * (isLongInteger) as the text it is written as.
 */
export function stringsOf(v: unknown, out: string[] = [], names = false, numbers = false): string[] {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'string') out.push(x);
    else if (numbers && isLongInteger(x)) out.push(String(x));
    else if (Array.isArray(x)) for (let i = x.length - 1; i >= 0; i--) stack.push(x[i]);
    else if (isRecord(x)) {
      const keys = Object.keys(x);
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push(x[keys[i]!]);
        if (names) stack.push(keys[i]!);
      }
    }
  }
  return out;
}

/** Every member name inside `v`, in document order. */
export function memberNames(v: unknown, out: string[] = []): string[] {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (Array.isArray(x)) for (let i = x.length - 1; i >= 0; i--) stack.push(x[i]);
    else if (isRecord(x)) {
      const keys = Object.keys(x);
      for (let i = keys.length - 1; i >= 0; i--) stack.push(x[keys[i]!]);
      for (const k of keys) out.push(k);
    }
  }
  return out;
}
