/**
 * The import graph of src/ has no circle (docs/architecture.md#the-layers):
 * a module can be read, tested and replaced after the ones it imports, and
 * the decision core never reaches back into a binding. Read from the
 * sources' relative import specifiers, type-only imports included.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SPEC = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)\.js['"]/g;

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (path.endsWith('.ts')) out.push(path);
  }
  return out;
}

function graph(files: string[]): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of files) {
    const deps = new Set<string>();
    for (const m of readFileSync(f, 'utf8').matchAll(SPEC)) deps.add(resolve(dirname(f), `${m[1]}.ts`));
    g.set(f, [...deps].filter((d) => d !== f));
  }
  return g;
}

/** Strongly connected components of more than one module (Tarjan), each a circle. */
function circles(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(relative(ROOT, w));
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the import graph of src/', () => {
  it('finds a circle when there is one (the check itself)', () => {
    const g = new Map([
      ['/a.ts', ['/b.ts']],
      ['/b.ts', ['/c.ts']],
      ['/c.ts', ['/a.ts']],
      ['/d.ts', ['/a.ts']],
    ]);
    expect(circles(g)).toHaveLength(1);
    expect(circles(g)[0]).toHaveLength(3);
  });

  it('has no circle', () => {
    const files = sources(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(50);
    expect(circles(graph(files))).toEqual([]);
  });
});
