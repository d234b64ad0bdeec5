/**
 * Tool pins (docs/behaviour/sessions.md): trust on first use against a tool
 * definition that changes after it was approved. A definition's digest is
 * the sha256 of the JCS (RFC 8785) text of its `name`, `title`,
 * `description`, `inputSchema`, `outputSchema` and `annotations`, those
 * present; other members (`icons`, `_meta`, ...) do not change what the
 * model is told or what the tool is allowed to do, so they do not break a pin.
 */
import { CanonicalizationError, digestOf, jcsText } from '../evidence/digest.js';
import { TrustgateError } from '../errors.js';
import { perFrozen } from '../json/frozen.js';
import { hasOwn, isRecord } from '../json/record.js';

/** The members of a tool definition its digest covers. */
export const PINNED_MEMBERS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

/** A pinned digest as the pin endpoints take it: `sha256:` and 64 lower-case hex digits. */
export const PIN_DIGEST_PATTERN = '^sha256:[0-9a-fA-F]{64}$';

/**
 * `sha256:<hex>` of a tool definition (see the module comment). A
 * definition a binding holds deep-frozen (the proxy freezes each tools/list
 * item it keeps) is canonicalized once, not on every call judged against it.
 * @throws TrustgateError TG_ERR_BODY_SCHEMA when the definition holds a lone surrogate (no UTF-8 form, so no digest).
 */
export const toolDigest: (tool: Record<string, unknown>) => string = perFrozen(computeDigest);

function computeDigest(tool: Record<string, unknown>): string {
  const covered: Record<string, unknown> = {};
  for (const m of PINNED_MEMBERS) {
    if (hasOwn(tool, m) && tool[m] !== undefined) Object.defineProperty(covered, m, { value: tool[m], enumerable: true, writable: true, configurable: true });
  }
  let text: string;
  try {
    text = jcsText(covered);
  } catch (err) {
    if (!(err instanceof CanonicalizationError)) throw err;
    throw new TrustgateError('TG_ERR_BODY_SCHEMA', `the tool definition cannot be canonicalized for its pin: ${err.message}`, [
      { pointer: '/tool', message: err.message },
    ]);
  }
  return digestOf(text, 'sha256');
}

/** The (server, tool) names a definition is pinned under: `server.name` (`""` without one), and `tool.name`, else the call's name. */
export function pinKey(server: unknown, tool: Record<string, unknown>, callName: string): { server: string; tool: string } {
  const s = isRecord(server) && typeof server.name === 'string' && hasOwn(server, 'name') ? server.name : '';
  const t = hasOwn(tool, 'name') && typeof tool.name === 'string' ? tool.name : callName;
  return { server: s, tool: t };
}
