/** RFC 6901 JSON Pointers, as findings and answers name places in a request. */

/** Escape one reference token for an RFC 6901 JSON Pointer. */
export function escapePointerToken(token: string | number): string {
  if (typeof token === 'number') return String(token);
  // Most member names need no escape; skip the two replaces for them.
  if (!token.includes('~') && !token.includes('/')) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Build an RFC 6901 pointer from tokens. */
export function pointer(...tokens: Array<string | number>): string {
  let out = '';
  for (const t of tokens) out += '/' + escapePointerToken(t);
  return out;
}
