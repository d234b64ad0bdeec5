/**
 * Tool pins (contract section 12): trust on first use against a tool
 * definition that changes after it was approved. A definition's digest is
 * the sha256 of the JCS (RFC 8785) text of its `name`, `title`,
 * `description`, `inputSchema`, `outputSchema` and `annotations`, those
 * present; other members (`icons`, `_meta`, ...) do not change what the
 * model is told or what the tool is allowed to do, so they do not break a pin.
 */
import { CanonicalizationError, digestOf, jcsText } from '../evidence/digest.js';
import { TrustgateError } from '../errors.js';
import { hasOwn, isObject } from '../model.js';

/** The members of a tool definition its digest covers. */
export const PINNED_MEMBERS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

/** A pinned digest as the pin endpoints take it: `sha256:` and 64 lower-case hex digits. */
export const PIN_DIGEST_PATTERN = '^sha256:[0-9a-fA-F]{64}$';

/**
 * `sha256:<hex>` of a tool definition (see the module comment).
 * @throws TrustgateError TG_ERR_BODY_SCHEMA when the definition holds a lone surrogate (no UTF-8 form, so no digest).
 */
export function toolDigest(tool: Record<string, unknown>): string {
  if (!Object.isFrozen(tool)) return computeDigest(tool);
  let d = FROZEN_DIGESTS.get(tool);
  if (d === undefined) FROZEN_DIGESTS.set(tool, (d = computeDigest(tool)));
  return d;
}

/**
 * Digests of definitions a binding holds frozen (the proxy deep-freezes each
 * tools/list item it keeps, with deepFreeze): it judges every call against the same
 * object, so the definition is canonicalized once, not on every call.
 */
const FROZEN_DIGESTS = new WeakMap<object, string>();

/** Freeze a JSON value and everything in it (without recursion: a definition may nest deeply); returns it. */
export function deepFreeze<T>(value: T): T {
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const v = todo.pop();
    if (typeof v !== 'object' || v === null || Object.isFrozen(v)) continue;
    Object.freeze(v);
    for (const child of Object.values(v)) todo.push(child);
  }
  return value;
}

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
  const s = isObject(server) && typeof server.name === 'string' && hasOwn(server, 'name') ? server.name : '';
  const t = hasOwn(tool, 'name') && typeof tool.name === 'string' ? tool.name : callName;
  return { server: s, tool: t };
}
