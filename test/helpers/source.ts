/** The TypeScript source files below a folder (declaration files left out), for the tests that read src/ as text. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|cts)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}
