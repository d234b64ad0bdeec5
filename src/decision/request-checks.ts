/**
 * The validation stage shared by /v1/validate and /v1/evaluate: the request
 * checks that are 400s (revision, result depth) and the rule findings that
 * are data (docs/behaviour/validation.md).
 */
import { TrustgateError } from '../errors.js';
import { jsonDepth } from '../json/depth.js';
import type { Collision } from '../mcp/casefold.js';
import { FindingList, type ValidationFinding } from '../mcp/findings.js';
import { defaultRevision, validateMcp } from '../mcp/shape.js';
import { PROTOCOL_VERSIONS, rulesRevision, type Revision } from '../mcp/revisions.js';

/** A `result` nesting deeper than this below itself is a 400 (docs/behaviour/limits.md). */
export const MAX_RESULT_DEPTH = 128;

/**
 * The revision whose rules apply: the requested one (an alias such as
 * `2024-10-07` maps to the revision it shares its schema with), else the
 * default rule of docs/behaviour/decisions.md.
 */
export function resolveRevision(result: unknown, requested: unknown): Revision {
  if (requested === undefined) return defaultRevision(result);
  const revision = rulesRevision(requested);
  if (revision === undefined) {
    throw new TrustgateError('TG_ERR_PROTOCOL_VERSION_UNKNOWN', `protocolVersion must be one of ${PROTOCOL_VERSIONS.join(', ')}`, [
      { pointer: '/protocolVersion', message: `unknown MCP revision; known: ${PROTOCOL_VERSIONS.join(', ')}` },
    ]);
  }
  return revision;
}

/** Refuse a result that nests deeper than MAX_RESULT_DEPTH, before any recursive work. */
export function checkResultDepth(result: unknown): void {
  if (jsonDepth(result, MAX_RESULT_DEPTH) > MAX_RESULT_DEPTH) {
    throw new TrustgateError('TG_ERR_RESULT_TOO_DEEP', `result nests deeper than ${MAX_RESULT_DEPTH} levels below itself`, [
      { pointer: '/result', message: 'nests too deeply' },
    ]);
  }
}

/**
 * The `validation` of an answer: the mcp.* findings, then the trust-claim
 * findings, at most `limit` of them plus the first of every rule and
 * severity past it (see FindingList); `omitted` counts the rest.
 */
export function resultFindings(
  result: unknown,
  revision: Revision,
  trustFindings: readonly ValidationFinding[],
  limit = Infinity,
  collisions?: readonly Collision[],
): { validation: ValidationFinding[]; omitted: number } {
  const list = new FindingList(limit);
  validateMcp(result, revision, list, collisions);
  for (const f of trustFindings) list.push(f);
  return { validation: list.items, omitted: list.omitted };
}

/** True when no finding is an error. */
export function isValid(findings: readonly ValidationFinding[]): boolean {
  return !findings.some((f) => f.severity === 'error');
}

export { validateMcp };
