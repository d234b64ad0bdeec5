/**
 * docs/configuration.md is generated from the DEFAULTS table in
 * src/config.ts (npm run configuration-doc): the page must be what the table
 * says, the table must hold every setting the code reads, and the defaults
 * and bounds it states must be the ones loadConfig() enforces.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, loadConfig, type IntSetting } from '../../src/config.js';
import { renderConfiguration } from '../../scripts/gen-configuration.js';

const source = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const page = source('docs/configuration.md');

/** The table row of a setting, split into its cells (setting, default, range, meaning). */
function row(name: string): string[] | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`| \`${name}\` |`));
  return line?.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, ''));
}

const ints = Object.entries(DEFAULTS).filter((e): e is [string, IntSetting] => typeof e[1].default === 'number');

describe('docs/configuration.md', () => {
  it('is the page the DEFAULTS table generates (npm run configuration-doc)', () => {
    expect(page).toBe(renderConfiguration());
  });

  it('has a row for every setting the configuration and the proxy options read', () => {
    const config = source('src/config.ts');
    const names = new Set([...config.matchAll(/\b(?:env\.|env, ')([A-Z][A-Z_]+)\b/g)].map((m) => m[1]!));
    for (const m of source('src/bindings/proxy/options.ts').matchAll(/\benv\.(TRUSTGATE_[A-Z_]+)\b/g)) names.add(m[1]!);
    expect(names.size).toBeGreaterThan(20);
    for (const name of names) {
      expect(Object.keys(DEFAULTS), name).toContain(name);
      expect(row(name), name).toBeDefined();
    }
  });

  it('states for each whole-number setting the default and the bounds loadConfig() enforces', () => {
    expect(ints.length).toBeGreaterThan(15);
    const unset = loadConfig({});
    for (const [name, s] of ints) {
      expect(loadConfig({ [name]: String(s.default) }), `${name} default`).toEqual(unset);
      expect(row(name)![1], `${name} default`).toBe(`\`${s.default}\``);
      expect(() => loadConfig({ [name]: String(s.max) }), `${name} max`).not.toThrow();
      expect(() => loadConfig({ [name]: String(s.max + 1) }), `${name} over max`).toThrow(ConfigError);
      if (s.min > 0) expect(() => loadConfig({ [name]: String(s.min - 1) }), `${name} under min`).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: String(s.min) }), `${name} min`).not.toThrow();
      // Either "lo to hi", or "lo, or <a further bound> to hi" where the code narrows the range (the watchdog).
      const range = row(name)![2]!;
      expect(range.startsWith(`${s.min} to ${s.max}`) || (range.startsWith(`${s.min}, or `) && range.endsWith(` to ${s.max}`)), `${name} range: ${range}`).toBe(true);
    }
  });

  it('names the values the code accepts for the closed settings', () => {
    expect(row('LOG_LEVEL')![2]).toBe('fatal, error, warn, info, debug, trace, silent');
    expect(row('TRUSTGATE_MODE')![2]).toBe('`audit`, `warn`');
    expect(loadConfig({}).dialects.join(',')).toBe(row('TRUSTGATE_DIALECTS')![1]!.replace(/`/g, ''));
  });
});
