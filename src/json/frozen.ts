/**
 * Deep-frozen JSON values, and work done once per such value. A binding
 * that judges many requests against the same value (the proxy judges every
 * call of a connection against the tool definition its tools/list answer
 * gave) freezes it with deepFreeze; what depends on that value alone (its
 * pin digest, its hints, its longest string) is then computed once and
 * kept, since the value cannot change. Only values deepFreeze froze count:
 * an object someone froze shallowly may still change below its top.
 */

/** Every object deepFreeze froze, with all it holds. */
const DEEP = new WeakSet<object>();

/** Freeze a JSON value and everything in it (without recursion: a definition may nest deeply); returns it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || DEEP.has(value)) return value;
  const seen = new Set<object>();
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const v = todo.pop();
    if (typeof v !== 'object' || v === null || DEEP.has(v) || seen.has(v)) continue;
    seen.add(v);
    Object.freeze(v);
    for (const child of Object.values(v)) todo.push(child);
  }
  // Only now is everything below each of them frozen too.
  for (const v of seen) DEEP.add(v);
  return value;
}

/** Whether deepFreeze froze this value (and so everything in it). */
export function isDeepFrozen(value: unknown): value is object {
  return typeof value === 'object' && value !== null && DEEP.has(value);
}

/**
 * A function of a JSON value, kept per deep-frozen value: `compute(value)`
 * runs once for each such value and on every call for any other.
 */
export function perFrozen<V, R>(compute: (value: V) => R): (value: V) => R {
  const kept = new WeakMap<object, R>();
  return (value) => {
    if (!isDeepFrozen(value)) return compute(value);
    if (kept.has(value)) return kept.get(value) as R;
    const r = compute(value);
    kept.set(value, r);
    return r;
  };
}
