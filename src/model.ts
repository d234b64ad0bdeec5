/**
 * Wire-level vocabulary shared by every pipeline stage. Closed sets are
 * `as const` arrays so that schemas, validators and docs list the same values.
 */

/** MCP protocol revisions Trustgate validates against (docs/behaviour/validation.md). */
export const REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'] as const;
export type Revision = (typeof REVISIONS)[number];

export function isRevision(v: unknown): v is Revision {
  return typeof v === 'string' && (REVISIONS as readonly string[]).includes(v);
}

/**
 * Revisions a request may name that share another revision's rules: the
 * official SDKs still negotiate `2024-10-07`, whose schema is the one of
 * `2024-11-05` (docs/behaviour/forwarding.md). An answer names the revision whose
 * rules applied, so `2024-10-07` is answered as `2024-11-05`.
 */
export const REVISION_ALIASES: Readonly<Record<string, Revision>> = Object.freeze({ '2024-10-07': '2024-11-05' });

/** Every `protocolVersion` a request may name: the aliases, then the revisions with rules of their own. */
export const PROTOCOL_VERSIONS: readonly string[] = Object.freeze([...Object.keys(REVISION_ALIASES), ...REVISIONS]);

/** The revision whose rules apply to a requested `protocolVersion`, or undefined when it is unknown. */
export function rulesRevision(v: unknown): Revision | undefined {
  if (isRevision(v)) return v;
  return typeof v === 'string' && Object.prototype.hasOwnProperty.call(REVISION_ALIASES, v) ? REVISION_ALIASES[v] : undefined;
}

/** Revision order test: true when `a` is `b` or later. */
export function atLeast(a: Revision, b: Revision): boolean {
  return REVISIONS.indexOf(a) >= REVISIONS.indexOf(b);
}

/** The `_meta` key under which trust claims live. */
export const TRUST_KEY = 'io.modelcontextprotocol/trust-annotations';

export type Severity = 'error' | 'warning';

/** One validation finding (docs/behaviour/validation.md). `pointer` is RFC 6901 into the request's `result`. */
export interface ValidationFinding {
  rule: string;
  severity: Severity;
  pointer: string;
  message: string;
}

/** Tri-state trust flag: asserted true, asserted false, or no claim. */
export type Tri = boolean | null;

export const MODES = ['audit', 'warn', 'enforce'] as const;
export type Mode = (typeof MODES)[number];

export const SCOPES = ['block', 'result', 'call', 'tool'] as const;
export type Scope = (typeof SCOPES)[number];

/** Effects a `scope: call` rule may have (docs/behaviour/sessions.md): a call is allowed, stopped or put to the user, never edited. */
export const CALL_EFFECTS = ['deny', 'consent', 'flag'] as const;

/** Effects a `scope: tool` rule may have (docs/bindings/proxy.md): a listed definition is dropped from the list or flagged. */
export const TOOL_EFFECTS = ['drop', 'flag'] as const;

export const EFFECTS = ['deny', 'redact', 'drop', 'spotlight', 'consent', 'flag', 'label', 'mask'] as const;
export type Effect = (typeof EFFECTS)[number];

export const CANONICALIZATIONS = ['jcs/rfc8785', 'cbor/rfc8949'] as const;
export type Canonicalization = (typeof CANONICALIZATIONS)[number];

export const DIGEST_ALGORITHMS = ['sha256', 'sha384', 'sha512'] as const;
export type DigestAlgorithm = (typeof DIGEST_ALGORITHMS)[number];

export const EVIDENCE_STATUSES = ['verified', 'mismatch', 'unresolved', 'unsupported', 'malformed'] as const;
export type EvidenceStatus = (typeof EVIDENCE_STATUSES)[number];

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

/** True for a plain JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own-property lookup that never reaches the prototype chain (`__proto__`, `constructor` are data). */
export function own(o: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

export function hasOwn(o: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, key);
}

/** JSON type name for messages, which name types and never quote values. */
export function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'object':
      return 'an object';
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    default:
      return 'a non-JSON value';
  }
}
