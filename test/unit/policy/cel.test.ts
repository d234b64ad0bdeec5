import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CelCompileError, compileCel } from '../../../src/policy/cel/engine.js';
import { buildActivation, prepareShared } from '../../../src/policy/cel/values.js';
import { CEL_VARIABLES, type ScopeVarsInput, type SharedVarsInput } from '../../../src/policy/cel/variables.js';

const shared: SharedVarsInput = {
  result: { sensitive: true, untrusted: false, isError: false, blockCount: 2, asserted: { sensitive: true } },
  tool: { name: 'fetch', annotations: { openWorldHint: true } },
  server: { name: 'web' },
  context: { destination: 'external-model', n: 1, nested: { list: [1, 'two', null, true] } },
  validation: [{ rule: 'mcp.annotations.priority', severity: 'error', pointer: '/content/1/annotations/priority' }],
};

const scope: ScopeVarsInput = {
  block: { index: 1, type: 'text', sensitive: false, untrusted: true, asserted: { untrusted: true }, audience: ['user'], priority: 0.5 },
  evidence: [{ type: 'data-class.v1', status: 'verified', canonicalization: 'jcs/rfc8785', pointer: '/content/1/_meta' }],
  dataClass: { class: 'confidential', regulatory: ['gdpr'] },
};

function run(source: string, s: SharedVarsInput = shared, sc: ScopeVarsInput = scope) {
  return compileCel(source).evaluate(buildActivation(prepareShared(s), sc));
}

function compileError(source: string): CelCompileError {
  try {
    compileCel(source);
  } catch (err) {
    expect(err).toBeInstanceOf(CelCompileError);
    return err as CelCompileError;
  }
  throw new Error(`compiled: ${source}`);
}

