/**
 * The examples of the documentation, as test/docs/examples.test.ts runs
 * them: every fenced `sh`, `json` and `yaml` block of README.md and docs/
 * says in its info string what it is (```` ```sh run ````, ```` ```json
 * answer ````, ...; renderers show only the language), and shown answers
 * are compared with what the service answers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './process.js';

/** What a block is, from the words after its language. */
export const KINDS = {
  sh: ['run', 'not-run'],
  json: ['answer', 'policy', 'gateway-config', 'host-config', 'server-entry', 'sketch'],
  yaml: ['policy', 'rules', 'cases', 'sketch'],
} as const;

export interface Block {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  kind: string;
  /** `name=value` words after the kind (`status=400`, `service=token`). */
  attrs: Record<string, string>;
  text: string;
}

function markdownUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownUnder(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

/** The pages whose examples are run: the README and every page under docs/. */
export const DOC_PAGES = ['README.md', ...markdownUnder('docs')].sort();

/** The fenced blocks of `page` in a checked language, in order. */
export function blocksOf(page: string): Block[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    if (end < 0) throw new Error(`${page}:${i + 1}: a fence that is never closed`);
    const lang = open[1]!;
    if (lang in KINDS) {
      const [kind = '', ...rest] = open[2]!.split(/\s+/).filter(Boolean);
      const attrs = Object.fromEntries(rest.map((w) => [w.split('=')[0]!, w.split('=').slice(1).join('=')]));
      out.push({ page, line: i + 1, lang, kind, attrs, text: lines.slice(i + 1, end).join('\n') });
    }
    i = end;
  }
  return out;
}

/** Values that differ on every run by design: decision ids and spotlight boundaries. */
function steady(s: string): string {
  return s
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<uuid>')
    .replace(/boundary="[0-9a-f]{32}"/g, 'boundary="<boundary>"');
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where `actual` differs from the shown `expected`, or undefined when it
 * matches. The shown answer may leave things out, as a reader expects:
 * `"..."` in a string stands for any text, an object member `"...": "..."`
 * for members not shown, and `"..."` as an array's last element for
 * elements not shown. Everything else is compared exactly: an object
 * without `"..."` has no member it does not show.
 */
export function mismatch(expected: unknown, actual: unknown, at = ''): string | undefined {
  if (typeof expected === 'string') {
    if (typeof actual !== 'string') return `${at || '/'}: shown ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
    const pattern = new RegExp(`^${steady(expected).split('...').map(escapeRegExp).join('[\\s\\S]*')}$`);
    return pattern.test(steady(actual)) ? undefined : `${at || '/'}: shown ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at || '/'}: shown an array, got ${JSON.stringify(actual)}`;
    const open = expected.at(-1) === '...';
    const shown = open ? expected.slice(0, -1) : expected;
    if (open ? actual.length < shown.length : actual.length !== shown.length) return `${at || '/'}: shown ${shown.length}${open ? ' or more' : ''} elements, got ${actual.length}`;
    for (let i = 0; i < shown.length; i++) {
      const m = mismatch(shown[i], actual[i], `${at}/${i}`);
      if (m !== undefined) return m;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at || '/'}: shown an object, got ${JSON.stringify(actual)}`;
    const shown = expected as Record<string, unknown>;
    const got = actual as Record<string, unknown>;
    for (const [k, v] of Object.entries(shown)) {
      if (k === '...') continue;
      if (!Object.hasOwn(got, k)) return `${at}/${k}: shown, but not in the answer`;
      const m = mismatch(v, got[k], `${at}/${k}`);
      if (m !== undefined) return m;
    }
    if (!Object.hasOwn(shown, '...')) {
      const extra = Object.keys(got).filter((k) => !Object.hasOwn(shown, k));
      if (extra.length > 0) return `${at || '/'}: the answer has members the example does not show (${extra.join(', ')}); show them or add "...": "..."`;
    }
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : `${at || '/'}: shown ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}

/** Every leaf of a shown answer changed in turn (a string gains a letter, a number grows, a boolean flips): each must be told apart. */
export function* mutants(v: unknown): Generator<unknown> {
  if (typeof v === 'string') {
    if (v !== '...') yield `${v}x`;
  } else if (typeof v === 'number') yield v + 1;
  else if (typeof v === 'boolean') yield !v;
  else if (v === null) yield 0;
  else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) for (const m of mutants(v[i])) yield v.map((e, j) => (j === i ? m : e));
  } else if (typeof v === 'object') {
    for (const [k, e] of Object.entries(v as Record<string, unknown>)) {
      if (k === '...') continue;
      for (const m of mutants(e)) yield { ...(v as object), [k]: m };
    }
  }
}
