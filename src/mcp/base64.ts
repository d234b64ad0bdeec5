/**
 * The base64 test of docs/behaviour/forwarding.md: `data` of `image`/`audio` blocks
 * and an embedded resource's `blob` must be base64 (RFC 4648 section 4, the
 * schema's `format: byte`), else `mcp.content.type`.
 *
 * Strict where RFC 4648 says MUST, lenient where it says MAY:
 * - only the section 4 alphabet (`A-Z a-z 0-9 + /`); the URL-safe alphabet
 *   of section 5 (`-`, `_`) is another encoding and is refused;
 * - padding is required (section 3.2: MCP does not waive it): the length is
 *   a multiple of 4 and `=` appears only as the last one or two characters;
 * - no line breaks or other whitespace (section 3.1: MCP does not allow
 *   them; section 3.3: characters outside the alphabet are rejected);
 * - the unused bits before the padding may be non-zero (section 3.5 lets a
 *   decoder accept them, and every decoder in use does);
 * - the empty string is the encoding of zero bytes and is base64.
 *
 * One pass over the string with a table lookup per character: linear time,
 * no regular expression, no allocation.
 */

/** 1 for every character of the RFC 4648 section 4 alphabet, indexed by char code (ASCII only). */
const ALPHABET = (() => {
  const t = new Uint8Array(128);
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < chars.length; i++) t[chars.charCodeAt(i)] = 1;
  return t;
})();

const PAD = 0x3d; // '='

/** True when `s` is padded base64 in the RFC 4648 section 4 alphabet, with no whitespace. */
export function isBase64(s: string): boolean {
  const n = s.length;
  if (n % 4 !== 0) return false;
  let end = n;
  // At most two pad characters, and only at the very end.
  if (n > 0 && s.charCodeAt(n - 1) === PAD) {
    end--;
    if (s.charCodeAt(n - 2) === PAD) end--;
  }
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || ALPHABET[c] === 0) return false;
  }
  return true;
}
