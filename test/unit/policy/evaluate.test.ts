import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Effect, Mode, Scope } from '../../../src/policy/vocabulary.js';
import { compileCel } from '../../../src/policy/cel/engine.js';
import { effectiveMode, evaluatePolicies, type BlockScopeInput, type EvaluationInput } from '../../../src/policy/evaluate.js';
import { indexPolicies, loadPolicyDir, type Policy, type PolicySet } from '../../../src/policy/load.js';

interface RuleSpec {
  id: string;
  when: string;
  effect?: Effect;
  scope?: Scope;
  message?: string;
  mode?: Mode;
}

function policy(id: string, mode: Mode, rules: RuleSpec[]): Policy {
  return {
    id,
    mode,
    file: `${id}.yaml`,
    rules: rules.map((r) => ({
      id: r.id,
      scope: r.scope ?? 'block',
      when: r.when,
      compiled: compileCel(r.when),
      effect: r.effect ?? 'flag',
      ...(r.message !== undefined ? { message: r.message } : {}),
      ...(r.mode !== undefined ? { mode: r.mode } : {}),
    })),
  };
}

const set = (...policies: Policy[]): PolicySet => ({ policies, revision: 'sha256:' + '0'.repeat(64), files: policies.map((p) => p.file), index: indexPolicies(policies) });

function block(index: number, extra: Record<string, unknown> = {}): BlockScopeInput {
  return {
    index,
    pointer: `/content/${index}`,
    block: { index, type: 'text', sensitive: false, untrusted: false, asserted: {}, audience: [], ...extra },
    evidence: [],
    dataClass: {},
  };
}

function input(over: Partial<EvaluationInput> = {}): EvaluationInput {
  return {
    result: { sensitive: false, untrusted: true, isError: false, blockCount: 3, asserted: { untrusted: true } },
    validation: [],
    resultScope: { evidence: [], dataClass: {} },
    blocks: [block(0, { untrusted: true, asserted: { untrusted: true } }), block(1), block(2, { untrusted: true, asserted: { untrusted: true } })],
    ...over,
  };
}

describe('modes', () => {
  const p = (mode: Mode) => policy(`p-${mode}`, mode, [{ id: 'all', when: 'true', scope: 'result' }]);
  const all = set(p('audit'), p('warn'), p('enforce'));

  it('runs each policy under its own mode', () => {
    expect(evaluatePolicies(all, input()).map((m) => m.mode)).toEqual(['audit', 'warn', 'enforce']);
  });

  it('override audit forces every policy into audit', () => {
    expect(evaluatePolicies(all, input(), 'audit').map((m) => m.mode)).toEqual(['audit', 'audit', 'audit']);
  });

  it('override warn caps enforce at warn and leaves audit alone', () => {
    expect(evaluatePolicies(all, input(), 'warn').map((m) => m.mode)).toEqual(['audit', 'warn', 'warn']);
  });

  it("a rule's own mode runs it under the milder of the two, then the override", () => {
    const rules = (['audit', 'warn', 'enforce'] as const).map((m) => ({ id: `r-${m}`, when: 'true', scope: 'result' as const, mode: m }));
    const modes = (pm: Mode, o?: 'audit' | 'warn') => evaluatePolicies(set(policy('p', pm, rules)), input(), o).map((m) => m.mode);
    expect(modes('enforce')).toEqual(['audit', 'warn', 'enforce']);
    expect(modes('warn')).toEqual(['audit', 'warn', 'warn']);
    expect(modes('audit')).toEqual(['audit', 'audit', 'audit']);
    expect(modes('enforce', 'warn')).toEqual(['audit', 'warn', 'warn']);
    expect(modes('enforce', 'audit')).toEqual(['audit', 'audit', 'audit']);
  });

  it('effectiveMode covers every pair', () => {
    expect(effectiveMode('enforce')).toBe('enforce');
    expect(effectiveMode('enforce', 'warn')).toBe('warn');
    expect(effectiveMode('audit', 'warn')).toBe('audit');
    expect(effectiveMode('warn', 'audit')).toBe('audit');
  });
});

