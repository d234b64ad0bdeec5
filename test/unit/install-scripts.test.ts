/**
 * Install scripts are allowed by name (package.json `allowScripts`): npm
 * 11.16 and later list the packages whose scripts are not covered, and npm
 * 12 skips them, which would leave better-sqlite3 (the shared session
 * store) unbuilt on a fresh machine. Every package of the lock file that has
 * an install script is decided on, and nothing else is listed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));

describe('allowScripts', () => {
  it('decides on every locked package that has an install script, and names no other', () => {
    const scripted = Object.entries(lock.packages as Record<string, { hasInstallScript?: boolean }>)
      .filter(([, p]) => p.hasInstallScript === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(scripted).toContain('better-sqlite3');
    expect(Object.keys(pkg.allowScripts ?? {}).sort()).toEqual([...new Set(scripted)].sort());
  });

  it('lets better-sqlite3 build (the shared session store needs it)', () => {
    expect(pkg.allowScripts['better-sqlite3']).toBe(true);
  });
});
