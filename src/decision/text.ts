/**
 * Content as a policy input (docs/behaviour/labels-and-detectors.md): `block.text` is the text
 * a block shows, `result.text` every block's text and every string of
 * `structuredContent`, joined with newlines.
 */
import { isRecord, own } from '../json/record.js';
import { decodeTextBlob, isTextualMime } from './forward/mime.js';

/** The text of a text block or embedded text resource, a textual blob decoded (docs/behaviour/labels-and-detectors.md#content-as-a-policy-input), `""` otherwise. */
export function blockText(block: unknown): string {
  if (!isRecord(block)) return '';
  const type = own(block, 'type');
  if (type === 'text') {
    const t = own(block, 'text');
    return typeof t === 'string' ? t : '';
  }
  if (type !== 'resource') return '';
  const res = own(block, 'resource');
  if (!isRecord(res)) return '';
  const t = own(res, 'text');
  if (typeof t === 'string') return t;
  const blob = own(res, 'blob');
  const mime = own(res, 'mimeType');
  if (typeof blob !== 'string' || !isTextualMime(mime)) return '';
  return decodeTextBlob(blob, mime as string) ?? '';
}

/** Every string value inside `v`, in document order (member names are not text a reader is shown as such). */
export function stringsOf(v: unknown, out: string[] = []): string[] {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'string') out.push(x);
    else if (Array.isArray(x)) for (let i = x.length - 1; i >= 0; i--) stack.push(x[i]);
    else if (isRecord(x)) {
      const keys = Object.keys(x);
      for (let i = keys.length - 1; i >= 0; i--) stack.push(x[keys[i]!]);
    }
  }
  return out;
}