describe('scopes', () => {
  it('runs a block rule once per block with that block', () => {
    const s = set(policy('p', 'enforce', [{ id: 'fence', when: 'block.untrusted', effect: 'spotlight', message: 'fenced' }]));
    expect(evaluatePolicies(s, input())).toEqual([
      { policy: 'p', rule: 'fence', mode: 'enforce', effect: 'spotlight', scope: 'block', blockIndex: 0, pointer: '/content/0', message: 'fenced' },
      { policy: 'p', rule: 'fence', mode: 'enforce', effect: 'spotlight', scope: 'block', blockIndex: 2, pointer: '/content/2', message: 'fenced' },
    ]);
  });

  it('runs a result rule once, with block an empty map and the result-level evidence', () => {
    const s = set(
      policy('p', 'enforce', [
        { id: 'r', scope: 'result', when: 'size(block) == 0 && evidence.exists(e, e.status == "mismatch")', effect: 'deny' },
      ]),
    );
    const matches = evaluatePolicies(
      s,
      input({
        resultScope: { evidence: [{ type: 'data-class.v1', status: 'mismatch', canonicalization: 'jcs/rfc8785', pointer: '/_meta/x' }], dataClass: {} },
      }),
    );
    expect(matches).toEqual([{ policy: 'p', rule: 'r', mode: 'enforce', effect: 'deny', scope: 'result', pointer: '', message: 'p/r matched (effect deny)' }]);
    expect(matches[0]).not.toHaveProperty('blockIndex');
  });

  it('gives block rules the block evidence and data class, result rules the result ones', () => {
    const blocks = [
      { ...block(0), dataClass: { class: 'confidential', regulatory: ['gdpr'] } },
      { ...block(1), evidence: [{ type: 'x', status: 'unresolved' as const, canonicalization: null, pointer: '/content/1/_meta' }] },
    ];
    const s = set(
      policy('p', 'audit', [
        { id: 'class', when: 'has(dataClass.class) && dataClass.class != "public"' },
        { id: 'unresolved', when: 'evidence.exists(e, e.status == "unresolved" && e.canonicalization == null)' },
        { id: 'result-class', scope: 'result', when: 'has(dataClass.class)' },
      ]),
    );
    const matches = evaluatePolicies(s, input({ blocks, resultScope: { evidence: [], dataClass: { class: 'internal', regulatory: [] } } }));
    expect(matches.map((m) => [m.rule, m.pointer])).toEqual([
      ['class', '/content/0'],
      ['unresolved', '/content/1'],
      ['result-class', ''],
    ]);
  });

  it('runs nothing for a block rule when there are no blocks', () => {
    const s = set(policy('p', 'enforce', [{ id: 'any', when: 'true' }]));
    expect(evaluatePolicies(s, input({ blocks: [] }))).toEqual([]);
  });
});

describe('variables', () => {
  it('binds every variable with the contract defaults', () => {
    const s = set(
      policy('p', 'audit', [
        {
          id: 'defaults',
          scope: 'result',
          when: 'tool.name == "" && size(tool.annotations) == 0 && server.name == "" && size(context) == 0 && size(validation) == 0 && size(dataClass) == 0',
        },
      ]),
    );
    expect(evaluatePolicies(s, input())).toHaveLength(1);
  });

  it('has() tells optional members apart', () => {
    const blocks = [block(0, { priority: 0.8, uri: 'file:///a' }), block(1, { asserted: { untrusted: false } }), block(2)];
    const s = set(
      policy('p', 'audit', [
        { id: 'priority', when: 'has(block.priority) && block.priority > 0.5' },
        { id: 'uri', when: 'has(block.uri) && block.uri.startsWith("file:")' },
        { id: 'asserted-false', when: 'has(block.asserted.untrusted) && !block.untrusted' },
        { id: 'egress', scope: 'result', when: 'has(context.destination) && context.destination != "local"' },
      ]),
    );
    const without = evaluatePolicies(s, input({ blocks }));
    expect(without.map((m) => `${m.rule}@${m.pointer}`)).toEqual(['priority@/content/0', 'uri@/content/0', 'asserted-false@/content/1']);
    const withContext = evaluatePolicies(s, input({ blocks, context: { destination: 'external-model' } }));
    expect(withContext.map((m) => m.rule)).toContain('egress');
  });

  it('exposes ints, doubles and request members as documented', () => {
    const s = set(
      policy('p', 'audit', [
        {
          id: 'numbers',
          scope: 'result',
          when: 'result.blockCount == 3 && context.n == 1 && tool.annotations.openWorldHint && server.name == "web"',
        },
        { id: 'index', when: 'block.index == 1' },
      ]),
    );
    const matches = evaluatePolicies(s, input({ context: { n: 1 }, tool: { name: 'fetch', annotations: { openWorldHint: true } }, server: { name: 'web' } }));
    expect(matches.map((m) => `${m.rule}@${m.pointer}`)).toEqual(['numbers@', 'index@/content/1']);
  });

  it('fills block.index from the block entry when the block map lacks it', () => {
    const b: BlockScopeInput = { index: 4, pointer: '/content/4', block: { type: 'text' }, evidence: [], dataClass: {} };
    const s = set(policy('p', 'audit', [{ id: 'idx', when: 'block.index == 4' }]));
    expect(evaluatePolicies(s, input({ blocks: [b] }))).toHaveLength(1);
  });
});

