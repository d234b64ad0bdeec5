/**
 * Deterministic CBOR encoding of parsed JSON values.
 *
 * Profile (frozen; digests depend on it byte for byte):
 * - RFC 8949 section 4.2.1 core deterministic encoding: definite lengths only,
 *   shortest argument heads, map keys sorted bytewise by their encoded bytes.
 * - RFC 8949 section 6.2 number rule: a number that is integral and within
 *   ±(2^53-1) is a CBOR integer (so 1.0 is `01` and -0 is `00`); any other
 *   number is the shortest of float16, float32, float64 that holds it exactly.
 * - Strings are UTF-8 text strings (major type 3); a lone surrogate has no
 *   UTF-8 form and is rejected.
 *
 * The encoder walks the value with an explicit stack, so nesting depth is
 * bounded by memory, not by the call stack.
 */
import { CanonicalizationError } from './canonicalization-error.js';

const MT_UNSIGNED = 0x00;
const MT_NEGATIVE = 0x20;
const MT_TEXT = 0x60;
const MT_ARRAY = 0x80;
const MT_MAP = 0xa0;
const FLOAT16 = 0xf9;
const FLOAT32 = 0xfa;
const FLOAT64 = 0xfb;
const FALSE = 0xf4;
const TRUE = 0xf5;
const NULL = 0xf6;

/** Scratch buffers larger than this are dropped after use rather than kept for the next call. */
const RETAIN_LIMIT = 4 * 1024 * 1024;
const INITIAL_SIZE = 8 * 1024;
/** Strings shorter than this are UTF-8 encoded in JS; native calls cost more than the loop. */
const SHORT_STRING = 64;
/**
 * Parsed JSON cannot be cyclic, but a caller's object graph can. Below this
 * depth cycles are not looked for (zero cost for real records); beyond it
 * every container on the stack is tracked, so a cycle is caught after at most
 * one more trip around it instead of growing the stack without bound.
 */
const CYCLE_CHECK_DEPTH = 512;

// Float32 bits of a number, for the float16 exactness test.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

const wellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

function notJson(what: string): CanonicalizationError {
  return new CanonicalizationError(`record is not JSON data (${what})`, 'not-json');
}

function loneSurrogate(): CanonicalizationError {
  return new CanonicalizationError('record holds a lone surrogate, which has no UTF-8 form', 'lone-surrogate');
}

/**
 * The float16 bit pattern of a number already known to be exactly a float32,
 * or -1 when float16 cannot hold it exactly (subnormals included).
 */
function float16Bits(v: number): number {
  f32[0] = v;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127;
  const mant = bits & 0x7fffff;
  if (exp >= -14 && exp <= 15) {
    // Normal float16: 10 mantissa bits, so the low 13 of float32's 23 must be zero.
    if ((mant & 0x1fff) !== 0) return -1;
    return sign | ((exp + 15) << 10) | (mant >>> 13);
  }
  if (exp >= -24 && exp < -14) {
    // Subnormal float16: value = k * 2^-24 with k < 1024.
    const full = mant | 0x800000;
    const shift = -exp - 1;
    if ((full & ((1 << shift) - 1)) !== 0) return -1;
    return sign | (full >>> shift);
  }
  // Zero never reaches here (it is an integer); float32 subnormals, and
  // exponents above 15, are out of float16 range.
  return -1;
}

/** Keys are compared as ASCII strings only when every key is ASCII. */
function allAscii(keys: string[]): boolean {
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    for (let j = 0; j < k.length; j++) if (k.charCodeAt(j) > 0x7f) return false;
  }
  return true;
}

/**
 * For ASCII keys, bytewise order of encoded keys is: shorter first (a
 * text-string head grows with the length and is big-endian, so heads order
 * by length), then bytewise on the characters, which is what `<` does.
 */
function compareAscii(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : 1);
}

