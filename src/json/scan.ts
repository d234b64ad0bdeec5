/**
 * One linear pass over a JSON text, before JSON.parse, that finds what the
 * parsed value hides or what must be refused before any recursive work:
 *
 * - the deepest nesting (containers), so hostile depth is refused up front;
 * - objects that repeat a member name (JSON.parse keeps the last silently);
 * - numbers of integral value outside -(2^53-1)..2^53-1, in any notation
 *   (`9007199254740993`, `9007199254740993.0`, `9.007199254740993e15`):
 *   JSON.parse rounds them.
 *
 * The last two make an evidence record non-I-JSON (docs/behaviour/trust-claims.md and
 * 11): no two producers could agree on its digest.
 *
 * Where they are is recorded without building a pointer per occurrence: a
 * path is a chain of shared nodes (parent link and last token, made once
 * per open container and only when something is found below it), an
 * object that repeats names is recorded once however many names it
 * repeats, only the first MAX_LISTED occurrences keep their path, and the
 * rest are counted. A long member name above a million repeats therefore
 * costs one node, not a million copies of the name (docs/behaviour/limits.md:
 * memory and time linear in the body, whatever its shape). Callers that
 * need to know which subtree an occurrence lies in (which evidence entry)
 * read `under`, the tokens the focus's `*` matched, kept once per subtree.
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
import { escapePointerToken } from './pointer.js';

/** A position in the document: its parent and its last token. The root has no parent. */
export interface PathNode {
  readonly parent: PathNode | null;
  readonly token: string | number;
}

/** The document itself (pointer ''). */
export const ROOT_PATH: PathNode = Object.freeze({ parent: null, token: '' });

/** Occurrences of one kind: repeated names (one per object) or unsafe numbers. */
export interface ScanIssues {
  /** How many were found. */
  count: number;
  /** Where the first MAX_LISTED were found, in document order (render with pointerOf). */
  first: PathNode[];
  /**
   * For every occurrence, the tokens the focus's `*` members matched on its
   * path, each escaped as in a pointer and joined by `/` (the evidence index
   * for `['evidence', '*', 'record']`); `''` for a focus without `*`.
   */
  under: Set<string>;
}

export interface JsonScan {
  /** Length of the text in UTF-16 code units: no string parsed from it is longer. */
  textLength: number;
  /** Deepest container nesting seen; 0 for a scalar document. */
  depth: number;
  /** True when depth went past `maxDepth` and the scan stopped there. */
  tooDeep: boolean;
  /** The focus the scan ran with. */
  focus: ScanFocus;
  /** Objects that repeat a member name, inside the focus. */
  duplicateKeys: ScanIssues;
  /** Numbers of integral value outside ±(2^53-1), inside the focus. */
  unsafeIntegers: ScanIssues;
  /** An object on the way to the focus (the top-level object, say, for `['result']`) repeats a member name. */
  repeatsOnPath: boolean;
}

/** Occurrences of each kind whose path is kept; the rest are only counted. */
export const MAX_LISTED = 32;

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
  /** The path of this container, made when first needed. */
  node: PathNode | null;
  /** Whether this object was already recorded as repeating a name. */
  repeated: boolean;
}

/** The pointer of a path node (RFC 6901). */
export function pointerOf(node: PathNode): string {
  const tokens: Array<string | number> = [];
  for (let n: PathNode | null = node; n !== null && n.parent !== null; n = n.parent) tokens.push(n.token);
  let out = '';
  for (let i = tokens.length - 1; i >= 0; i--) out += '/' + escapePointerToken(tokens[i]!);
  return out;
}

/** The path of the container `stack[k]`. */
function nodeOfFrame(stack: Frame[], k: number): PathNode {
  let from = k;
  while (from > 0 && stack[from]!.node === null) from--;
  if (from === 0 && stack[0]!.node === null) stack[0]!.node = ROOT_PATH;
  for (let i = from + 1; i <= k; i++) stack[i]!.node = { parent: stack[i - 1]!.node, token: stack[i - 1]!.token };
  return stack[k]!.node!;
}

/** The `under` key of a position inside the focus (see ScanIssues.under). */
function underKey(stack: Frame[], focus: readonly string[]): string {
  let key = '';
  let first = true;
  for (let i = 0; i < focus.length; i++) {
    if (focus[i] !== '*') continue;
    key += (first ? '' : '/') + escapePointerToken(stack[i]!.token);
    first = false;
  }
  return key;
}

function record(issues: ScanIssues, at: () => PathNode, stack: Frame[], focus: readonly string[]): void {
  issues.count++;
  if (issues.first.length < MAX_LISTED) issues.first.push(at());
  issues.under.add(underKey(stack, focus));
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Whether the number literal text[i..j) has an integral value outside
 * ±(2^53-1). Exact, on the decimal digits: `9007199254740991.5` is not
 * integral (JSON.parse rounds it to 2^53, which is), `1e400` is.
 */
export function unsafeIntegral(lit: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(lit);
  if (m === null) return false; // not a number JSON.parse takes
  const frac = m[2] ?? '';
  let digits = m[1]! + frac;
  let start = 0;
  while (start < digits.length && digits.charCodeAt(start) === 0x30) start++;
  if (start === digits.length) return false; // zero
  let end = digits.length;
  // The exponent may be far out of range of a double; only its sign and size matter.
  let exp = (m[3] === undefined ? 0 : Number(m[3])) - frac.length;
  while (exp < 0 && end > start && digits.charCodeAt(end - 1) === 0x30) {
    end--;
    exp++;
  }
  if (exp < 0) return false; // a fraction remains: not integral
  const length = end - start + exp; // digits of the integral value
  if (length < 16) return false; // below 10^15 < 2^53-1
  if (length > 16) return true; // at least 10^16 > 2^53-1
  digits = digits.slice(start, end) + '0'.repeat(exp);
  return BigInt(digits) > MAX_SAFE;
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

const issues = (): ScanIssues => ({ count: 0, first: [], under: new Set() });

/** Scan `text`; stop early once nesting exceeds `maxDepth`. */
export function scanJson(text: string, maxDepth: number, focus: ScanFocus = []): JsonScan {
  const out: JsonScan = {
    textLength: text.length,
    depth: 0,
    tooDeep: false,
    focus,
    duplicateKeys: issues(),
    unsafeIntegers: issues(),
    repeatsOnPath: false,
  };
  const tokens = focus ?? [];
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
        stack.push({ object, matched, keys: object && matched >= 0 ? [] : null, keySet: null, token: object ? '' : 0, node: null, repeated: false });
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
          if (seenBefore(top, key)) {
            if (top.matched !== inside) out.repeatsOnPath = true;
            else if (!top.repeated) {
              top.repeated = true;
              const k = stack.length - 1;
              record(out.duplicateKeys, () => nodeOfFrame(stack, k), stack, tokens);
            }
          }
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
        let exponent = false;
        while (j < n) {
          const d = text.charCodeAt(j);
          if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x2b || d === 0x2d) j++;
          else if (d === 0x65 || d === 0x45) {
            exponent = true;
            j++;
          } else break;
        }
        // 16 characters is the shortest literal without an exponent that can pass 2^53-1.
        const chars = c === 0x2d ? j - i - 1 : j - i;
        if ((exponent || chars >= 16) && matchedAt(stack[stack.length - 1], focus) === inside && unsafeIntegral(text.slice(i, j))) {
          const k = stack.length - 1;
          const top = stack[k];
          record(out.unsafeIntegers, () => (top === undefined ? ROOT_PATH : { parent: nodeOfFrame(stack, k), token: top.token }), stack, tokens);
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
