import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkedAst, compileCel } from '../../../src/policy/cel/engine.js';
import { compileFast } from '../../../src/policy/cel/fast.js';
import { CEL_VARIABLE_TABLE, CEL_VARIABLES, scopeVariables, variableTableMarkdown } from '../../../src/policy/cel/variables.js';
import { SCOPES } from '../../../src/policy/vocabulary.js';

describe('the CEL variable table', () => {
  it('is the variables table of docs/policies/reference.md', () => {
    const readme = readFileSync(new URL('../../../docs/policies/reference.md', import.meta.url), 'utf8');
    expect(readme).toContain(variableTableMarkdown());
  });

  it('every variable is declared on the engine and read by the fast path', () => {
    for (const v of CEL_VARIABLES) {
      const source = `has(${v}.x)`.replace(/^has\((evidence|validation)\.x\)$/, 'size($1) > 0');
      expect(() => compileCel(source), v).not.toThrow();
      expect(compileFast(checkedAst(source)), v).toBeDefined();
    }
  });

  it('each scope lists its own variables once, its subject first', () => {
    for (const scope of SCOPES) {
      const names = scopeVariables(scope);
      expect(new Set(names).size).toBe(names.length);
      expect([...names].sort()).toEqual(CEL_VARIABLE_TABLE.filter((v) => (v.scopes as readonly string[]).includes(scope)).map((v) => v.name).sort());
      if ((names as readonly string[]).includes(scope)) expect(names[0]).toBe(scope);
    }
  });
});