class Encoder {
  buf: Buffer = Buffer.allocUnsafe(INITIAL_SIZE);
  pos = 0;
  busy = false;

  // Explicit stack of open containers, as parallel arrays (no per-frame objects).
  // keys[i] === null marks an array frame; keyBytes[i] is set only when the
  // keys needed their encodings to be sorted and can be copied as-is.
  private conts: unknown[] = [];
  private keys: (string[] | null)[] = [];
  private keyBytes: (Uint8Array[] | null)[] = [];
  private idx: number[] = [];
  private lens: number[] = [];
  private sp = 0;
  private onStack: Set<unknown> | null = null;

  encode(root: unknown): Uint8Array {
    this.pos = 0;
    this.sp = 0;
    try {
      this.item(root);
      while (this.sp > 0) {
        const top = this.sp - 1;
        const i = this.idx[top]!;
        if (i === this.lens[top]) {
          this.pop(top);
          continue;
        }
        this.idx[top] = i + 1;
        const ks = this.keys[top];
        if (!ks) {
          this.item((this.conts[top] as unknown[])[i]);
        } else {
          const kb = this.keyBytes[top];
          const k = ks[i]!;
          if (!kb) this.text(k);
          else this.raw(kb[i]!);
          this.item((this.conts[top] as Record<string, unknown>)[k]);
        }
      }
      const out = new Uint8Array(this.pos);
      out.set(this.buf.subarray(0, this.pos));
      return out;
    } finally {
      // Release references into the record and oversized scratch space.
      while (this.sp > 0) this.pop(this.sp - 1);
      this.onStack = null;
      if (this.buf.length > RETAIN_LIMIT) this.buf = Buffer.allocUnsafe(INITIAL_SIZE);
      if (this.conts.length > CYCLE_CHECK_DEPTH) {
        this.conts = [];
        this.keys = [];
        this.keyBytes = [];
        this.idx = [];
        this.lens = [];
      }
    }
  }

  private pop(top: number): void {
    if (top >= CYCLE_CHECK_DEPTH && this.onStack !== null) this.onStack.delete(this.conts[top]);
    this.conts[top] = undefined;
    this.keys[top] = null;
    this.keyBytes[top] = null;
    this.sp = top;
  }

  private push(c: unknown, ks: string[] | null, kb: Uint8Array[] | null, len: number): void {
    const sp = this.sp;
    if (sp >= CYCLE_CHECK_DEPTH) {
      const seen = (this.onStack ??= new Set());
      if (seen.has(c)) throw notJson('cyclic structure');
      seen.add(c);
    }
    this.conts[sp] = c;
    this.keys[sp] = ks;
    this.keyBytes[sp] = kb;
    this.idx[sp] = 0;
    this.lens[sp] = len;
    this.sp = sp + 1;
  }

  private grow(need: number): void {
    let size = this.buf.length * 2;
    while (size < this.pos + need) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Write one value: scalars completely, containers as a head plus a stack frame. */
  private item(v: unknown): void {
    switch (typeof v) {
      case 'string':
        this.text(v);
        return;
      case 'number':
        this.number(v);
        return;
      case 'boolean':
        if (this.pos + 1 > this.buf.length) this.grow(1);
        this.buf[this.pos++] = v ? TRUE : FALSE;
        return;
      case 'object':
        if (v === null) {
          if (this.pos + 1 > this.buf.length) this.grow(1);
          this.buf[this.pos++] = NULL;
        } else if (Array.isArray(v)) {
          const n = v.length;
          this.head(MT_ARRAY, n);
          if (n > 0) this.push(v, null, null, n);
        } else {
          this.map(v);
        }
        return;
      default:
        throw notJson(typeof v);
    }
  }

  private map(o: object): void {
    const proto: unknown = Object.getPrototypeOf(o);
    // Plain objects only (any realm, or null-prototype); Date, Map, typed arrays etc. are not JSON data.
    if (proto !== Object.prototype && proto !== null && Object.getPrototypeOf(proto) !== null) {
      throw notJson('non-plain object');
    }
    const ks = Object.keys(o);
    const n = ks.length;
    this.head(MT_MAP, n);
    if (n === 0) return;
    if (n === 1 || allAscii(ks)) {
      if (n > 1) ks.sort(compareAscii);
      this.push(o, ks, null, n);
      return;
    }
    // Non-ASCII keys: sort by the encoded bytes themselves, computed once per key.
    const enc: Uint8Array[] = new Array<Uint8Array>(n);
    const order: number[] = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      enc[i] = encodedKey(ks[i]!);
      order[i] = i;
    }
    order.sort((a, b) => Buffer.compare(enc[a]!, enc[b]!));
    const sortedKeys: string[] = new Array<string>(n);
    const sortedBytes: Uint8Array[] = new Array<Uint8Array>(n);
    for (let i = 0; i < n; i++) {
      const j = order[i]!;
      sortedKeys[i] = ks[j]!;
      sortedBytes[i] = enc[j]!;
    }
    this.push(o, sortedKeys, sortedBytes, n);
  }

