import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assessTrust } from '../../../src/trust/assess.js';
import type { EvidenceEntry } from '../../../src/evidence/verify.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';

const KT = 'io.modelcontextprotocol~1trust-annotations';

interface PackCase extends Record<string, unknown> {
  id: string;
  record: unknown;
}
const pack = JSON.parse(
  readFileSync(new URL('../../vectors/trust-annotations/examples.json', import.meta.url), 'utf8'),
) as { cases: PackCase[] };

/** A CallToolResult carrying one wire form of a pack case, and the evidence entry for its record. */
interface Built {
  name: string;
  result: Record<string, unknown>;
  entries: EvidenceEntry[];
  blockLevel: boolean;
}

function build(): Built[] {
  const out: Built[] = [];
  for (const c of pack.cases) {
    for (const key of ['wire', 'wire_jcs', 'wire_cbor']) {
      const wire = c[key] as Record<string, Record<string, Record<string, unknown>>> | undefined;
      if (wire === undefined) continue;
      const blockLevel = wire['content_block_meta'] !== undefined;
      const claim = (blockLevel ? wire['content_block_meta'] : wire['_meta'])![TRUST_KEY]!;
      const ref = claim['evidenceRef'] as { digest: string };
      const result: Record<string, unknown> = blockLevel
        ? {
            content: [{ type: 'text', text: 'search hit', _meta: wire['content_block_meta'] }],
            _meta: wire['result_meta'],
          }
        : { content: [{ type: 'text', text: 'payload' }], _meta: wire['_meta'] };
      out.push({ name: `${c.id} ${key}`, result, entries: [{ digest: ref.digest, record: c.record, hasRecord: true }], blockLevel });
    }
  }
  return out;
}

describe('conformance pack through assessTrust', () => {
  const cases = build();

  it('builds nine evidenceRefs', () => {
    expect(cases).toHaveLength(9);
  });

  for (const c of cases) {
    it(`${c.name}: verified`, () => {
      const a = assessTrust(c.result, c.entries);
      expect(a.evidence).toHaveLength(1);
      expect(a.evidence[0]).toMatchObject({ status: 'verified', entryIndex: 0 });
      expect(a.evidence[0]!.derived).toBe(a.evidence[0]!.expected);
      expect(a.findings.filter((f) => f.severity === 'error')).toEqual([]);
    });
  }

  it('A5: the block-level claim makes effective sensitive true', () => {
    const a5 = cases.find((c) => c.name.startsWith('A5'))!;
    expect(a5.blockLevel).toBe(true);
    const a = assessTrust(a5.result, a5.entries);
    expect(a.blocks[0]!.sensitive).toBe(true);
    expect(a.labels.sensitive).toBe(true);
    expect(a.blocks[0]!.sources.sensitive[0]).toBe(`/content/0/_meta/${KT}/sensitive`);
    expect(a.evidence[0]!.pointer).toBe(`/content/0/_meta/${KT}/evidenceRef`);
    expect(a.blocks[0]!.dataClass).toEqual({ class: 'confidential', regulatory: [] });
    expect(a.findings).toEqual([]);
  });

  it('A2: class public makes no claim; A4: class unknown with sensitive true needs no warning', () => {
    const a2 = cases.find((c) => c.name.startsWith('A2'))!;
    const r2 = assessTrust(a2.result, a2.entries);
    expect(r2.labels.sensitive).toBeNull();
    expect(r2.result.dataClass).toEqual({ class: 'public', regulatory: [] });
    const a4 = cases.find((c) => c.name.startsWith('A4'))!;
    const r4 = assessTrust(a4.result, a4.entries);
    expect(r4.labels.sensitive).toBe(true);
    expect(r4.findings).toEqual([]);
  });

  it('verifies all nine from one result and one evidence array', () => {
    const content = cases.map((c, i) => ({
      type: 'text',
      text: String(i),
      _meta: (c.blockLevel ? (c.result['content'] as Array<Record<string, unknown>>)[0]!['_meta'] : c.result['_meta']),
    }));
    const entries = cases.flatMap((c) => c.entries);
    const a = assessTrust({ content }, entries);
    expect(a.evidence.map((o) => o.status)).toEqual(Array(9).fill('verified'));
  });
});
