import { chmod, cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { EFFECTS, MODES, SCOPES } from '../../../src/policy/vocabulary.js';
import { loadPolicyDir, policyRevision, PolicyLoadError } from '../../../src/policy/load.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/policies/', import.meta.url));
const fixture = (name: string) => join(FIXTURES, name);

/** Loads a folder that must fail, and returns the error. */
async function loadError(dir: string): Promise<PolicyLoadError> {
  try {
    await loadPolicyDir(dir);
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    return err as PolicyLoadError;
  }
  throw new Error(`loading ${dir} succeeded`);
}

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'trustgate-policies-'));
  temps.push(dir);
  return dir;
}
afterEach(async () => {
  for (const dir of temps.splice(0)) {
    await chmod(dir, 0o700).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});

describe('loadPolicyDir: a good folder', () => {
  it('loads every policy file in name order and ignores other files', async () => {
    const set = await loadPolicyDir(fixture('good'));
    expect(set.files).toEqual(['10-default.yaml', '20-audience.yml', '30-validation.json']);
    expect(set.policies.map((p) => [p.id, p.mode, p.file])).toEqual([
      ['default', 'enforce', '10-default.yaml'],
      ['audience', 'warn', '20-audience.yml'],
      ['validation', 'audit', '30-validation.json'],
    ]);
    expect(set.revision).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('ignores policy tests (*.test.yaml, *.test.yml, any letter case): they are not policies', async () => {
    const dir = await tempDir();
    await cp(fixture('good'), dir, { recursive: true });
    const before = await loadPolicyDir(dir);
    await writeFile(join(dir, 'good.test.yaml'), 'cases:\n  - name: x\n    evaluate: { result: { content: [] } }\n');
    await writeFile(join(dir, 'other.TEST.YML'), 'not: a policy\n');
    const after = await loadPolicyDir(dir);
    expect(after.files).toEqual(before.files);
    expect(after.revision).toBe(before.revision);
    // A policy whose name merely contains "test" is still a policy.
    await writeFile(join(dir, 'test.yaml'), 'id: t\nrules:\n  - id: r\n    when: "true"\n    effect: flag\n');
    expect((await loadPolicyDir(dir)).files).toContain('test.yaml');
  });

  it('applies the defaults: mode audit, scope block; keeps description and message', async () => {
    const set = await loadPolicyDir(fixture('good'));
    const [def, audience, validation] = set.policies;
    expect(def!.description).toBe('Baseline handling of trust annotations');
    expect(audience!.description).toBeUndefined();
    expect(def!.rules.map((r) => [r.id, r.scope, r.effect])).toEqual([
      ['spotlight-untrusted', 'block', 'spotlight'],
      ['consent-sensitive-egress', 'result', 'consent'],
      ['deny-mismatch', 'result', 'deny'],
    ]);
    expect(def!.rules[0]!.message).toBe('Untrusted content is fenced before it reaches the model');
    expect(def!.rules[1]).not.toHaveProperty('message');
    expect(audience!.rules[0]!.scope).toBe('block');
    expect(validation!.mode).toBe('audit');
    expect(def!.rules[0]!.compiled.source).toBe('block.untrusted');
    expect(def!.rules[0]!.when).toBe('block.untrusted');
  });
});

describe('loadPolicyDir: the folder', () => {
  it('fails when the folder is missing', async () => {
    const err = await loadError(join(await tempDir(), 'nope'));
    expect(err.message).toMatch(/policy folder .*nope does not exist/);
    expect(err.file).toBeUndefined();
  });

  it('fails when the path is a file', async () => {
    const err = await loadError(join(fixture('good'), '10-default.yaml'));
    expect(err.message).toMatch(/is not a folder/);
  });

  it.skipIf(process.getuid?.() === 0)('fails when the folder cannot be read', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.yaml'), 'id: p\nrules: [{id: r, when: "true", effect: flag}]\n');
    await chmod(dir, 0o000);
    const err = await loadError(dir);
    expect(err.message).toMatch(/cannot be read/);
  });

  it('fails when the folder is empty', async () => {
    const err = await loadError(await tempDir());
    expect(err.message).toMatch(/holds no policy files \(\*\.yaml, \*\.yml, \*\.json\)/);
  });

  it('fails when the folder holds only a README', async () => {
    const err = await loadError(fixture('only-readme'));
    expect(err.message).toMatch(/holds no policy files/);
  });

  it('ignores dotfiles and sub-folders, and follows symbolic links (ConfigMap layout)', async () => {
    const dir = await tempDir();
    const data = join(dir, '..2026_01_01');
    await mkdir(data);
    await cp(join(fixture('good'), '10-default.yaml'), join(data, 'default.yaml'));
    await symlink('..2026_01_01', join(dir, '..data'));
    await symlink(join('..data', 'default.yaml'), join(dir, 'default.yaml'));
    await writeFile(join(dir, '.default.yaml.swp'), 'not yaml: [');
    await mkdir(join(dir, 'nested.yaml'));
    const set = await loadPolicyDir(dir);
    expect(set.files).toEqual(['default.yaml']);
    expect(set.policies[0]!.id).toBe('default');
  });
});

describe('loadPolicyDir: closed vocabularies and the schema', () => {
  it.each([
    ['bad-mode', 'mode', '"block-everything"', MODES, undefined],
    ['bad-scope', 'scope', '"response"', SCOPES, 'r1'],
    ['bad-effect', 'effect', '"quarantine"', EFFECTS, 'fence'],
  ] as const)('%s: lists the valid values', async (name, what, value, valid, rule) => {
    const err = await loadError(fixture(name));
    expect(err.file).toBe('policy.yaml');
    expect(err.rule).toBe(rule);
    expect(err.detail).toBe(`${value} is not a valid ${what}; valid values: ${valid.join(', ')}`);
    expect(err.message).toContain('policy.yaml');
    if (rule) expect(err.message).toContain(`rule ${rule}`);
  });

  it('fails on an unknown key in a rule, naming it and the allowed keys', async () => {
    const err = await loadError(fixture('unknown-key'));
    expect(err.rule).toBe('r1');
    expect(err.detail).toBe('rules[0] has unknown key "priority"; allowed keys: id, scope, mode, when, effect, message, labels, mask');
  });

  it('fails on an unknown top-level key', async () => {
    const err = await loadError(fixture('unknown-top-key'));
    expect(err.rule).toBeUndefined();
    expect(err.detail).toBe('the policy has unknown key "modes"; allowed keys: id, description, mode, rules');
  });

  it('fails on a policy without rules', async () => {
    const err = await loadError(fixture('empty-rules'));
    expect(err.detail).toBe('rules must hold at least one rule');
  });

  it('fails on an id outside the id pattern', async () => {
    const err = await loadError(fixture('bad-id'));
    expect(err.detail).toMatch(/^id "my policy" is not a valid id/);
  });

  it('fails on a document that is not a mapping', async () => {
    const err = await loadError(fixture('not-a-mapping'));
    expect(err.detail).toMatch(/must be a mapping/);
  });
});

describe('loadPolicyDir: parsing', () => {
  it('fails on bad YAML, naming the file and the position', async () => {
    const err = await loadError(fixture('bad-yaml'));
    expect(err.file).toBe('policy.yaml');
    expect(err.detail).toMatch(/^not valid YAML: .* at line \d+, column \d+/);
  });

  it('fails on bad JSON', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.json'), '{ "id": "p", ');
    const err = await loadError(dir);
    expect(err.file).toBe('p.json');
    expect(err.detail).toMatch(/^not valid JSON/);
  });

  it('fails on a YAML file with several documents', async () => {
    const err = await loadError(fixture('multi-doc'));
    expect(err.detail).toBe('the file holds 2 YAML documents; it must hold exactly one policy');
  });

  it('fails on an empty file', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.yaml'), '# nothing yet\n');
    const err = await loadError(dir);
    expect(err.detail).toMatch(/the file is empty/);
  });

  it('fails on duplicate YAML keys', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.yaml'), 'id: p\nid: q\nrules: [{id: r, when: "true", effect: flag}]\n');
    const err = await loadError(dir);
    expect(err.detail).toMatch(/^not valid YAML: Map keys must be unique/);
  });

  it('stops alias bombs', async () => {
    const err = await loadError(fixture('alias-bomb'));
    expect(err.detail).toMatch(/^not valid YAML: .*alias/i);
  });

  it('fails on bytes that are not UTF-8', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.yaml'), Buffer.from([0x69, 0x64, 0x3a, 0x20, 0xff, 0x0a]));
    const err = await loadError(dir);
    expect(err.detail).toBe('the file is not valid UTF-8');
  });

  it('accepts a UTF-8 byte order mark', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.yaml'), '\ufeffid: p\nrules: [{id: r, when: "true", effect: flag}]\n');
    const set = await loadPolicyDir(dir);
    expect(set.policies[0]!.id).toBe('p');
  });

  it('fails on a file over the size limit', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'p.yaml'), '#'.repeat(1024 * 1024 + 1));
    const err = await loadError(dir);
    expect(err.detail).toMatch(/the limit is 1048576/);
  });
});

