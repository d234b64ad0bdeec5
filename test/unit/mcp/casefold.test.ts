/**
 * Case folding as a case-insensitive host applies it (contract section 11,
 * law 3): `foldName` must put two names together exactly when Unicode simple
 * case folding does. The oracle is the regular-expression engine: with the
 * `iu` flags, ECMAScript matches characters by simple case folding (ECMA-262
 * Canonicalize, CaseFolding.txt statuses C and S).
 */
import { describe, expect, it } from 'vitest';
import { collisionTokens, findCasefoldCollisions, foldName, foldsTo } from '../../../src/mcp/casefold.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const escape = (s: string) => s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
const sameUnderRegex = (a: string, b: string) => new RegExp(`^${escape(a)}$`, 'iu').test(b);

describe('foldName', () => {
  it('agrees with simple case folding on every code point that has a case mapping', () => {
    const cased: string[] = [];
    const wrong: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const ch = String.fromCodePoint(cp);
      const f = foldName(ch);
      if (ch.toUpperCase() !== ch || ch.toLowerCase() !== ch) cased.push(ch);
      else if (f !== ch) wrong.push(`U+${cp.toString(16)} has no case mapping but folds to ${f}`);
      // Sound: a character folds to a member of its own class.
      if (f !== ch && !sameUnderRegex(f, ch)) wrong.push(`U+${cp.toString(16)} folds outside its class`);
    }
    // Complete: one representative per class.
    const reps = [...new Set(cased.map(foldName))];
    for (const a of reps) {
      const re = new RegExp(`^${escape(a)}$`, 'iu');
      for (const b of reps) if (a !== b && re.test(b)) wrong.push(`${a} and ${b} are one class`);
    }
    expect(wrong).toEqual([]);
    expect(cased.length).toBeGreaterThan(2000);
  });

  it('applies the folds Go names (long s, Kelvin sign) and leaves lower-case ASCII as it is', () => {
    expect(foldName('ſensitive')).toBe('sensitive');
    expect(foldName('\u212Aey')).toBe('key');
    expect(foldName('TEXT')).toBe('text');
    expect(foldName('Annotations')).toBe('annotations');
    expect(foldName('ıd')).not.toBe('id');
    const plain = 'structuredcontent';
    expect(foldName(plain)).toBe(plain);
    expect(foldsTo('ſensitive', 'sensitive')).toBe(true);
    expect(foldsTo('sensitive', 'sensitive')).toBe(false);
    expect(foldsTo(K.toUpperCase(), K)).toBe(true);
  });
});

describe('findCasefoldCollisions', () => {
  const names = (r: unknown) => findCasefoldCollisions(r).list.map((c) => [collisionTokens(c).join('/'), c.clash, c.defined]);

  it('finds members that fold to a defined name of their object', () => {
    const result = {
      content: [
        { type: 'text', text: 'benign', TEXT: 'x', Annotations: { audience: ['user'] } },
        { type: 'image', data: 'AA==', mimetype: 'image/png', mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'u', Text: 'x', blob: 'AA==' } },
        { type: 'resource_link', uri: 'u', name: 'n', icons: [{ src: 'a', SRC: 'b' }] },
        { type: 'text', text: 't', annotations: { Audience: ['assistant'] }, _meta: { [K.toUpperCase()]: { sensitive: false } } },
      ],
      _meta: { [K]: { ſensitive: false, sensitive: true, evidenceRef: { type: 't', Digest: 'x' } } },
      Content: [],
    };
    // Each object's own members first, then the objects inside it.
    expect(names(result)).toEqual([
      ['Content', 'content', true],
      ['content/0/TEXT', 'text', true],
      ['content/0/Annotations', 'annotations', true],
      ['content/1/mimetype', 'mimeType', true],
      ['content/2/resource/Text', 'text', true],
      ['content/3/icons/0/SRC', 'src', true],
      ['content/4/annotations/Audience', 'audience', true],
      [`content/4/_meta/${K.toUpperCase()}`, K, true],
      [`_meta/${K}/ſensitive`, 'sensitive', true],
      [`_meta/${K}/evidenceRef/Digest`, 'digest', true],
    ]);
  });

  it('finds members that fold to another member anywhere, and every one of them when no defined name is among them', () => {
    const result = { content: [], structuredContent: { rows: [{ cmd: 'ls', CMD: 'rm', other: 1 }] }, toolResult: { A: 1, a: 2, ａ: 3 } };
    expect(names(result)).toEqual([
      ['structuredContent/rows/0/cmd', 'CMD', false],
      ['structuredContent/rows/0/CMD', 'cmd', false],
      ['toolResult/A', 'a', false],
      ['toolResult/a', 'A', false],
    ]);
  });

  it('finds nothing in an ordinary result', () => {
    const result = {
      content: [
        { type: 'text', text: 'a', annotations: { audience: ['user'], priority: 1, lastModified: '2025-01-01T00:00:00Z' }, _meta: { [K]: { sensitive: true } } },
        { type: 'resource', resource: { uri: 'u', mimeType: 'text/plain', text: 'x' } },
      ],
      structuredContent: { Name: 'x', name2: 'y' },
      isError: false,
    };
    expect(findCasefoldCollisions(result)).toEqual({ list: [], root: undefined });
  });

  it('places each collision at its own path, across sibling arrays and objects at every depth', () => {
    const deep: any = { x: 1 };
    let cur = deep;
    for (let d = 0; d < 100; d++) cur = cur.next = d % 2 ? { q: 1 } : [{ q: 1 }][0];
    cur.A = 1;
    cur.a = 2;
    const result = {
      content: [{ type: 'text', text: 't', TEXT: 'x' }, { type: 'text', text: 'u' }],
      toolResult: [{ B: 1, b: 2 }],
      structuredContent: { list: [[{ C: 1, c: 2 }]], deep },
    };
    const found = findCasefoldCollisions(result);
    const deepPath = ['structuredContent', 'deep', ...Array(100).fill('next')].join('/');
    expect(names(result)).toEqual([
      ['content/0/TEXT', 'text', true],
      ['toolResult/0/B', 'b', false],
      ['toolResult/0/b', 'B', false],
      ['structuredContent/list/0/0/C', 'c', false],
      ['structuredContent/list/0/0/c', 'C', false],
      [`${deepPath}/A`, 'a', false],
      [`${deepPath}/a`, 'A', false],
    ]);
    // The tree holds exactly the paths to them.
    expect([...found.root!.kids.keys()]).toEqual(['content', 'toolResult', 'structuredContent']);
    const content = found.root!.kids.get('content') as any;
    expect([...content.kids.keys()]).toEqual(['0']);
    expect(content.kids.get('0').kids.get('TEXT')).toBe(true);
  });
});