  private raw(bytes: Uint8Array): void {
    const n = bytes.length;
    if (this.pos + n > this.buf.length) this.grow(n);
    this.buf.set(bytes, this.pos);
    this.pos += n;
  }

  /** Shortest head for a major type and a non-negative integer argument up to 2^53. */
  private head(major: number, n: number): void {
    if (this.pos + 9 > this.buf.length) this.grow(9);
    const b = this.buf;
    let p = this.pos;
    if (n < 24) {
      b[p++] = major | n;
    } else if (n < 0x100) {
      b[p++] = major | 24;
      b[p++] = n;
    } else if (n < 0x10000) {
      b[p++] = major | 25;
      b[p++] = n >>> 8;
      b[p++] = n & 0xff;
    } else if (n < 0x100000000) {
      b[p++] = major | 26;
      b[p++] = n >>> 24;
      b[p++] = (n >>> 16) & 0xff;
      b[p++] = (n >>> 8) & 0xff;
      b[p++] = n & 0xff;
    } else {
      const hi = Math.floor(n / 0x100000000);
      const lo = n >>> 0;
      b[p++] = major | 27;
      b[p++] = hi >>> 24;
      b[p++] = (hi >>> 16) & 0xff;
      b[p++] = (hi >>> 8) & 0xff;
      b[p++] = hi & 0xff;
      b[p++] = lo >>> 24;
      b[p++] = (lo >>> 16) & 0xff;
      b[p++] = (lo >>> 8) & 0xff;
      b[p++] = lo & 0xff;
    }
    this.pos = p;
  }

  private number(v: number): void {
    if (Number.isSafeInteger(v)) {
      // -0 takes the first branch and is written as 0.
      if (v >= 0) this.head(MT_UNSIGNED, v);
      else this.head(MT_NEGATIVE, -1 - v);
      return;
    }
    if (!Number.isFinite(v)) throw notJson('non-finite number');
    if (this.pos + 9 > this.buf.length) this.grow(9);
    if (Math.fround(v) === v) {
      const half = float16Bits(v);
      if (half >= 0) {
        this.buf[this.pos] = FLOAT16;
        this.buf[this.pos + 1] = half >>> 8;
        this.buf[this.pos + 2] = half & 0xff;
        this.pos += 3;
      } else {
        this.buf[this.pos] = FLOAT32;
        this.buf.writeFloatBE(v, this.pos + 1);
        this.pos += 5;
      }
    } else {
      this.buf[this.pos] = FLOAT64;
      this.buf.writeDoubleBE(v, this.pos + 1);
      this.pos += 9;
    }
  }