describe('compileCel', () => {
  it('keeps the source', () => {
    expect(compileCel('block.untrusted').source).toBe('block.untrusted');
  });

  it('declares the contract variables', () => {
    expect(CEL_VARIABLES).toEqual(['result', 'block', 'tool', 'server', 'context', 'principal', 'evidence', 'dataClass', 'validation', 'session', 'call']);
    for (const v of CEL_VARIABLES) expect(() => compileCel(`size(${v}) >= 0`)).not.toThrow();
  });

  it('rejects a syntax error with its position', () => {
    const err = compileError('block.untrusted &&\n  (block.sensitive');
    expect(err.message).toMatch(/^CEL syntax error at line 2, column \d+: /);
    expect(err.line).toBe(2);
  });

  it('rejects an unknown variable', () => {
    const err = compileError('blok.untrusted');
    expect(err.message).toMatch(/^CEL error at line 1, column 1: Unknown variable: blok \(variables: result, block/);
  });

  it('rejects an unknown function', () => {
    expect(compileError('nosuch(block)').message).toMatch(/no matching overload/);
  });

  it('rejects a type other than bool', () => {
    expect(compileError('result.blockCount + 1').message).toBe('CEL type error: when must yield a bool, but the expression has type int');
    expect(compileError('"text"').message).toMatch(/has type string/);
  });

  it('rejects an empty expression', () => {
    expect(compileError('  ').message).toBe('CEL expression is empty');
  });

  it('accepts comments', () => {
    expect(run('block.untrusted // fenced later')).toEqual({ ok: true, value: true });
  });
});

describe('evaluation', () => {
  it('maps result.blockCount and block.index to ints, priority to a double', () => {
    expect(run('result.blockCount == 2 && type(result.blockCount) == int')).toEqual({ ok: true, value: true });
    expect(run('block.index == 1 && type(block.index) == int')).toEqual({ ok: true, value: true });
    expect(run('block.priority == 0.5 && type(block.priority) == double && block.priority > 0')).toEqual({ ok: true, value: true });
  });

  it('maps JSON numbers in context to doubles that compare with ints', () => {
    expect(run('type(context.n) == double')).toEqual({ ok: true, value: true });
    expect(run('context.n == 1 && context.n == 1.0 && context.n > 0 && context.n in [1, 2]')).toEqual({ ok: true, value: true });
    expect(run('context.n + 1.0 == 2.0 && int(context.n) + 1 == 2')).toEqual({ ok: true, value: true });
    const mixed = run('context.n + 1 == 2');
    expect(mixed.ok).toBe(false);
  });

  it('maps strings, bools, null, lists and maps', () => {
    expect(run('context.nested.list[1] == "two" && context.nested.list[2] == null && context.nested.list[3]')).toEqual({ ok: true, value: true });
    expect(run('size(context.nested.list) == 4 && tool.annotations.openWorldHint')).toEqual({ ok: true, value: true });
    expect(run('"user" in block.audience && !("assistant" in block.audience)')).toEqual({ ok: true, value: true });
  });

  it('has() tells an absent member from a present one', () => {
    expect(run('has(block.priority) && !has(block.uri) && !has(block.mimeType)')).toEqual({ ok: true, value: true });
    expect(run('has(block.asserted.untrusted) && !has(block.asserted.sensitive)')).toEqual({ ok: true, value: true });
    expect(run('has(context.destination) && !has(context.reader)')).toEqual({ ok: true, value: true });
    expect(run('has(dataClass.class) && "gdpr" in dataClass.regulatory')).toEqual({ ok: true, value: true });
  });

  it('leaves undefined members out, as JSON does', () => {
    const sc = { ...scope, block: { ...scope.block, uri: undefined } };
    expect(run('!has(block.uri)', shared, sc)).toEqual({ ok: true, value: true });
  });

  it('binds the defaults for absent tool, server and context', () => {
    const bare: SharedVarsInput = { result: shared.result, validation: [] };
    expect(run('tool.name == "" && size(tool.annotations) == 0 && server.name == "" && size(context) == 0', bare)).toEqual({
      ok: true,
      value: true,
    });
    expect(run('tool.name == "x" && size(tool.annotations) == 0 && server.name == ""', { ...bare, tool: { name: 'x' }, server: {} })).toEqual({
      ok: true,
      value: true,
    });
  });

  it('exposes only rule, severity and pointer of validation findings', () => {
    const withMessage = { ...shared, validation: [{ rule: 'r', severity: 'error' as const, pointer: '', message: 'm' }] };
    expect(run('validation.exists(v, v.rule == "r" && v.severity == "error") && validation.all(v, !has(v.message))', withMessage)).toEqual({
      ok: true,
      value: true,
    });
  });

  it('treats keys such as constructor and __proto__ as plain data', () => {
    const context = JSON.parse('{"constructor": "c", "__proto__": {"polluted": true}, "hasOwnProperty": 1, "a": 2}') as Record<string, unknown>;
    const s = { ...shared, context };
    expect(run('context.constructor == "c" && context["__proto__"].polluted && context.a == 2 && size(context) == 4', s)).toEqual({
      ok: true,
      value: true,
    });
    expect(run('!has(tool.constructor) && !has(tool.toString)')).toEqual({ ok: true, value: true });
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('reports a runtime error without quoting data', () => {
    const s = { ...shared, context: { ...shared.context, key: 'secret-value' } };
    const r = run('block[context.key] == 1', s);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toBe('no such key in `block[context.key]` (line 1, column 1)');
      expect(r.error).not.toContain('secret-value');
    }
    expect(run('block.nosuch == 1')).toEqual({ ok: false, error: 'no such key in `nosuch` (line 1, column 7)' });
    expect(run('1 / (result.blockCount - 2) == 1')).toMatchObject({ ok: false, error: expect.stringMatching(/^division by zero/) });
  });

  it('reports a value that is not a bool as an error', () => {
    expect(run('block.type')).toEqual({ ok: false, error: 'when must yield a bool, got string' });
    expect(run('context.n')).toEqual({ ok: false, error: 'when must yield a bool, got double' });
    expect(run('context.nested')).toEqual({ ok: false, error: 'when must yield a bool, got map' });
  });

  it('follows CEL error absorption: an error does not matter when the other side decides', () => {
    expect(run('block.nosuch == 1 || true')).toEqual({ ok: true, value: true });
    expect(run('false && block.nosuch == 1')).toEqual({ ok: true, value: false });
  });

  it('never throws, whatever the activation holds', () => {
    const c = compileCel('block.untrusted');
    expect(c.evaluate({} as never)).toMatchObject({ ok: false });
    expect(c.evaluate(null as never)).toMatchObject({ ok: false });
  });
});

describe('matches(): RE2, in linear time', () => {
  const withContext = (context: Record<string, unknown>) => ({ ...shared, context });

  it('finds a pattern anywhere in the string, as CEL defines matches()', () => {
    expect(run('tool.name.matches("et")')).toEqual({ ok: true, value: true });
    expect(run('tool.name.matches("^et")')).toEqual({ ok: true, value: false });
    expect(run('(tool.name + "-x").matches("h-x$") && server.name . matches ( "^w" )')).toEqual({ ok: true, value: true });
    expect(run('validation.exists(v, v.rule.matches("priority$"))')).toEqual({ ok: true, value: true });
  });

  it('uses RE2 syntax and semantics: inline flags, code points', () => {
    expect(run('tool.name.matches("(?i)^FETCH$")')).toEqual({ ok: true, value: true });
    expect(run('context.s.matches("^.$")', withContext({ s: '🙂' }))).toEqual({ ok: true, value: true });
  });

  it('answers a backtracking pattern on hostile data at once', () => {
    // JavaScript's engine takes about 40 s for 31 characters here, and doubles with each one more.
    const s = withContext({ s: 'a'.repeat(5000) + '!' });
    expect(run('context.s.matches("^(a+)+$")', s)).toEqual({ ok: true, value: false });
    expect(run('context.s.matches("^(a|a)*$") || context.s.matches("^a*a*a*a*$")', s)).toEqual({ ok: true, value: false });
  });

  it('refuses at load a literal pattern that is not RE2 syntax, with its position', () => {
    const e = compileError('tool.name.matches("(?=f)")');
    expect(e.message).toMatch(/^CEL error at line 1, column 19: matches\(\) pattern is not an RE2 regular expression/);
    expect(e.line).toBe(1);
    expect(e.column).toBe(19);
    expect(compileError('true &&\n  tool.name.matches("[")').line).toBe(2);
  });

  it('counts a pattern from data that is not RE2 syntax as an error (fail closed)', () => {
    expect(run('tool.name.matches(context.p)', withContext({ p: '(' }))).toEqual({ ok: false, error: 'invalid regular expression' });
    expect(run('tool.name.matches(context.p)', withContext({ p: '^f' }))).toEqual({ ok: true, value: true });
  });

  it('offers no other name for it', () => {
    expect(compileError('tool.name.re2find("f")').message).toBe('CEL error: unknown function re2find');
  });

  it('keeps error positions in the author\'s text', () => {
    expect(run('context.n.matches("x")', withContext({ n: 5 }))).toEqual({
      ok: false,
      error: 'no matching overload in `context.n.matches("x")` (line 1, column 1)',
    });
  });
});

describe('every operand is read, under any operator', () => {
  // A walk of the expression that read only lists of operands missed what a unary operator holds (`!x`): a
  // `!s.matches(re)` kept JavaScript's backtracking engine, and a `!session.x` did not count as reading the session.
  const wrap = fc.constantFrom(
    (e: string) => `!(${e})`,
    (e: string) => `!!(${e})`,
    (e: string) => `(${e})`,
    (e: string) => `true && !(${e})`,
    (e: string) => `(${e}) ? !(${e}) : false`,
    (e: string) => `[1].all(i, !(${e}))`,
    (e: string) => `-((${e}) ? 1 : 2) < 0`,
    (e: string) => `!(false || !(${e}))`,
  );
  const wraps = fc.array(wrap, { minLength: 1, maxLength: 4 }).map((ws) => (e: string) => ws.reduce((acc, w) => w(acc), e));
  it('matches() under any nesting runs on RE2 (a backreference, which RE2 has not, is refused at load)', () => {
    fc.assert(
      fc.property(wraps, (w) => {
        expect(() => compileCel(w('tool.name.matches("(a)\\\\1")'))).toThrow(/not an RE2 regular expression/);
        expect(run(w('context.s.matches("^(a+)+$")'), { ...shared, context: { s: 'a'.repeat(5000) + '!' } }).ok).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
  it('the variables and members an expression reads are known under any nesting', () => {
    fc.assert(
      fc.property(wraps, fc.constantFrom('session', 'context', 'server'), fc.constantFrom('tainted', 'flowsOverflow', 'name'), (w, variable, member) => {
        const c = compileCel(w(`dyn(${variable}).${member} == true`));
        expect(c.variables.has(variable)).toBe(true);
        expect(c.members.has(member)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});

describe('matches(): pattern length', () => {
  it('refuses a literal pattern over 1024 characters at load, and one from data at evaluation', () => {
    expect(compileError(`tool.name.matches("${'a'.repeat(1025)}")`).message).toMatch(/matches\(\) pattern is longer than 1024 characters/);
    expect(compileCel(`tool.name.matches("${'a'.repeat(1024)}")`).source).toContain('matches');
    const s = { ...shared, context: { p: 'f'.repeat(1025) } };
    expect(run('tool.name.matches(context.p)', s)).toEqual({ ok: false, error: 'invalid regular expression' });
  });
});
