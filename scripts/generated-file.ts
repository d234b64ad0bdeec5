/**
 * What every generator in scripts/ does with its text: write it, or with
 * `--check` say whether the committed file is current (exit status 1 when
 * it is stale, naming the npm script that regenerates it).
 */
import { readFileSync, writeFileSync } from 'node:fs';

export function writeOrCheck(argv: readonly string[], output: string, text: string, npmScript: string): number {
  if (argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(output, 'utf8');
    } catch {
      // A missing file is stale by definition.
    }
    if (current !== text) {
      process.stderr.write(`${output} is stale; run npm run ${npmScript}\n`);
      return 1;
    }
    return 0;
  }
  writeFileSync(output, text);
  process.stdout.write(`wrote ${output}\n`);
  return 0;
}