describe('failing closed', () => {
  it('counts a runtime error as matched and says so', () => {
    const s = set(policy('p', 'enforce', [{ id: 'typo', scope: 'result', when: 'result.sensitiv', effect: 'deny', message: 'never shown' }]));
    const [m, ...rest] = evaluatePolicies(s, input());
    expect(rest).toEqual([]);
    expect(m).toMatchObject({ policy: 'p', rule: 'typo', mode: 'enforce', effect: 'deny', pointer: '' });
    expect(m!.error).toBe('no such key in `sensitiv` (line 1, column 8)');
    expect(m!.message).toBe('the condition of p/typo failed to evaluate (no such key in `sensitiv` (line 1, column 8)); the rule counts as matched');
  });

  it('keeps data out of the error', () => {
    const s = set(policy('p', 'enforce', [{ id: 'lookup', scope: 'result', when: 'context[context.key] == "x"' }]));
    const [m] = evaluatePolicies(s, input({ context: { key: 'the-secret-key' } }));
    expect(m!.error).toBeDefined();
    expect(m!.error).not.toContain('the-secret-key');
    expect(m!.message).not.toContain('the-secret-key');
  });

  it('counts a value that is not a bool as matched', () => {
    const s = set(policy('p', 'warn', [{ id: 'type', when: 'block.type' }]));
    const matches = evaluatePolicies(s, input());
    expect(matches).toHaveLength(3);
    for (const m of matches) expect(m.error).toBe('when must yield a bool, got string');
  });

  it('errors in one block do not stop the others', () => {
    const blocks = [block(0, { priority: 0.2 }), block(1), block(2, { priority: 0.9 })];
    const s = set(policy('p', 'audit', [{ id: 'high', when: 'block.priority > 0.5' }]));
    const matches = evaluatePolicies(s, input({ blocks }));
    expect(matches.map((m) => [m.blockIndex, m.error !== undefined])).toEqual([
      [1, true],
      [2, false],
    ]);
  });
});

describe('order and purity', () => {
  it('lists matches by policy, then rule, then block', () => {
    const s = set(
      policy('b-first', 'audit', [
        { id: 'r1', when: 'true' },
        { id: 'r2', scope: 'result', when: 'true' },
      ]),
      policy('a-second', 'audit', [{ id: 'r1', when: 'block.index != 1' }]),
    );
    expect(evaluatePolicies(s, input()).map((m) => `${m.policy}/${m.rule}${m.pointer}`)).toEqual([
      'b-first/r1/content/0',
      'b-first/r1/content/1',
      'b-first/r1/content/2',
      'b-first/r2',
      'a-second/r1/content/0',
      'a-second/r1/content/2',
    ]);
  });

  it('gives the same matches for the same input and leaves the input untouched', () => {
    const s = set(policy('p', 'enforce', [{ id: 'fence', when: 'block.untrusted' }]));
    const i = input({ context: { nested: { a: [1, 2] } } });
    const before = structuredClone(i);
    expect(evaluatePolicies(s, i)).toEqual(evaluatePolicies(s, i));
    expect(i).toEqual(before);
  });

  it('runs the shipped-style fixture policies end to end', async () => {
    const loaded = await loadPolicyDir(fileURLToPath(new URL('../../fixtures/policies/good/', import.meta.url)));
    const matches = evaluatePolicies(
      loaded,
      input({
        result: { sensitive: true, untrusted: true, isError: false, blockCount: 2, asserted: { sensitive: true, untrusted: true } },
        context: { destination: 'external-model' },
        validation: [{ rule: 'mcp.annotations.priority', severity: 'error', pointer: '/content/1/annotations/priority' }],
        blocks: [block(0, { untrusted: true, audience: ['user'] }), block(1, { audience: ['assistant'] })],
      }),
    );
    expect(matches.map((m) => `${m.policy}/${m.rule}${m.pointer} ${m.mode}`)).toEqual([
      'default/spotlight-untrusted/content/0 enforce',
      'default/consent-sensitive-egress enforce',
      'audience/drop-not-for-reader/content/0 warn',
      'validation/flag-validation-errors audit',
    ]);
    const forUser = evaluatePolicies(loaded, input({ context: { reader: 'user' }, blocks: [block(0, { audience: ['user'] }), block(1, { audience: ['assistant'] })] }));
    expect(forUser.filter((m) => m.policy === 'audience').map((m) => m.pointer)).toEqual(['/content/1']);
  });
});