  private text(s: string): void {
    const len = s.length;
    if (len >= SHORT_STRING) {
      this.longText(s);
      return;
    }
    // At most 3 bytes per UTF-16 unit, plus a head of at most 2 bytes (< 192 bytes).
    if (this.pos + len * 3 + 2 > this.buf.length) this.grow(len * 3 + 2);
    const b = this.buf;
    // Reserve the head the string would need if it were ASCII; widen later if not.
    const reserved = len < 24 ? 1 : 2;
    const start = this.pos + reserved;
    let p = start;
    let i = 0;
    for (; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      b[p++] = c;
    }
    for (; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) {
        b[p++] = c;
      } else if (c < 0x800) {
        b[p++] = 0xc0 | (c >> 6);
        b[p++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c > 0xdfff) {
        b[p++] = 0xe0 | (c >> 12);
        b[p++] = 0x80 | ((c >> 6) & 0x3f);
        b[p++] = 0x80 | (c & 0x3f);
      } else {
        const d = i + 1 < len ? s.charCodeAt(i + 1) : 0;
        if (c > 0xdbff || d < 0xdc00 || d > 0xdfff) throw loneSurrogate();
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        b[p++] = 0xf0 | (cp >> 18);
        b[p++] = 0x80 | ((cp >> 12) & 0x3f);
        b[p++] = 0x80 | ((cp >> 6) & 0x3f);
        b[p++] = 0x80 | (cp & 0x3f);
      }
    }
    const n = p - start;
    const needed = n < 24 ? 1 : 2;
    if (needed !== reserved) {
      // Only widening is possible: the UTF-8 length is never below the UTF-16 length.
      b.copyWithin(start + 1, start, p);
      p++;
    }
    if (needed === 1) {
      b[this.pos] = MT_TEXT | n;
    } else {
      b[this.pos] = MT_TEXT | 24;
      b[this.pos + 1] = n;
    }
    this.pos = p;
  }

  private longText(s: string): void {
    if (!wellFormed.call(s)) throw loneSurrogate();
    const n = Buffer.byteLength(s, 'utf8');
    this.head(MT_TEXT, n);
    if (this.pos + n > this.buf.length) this.grow(n);
    this.pos += this.buf.write(s, this.pos, n, 'utf8');
  }
}

/** The full encoding (head and UTF-8) of a map key. */
function encodedKey(k: string): Uint8Array {
  if (!wellFormed.call(k)) throw loneSurrogate();
  const n = Buffer.byteLength(k, 'utf8');
  // V8 strings stay far below 2^32 UTF-8 bytes, so the 8-byte head cannot occur.
  const hl = n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
  const out = Buffer.allocUnsafe(hl + n);
  if (hl === 1) {
    out[0] = MT_TEXT | n;
  } else if (hl === 2) {
    out[0] = MT_TEXT | 24;
    out[1] = n;
  } else if (hl === 3) {
    out[0] = MT_TEXT | 25;
    out.writeUInt16BE(n, 1);
  } else {
    out[0] = MT_TEXT | 26;
    out.writeUInt32BE(n, 1);
  }
  out.write(k, hl, n, 'utf8');
  return out;
}

const shared = new Encoder();

/**
 * Deterministic CBOR bytes of a parsed JSON value (RFC 8949 section 4.2.1
 * core deterministic encoding with the section 6.2 integer rule; see the
 * module comment for the exact profile).
 *
 * @param value null, boolean, finite number, string, array or plain object, nested to any depth.
 * @returns a fresh Uint8Array owned by the caller.
 * @throws CanonicalizationError `lone-surrogate` for a string with an unpaired
 *   surrogate; `not-json` for undefined, functions, bigints, symbols,
 *   non-finite numbers, non-plain objects and cyclic structures.
 */
export function encodeDeterministic(value: unknown): Uint8Array {
  // A getter or proxy in the value could call back in; give it its own scratch state.
  const enc = shared.busy ? new Encoder() : shared;
  enc.busy = true;
  try {
    return enc.encode(value);
  } finally {
    enc.busy = false;
  }
}
