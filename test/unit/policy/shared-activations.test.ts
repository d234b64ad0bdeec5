/**
 * A decision whose label rules raise nothing evaluates its other rules over
 * the same input with the activations the label pass built. Over generated
 * inputs and the shipped set (plus rules reading every variable, both
 * engines), the two passes give the same matches and trace as two passes
 * that each build their own.
 */
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCel } from '../../../src/policy/cel/engine.js';
import { activationsOf, evaluatePolicies, type EvaluationInput, type TraceEntry } from '../../../src/policy/evaluate.js';
import { loadPolicyDir, type PolicySet } from '../../../src/policy/load.js';

const shipped = await loadPolicyDir(fileURLToPath(new URL('../../../policies', import.meta.url)));

// Conditions that read every variable, through the fast path and through the engine (`.map`, `matches` leave the fast subset).
const EXTRA = [
  ['b1', 'block', 'block.untrusted && size(pii(block.text)) > 0'],
  ['b2', 'block', 'block.text.matches("[0-9]{3}") || block.audience.exists(a, a == "user")'],
  ['b3', 'block', 'size(block.evidence) > 0 || block.dataClass.class == "secret"'],
  ['r1', 'result', 'result.untrusted || size(secrets(result.text)) > 0'],
  ['r2', 'result', 'tool.hints.openWorldHint && context.destination == "remote"'],
  ['r3', 'result', 'validation.map(v, v.rule).exists(r, r == "x") || server.name == "web"'],
  ['r4', 'result', 'result.blockCount > 2 && session.untrusted'],
] as const;

const withExtra: PolicySet = {
  ...shipped,
  policies: [
    ...shipped.policies,
    {
      id: 'extra',
      mode: 'enforce',
      file: 'extra.yaml',
      rules: EXTRA.map(([id, scope, when]) => ({ id, scope, when, compiled: compileCel(when), effect: 'flag' as const })),
    },
  ],
};

const TEXTS = ['', 'plain words', 'mail jane.doe@example.com now', 'card 4111 1111 1111 1111', 'AKIAIOSFODNN7EXAMPLE', 'id 123', 'call +44 20 7946 0958'];
const text = fc.constantFrom(...TEXTS);
const flags = fc.record({ sensitive: fc.boolean(), untrusted: fc.boolean() });
const blockIn = (index: number) =>
  fc.record({ f: flags, text, aud: fc.constantFrom([], ['user'], ['assistant']), ev: fc.boolean() }).map(({ f, text, aud, ev }) => ({
    index,
    pointer: `/content/${index}`,
    block: { index, type: 'text', ...f, asserted: {}, audience: aud, audienceMalformed: false, text },
    evidence: ev ? [{ type: 'data-class.v1', status: 'verified' as const, canonicalization: 'jcs/rfc8785', pointer: `/content/${index}/_meta` }] : [],
    dataClass: ev ? { class: 'secret', regulatory: [] } : {},
  }));

const inputArb: fc.Arbitrary<EvaluationInput> = fc
  .tuple(
    fc.integer({ min: 0, max: 4 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => blockIn(i)))),
    flags,
    fc.option(fc.boolean(), { nil: undefined }),
    fc.constantFrom('local', 'remote'),
    fc.constantFrom('web', 'crm'),
    fc.boolean(),
    fc.array(fc.constantFrom('x', 'y'), { maxLength: 2 }),
  )
  .map(([blocks, f, openWorld, destination, server, session, rules]) => ({
    result: { ...f, isError: false, blockCount: blocks.length, asserted: {}, structured: { sensitive: false, untrusted: false }, text: blocks.map((b) => b.block.text).join('\n') },
    tool: { name: 't', annotations: openWorld === undefined ? {} : { openWorldHint: openWorld } },
    server: { name: server },
    context: { destination },
    validation: rules.map((rule) => ({ rule, severity: 'error' as const, pointer: '' })),
    resultScope: { evidence: [], dataClass: {} },
    blocks,
    ...(session ? { session: { id: 's', forgotten: false, sensitive: false, untrusted: true, dataClass: {}, calls: 1, results: 2, tools: ['a'] } } : {}),
  })) as fc.Arbitrary<EvaluationInput>;

describe('activations shared by the label pass and the other rules', () => {
  it('give the matches and trace of two passes that build their own', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const traceShared: TraceEntry[] = [];
        const acts = activationsOf(input);
        const shared = [
          ...evaluatePolicies(withExtra, input, undefined, undefined, traceShared, 'label', acts),
          ...evaluatePolicies(withExtra, input, undefined, undefined, traceShared, 'rest', acts),
        ];
        const traceOwn: TraceEntry[] = [];
        const own = [
          ...evaluatePolicies(withExtra, input, undefined, undefined, traceOwn, 'label'),
          ...evaluatePolicies(withExtra, input, undefined, undefined, traceOwn, 'rest'),
        ];
        expect(shared).toEqual(own);
        expect(traceShared).toEqual(traceOwn);
      }),
      { numRuns: 300, seed: 27 },
    );
  });

  it('are not used for another input', () => {
    const a = fc.sample(inputArb, { numRuns: 1, seed: 1 })[0]!;
    const b: EvaluationInput = { ...a, result: { ...a.result, untrusted: !a.result.untrusted } };
    const acts = activationsOf(a);
    expect(evaluatePolicies(withExtra, b, undefined, undefined, undefined, 'rest', acts)).toEqual(evaluatePolicies(withExtra, b, undefined, undefined, undefined, 'rest'));
  });
});
