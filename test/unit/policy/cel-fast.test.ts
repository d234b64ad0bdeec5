/**
 * The compiled fast path (src/policy/cel/fast.ts) against the engine as
 * the oracle: on generated expressions and generated data, a `when`
 * compiled with the fast path gives exactly what the engine alone gives
 * (the same bool, or the same error), and the fast path answers most of
 * them itself rather than deferring.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CelCompileError, checkedAst, compileCel } from '../../../src/policy/cel/engine.js';
import { buildActivation, prepareShared } from '../../../src/policy/cel/values.js';
import type { ScopeVarsInput, SharedVarsInput } from '../../../src/policy/cel/variables.js';
import { compileFast, UNKNOWN, type PlainVars } from '../../../src/policy/cel/fast.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261130);
const KEYS = ['a', 'b', 's', 'n', 'l', 'm'] as const;

// ------------------------------------------------------------------ data

const scalar = fc.oneof(
  fc.constantFrom('a', 'user', 'assistant', '', 'b', '🙂x', '\ud800x', 'mismatch', 'verified'),
  fc.constantFrom(0, 1, 2, -1, 1.5, 0.5, 1e21),
  fc.boolean(),
  fc.constant(null),
);
const { json } = fc.letrec((tie) => ({
  json: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, scalar, tie('list'), tie('map')),
  list: fc.array(tie('json'), { maxLength: 3 }),
  map: fc.dictionary(fc.constantFrom(...KEYS), tie('json'), { maxKeys: 4 }),
}));
// Most members present most of the time, so that most expressions get past member access.
const dataMap = fc.record({ a: scalar, b: json, s: fc.constantFrom('a', 'user', '🙂x', '\udc00\ud800', '\udc00\udc00'), n: fc.constantFrom(0, 1, 2, 1.5), l: fc.array(scalar, { maxLength: 3 }), m: json }, { requiredKeys: ['a', 's', 'n', 'l'] });

const data = fc.record({
  shared: fc.record({
    result: fc.record({
      sensitive: fc.boolean(),
      untrusted: fc.boolean(),
      isError: fc.boolean(),
      blockCount: fc.nat(5),
      asserted: fc.oneof(fc.constant({}), fc.constant({ sensitive: true }), fc.constant({ untrusted: false })),
    }),
    tool: fc.option(dataMap, { nil: undefined }),
    server: fc.option(dataMap, { nil: undefined }),
    context: fc.option(dataMap, { nil: undefined }),
    validation: fc.array(
      fc.record({ rule: fc.constantFrom('mcp.a', 'mcp.b'), severity: fc.constantFrom('error', 'warning'), pointer: fc.constantFrom('', '/content/0') }),
      { maxLength: 2 },
    ),
  }),
  scope: fc.record({
    block: fc.oneof(
      fc.constant({}),
      fc.record({
        index: fc.nat(3),
        type: fc.constantFrom('text', 'image'),
        sensitive: fc.boolean(),
        untrusted: fc.boolean(),
        asserted: fc.constant({}),
        audience: fc.array(fc.constantFrom('user', 'assistant'), { maxLength: 2 }),
        a: json,
        s: json,
        l: fc.array(scalar, { maxLength: 3 }),
        m: dataMap,
      }),
    ),
    evidence: fc.array(
      fc.record({
        type: fc.constantFrom('data-class.v1', null),
        status: fc.constantFrom('verified', 'mismatch', 'unresolved'),
        canonicalization: fc.constantFrom('jcs/rfc8785', null),
        pointer: fc.constant('/_meta'),
      }),
      { maxLength: 3 },
    ),
    dataClass: fc.oneof(fc.constant({}), fc.record({ class: fc.constantFrom('public', 'confidential'), regulatory: fc.array(fc.constantFrom('gdpr'), { maxLength: 1 }) })),
  }),
}) as fc.Arbitrary<{ shared: SharedVarsInput; scope: ScopeVarsInput }>;

// ----------------------------------------------------------- expressions

const lit = fc.constantFrom('0', '1', '2', '-1', '1.5', '0.0', '"a"', '"user"', '""', '"🙂x"', 'true', 'false', 'null', '["a", "user"]', '[1, 2]', '1u', 'b"a"');
const path = fc.oneof(
  fc.constantFrom('block', 'context', 'tool', 'server', 'result', 'dataClass', 'evidence', 'validation'),
  fc
    .tuple(fc.constantFrom('block', 'context', 'tool', 'server', 'result', 'dataClass', 'x'), fc.array(fc.constantFrom(...KEYS, 'audience', 'index', 'untrusted', 'name', 'sensitive', 'asserted', 'class'), { minLength: 1, maxLength: 2 }))
    .map(([root, keys]) => root + keys.map((k) => `.${k}`).join('')),
  fc.tuple(fc.constantFrom('block.l', 'block.m', 'context', 'evidence', 'x'), fc.constantFrom('[0]', '[1]', '["a"]', '["s"]')).map(([a, b]) => a + b),
);
// Typed expressions (bool, number, string, list), so that most of them
// type-check and evaluate, plus untyped ones for the error paths.
const { expr } = fc.letrec<{ expr: string; bool: string; num: string; str: string; list: string; any: string }>((tie) => ({
  expr: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('bool'), tie('bool'), tie('bool'), tie('any')),
  bool: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('true', 'false', 'block.untrusted', 'block.sensitive', 'result.sensitive', 'result.isError', 'context.b', 'has(context.a)', 'has(context.m)', 'has(block.m.a)'),
    fc.tuple(tie('num'), fc.constantFrom('==', '!=', '<', '<=', '>', '>='), tie('num')).map(([a, o, b]) => `${a} ${o} ${b}`),
    fc.tuple(tie('str'), fc.constantFrom('==', '!='), tie('str')).map(([a, o, b]) => `${a} ${o} ${b}`),
    fc.tuple(tie('str'), tie('list')).map(([a, l]) => `${a} in ${l}`),
    fc.tuple(tie('str'), fc.constantFrom('startsWith', 'endsWith', 'contains'), tie('str')).map(([a, m, b]) => `${a}.${m}(${b})`),
    fc.tuple(tie('bool'), fc.constantFrom('&&', '||'), tie('bool')).map(([a, o, b]) => `(${a}) ${o} (${b})`),
    tie('bool').map((b) => `!(${b})`),
    fc.tuple(tie('bool'), tie('bool'), tie('bool')).map(([c, a, b]) => `(${c}) ? (${a}) : (${b})`),
    fc.tuple(fc.constantFrom('evidence', 'validation'), fc.constantFrom('exists', 'all'), fc.constantFrom('x.status == "mismatch"', 'x.severity == "error"', 'x.type == null', 'x.status.startsWith("v")', 'x.nosuch')).map(
      ([l, q, p]) => `${l}.${q}(x, ${p})`,
    ),
    fc.tuple(fc.constantFrom('block.l', 'context.l', 'block.audience', '[1, 2]'), fc.constantFrom('exists', 'all'), fc.constantFrom('x == 1', 'x > 0', 'x == "a"', 'x != null', 'x')).map(([l, q, p]) => `${l}.${q}(x, ${p})`),
  ),
  num: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('0', '1', '2', '-1', '1.5', '0.0', 'context.n', 'context.a', 'block.index', 'result.blockCount', 'size(block.audience)', 'size(context.s)', 'block.l[0]', 'context.nosuch'),
    tie('num').map((n) => `-(${n})`),
    tie('list').map((l) => `size(${l})`),
    fc.tuple(tie('bool'), tie('num'), tie('num')).map(([c, a, b]) => `(${c}) ? (${a}) : (${b})`),
  ),
  str: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('"a"', '"user"', '""', '"🙂x"', '"se"', '"x"', 'context.s', 'context.a', 'block.type', 'tool.name', 'server.name', 'dataClass.class', 'context["s"]', 'block.m.a'),
    fc.tuple(tie('bool'), tie('str'), tie('str')).map(([c, a, b]) => `(${c}) ? (${a}) : (${b})`),
  ),
  list: fc.constantFrom('block.audience', 'block.l', 'context.l', '["a", "user"]', '[1, 2]', '[]', 'block.m'),
  any: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('null', '1u', 'b"a"', 'block', 'context', 'evidence', 'context.m', 'block.m.b', 'tool', 'x'),
    fc.tuple(tie('any'), fc.constantFrom('&&', '||', '==', '!=', '<', 'in'), tie('any')).map(([a, o, b]) => `(${a}) ${o} (${b})`),
    tie('any').map((e) => `size(${e})`),
    tie('any').map((e) => `!(${e})`),
    tie('num'),
    tie('str'),
  ),
}));

/** A `when` as the service compiles it, or undefined when the engine refuses it at load. */
function tryCompile(source: string, fastPath: boolean) {
  try {
    return compileCel(source, { fastPath });
  } catch (err) {
    if (err instanceof CelCompileError) return undefined;
    throw err;
  }
}

