/**
 * The folders of src/ stand in one declared order, top to bottom, and a
 * file imports only files of its own floor or of floors below it, as Go's
 * compiler holds OPA's packages: an import that runs up is how a layered
 * house turns into a knot, one convenience at a time. The order, and why
 * each floor stands where it does, is docs/architecture.md#the-layers.
 *
 * Imports are read from the syntax tree: `import`, `import type`,
 * `export ... from` and `import('...')` with a literal path. A type-only
 * import counts: it ties the two folders as much as a value does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { sourceFiles } from '../helpers/source.js';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/**
 * The floors, top first. A floor holds folders (`main`) and top-level
 * files (`config.ts`) of src/. Every folder and file of src/ must be on
 * one floor: a new one is placed here, on purpose, before it can land.
 */
const FLOORS: ReadonlyArray<readonly [floor: string, rooms: readonly string[]]> = [
  ['processes', ['main', 'cli.ts', 'server.ts']],
  ['app', ['app']],
  ['bindings', ['bindings']],
  ['host', ['http']],
  ['policy tests', ['policytest']],
  ['decision', ['decision']],
  ['wire', ['wire']],
  ['settings', ['config.ts']],
  ['policy', ['policy']],
  ['session', ['session']],
  ['flows', ['flows']],
  ['trust', ['trust']],
  ['annotations', ['annotations']],
  ['evidence', ['evidence']],
  ['detect', ['detect']],
  ['mcp', ['mcp']],
  ['json', ['json']],
  ['ground', ['errors.ts', 'metrics.ts', 'logger.ts', 'version.ts']],
];

/** The room of a path relative to src/: its first folder, or the file itself at the top. */
function roomOf(rel: string): string {
  return rel.split(sep)[0]!.replace(/\.js$/, '.ts');
}

/** Floor index of each room (0 is the top). */
function floorIndex(floors: typeof FLOORS): Map<string, number> {
  const at = new Map<string, number>();
  floors.forEach(([, rooms], i) => rooms.forEach((r) => at.set(r, i)));
  return at;
}

/** Each relative module path a TypeScript text imports, with its line. */
function importsOf(fileName: string, text: string): Array<{ spec: string; line: number }> {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true);
  const found: Array<{ spec: string; line: number }> = [];
  const add = (lit: ts.Expression | undefined) => {
    if (lit !== undefined && ts.isStringLiteralLike(lit) && lit.text.startsWith('.')) {
      found.push({ spec: lit.text, line: source.getLineAndCharacterOfPosition(lit.getStart(source)).line + 1 });
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Every import in `files` (path relative to src/ → text) that runs up a
 * floor, as `file:line imports spec (from floor → up to floor)`, and every
 * room that stands on no floor.
 */
function upwardImports(files: ReadonlyMap<string, string>, floors: typeof FLOORS = FLOORS): string[] {
  const at = floorIndex(floors);
  const names = floors.map(([name]) => name);
  const problems: string[] = [];
  const unplaced = new Set<string>();
  for (const [rel, text] of files) {
    const from = at.get(roomOf(rel));
    if (from === undefined) {
      unplaced.add(roomOf(rel));
      continue;
    }
    for (const { spec, line } of importsOf(rel, text)) {
      const target = relative(SRC, resolve(SRC, dirname(rel), spec));
      if (target.startsWith('..')) continue; // outside src/ (package.json)
      const to = at.get(roomOf(target));
      if (to === undefined) unplaced.add(roomOf(target));
      else if (to < from) problems.push(`src/${rel.split(sep).join('/')}:${line} imports ${spec} (${names[from]} -> up to ${names[to]})`);
    }
  }
  for (const room of unplaced) problems.push(`src/${room} stands on no floor: place it in FLOORS (test/unit/folder-order.test.ts)`);
  return problems;
}


describe('folders in one order', () => {
  it('no file of src/ imports a folder above its own', () => {
    const files = new Map(sourceFiles(SRC).map((p) => [relative(SRC, p), readFileSync(p, 'utf8')] as const));
    expect(upwardImports(files), 'move the name to the floor that owns it, or pass it in from above').toEqual([]);
  });

  it('every floor named in FLOORS exists, once', () => {
    const rooms = FLOORS.flatMap(([, r]) => r);
    expect(new Set(rooms).size).toBe(rooms.length);
    const present = new Set(readdirSync(SRC));
    expect(rooms.filter((r) => !present.has(r))).toEqual([]);
  });

  it('shows an import that runs up, with its file, line and floors, and a room placed nowhere', () => {
    const files = new Map([
      [join('decision', 'x.ts'), "import type { A } from '../wire/a.js';\nimport { B } from '../bindings/api/b.js';"],
      [join('json', 'y.ts'), "export { C } from '../errors.js';\nconst m = await import('../policy/load.js');"],
      [join('mcp', 'z.ts'), "type T = import('../app/app.js').App;"],
      [join('nowhere', 'w.ts'), "import { D } from '../json/d.js';"],
    ]);
    expect(upwardImports(files)).toEqual([
      'src/decision/x.ts:2 imports ../bindings/api/b.js (decision -> up to bindings)',
      'src/json/y.ts:2 imports ../policy/load.js (json -> up to policy)',
      'src/mcp/z.ts:1 imports ../app/app.js (mcp -> up to app)',
      'src/nowhere stands on no floor: place it in FLOORS (test/unit/folder-order.test.ts)',
    ]);
  });
});
