/**
 * Parsed JSON objects read as records: the one object test, and member
 * lookups that never reach the prototype chain (request data may name
 * `__proto__` or `constructor`; they are data).
 */

/** True for a plain JSON object (not an array, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own-property lookup that never reaches the prototype chain (`__proto__`, `constructor` are data). */
export function own(o: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

export function hasOwn(o: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, key);
}
