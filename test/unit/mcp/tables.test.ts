import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generate, OUTPUT_FILE } from '../../../scripts/gen-mcp-tables.js';
import { ROOT } from '../../helpers/process.js';
import { REVISIONS, atLeast } from '../../../src/mcp/revisions.js';
import { MCP_TABLES } from '../../../src/mcp/tables.generated.js';

describe('tables.generated.ts', () => {
  it('matches what the generator derives from test/vectors/mcp-schemas (run npx tsx scripts/gen-mcp-tables.ts)', () => {
    expect(readFileSync(OUTPUT_FILE, 'utf8')).toBe(generate());
  });

  it('`npm run mcp-tables:check` passes on the committed table and fails on a stale one', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['mcp-tables']).toBe('tsx scripts/gen-mcp-tables.ts');
    const check = pkg.scripts['mcp-tables:check']!.split(' ');
    expect(check.slice(0, 2)).toEqual(['tsx', 'scripts/gen-mcp-tables.ts']);
    const run = (...extra: string[]) =>
      spawnSync(join(ROOT, 'node_modules', '.bin', check[0]!), [...check.slice(1), ...extra], { cwd: ROOT, encoding: 'utf8' });
    const current = run();
    expect(current.status, current.stderr).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), 'trustgate-tables-'));
    try {
      const stale = join(dir, 'tables.generated.ts');
      writeFileSync(stale, `${readFileSync(OUTPUT_FILE, 'utf8')}// edited by hand\n`);
      const r = run(`--output=${stale}`);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('is stale; run npm run mcp-tables');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('covers every revision', () => {
    expect(Object.keys(MCP_TABLES).sort()).toEqual([...REVISIONS].sort());
  });

  it('reflects the revision boundaries the contract names', () => {
    for (const rev of REVISIONS) {
      const t = MCP_TABLES[rev];
      expect(Object.keys(t.blocks).sort(), rev).toEqual(
        ['text', 'image', 'resource', ...(atLeast(rev, '2025-03-26') ? ['audio'] : []), ...(atLeast(rev, '2025-06-18') ? ['resource_link'] : [])].sort(),
      );
      const metaFrom = atLeast(rev, '2025-06-18');
      for (const [type, block] of Object.entries(t.blocks)) {
        expect('_meta' in block.members, `${rev} ${type}._meta`).toBe(metaFrom);
        expect(block.members.annotations, `${rev} ${type}.annotations`).toBe('object');
        expect(block.members.type).toBe('string');
      }
      for (const v of t.resourceContents) expect('_meta' in v.members, `${rev} ${v.name}._meta`).toBe(metaFrom);
      expect(t.resourceContents.map((v) => v.discriminator).sort()).toEqual(['blob', 'text']);
      expect(Object.keys(t.annotations.members).sort()).toEqual(
        metaFrom ? ['audience', 'lastModified', 'priority'] : ['audience', 'priority'],
      );
      expect(t.audience).toEqual(['assistant', 'user']);
      expect(t.priority).toEqual({ minimum: 0, maximum: 1 });
      if (t.blocks.resource_link) expect('icons' in t.blocks.resource_link.members).toBe(atLeast(rev, '2025-11-25'));
      expect(t.icon !== null).toBe(atLeast(rev, '2025-11-25'));
      expect('structuredContent' in t.callToolResult.members).toBe(metaFrom);
      expect('resultType' in t.callToolResult.members).toBe(atLeast(rev, '2026-07-28'));
      expect(t.callToolResult.required).toEqual(atLeast(rev, '2026-07-28') ? ['content', 'resultType'] : ['content']);
    }
    expect(MCP_TABLES['2025-11-25'].callToolResult.members.structuredContent).toBe('object');
    expect(MCP_TABLES['2026-07-28'].callToolResult.members.structuredContent).toBe('any');
  });
});
