/**
 * The evaluation budget inside an expression (src/policy/cel/deadline.ts):
 * a comprehension asks the decision's deadline as it starts and the fast
 * path's loops every 256 elements, so nested comprehensions over lists an
 * expression builds itself cannot hold a worker past the budget. Generated
 * for the class: any nesting of the five macros, any scope, a budget that
 * runs out after its first few asks; the rule is then an error (matched,
 * fail closed), where without the bound it would have run to its end.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicyFiles } from '../../../src/policy/load.js';
import { evaluateCallPolicies, evaluatePolicies, type EvaluationBudget, type EvaluationInput } from '../../../src/policy/evaluate.js';

const enc = new TextEncoder();
const RESULT: EvaluationInput = {
  result: { sensitive: false, untrusted: false, isError: false, blockCount: 0, asserted: {} },
  validation: [],
  resultScope: { evidence: [], dataClass: {} },
  blocks: [],
};
const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;

/** A budget that answers "not spent" to its first `asks` questions and "spent" after. */
function budgetAfter(asks: number): EvaluationBudget & { asked: number } {
  const b = { asked: 0, describe: 'test budget', exceeded: () => ++b.asked > asks };
  return b;
}

/**
 * A bool expression nesting `macros` (outermost first) over lists of `n`
 * elements, each level true when it runs to its end and reading every
 * element on the way (no quantifier meets a value that decides it early),
 * so that only the deadline can end it sooner, as an error.
 */
function nested(macros: readonly string[], n: number): string {
  let inner = `${macros.map((_, i) => `v${i}`).join(' + ')} >= 0`;
  for (let i = macros.length - 1; i >= 0; i--) {
    const v = `v${i}`;
    inner = {
      all: `${list(n)}.all(${v}, ${inner})`,
      exists: `!${list(n)}.exists(${v}, !(${inner}))`,
      exists_one: `!${list(n)}.exists_one(${v}, !(${inner}))`,
      map: `size(${list(n)}.map(${v}, ${inner})) > 0`,
      filter: `size(${list(n)}.filter(${v}, ${inner})) >= 0`,
    }[macros[i]!]!;
  }
  return inner;
}

const policy = (scope: 'result' | 'call', when: string) =>
  compilePolicyFiles([{ name: 'p.yaml', bytes: enc.encode(`id: p\nmode: enforce\nrules:\n  - id: r\n    scope: ${scope}\n    when: ${JSON.stringify(when)}\n    effect: deny\n`) }], 'policies');

describe('nested comprehensions stop at the evaluation budget', () => {
  it('any nesting of all, exists, exists_one, map and filter, in result and call rules', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('all', 'exists', 'exists_one', 'map', 'filter'), { minLength: 2, maxLength: 3 }),
        fc.constantFrom<'result' | 'call'>('result', 'call'),
        fc.integer({ min: 1, max: 4 }),
        (macros, scope, asks) => {
          // 300 elements a level: a run to the end would read 90,000 or 27 million of them.
          const set = policy(scope, nested(macros, 300));
          const budget = budgetAfter(asks);
          const matches =
            scope === 'result'
              ? evaluatePolicies(set, RESULT, undefined, budget)
              : evaluateCallPolicies(set, { tool: { name: 't' }, call: { name: 't', arguments: {} } as never }, undefined, budget);
          expect(matches).toHaveLength(1);
          expect(matches[0]!.error).toContain('evaluation budget exceeded');
          // The deadline was asked inside the expression, not only before the rule.
          expect(budget.asked).toBeGreaterThan(asks);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a rule that finishes within its budget answers as before', () => {
    for (const macros of [['all', 'exists'], ['exists_one', 'map', 'filter']]) {
      const matches = evaluatePolicies(policy('result', nested(macros, 20)), RESULT, undefined, budgetAfter(1_000_000));
      expect(matches).toHaveLength(1);
      expect(matches[0]!.error).toBeUndefined();
    }
  });
});

describe('a detector function stops at the evaluation budget outside a decision too', () => {
  it('secrets() and pii() in a call rule, over arguments of any of the texts that work the scans hardest', () => {
    // Each text with the detector it works hardest.
    const cases: Array<[string, 'secrets' | 'pii']> = [
      ['a://b ', 'secrets'],
      ['%41KIA\u0430\u200b%EF%BC%AB ', 'secrets'],
      ['%41KIA\u0430\u200b%EF%BC%AB ', 'pii'],
      ['q = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" ', 'secrets'],
      ['sourcegraph_token = "0123456789abcdef0123456789abcdef01234567" ', 'secrets'],
      ['4 5 x ', 'pii'],
    ];
    fc.assert(
      fc.property(fc.constantFrom(...cases), fc.integer({ min: 1, max: 3 }), ([unit, fn], asks) => {
        const set = policy('call', `size(${fn}(call.arguments.q)) > 1000`);
        const budget = budgetAfter(asks);
        const call = { name: 't', arguments: { q: unit.repeat(Math.ceil(300_000 / unit.length)) } };
        const matches = evaluateCallPolicies(set, { tool: { name: 't' }, call: call as never }, undefined, budget);
        // Read to its end, no argument holds 1,000 kinds: only the budget running out inside the scan makes it match.
        expect(matches).toHaveLength(1);
        expect(matches[0]!.error).toContain('evaluation budget exceeded');
      }),
      { numRuns: 20 },
    );
  });
});

describe('block rules past the budget', () => {
  it('give every block left its own error match, with its pointer and index, for each rule, whenever the budget runs out', () => {
    const set = compilePolicyFiles(
      [{ name: 'p.yaml', bytes: enc.encode('id: p\nmode: enforce\nrules:\n  - id: a\n    scope: block\n    when: "false"\n    effect: spotlight\n  - id: b\n    scope: block\n    when: "false"\n    effect: redact\n') }],
      'policies',
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.nat(90), (n, asks) => {
        const blocks = Array.from({ length: n }, (_, i) => ({ index: i, pointer: `/content/${i}`, block: { type: 'text', index: i }, evidence: [], dataClass: {} }));
        const matches = evaluatePolicies(set, { ...RESULT, blocks } as EvaluationInput, undefined, budgetAfter(asks));
        // Every match is a budget error (the conditions are false), one per rule and block left, each its own.
        for (const m of matches) expect(m.error).toContain('evaluation budget exceeded');
        for (const rule of ['a', 'b']) {
          const mine = matches.filter((m) => m.rule === rule);
          const left = mine.map((m) => m.blockIndex!);
          if (left.length > 0) expect(left).toEqual(Array.from({ length: left.length }, (_, k) => n - left.length + k));
          expect(mine.map((m) => m.pointer)).toEqual(left.map((i) => `/content/${i}`));
        }
        expect(new Set(matches).size).toBe(matches.length);
        // Once a rule met the spent budget, every later rule's blocks are all left.
        const b = matches.filter((m) => m.rule === 'b');
        if (matches.some((m) => m.rule === 'a')) expect(b.length).toBe(n);
      }),
      { numRuns: 300 },
    );
  });
});
