import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS, problem } from '../../src/errors.js';

describe('error registry', () => {
  it('docs/errors.md lists exactly the registry, with the same status and title', () => {
    const md = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = [...md.matchAll(/^\| `(TG_ERR_[A-Z_]+)` \| (\d{3}) \| ([^|]+) \|/gm)].map((m) => [m[1], Number(m[2]), m[3]!.trim()]);
    const registry = Object.entries(ERRORS).map(([code, e]) => [code, e.status, e.title]);
    expect(rows).toEqual(registry);
  });

  /** Codes named by the service contract as they stand, outside the <AREA>_<CONDITION> pattern. */
  const CONTRACT_NAMED = new Set(['TG_ERR_OVERLOADED']);

  it('codes are unique and follow TG_ERR_<AREA>_<CONDITION> (or are named so by the contract)', () => {
    for (const code of Object.keys(ERRORS)) {
      if (!CONTRACT_NAMED.has(code)) expect(code).toMatch(/^TG_ERR_[A-Z]+_[A-Z_]+$/);
    }
  });

  it('builds RFC 9457 bodies', () => {
    expect(problem('TG_ERR_BODY_SCHEMA', 'x', [{ pointer: '/a', message: 'm' }])).toEqual({
      type: 'urn:trustgate:problem:TG_ERR_BODY_SCHEMA',
      title: ERRORS.TG_ERR_BODY_SCHEMA.title,
      status: 400,
      detail: 'x',
      code: 'TG_ERR_BODY_SCHEMA',
      errors: [{ pointer: '/a', message: 'm' }],
    });
  });
});