describe('loadPolicyDir: CEL', () => {
  it('fails on a syntax error, naming file, rule and position', async () => {
    const err = await loadError(fixture('cel-syntax'));
    expect(err.file).toBe('policy.yaml');
    expect(err.rule).toBe('broken');
    expect(err.detail).toMatch(/^when: CEL syntax error at line 1, column \d+: /);
    // The file's line and column come first, as editors open them: the end of `block.untrusted &&` on line 7.
    expect(err.message).toMatch(/policy file .*cel-syntax\/policy\.yaml:7:29, rule broken: when: CEL syntax error/);
  });

  it('names the file line and column of a CEL error in a condition of any YAML style, folded over lines included', async () => {
    // Never a variable, a keyword or a reserved word of CEL: those are other errors.
    const word = fc.stringMatching(/^[a-z]{1,8}$/).map((w) => `zq${w}`);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('block.untrusted', 'result.sensitive', 'size(block.audience) > 0', '(block.untrusted || "a b" == "a  b")'), { maxLength: 4 }), fc.nat(), word, fc.constantFrom('plain', 'double', 'single', 'folded', 'literal'), async (terms, at, unknown, style) => {
        const parts: string[] = [...terms];
        parts.splice(at % (parts.length + 1), 0, `${unknown}.x`);
        const expr = parts.join(' && ');
        const when =
          style === 'plain' ? ` ${expr}`
          : style === 'double' ? ` ${JSON.stringify(expr)}`
          : style === 'single' ? ` '${expr.replace(/'/g, "''")}'`
          : ` ${style === 'folded' ? '>-' : '|-'}\n${parts.map((p, i) => `      ${p}${i < parts.length - 1 ? ' &&' : ''}`).join('\n')}`;
        if (style === 'plain' && /"a {2}b"|: |#/.test(expr)) return;
        const text = `id: located\nrules:\n  - id: r\n    when:${when}\n    effect: flag\n`;
        const dir = await tempDir();
        await writeFile(join(dir, 'p.yaml'), text);
        const err = await loadError(dir);
        const m = /p\.yaml:(\d+):(\d+), rule r: when: CEL error at line \d+, column \d+: Unknown variable: (\w+)/.exec(err.message);
        expect(m, err.message).not.toBeNull();
        expect(m![3]).toBe(unknown);
        // The position is where the unknown name starts in the file.
        const line = text.split('\n')[Number(m![1]) - 1]!;
        expect(line.slice(Number(m![2]) - 1).startsWith(`${unknown}.x`), `${style}: ${line} at ${m![2]}`).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it('fails on an unknown variable, listing the variables', async () => {
    const err = await loadError(fixture('unknown-variable'));
    expect(err.rule).toBe('typo');
    expect(err.detail).toContain('Unknown variable: blok');
    expect(err.detail).toContain('result, block, tool, server, context, principal, evidence, dataClass, validation');
  });

  it('fails on a when whose type is not bool', async () => {
    const err = await loadError(fixture('non-bool'));
    expect(err.rule).toBe('counts');
    expect(err.detail).toMatch(/when must yield a bool, but the expression has type int/);
  });
});

describe('loadPolicyDir: ids', () => {
  it('fails on a policy id used by two files, naming both', async () => {
    const err = await loadError(fixture('dup-policy-id'));
    expect(err.file).toBe('b.json');
    expect(err.detail).toBe('duplicate policy id "same", also defined in a.yaml');
  });

  it('fails on a rule id used twice in one policy', async () => {
    const err = await loadError(fixture('dup-rule-id'));
    expect(err.rule).toBe('r1');
    expect(err.detail).toBe('duplicate rule id "r1" in the policy');
  });
});

describe('loadPolicyDir: prototype safety', () => {
  it.each(['proto-json', 'proto-yaml'])('%s: a __proto__ key is an unknown key and pollutes nothing', async (name) => {
    const err = await loadError(fixture(name));
    expect(err.detail).toMatch(/unknown key "__proto__"/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    expect(Object.prototype).not.toHaveProperty('mode');
  });
});

describe('policy revision', () => {
  it('changes when a byte of a policy file changes, not when other files change', async () => {
    const dir = await tempDir();
    await cp(fixture('good'), dir, { recursive: true });
    const first = (await loadPolicyDir(dir)).revision;
    expect((await loadPolicyDir(dir)).revision).toBe(first);

    await writeFile(join(dir, 'README.md'), '# changed\n');
    await writeFile(join(dir, 'other.txt'), 'new file\n');
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'p.yaml'), 'not even read');
    expect((await loadPolicyDir(dir)).revision).toBe(first);

    await writeFile(join(dir, '30-validation.json'), (await import('node:fs')).readFileSync(join(dir, '30-validation.json'), 'utf8').replace('"flag"', '"flag" '));
    const second = (await loadPolicyDir(dir)).revision;
    expect(second).not.toBe(first);
  });

  it('changes when a file is renamed', async () => {
    const dir = await tempDir();
    await cp(join(fixture('good'), '10-default.yaml'), join(dir, 'a.yaml'));
    const first = (await loadPolicyDir(dir)).revision;
    await rm(join(dir, 'a.yaml'));
    await cp(join(fixture('good'), '10-default.yaml'), join(dir, 'b.yaml'));
    expect((await loadPolicyDir(dir)).revision).not.toBe(first);
  });

  it('frames names and contents so that moving bytes between them changes the hash', () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    const a = policyRevision([{ name: 'a', bytes: enc('bc') }]);
    const b = policyRevision([{ name: 'ab', bytes: enc('c') }]);
    const c = policyRevision([
      { name: 'a', bytes: enc('b') },
      { name: 'c', bytes: enc('') },
    ]);
    expect(new Set([a, b, c]).size).toBe(3);
  });

  it('is sha256 over length-prefixed name and content', async () => {
    const { createHash } = await import('node:crypto');
    const name = Buffer.from('p.yaml');
    const body = Buffer.from('id: p\n');
    const expected = createHash('sha256')
      .update(Buffer.from([0, 0, 0, name.length]))
      .update(name)
      .update(Buffer.from([0, 0, 0, 0, 0, 0, 0, body.length]))
      .update(body)
      .digest('hex');
    expect(policyRevision([{ name: 'p.yaml', bytes: body }])).toBe(`sha256:${expected}`);
  });
});

describe('loadPolicyDir: scope call (contract section 12)', () => {
  async function withRule(rule: Record<string, unknown>): Promise<string> {
    const dir = await tempDir();
    await writeFile(join(dir, 'calls.yaml'), JSON.stringify({ id: 'calls', mode: 'enforce', rules: [{ id: 'r', ...rule }] }));
    return dir;
  }

  it.each(['redact', 'drop', 'spotlight'])('effect %s is a load error naming the file, the rule and the valid effects', async (effect) => {
    const err = await loadError(await withRule({ scope: 'call', when: 'true', effect }));
    expect(err.file).toBe('calls.yaml');
    expect(err.rule).toBe('r');
    expect(err.detail).toBe(`effect "${effect}" is not valid in scope call; valid effects there: deny, consent, flag`);
    expect(err.message).toMatch(/policy file .*calls\.yaml, rule r: effect/);
  });

  it.each(['deny', 'consent', 'flag'])('effect %s loads', async (effect) => {
    const set = await loadPolicyDir(await withRule({ scope: 'call', when: 'session.untrusted && !tool.hints.readOnlyHint', effect }));
    expect(set.policies[0]!.rules[0]).toMatchObject({ scope: 'call', effect });
  });

  it.each(['result.untrusted', 'block.sensitive', 'evidence.size() > 0', 'size(dataClass) > 0', 'validation.exists(v, v.severity == "error")'])(
    'a call rule cannot read the variables of a result: %s',
    async (when) => {
      const err = await loadError(await withRule({ scope: 'call', when, effect: 'deny' }));
      expect(err.detail).toMatch(/^when: variable \w+ does not exist in scope call; variables there: call, tool, server, context, principal, session$/);
    },
  );

  it.each(['block', 'result'])('a %s rule reads call (what the judged message is: call.method, contract section 15)', async (scope) => {
    const set = await loadPolicyDir(await withRule({ scope, when: 'call.method == "resources/read"', effect: 'flag' }));
    expect(set.policies[0]!.rules[0]).toMatchObject({ scope });
  });

  it.each(['deny', 'consent', 'redact', 'spotlight'])('scope tool: effect %s is a load error naming the valid effects', async (effect) => {
    const err = await loadError(await withRule({ scope: 'tool', when: 'true', effect }));
    expect(err.detail).toBe(`effect "${effect}" is not valid in scope tool; valid effects there: drop, flag`);
  });

  it.each(['call.name == "x"', 'result.untrusted', 'block.sensitive'])('scope tool reads only a listed definition: %s is a load error', async (when) => {
    const err = await loadError(await withRule({ scope: 'tool', when, effect: 'drop' }));
    expect(err.detail).toMatch(/^when: variable \w+ does not exist in scope tool; variables there: tool, server, context, principal, session$/);
  });

  it('scope tool rules are not evaluated as block or result rules', async () => {
    const { evaluatePolicies } = await import('../../../src/policy/evaluate.js');
    const set = await loadPolicyDir(await withRule({ scope: 'tool', when: 'true', effect: 'drop' }));
    const matches = evaluatePolicies(set, {
      result: { isError: false, untrusted: false, sensitive: false, audience: [], audienceMalformed: false, text: '' } as never,
      validation: [],
      resultScope: { evidence: [], dataClass: {} },
      blocks: [],
    } as never);
    expect(matches).toEqual([]);
  });

  it('comprehension variables and type names are not variables', async () => {
    const set = await loadPolicyDir(
      await withRule({ scope: 'call', when: 'session.tools.exists(result, result == "x") && type(call.name) == string && cel.bind(block, 1, block > 0)', effect: 'flag' }),
    );
    expect([...set.policies[0]!.rules[0]!.compiled.variables].sort()).toEqual(['call', 'session']);
  });
});