describe('CEL fast path', () => {
  it('gives what the engine gives, on generated expressions and data', () => {
    let compiled = 0;
    let onFastPath = 0;
    let evaluations = 0;
    let answered = 0;
    fc.assert(
      fc.property(expr, fc.array(data, { minLength: 1, maxLength: 4 }), (source, inputs) => {
        const engine = tryCompile(source, false);
        if (engine === undefined) return;
        const fast = tryCompile(source, true)!;
        compiled++;
        if (fast.fast) onFastPath++;
        const direct = compileFast(checkedAst(source));
        for (const { shared, scope } of inputs) {
          const act = buildActivation(prepareShared(shared), scope);
          expect(fast.evaluate(act), source).toEqual(engine.evaluate(buildActivation(prepareShared(shared), scope)));
          evaluations++;
          if (direct !== undefined && direct((act as unknown as { plain: PlainVars }).plain) !== UNKNOWN) answered++;
        }
      }),
      { seed: SEED, numRuns: 4000 },
    );
    // The generator must reach the fast path, or the property above proves nothing about it.
    expect(compiled).toBeGreaterThan(1000);
    expect(onFastPath / compiled).toBeGreaterThan(0.5);
    expect(answered).toBeGreaterThan(200);
    expect(answered / evaluations).toBeGreaterThan(0.1);
  });

  it('answers on its own for most data, deferring to the engine only where it cannot tell', () => {
    const vars = (block: unknown, context: unknown, evidence: unknown = []): PlainVars =>
      ({ block, context, evidence, result: {}, tool: {}, server: {}, dataClass: {}, validation: [] }) as PlainVars;
    const fn = (source: string) => compileFast(checkedAst(source))!;
    expect(fn('block.untrusted')(vars({ untrusted: true }, {}))).toBe(true);
    expect(fn('block.untrusted')(vars({ untrusted: false }, {}))).toBe(false);
    // Errors and types it does not handle are the engine's to answer.
    expect(fn('block.untrusted')(vars({}, {}))).toBe(UNKNOWN);
    expect(fn('context.s == 1')(vars({}, { s: 'x' }))).toBe(UNKNOWN);
    // ...unless the other side of && / || decides.
    expect(fn('false && block.nosuch')(vars({}, {}))).toBe(false);
    expect(fn('block.nosuch || true')(vars({}, {}))).toBe(true);
    expect(fn('evidence.exists(e, e.status == "mismatch")')(vars({}, {}, [{ status: 1 }, { status: 'mismatch' }]))).toBe(true);
    expect(fn('evidence.exists(e, e.status == "mismatch")')(vars({}, {}, [{ status: 1 }]))).toBe(UNKNOWN);
    expect(fn('size(context.s) == 2')(vars({}, { s: 'a🙂' }))).toBe(true);
    // Outside the subset: no fast path at all.
    expect(compileFast(checkedAst('context.s.matches("a")'))).toBeUndefined();
    expect(compileFast(checkedAst('context.n + 1.0 > 2.0'))).toBeUndefined();
  });

  it('runs every shipped policy condition on the fast path', () => {
    const dir = join(import.meta.dirname, '../../../policies');
    const whens = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml') && !f.endsWith('.test.yaml'))
      .flatMap((f) => (parse(readFileSync(join(dir, f), 'utf8')) as { rules: Array<{ when: string }> }).rules.map((r) => r.when));
    expect(whens.length).toBeGreaterThan(0);
    for (const when of whens) expect(compileCel(when).fast, when).toBe(true);
  });
});

