/**
 * Test files are read fail closed (contract section 17): whatever a
 * `*.test.yaml` holds, reading it either gives cases or throws a
 * TestLoadError naming the file (exit 2), never another error, and every
 * case carries the line of its `- ` item.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import YAML from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { readTestFile, TestLoadError } from '../../../src/policytest/cases.js';

const dir = mkdtempSync(join(tmpdir(), 'tg-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function read(text: string) {
  const p = join(dir, 'x.test.yaml');
  writeFileSync(p, text);
  return readTestFile(p);
}

const step = fc.record(
  {
    evaluate: fc.oneof(fc.constant({ result: { content: [] } }), fc.anything({ maxDepth: 3 })),
    call: fc.oneof(fc.constant({ call: { name: 't' } }), fc.anything({ maxDepth: 2 })),
    expect: fc.oneof(fc.constant({ outcome: 'allow' }), fc.dictionary(fc.constantFrom('outcome', 'labels', 'findings', 'absent', 'result', 'modified', 'x'), fc.anything({ maxDepth: 2 }))),
    proxy: fc.oneof(
      fc.constant({ unlisted: true }),
      fc.constant({ method: 'sampling/createMessage', arguments: { includeContext: 'none' } }),
      fc.dictionary(fc.constantFrom('method', 'arguments', 'unlisted', 'x'), fc.anything({ maxDepth: 2 })),
      fc.anything({ maxDepth: 1 }),
    ),
  },
  { requiredKeys: [] },
);
const testCase = fc
  .record(
    {
      name: fc.oneof(fc.string({ minLength: 1 }), fc.anything({ maxDepth: 1 })),
      steps: fc.array(step, { maxLength: 3 }),
      maxPins: fc.oneof(fc.nat(4), fc.integer(), fc.double(), fc.anything({ maxDepth: 1 })),
    },
    { requiredKeys: [] },
  ).chain((c) =>
  step.map((s) => ({ ...c, ...s })),
);

describe('reading test files', () => {
  it('structured junk: cases or a TestLoadError naming the file', async () => {
    await fc.assert(
      fc.asyncProperty(fc.record({ policies: fc.oneof(fc.constant('.'), fc.anything({ maxDepth: 1 })), cases: fc.oneof(fc.array(testCase, { maxLength: 4 }), fc.anything({ maxDepth: 2 })) }, { requiredKeys: [] }), async (doc) => {
        try {
          const cases = await read(YAML.stringify(doc));
          for (const c of cases) expect(c.line).toBeGreaterThanOrEqual(1);
        } catch (err) {
          expect(err).toBeInstanceOf(TestLoadError);
          expect((err as Error).message).toContain('x.test.yaml');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('raw text: cases or a TestLoadError', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 200 }), fc.constantFrom('cases: [', 'a: &a [*a]', '- x', 'cases:\n  - &x {name: a, evaluate: {result: {content: []}}}\n  - *x\n', '\uFEFFcases: []')), async (text) => {
        try {
          await read(text);
        } catch (err) {
          expect(err).toBeInstanceOf(TestLoadError);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('names the line of each "- " item, whatever the layout', async () => {
    const cases = await read('cases:\n  - name: a\n    evaluate: { result: { content: [] } }\n  -\n\n    name: b\n    evaluate: { result: { content: [] } }\n  - { name: c, evaluate: { result: { content: [] } } }\n');
    expect(cases.map((c) => [c.name, c.line])).toEqual([
      ['a', 2],
      ['b', 4],
      ['c', 8],
    ]);
  });
});
