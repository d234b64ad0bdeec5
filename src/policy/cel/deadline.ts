/**
 * The deadline of the rules being evaluated (TRUSTGATE_EVAL_BUDGET_MS),
 * asked inside an expression where its work can grow faster than its
 * input: each comprehension (`all`, `exists`, `exists_one`, `map`,
 * `filter`) as it starts, and the fast path's loops every 256 elements. A
 * nested comprehension over lists the expression builds itself
 * (`[1,...,1000].all(a, [...].all(b, ...))`) would otherwise hold a
 * worker for minutes from a request of a few kilobytes; past the deadline
 * it throws, and the rule counts as an error (matched: fail closed).
 * Decisions are synchronous, so one deadline holds at a time.
 */

/** Thrown when the deadline has passed; `code` names it in the rule's error. */
export class DeadlinePassed extends Error {
  override readonly name = 'DeadlinePassed';
  readonly code = 'evaluation_budget_exceeded';
}

let spent: (() => boolean) | undefined;

/** Run `fn` with `exceeded` as the deadline of the expressions it evaluates (none when undefined). */
export function withDeadline<T>(exceeded: (() => boolean) | undefined, fn: () => T): T {
  const prev = spent;
  spent = exceeded;
  try {
    return fn();
  } finally {
    spent = prev;
  }
}

/** @throws DeadlinePassed when the deadline of the running evaluation has passed. */
export function checkDeadline(): void {
  if (spent !== undefined && spent()) throw new DeadlinePassed('the time for this decision ran out inside a comprehension');
}

/** The deadline of the running evaluation, for the scans a detector function runs outside a decision's cache (a `scope: call` or `tool` rule's `secrets()`); undefined without one. */
export function runningDeadline(): (() => boolean) | undefined {
  return spent;
}
