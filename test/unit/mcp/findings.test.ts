import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FindingList, type Severity, type ValidationFinding } from '../../../src/mcp/findings.js';

const f = (rule: string, pointer: string, severity: Severity = 'error'): ValidationFinding => ({ rule, severity, pointer, message: 'm' });

describe('FindingList: the bound on validation findings', () => {
  it('keeps every finding up to the limit, in order', () => {
    const list = new FindingList(3);
    list.push(f('a', '/0'));
    list.add('b', '/1', 'm', 'warning');
    list.push(f('a', '/2'));
    expect(list.items.map((x) => x.pointer)).toEqual(['/0', '/1', '/2']);
    expect(list.items[1]).toEqual({ rule: 'b', severity: 'warning', pointer: '/1', message: 'm' });
    expect(list.omitted).toBe(0);
  });

  it('past the limit, adds only the first finding of a rule and severity it does not hold, and counts the rest', () => {
    const list = new FindingList(2);
    for (const x of [f('a', '/0'), f('a', '/1'), f('a', '/2'), f('b', '/3'), f('b', '/4'), f('a', '/5', 'warning'), f('a', '/6'), f('a', '/7', 'warning')]) {
      list.push(x);
    }
    expect(list.items.map((x) => x.pointer)).toEqual(['/0', '/1', '/3', '/5']);
    expect(list.omitted).toBe(4);
  });

  it('has no bound by default', () => {
    const list = new FindingList();
    for (let i = 0; i < 5000; i++) list.push(f('a', `/${i}`));
    expect(list.items).toHaveLength(5000);
    expect(list.omitted).toBe(0);
  });

  it('whatever the input: kept + omitted = pushed, every rule and severity pushed is kept, kept ones stay in order', () => {
    const findingArb: fc.Arbitrary<ValidationFinding> = fc.record({
      rule: fc.constantFrom('mcp.result.shape', 'mcp.content.members', 'mcp.annotations.lastModified', 'trust.annotation.type'),
      severity: fc.constantFrom<Severity>('error', 'warning'),
      pointer: fc.string({ maxLength: 4 }),
      message: fc.constant('m'),
    });
    fc.assert(
      fc.property(fc.array(findingArb, { maxLength: 60 }), fc.integer({ min: 1, max: 20 }), (input, limit) => {
        const list = new FindingList(limit);
        for (const x of input) list.push(x);
        expect(list.items.length + list.omitted).toBe(input.length);
        const kinds = (xs: ValidationFinding[]) => new Set(xs.map((x) => `${x.rule} ${x.severity}`));
        expect(kinds(list.items)).toEqual(kinds(input));
        expect(list.items.length).toBeLessThanOrEqual(limit + kinds(input).size);
        // A subsequence of the input, the first `limit` included.
        let at = 0;
        for (const x of list.items) {
          at = input.indexOf(x, at) + 1;
          expect(at).toBeGreaterThan(0);
        }
        expect(list.items.slice(0, limit)).toEqual(input.slice(0, limit));
      }),
    );
  });
});
