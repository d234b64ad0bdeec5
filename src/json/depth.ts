/**
 * Nesting depth of a parsed JSON value, computed with an explicit stack so
 * that hostile nesting can never exhaust the call stack.
 *
 * Depth counts containers: a scalar is 0, `{}` and `[]` are 1, `{"a":[1]}` is 2.
 * "Nesting deeper than N levels below X" means depth(X) > N.
 */
export function jsonDepth(value: unknown, stopAbove = Infinity): number {
  if (typeof value !== 'object' || value === null) return 0;
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (d > max) {
      max = d;
      if (max > stopAbove) return max;
    }
    const children = Array.isArray(v) ? v : Object.values(v as object);
    for (const c of children) {
      if (typeof c === 'object' && c !== null) stack.push([c, d + 1]);
    }
  }
  return max;
}
