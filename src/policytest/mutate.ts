/**
 * Mutation testing of a policy folder's tests: every rule gets mutants
 * (its condition negated, its effect changed to each other effect its scope
 * allows), each mutant replaces the original in memory, and the folder's
 * test cases run against it. A mutant is caught when some case fails; the
 * score is caught / total. Tests that no mutant escapes pin down what each
 * rule does, not only that it exists.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import YAML, { isMap, isSeq } from 'yaml';
import { CALL_EFFECTS, EFFECTS } from '../policy/vocabulary.js';
import { compilePolicyFiles, PolicyLoadError, TEST_FILE, type PolicyFile, type PolicySet } from '../policy/load.js';
import { findTestFiles, readTestFile, TestLoadError, type TestCase } from './cases.js';
import { runCases } from './runner.js';

export interface Mutant {
  file: string;
  policy: string;
  rule: string;
  /** `negate` or `effect <from> -> <to>`. */
  change: string;
  caught: boolean;
}

export interface MutationReport {
  mutants: Mutant[];
  caught: number;
  total: number;
  /** caught / total, 1 when there is no mutant. */
  score: number;
}

const POLICY_FILE = /\.(ya?ml|json)$/i;

/** The policy files of `dir` as the loader reads them (same filter, same order). */
async function readPolicyFiles(dir: string): Promise<PolicyFile[]> {
  const names = (await readdir(dir)).filter((n) => !n.startsWith('.') && POLICY_FILE.test(n) && !TEST_FILE.test(n)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Promise.all(names.map(async (name) => ({ name, bytes: await readFile(join(dir, name)) })));
}

/** Every mutant text of one policy file: [rule id, change, new text]. */
function mutantsOf(name: string, text: string): Array<{ policy: string; rule: string; change: string; text: string }> {
  const out: Array<{ policy: string; rule: string; change: string; text: string }> = [];
  const json = /\.json$/i.test(name);
  const parse = () => (json ? new YAML.Document(JSON.parse(text)) : YAML.parseDocument(text));
  const base = parse();
  const policy = String(base.get('id'));
  const rules = base.get('rules');
  if (!isSeq(rules)) return out;
  rules.items.forEach((item, i) => {
    if (!isMap(item)) return;
    const id = String(item.get('id'));
    const when = String(item.get('when'));
    const effect = String(item.get('effect'));
    const scope = String(item.get('scope') ?? 'block');
    const write = (set: (rule: YAML.YAMLMap) => void): string => {
      const doc = parse();
      set((doc.get('rules') as YAML.YAMLSeq).items[i] as YAML.YAMLMap);
      return json ? JSON.stringify(doc.toJS(), null, 2) : doc.toString();
    };
    out.push({ policy, rule: id, change: 'negate', text: write((r) => r.set('when', `!(${when})`)) });
    const effects: readonly string[] = scope === 'call' ? CALL_EFFECTS : EFFECTS;
    for (const e of effects) {
      if (e === effect) continue;
      out.push({ policy, rule: id, change: `effect ${effect} -> ${e}`, text: write((r) => r.set('effect', e)) });
    }
  });
  return out;
}

/**
 * Mutate every rule of the policies in `dir` and run the test files found
 * under `testPaths` (default: `dir`) against each mutant; only cases whose
 * policy folder is `dir` run.
 * @throws TestLoadError when the originals or the tests do not load, or a test fails on the originals.
 */
export async function mutatePolicies(dir: string, testPaths: readonly string[] = [dir]): Promise<MutationReport> {
  const root = resolve(dir);
  const files = await readPolicyFiles(root);
  const cases: TestCase[] = [];
  for (const f of await findTestFiles(testPaths)) cases.push(...(await readTestFile(f)).filter((c) => c.policies === root));
  if (cases.length === 0) throw new TestLoadError(`no test case runs against ${dir}`);
  const baseline = await runCases(cases, { load: async () => compilePolicyFiles(files, root) });
  if (baseline.failed > 0) throw new TestLoadError(`${baseline.failed} case(s) fail on the policies as they are; fix them before mutation testing`);

  const mutants: Mutant[] = [];
  for (let fi = 0; fi < files.length; fi++) {
    const file = files[fi]!;
    for (const m of mutantsOf(file.name, Buffer.from(file.bytes).toString('utf8'))) {
      const mutated = files.slice();
      mutated[fi] = { name: file.name, bytes: Buffer.from(m.text, 'utf8') };
      let set: PolicySet;
      try {
        set = compilePolicyFiles(mutated, root);
      } catch (err) {
        // A mutant that does not load is not a policy anyone could ship.
        if (err instanceof PolicyLoadError) continue;
        throw err;
      }
      const report = await runCases(cases, { load: async () => set, stopAtFirstFailure: true });
      mutants.push({ file: file.name, policy: m.policy, rule: m.rule, change: m.change, caught: report.failed > 0 });
    }
  }
  const caught = mutants.filter((m) => m.caught).length;
  return { mutants, caught, total: mutants.length, score: mutants.length === 0 ? 1 : caught / mutants.length };
}
