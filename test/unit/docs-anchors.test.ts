/**
 * Links between the documentation pages that name a heading (`page.md#heading`)
 * land on a heading that exists: pages are reorganised, and a link whose
 * heading was renamed still opens the page but not the place it promised.
 * Anchors are GitHub's: the heading text in lower case, without punctuation,
 * spaces as hyphens (and explicit `<a id="...">` targets).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

const PAGES = ['README.md', 'CONTRIBUTING.md', 'test/README.md', 'policies/README.md', 'bench/README.md', 'bench/LOG.md', ...markdownUnder('docs')];

const withoutCode = (text: string) => text.replace(/```[\s\S]*?```/g, '');

function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of withoutCode(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a id="([^"]+)"/g)) anchors.add(m[1]!);
  return anchors;
}

describe('documentation anchors', () => {
  it('slugs headings as GitHub does', () => {
    expect(slug('Start-up, reload and shutdown')).toBe('start-up-reload-and-shutdown');
    expect(slug('Data classes (`data-class.v1`)')).toBe('data-classes-data-classv1');
    expect(slug('What each binding does on deny, consent and error')).toBe('what-each-binding-does-on-deny-consent-and-error');
  });

  it('every page.md#heading link between the pages names a heading of its page', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of PAGES) {
      for (const m of withoutCode(readFileSync(join(ROOT, page), 'utf8')).matchAll(/\]\(([^)\s#]*)#([^)\s]+)\)/g)) {
        const [, path, anchor] = m;
        if (/^[a-z]+:/.test(path!)) continue;
        const target = path === '' ? page : relative(ROOT, join(ROOT, dirname(page), path!));
        if (!target.endsWith('.md') || !existsSync(join(ROOT, target))) continue;
        checked++;
        if (!anchorsOf(target).has(anchor!)) broken.push(`${page}: ${path}#${anchor}`);
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(broken).toEqual([]);
  });

  it('every docs page a source comment cites exists, with the heading it names', () => {
    const sources = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const broken: string[] = [];
    let checked = 0;
    for (const file of sources('src')) {
      for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(/\bdocs\/[\w/.-]+?\.md(?:#[\w-]+)?/g)) {
        const [page, anchor] = m[0].split('#');
        checked++;
        if (!existsSync(join(ROOT, page!))) broken.push(`${file}: ${m[0]} (no such page)`);
        else if (anchor !== undefined && !anchorsOf(page!).has(anchor)) broken.push(`${file}: ${m[0]} (no such heading)`);
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });
});
