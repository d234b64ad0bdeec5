/**
 * The MCP `_meta` key grammar (specification 2025-06-18 "General fields:
 * `_meta`"; the same text is the `MetaObject` description in the 2026-07-28
 * schema):
 *
 * - Prefix, optional: a series of labels separated by dots, followed by `/`.
 *   Labels start with a letter and end with a letter or digit; interior
 *   characters are letters, digits or hyphens.
 * - Name: unless empty, starts and ends with an alphanumeric (`[a-zA-Z0-9]`);
 *   interior characters are alphanumerics, `-`, `_` or `.`.
 *
 * Scanned by hand, in one pass, because keys are attacker-controlled. "Letter"
 * is read as ASCII, as the name rule spells out `[a-z0-9A-Z]`.
 */

/** The `_meta` key under which trust claims live (the trust-annotations extension). */
export const TRUST_KEY = 'io.modelcontextprotocol/trust-annotations';

function isLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

function isAlnum(c: number): boolean {
  return isLetter(c) || (c >= 0x30 && c <= 0x39);
}

const DOT = 0x2e;
const HYPHEN = 0x2d;
const UNDERSCORE = 0x5f;

/** `label *("." label)` over `s[from, to)`. */
function isPrefix(s: string, from: number, to: number): boolean {
  let start = from;
  for (let i = from; i <= to; i++) {
    if (i < to && s.charCodeAt(i) !== DOT) continue;
    // s[start, i) is one label.
    if (i === start) return false;
    if (!isLetter(s.charCodeAt(start)) || !isAlnum(s.charCodeAt(i - 1))) return false;
    for (let j = start + 1; j < i - 1; j++) {
      const c = s.charCodeAt(j);
      if (!isAlnum(c) && c !== HYPHEN) return false;
    }
    start = i + 1;
  }
  return true;
}

/** Empty, or alphanumeric at both ends with alphanumerics, `-`, `_`, `.` inside, over `s[from, to)`. */
function isName(s: string, from: number, to: number): boolean {
  if (from === to) return true;
  if (!isAlnum(s.charCodeAt(from)) || !isAlnum(s.charCodeAt(to - 1))) return false;
  for (let j = from + 1; j < to - 1; j++) {
    const c = s.charCodeAt(j);
    if (!isAlnum(c) && c !== HYPHEN && c !== UNDERSCORE && c !== DOT) return false;
  }
  return true;
}

/**
 * True when `key` follows the MCP `_meta` key grammar. The empty key is
 * valid: the prefix is optional and the name may be empty. A key with a
 * prefix and an empty name (`com.example/`) is valid too.
 */
export function isMetaKey(key: string): boolean {
  // Neither labels nor names may contain '/', so the first one ends the prefix
  // and any later one fails the name check.
  const slash = key.indexOf('/');
  if (slash === -1) return isName(key, 0, key.length);
  return isPrefix(key, 0, slash) && isName(key, slash + 1, key.length);
}
