/**
 * docs/configuration.md lists every setting src/config.ts reads, with the
 * default and the range the code enforces, so the page cannot fall behind
 * the code.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const source = readFileSync(new URL('../../src/config.ts', import.meta.url), 'utf8');
const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

/** The table row of a setting, split into its cells (setting, default, range, meaning). */
function row(name: string): string[] | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`| \`${name}\` |`));
  return line?.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, ''));
}

const whole = (n: string) => n.replace(/_/g, '');

describe('docs/configuration.md', () => {
  it('has a row for every setting the configuration reads', () => {
    const names = new Set([...source.matchAll(/\b(?:env\.|env, ')([A-Z][A-Z_]+)\b/g)].map((m) => m[1]!));
    for (const m of source.matchAll(/\b(?:int|oneOf)\(env, '([A-Z_]+)'/g)) names.add(m[1]!);
    expect(names.size).toBeGreaterThan(20);
    for (const name of names) expect(row(name), name).toBeDefined();
  });

  it('gives each whole-number setting the default and the range the code enforces', () => {
    const ints = [...source.matchAll(/\bint\(env, '([A-Z_]+)', ([\d_*\s]+|[A-Z_]+), ([\d_*\s]+), ([\d_]+)\)/g)];
    expect(ints.length).toBeGreaterThan(15);
    for (const [, name, def, min, max] of ints) {
      const cells = row(name!)!;
      expect(cells, name).toBeDefined();
      // A literal (`10_000`, `64 * 1024 * 1024`) or a constant declared in config.ts.
      const value = (s: string): number => {
        const t = s.trim();
        if (/^[A-Z_]+$/.test(t)) return value(source.match(new RegExp(`${t} = ([\\d_]+)`))![1]!);
        return whole(t).split('*').reduce((a, f) => a * Number(f.trim()), 1);
      };
      expect(cells[1], `${name} default`).toContain(`\`${value(def!)}\``);
      const lo = value(min!);
      const hi = value(max!);
      // Either "lo to hi", or "lo, or <a further bound> to hi" where the code narrows the range (the watchdog).
      const range = cells[2]!;
      expect(range.startsWith(`${lo} to ${hi}`) || (range.startsWith(`${lo}, or `) && range.endsWith(` to ${hi}`)), `${name} range ${lo} to ${hi}: ${range}`).toBe(true);
    }
  });

  it('names the values the code accepts for the closed settings', () => {
    expect(row('LOG_LEVEL')![2]).toBe('fatal, error, warn, info, debug, trace, silent');
    expect(row('TRUSTGATE_MODE')![2]).toBe('`audit`, `warn`');
    expect(loadConfig({}).dialects.join(',')).toBe(row('TRUSTGATE_DIALECTS')![1]!.replace(/`/g, ''));
  });
});
