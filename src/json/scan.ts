/**
 * One linear pass over a JSON text, before JSON.parse, that finds what the
 * parsed value hides or what must be refused before any recursive work:
 *
 * - the deepest nesting (containers), so hostile depth is refused up front;
 * - objects that repeat a member name (JSON.parse keeps the last silently);
 * - integer literals outside -(2^53-1)..2^53-1 (JSON.parse rounds them).
 *
 * The last two make an evidence record non-I-JSON (contract section 2): no
 * two producers could agree on its digest. Findings carry RFC 6901 pointers
 * so callers can tell which subtree they fall in.
 *
 * The scanner does not validate the grammar: JSON.parse does that next. On
 * text it cannot follow it stops and reports what it saw so far, and the
 * caller's JSON.parse then rejects the text.
 *
 * A caller that needs the last two only below some members (the records of
 * /v1/evaluate's `evidence`, say) names them as a focus: elsewhere the scan
 * only follows nesting, without reading member names, which is most of its
 * cost on a typical body.
 */
import { escapePointerToken } from '../model.js';

export interface JsonScan {
  /** Length of the text in UTF-16 code units: no string parsed from it is longer. */
  textLength: number;
  /** Deepest container nesting seen; 0 for a scalar document. */
  depth: number;
  /** True when depth went past `maxDepth` and the scan stopped there. */
  tooDeep: boolean;
  /** Pointers of objects that repeat a member name. */
  duplicateKeys: string[];
  /** Pointers of integer literals outside ±(2^53-1). */
  unsafeIntegers: string[];
}

/**
 * Where repeated member names and unsafe integers are looked for: the
 * pointer tokens of the subtrees (`*` matches any member name or index),
 * e.g. `['evidence', '*', 'record']`; `[]` is the whole document and `null`
 * nowhere (depth only).
 */
export type ScanFocus = readonly string[] | null;

interface Frame {
  object: boolean;
  /**
   * How many focus tokens the path to this container matches; -1 once it
   * left the focus for good. Equal to the focus length inside it.
   */
  matched: number;
  /** Member names seen so far (objects only): a list while short, which is cheaper than a Set for the usual few keys. */
  keys: string[] | null;
  keySet: Set<string> | null;
  /** Current member name (objects) or element index (arrays). */
  token: string | number;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function pointerOf(stack: Frame[], upTo: number): string {
  let out = '';
  for (let i = 0; i < upTo; i++) out += '/' + escapePointerToken(stack[i]!.token);
  return out;
}

/** Record a member name; true when the object already had it. */
function seenBefore(frame: Frame, key: string): boolean {
  if (frame.keySet !== null) {
    if (frame.keySet.has(key)) return true;
    frame.keySet.add(key);
    return false;
  }
  const keys = frame.keys!;
  if (keys.includes(key)) return true;
  keys.push(key);
  if (keys.length > 16) frame.keySet = new Set(keys);
  return false;
}

/**
 * Focus tokens matched at the current position of `frame` (its current
 * member or element): -1 when outside the focus and not on the way to it.
 */
function matchedAt(frame: Frame | undefined, focus: ScanFocus): number {
  if (focus === null) return -1;
  if (frame === undefined) return 0;
  const m = frame.matched;
  if (m < 0 || m >= focus.length) return m;
  const want = focus[m];
  return want === '*' || want === String(frame.token) ? m + 1 : -1;
}

/** Scan `text`; stop early once nesting exceeds `maxDepth`. */
export function scanJson(text: string, maxDepth: number, focus: ScanFocus = []): JsonScan {
  const out: JsonScan = { textLength: text.length, depth: 0, tooDeep: false, duplicateKeys: [], unsafeIntegers: [] };
  // Matched count of positions inside the focus (never reached without one).
  const inside = focus === null ? -2 : focus.length;
  const stack: Frame[] = [];
  const n = text.length;
  let i = 0;
  // Whether the next string in an object frame is a member name.
  let expectKey = false;
  while (i < n) {
    const c = text.charCodeAt(i);
    switch (c) {
      case 0x7b: // {
      case 0x5b: {
        // [
        const object = c === 0x7b;
        const matched = matchedAt(stack[stack.length - 1], focus);
        // Member names are read only in objects inside the focus or on the way to it.
        stack.push({ object, matched, keys: object && matched >= 0 ? [] : null, keySet: null, token: object ? '' : 0 });
        if (stack.length > out.depth) {
          out.depth = stack.length;
          if (out.depth > maxDepth) {
            out.tooDeep = true;
            return out;
          }
        }
        expectKey = object;
        i++;
        break;
      }
      case 0x7d: // }
      case 0x5d: // ]
        stack.pop();
        expectKey = false;
        i++;
        break;
      case 0x2c: {
        // ,
        const top = stack[stack.length - 1];
        if (top !== undefined) {
          if (top.object) expectKey = true;
          else top.token = (top.token as number) + 1;
        }
        i++;
        break;
      }
      case 0x3a: // :
        expectKey = false;
        i++;
        break;
      case 0x22: {
        // "
        const start = i + 1;
        let j = start;
        let q: number;
        for (;;) {
          q = text.indexOf('"', j);
          if (q < 0) return out; // unterminated: JSON.parse will say so
          // Count the backslashes right before the quote: an odd run escapes it.
          let b = q - 1;
          while (b >= start && text.charCodeAt(b) === 0x5c) b--;
          if ((q - 1 - b) % 2 === 0) break;
          j = q + 1;
        }
        const top = stack[stack.length - 1];
        if (expectKey && top !== undefined && top.object && top.matched >= 0) {
          let key = text.slice(start, q);
          if (key.includes('\\')) {
            try {
              key = JSON.parse(text.slice(start - 1, q + 1)) as string;
            } catch {
              return out;
            }
          }
          if (top.matched === inside && seenBefore(top, key)) out.duplicateKeys.push(pointerOf(stack, stack.length - 1));
          top.token = key;
        }
        i = q + 1;
        break;
      }
      case 0x2d: // -
      case 0x30:
      case 0x31:
      case 0x32:
      case 0x33:
      case 0x34:
      case 0x35:
      case 0x36:
      case 0x37:
      case 0x38:
      case 0x39: {
        let j = i + 1;
        let integral = true;
        while (j < n) {
          const d = text.charCodeAt(j);
          if (d >= 0x30 && d <= 0x39) j++;
          else if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) {
            integral = false;
            j++;
          } else break;
        }
        // 16 digits is the shortest literal that can pass 2^53-1.
        const digits = c === 0x2d ? j - i - 1 : j - i;
        if (integral && digits >= 16 && matchedAt(stack[stack.length - 1], focus) === inside) {
          let big: bigint | undefined;
          try {
            big = BigInt(text.slice(i, j));
          } catch {
            big = undefined;
          }
          if (big !== undefined && (big > MAX_SAFE || big < -MAX_SAFE)) {
            out.unsafeIntegers.push(pointerOf(stack, stack.length));
          }
        }
        i = j;
        break;
      }
      default:
        i++;
    }
  }
  return out;
}
