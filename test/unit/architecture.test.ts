/**
 * Process code lives in one place: only src/main/ (and the two entry files,
 * src/cli.ts and src/server.ts) may read the process (its environment, pid,
 * working folder, streams, signals, exit). Everything else is given what it
 * needs, so it can be built and tested without a process of its own.
 *
 * Read from the syntax tree, not the text: comments and strings that say
 * "process" are not uses, and `import ... from 'node:process'` or
 * `globalThis.process` are.
 */
import { readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { sourceFiles } from '../helpers/source.js';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
const PROCESS_MODULES = new Set(['process', 'node:process']);

/** Where a TypeScript text touches the process: `line: code` for each use. */
function processUses(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true);
  const uses: string[] = [];
  const at = (node: ts.Node) => `${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${node.getText(source).slice(0, 80)}`;
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) && PROCESS_MODULES.has(node.moduleSpecifier.text)) {
      uses.push(at(node));
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0]!) && PROCESS_MODULES.has(node.arguments[0].text)) {
      // require('process') or import('node:process')
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require')) uses.push(at(node));
    } else if (ts.isIdentifier(node) && node.text === 'process') {
      const parent = node.parent;
      // `x.process` and `{ process: ... }` name a member, not the global; `globalThis.process` is the global.
      const member = (ts.isPropertyAccessExpression(parent) && parent.name === node) || (ts.isPropertyAssignment(parent) && parent.name === node) || ts.isPropertySignature(parent) || ts.isPropertyDeclaration(parent);
      const viaGlobal = ts.isPropertyAccessExpression(parent) && parent.name === node && ts.isIdentifier(parent.expression) && parent.expression.text === 'globalThis';
      if (!member || viaGlobal) uses.push(at(parent));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}


/** The files allowed to touch the process: every process under src/main/, and the two entry files. */
function mayTouchProcess(rel: string): boolean {
  return rel.startsWith(`main${sep}`) || rel === 'cli.ts' || rel === 'server.ts';
}

describe('process code lives in src/main/', () => {
  it('no file outside src/main/ and the entry files reads process.*', () => {
    const found: string[] = [];
    for (const path of sourceFiles(SRC)) {
      const rel = relative(SRC, path);
      if (mayTouchProcess(rel)) continue;
      for (const use of processUses(path, readFileSync(path, 'utf8'))) found.push(`src/${rel.split(sep).join('/')}:${use}`);
    }
    expect(found, 'pass what the code needs in from src/main/ instead').toEqual([]);
  });

  it('the check sees every way of reaching the process, and nothing that only says the word', () => {
    const uses = (text: string) => processUses('x.ts', text).length;
    expect(uses('const e = process.env.X;')).toBe(1);
    expect(uses("const e = process['env'];")).toBe(1);
    expect(uses('const p = globalThis.process.pid;')).toBe(1);
    expect(uses("import { cwd } from 'node:process';")).toBe(1);
    expect(uses("import proc from 'process';")).toBe(1);
    expect(uses("const p = await import('node:process');")).toBe(1);
    expect(uses('f(process);')).toBe(1);
    expect(uses("// process.exit(1)\n/* process.env */ const s = 'process.env'; const o = { process: 1 }; o.process;")).toBe(0);
  });
});
