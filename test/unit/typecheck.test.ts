/**
 * `npm run typecheck`: the whole project (src, tests, benchmarks, scripts,
 * examples) type-checks under strict TypeScript. The build compiles src
 * alone, so without this a type error in a test, a benchmark or the host
 * example would go unnoticed.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

describe('typecheck', () => {
  it('tsc -p tsconfig.json --noEmit reports nothing', async () => {
    const r = await promisify(execFile)(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.json'), '--noEmit'], { cwd: ROOT, maxBuffer: 16 << 20 }).then(
      (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
    );
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  }, 180_000);
});
