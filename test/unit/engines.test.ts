/**
 * package.json `engines` must be true: the production dependencies must
 * declare that they run on the oldest Node it names. canonicalize is pinned
 * to 4.0.0 (engines >=18; 5.x asks for Node 22 and changes nothing the JCS
 * vectors can see). Two transitive dependencies of Fastify's, cookie 2
 * (fastify -> light-my-request, `inject`) and content-disposition 3
 * (@fastify/swagger-ui -> @fastify/static), declare Node 22: package.json
 * `overrides` holds them at the releases before (cookie 1.1.1 and
 * content-disposition 2.0.1, engines >=18, the same functions those
 * packages call), so `npm ci` on Node 20 warns of no engine.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));


type Version = [number, number, number];
const parse = (v: string): Version => {
  const [a = 0, b = 0, c = 0] = v.trim().replace(/^v/, '').split('.').map(Number);
  return [a, b, c];
};
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** Whether `version` satisfies the engines forms used in the lock file: `>=X`, `X`, `X || Y`, `^X`. */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  return range.split('||').some((alt) => {
    const r = alt.trim();
    if (r === '*' || r === '') return true;
    const m = /^(>=|\^)?\s*v?([0-9.]+)(?:\.x)?$/.exec(r);
    if (!m) throw new Error(`unread engines range ${JSON.stringify(range)}`);
    const bound = parse(m[2]!);
    if (m[1] === '>=') return cmp(v, bound) >= 0;
    if (m[1] === '^' || bound[1] === 0) return v[0] === bound[0] && cmp(v, bound) >= 0;
    return cmp(v, bound) === 0;
  });
}

describe('engines', () => {
  const oldest = /^>=\s*([0-9.]+)$/.exec(pkg.engines.node)?.[1];

  it('names one oldest Node release', () => {
    expect(oldest).toBe('20.19');
  });

  it('canonicalize is pinned to a release that runs on it', () => {
    expect(pkg.dependencies.canonicalize).toBe('4.0.0');
    const c = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'canonicalize', 'package.json'), 'utf8'));
    expect(c.version).toBe('4.0.0');
    expect(satisfies(oldest!, c.engines.node)).toBe(true);
  });

  it('every other production dependency declares that it runs on it', () => {
    const refusing = Object.entries(lock.packages as Record<string, { dev?: boolean; engines?: { node?: string } }>)
      .filter(([path, p]) => path !== '' && p.dev !== true && typeof p.engines?.node === 'string')
      .filter(([, p]) => !satisfies(oldest!, p.engines!.node!))
      .map(([path]) => path);
    expect(refusing).toEqual([]);
  });
});
