/**
 * The production install is what runs: every package in `dependencies` is
 * imported by the service's code (src/), and everything src/ imports from a
 * package is a production dependency (or Node's own). Test, benchmark and
 * build tools stay in `devDependencies`, so `npm ci --omit=dev` (the
 * container image) installs none of them.
 */
import { builtinModules } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : /\.(ts|mjs|js)$/.test(e.name) ? [join(dir, e.name)] : []));
}

/** The package an import specifier names (`@scope/name/sub` -> `@scope/name`), or undefined for a relative path or Node's own. */
function packageOf(spec: string): string | undefined {
  if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0]!)) return undefined;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

describe('production dependencies', () => {
  it('are exactly the packages the service imports', () => {
    const imported = new Set<string>();
    for (const file of sources('src')) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      // Static imports and re-exports (not `import type`, which the compiler erases), bare imports, import() and require() calls.
      const statics = [...text.matchAll(/^\s*(import|export)\s+(?!type\b)[^;]*?\bfrom\s+['"]([^'"]+)['"]/gm)].map((m) => m[2]!);
      const bare = [...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
      const dynamic = [...text.matchAll(/\b(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
      for (const spec of [...statics, ...bare, ...dynamic]) {
        const name = packageOf(spec);
        if (name !== undefined) imported.add(name);
      }
    }
    expect([...imported].filter((p) => !(p in pkg.dependencies)).sort(), 'imported by src/ but not a production dependency').toEqual([]);
    expect(Object.keys(pkg.dependencies).filter((p) => !imported.has(p)).sort(), 'a production dependency src/ never imports').toEqual([]);
  });
});