describe('CEL fast path: the session and call variables (contract section 12)', () => {
  const atoms = [
    'session.untrusted',
    'session.sensitive',
    'session.calls > 1',
    'session.results == 0',
    'session.calls == 1.0',
    'session.id == ""',
    '"send" in session.tools',
    'session.tools.exists(t, t.startsWith("s"))',
    'size(session.dataClass) > 0',
    'has(session.dataClass.class) && session.dataClass.class == "confidential"',
    '"gdpr" in session.dataClass.regulatory',
    'call.name == "send"',
    'has(call.arguments.to)',
    'call.arguments.to.endsWith("@example.com")',
    'call.arguments.n > 1',
    'size(call.arguments) == 0',
    '!tool.hints.readOnlyHint',
    'tool.hints.openWorldHint',
    'tool.hints.destructiveHint && !tool.hints.idempotentHint',
    'tool.pin == "changed"',
    'tool.digest.startsWith("sha256:")',
  ];
  const { cond } = fc.letrec<{ cond: string }>((tie) => ({
    cond: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom(...atoms),
      fc.constantFrom(...atoms),
      fc.tuple(tie('cond'), fc.constantFrom('&&', '||'), tie('cond')).map(([a, o, b]) => `(${a}) ${o} (${b})`),
      tie('cond').map((c) => `!(${c})`),
    ),
  }));
  const session = fc.record({
    id: fc.constantFrom('', 'conv-1'),
    sensitive: fc.boolean(),
    untrusted: fc.boolean(),
    dataClass: fc.constantFrom({}, { class: 'confidential', regulatory: ['gdpr'] }, { class: 'public', regulatory: [] }),
    calls: fc.nat(3),
    results: fc.nat(3),
    tools: fc.subarray(['send', 'search', 'rm']),
  });
  const call = fc.record({
    name: fc.constantFrom('send', 'search'),
    arguments: fc.oneof(fc.constant({}), fc.record({ to: fc.constantFrom('a@example.com', 'x@evil.test', 7), n: fc.constantFrom(0, 2, 'x') }, { requiredKeys: [] })),
  });
  const tool = fc.option(
    fc.record({ name: fc.constant('send'), annotations: fc.record({ readOnlyHint: fc.constantFrom(true, false, 'yes'), openWorldHint: fc.boolean() }, { requiredKeys: [] }) }, { requiredKeys: [] }),
    { nil: undefined },
  );
  const members = fc.option(fc.record({ pin: fc.constantFrom('first-seen', 'match', 'changed', 'none'), digest: fc.constantFrom('sha256:ab', 'x') }, { requiredKeys: ['pin'] }), { nil: undefined });

  it('gives what the engine gives, and answers most of them itself', () => {
    let evaluations = 0;
    let answered = 0;
    fc.assert(
      fc.property(cond, session, call, tool, members, (source, s, c, t, m) => {
        const engine = compileCel(source, { fastPath: false });
        const fast = compileCel(source);
        expect(fast.fast, source).toBe(true);
        const shared: SharedVarsInput = { result: { sensitive: false, untrusted: false, isError: false, blockCount: 0, asserted: {} }, validation: [], session: s, call: c, tool: t, toolMembers: m };
        const scope: ScopeVarsInput = { block: {}, evidence: [], dataClass: {} };
        const act = buildActivation(prepareShared(shared), scope);
        expect(fast.evaluate(act), source).toEqual(engine.evaluate(buildActivation(prepareShared(shared), scope)));
        evaluations++;
        if (compileFast(checkedAst(source))!((act as unknown as { plain: PlainVars }).plain) !== UNKNOWN) answered++;
      }),
      { seed: SEED, numRuns: 1500 },
    );
    expect(answered / evaluations).toBeGreaterThan(0.5);
  });
});
