/**
 * Copying request data into fresh objects without ever treating a member
 * name as anything but data: `__proto__` becomes an own property (as
 * JSON.parse makes it), never the prototype.
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

/** Shallow copy of a parsed JSON object's own members, leaving out `skip`. */
export function copyWithout(source: Record<string, unknown>, skip?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(source)) {
    if (key !== skip) setOwn(out, key, source[key]);
  }
  return out;
}
