/**
 * A/B of two builds in one process: parse, decide and serialize
 * (text->answer, as bench:scale) the ~4 KB fixture with the shipped
 * policies, under the build of a git revision (`AB_BASE_REV`, default
 * HEAD~1) and under `dist/` (this checkout, `npm run build` first),
 * alternating 30 ms slices. Prints the medians and the median of per-pair
 * ratios new/base, and checks the two answers are the same bytes.
 *
 * On a shared machine the absolute times move by a factor of 2 or more
 * from slice to slice; both builds see the same load within a pair, so the
 * pair ratio is what to read.
 *
 * The base is built once into node_modules/.cache/trustgate-ab/<rev>/ (git
 * archive of `src`, then tsc): inside the checkout, so that it resolves the
 * same packages, and outside what the typecheck reads.
 *
 * With AB_BASE_OWN_POLICIES=1 the base decides with the policies of its own
 * revision (a change of the shipped set against what was before it); the
 * answers then differ and are not compared.
 *
 * Run: npx tsx bench/ab.ts   (env AB_BASE_REV, AB_PAIRS (150), AB_POLICIES (policies/), AB_BASE_OWN_POLICIES, BENCH_FIXTURE)
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { evaluateRequestText, shapeText } from './fixtures.js';
import { ROOT, envNumber, machine, median } from './lib.js';

const rev = execFileSync('git', ['rev-parse', '--short', process.env.AB_BASE_REV ?? 'HEAD~1'], { cwd: ROOT, encoding: 'utf8' }).trim();
const baseDir = join(ROOT, 'node_modules', '.cache', 'trustgate-ab', rev);
if (!existsSync(join(baseDir, 'dist', 'decision', 'result.js')) || !existsSync(join(baseDir, 'policies'))) {
  mkdirSync(baseDir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${rev} src policies | tar -x -C '${baseDir}'`], { cwd: ROOT });
  copyFileSync(join(ROOT, 'package.json'), join(baseDir, 'package.json'));
  writeFileSync(
    join(baseDir, 'tsconfig.json'),
    JSON.stringify({ extends: '../../../../tsconfig.build.json', compilerOptions: { rootDir: 'src', outDir: 'dist', incremental: false, declaration: false, sourceMap: false, declarationMap: false }, include: ['src'] }),
  );
  execFileSync('npx', ['tsc', '-p', join(baseDir, 'tsconfig.json')], { cwd: ROOT, stdio: 'inherit' });
}

const policyDir = process.env.AB_POLICIES ?? join(ROOT, 'policies');
const ownPolicies = process.env.AB_BASE_OWN_POLICIES === '1';
const fixture = process.env.BENCH_FIXTURE;
const text = fixture === undefined || fixture === 'mixed-5' ? evaluateRequestText() : shapeText(fixture);

async function textToAnswer(dist: string, policyDir: string): Promise<() => string> {
  const at = (p: string) => import(pathToFileURL(join(dist, p)).href);
  const { decideResult: decide } = await at('decision/result.js');
  const { parseRequestText } = await at('json/parse.js');
  const { loadPolicyDir } = await at('policy/load.js');
  const policies = await loadPolicyDir(policyDir);
  const opts = { policies, decisionId: 'ab', boundary: '0123456789abcdef0123456789abcdef', maxBlocks: 10_000, maxEvidence: 1_000 };
  return () => {
    const { value, scan } = parseRequestText(text, ['evidence', '*', 'record']);
    return JSON.stringify(decide(value, { ...opts, scan }));
  };
}

const base = await textToAnswer(join(baseDir, 'dist'), ownPolicies ? join(baseDir, 'policies') : policyDir);
const head = await textToAnswer(join(ROOT, 'dist'), policyDir);
if (!ownPolicies && base() !== head()) throw new Error('the two builds answer differently on the fixture');

const slice = (f: () => string): number => {
  let n = 0;
  const t0 = performance.now();
  let dt = 0;
  while (dt < 30) {
    f();
    n++;
    dt = performance.now() - t0;
  }
  return (dt * 1000) / n;
};
for (let i = 0; i < 30; i++) slice(i % 2 === 0 ? base : head);
const b: number[] = [];
const h: number[] = [];
const ratios: number[] = [];
for (let i = 0; i < envNumber('AB_PAIRS', 150); i++) {
  // Which build goes first alternates from pair to pair.
  let bb: number;
  let hh: number;
  if (i % 2 === 0) {
    bb = slice(base);
    hh = slice(head);
  } else {
    hh = slice(head);
    bb = slice(base);
  }
  b.push(bb);
  h.push(hh);
  ratios.push(hh / bb);
}
console.log(`bench:ab  ${machine()}`);
console.log(`text->answer, the ${text.length}-character fixture, policies ${policyDir}${ownPolicies ? ` (the base: its own)` : ''}; base ${rev} against dist/; ${ratios.length} pairs of 30 ms slices`);
console.log(`us/op median (min): base ${median(b).toFixed(1)} (${Math.min(...b).toFixed(1)}), dist ${median(h).toFixed(1)} (${Math.min(...h).toFixed(1)})`);
console.log(`dist/base, median of pair ratios: ${median(ratios).toFixed(3)}`);
