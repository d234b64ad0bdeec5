/** Textual media types and the text of a textual blob: what masking reads and spotlight fences (docs/behaviour/forwarding.md). */
import { own } from '../../json/record.js';
// One pass with a table, not a regular expression: a pattern of repeated groups overflowed the stack on 6 MB of base64.
import { isBase64 } from '../../mcp/base64.js';
import { opensUtf8, utf8Text } from '../../detect/encoded.js';

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

/** The text of a textual blob: RFC 4648 base64, decoded with the mimeType's charset (UTF-8 when none or unknown); undefined when not base64. */
export function decodeTextBlob(blob: string, mime: string): string | undefined {
  if (!isBase64(blob)) return undefined;
  const bytes = Buffer.from(blob, 'base64');
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(mime);
  try {
    return new TextDecoder(m ? m[1] : 'utf-8').decode(bytes);
  } catch {
    // An encoding label TextDecoder does not know.
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/**
 * The text of a blob of any media type when its bytes are valid UTF-8 text
 * (no NUL, no other C0 control but tab, line breaks, ESC and BEL); undefined
 * otherwise. A blob whose first byte opens no text (a PNG's 0x89, a JPEG's
 * 0xFF) is known for none from its first 4 characters, before the whole is
 * checked and decoded: every image of a decision is asked.
 */
export function decodeUtf8Blob(blob: string): string | undefined {
  if (blob.length >= 4 && !opensUtf8(Buffer.from(blob.slice(0, 4), 'base64')[0]!)) return undefined;
  if (!isBase64(blob)) return undefined;
  return utf8Text(Buffer.from(blob, 'base64'));
}

/** Most bytes of a binary blob read for its stretches of text: a larger one is passed over, as pictures are. */
export const BINARY_READ_MAX = 4 * 1024 * 1024;

/** A stretch of 8 or more bytes of printable ASCII, tabs, line breaks, ESC and BEL (what `strings` prints, with a terminal's colours and links). */
const ASCII_STRETCH = /[\x07\t\n\r\x1b\x20-\x7e]{8,}/g;

/** The single blob last read by binaryStretches and what it held: a decision reads a block's text more than once. */
let lastBlob: string | undefined;
let lastStretches: string | undefined;

/**
 * The stretches of text among the bytes of a blob that is no text (an
 * uncompressed archive holding a `.env`, a binary with a key compiled in):
 * each of 8 bytes or more of printable ASCII, tabs, line breaks, ESC and BEL, a line
 * each, as `strings` prints them and a model handed the bytes would read
 * them (a credential is ASCII); undefined when it holds none, is not
 * base64, or is larger than BINARY_READ_MAX. Read for credentials and
 * personal data like a text. Native passes: the bytes read as Latin-1, one
 * regular expression over them.
 */
export function binaryStretches(blob: string): string | undefined {
  if (blob === lastBlob) return lastStretches;
  if (blob.length > Math.ceil(BINARY_READ_MAX / 3) * 4 || !isBase64(blob)) return undefined;
  const bytes = Buffer.from(blob, 'base64').toString('latin1');
  const found = bytes.match(ASCII_STRETCH);
  lastBlob = blob;
  lastStretches = found === null ? undefined : found.join('\n');
  return lastStretches;
}

/**
 * The text an image's or audio's `data` holds when its bytes are text
 * (docs/behaviour/labels-and-detectors.md#content-as-a-policy-input): read as a resource's
 * blob is, decoded with a textual media type's charset (an SVG image), else
 * only when it is valid UTF-8 with no control character but tab, line
 * breaks, ESC and BEL, which real pictures and sound are not (their headers hold bytes
 * that are not UTF-8 text); undefined otherwise.
 */
export function mediaText(block: Record<string, unknown>): string | undefined {
  const data = own(block, 'data');
  if (typeof data !== 'string') return undefined;
  const mime = own(block, 'mimeType');
  return isTextualMime(mime) ? decodeTextBlob(data, mime as string) : decodeUtf8Blob(data);
}

/** A media type's `charset` parameter, for a replace. */
export const CHARSET = /;\s*charset\s*=\s*(?:"[^"]*"|[^;\s]+)/i;
