/**
 * The MCP protocol revisions Trustgate validates against, the older names a
 * request may use for one of them, and their order.
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
