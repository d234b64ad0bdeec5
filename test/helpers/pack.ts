/** The trust-annotations conformance pack as (case, CallToolResult, evidenceRef, record) items. */
import { readFileSync } from 'node:fs';

const K = 'io.modelcontextprotocol/trust-annotations';

export interface PackItem {
  name: string;
  record: unknown;
  evidenceRef: { type: string; digest: string; canonicalization: string };
  result: Record<string, unknown>;
  /** Where the claim sits: result-level, or on content block 0. */
  level: 'result' | 'block';
  effectiveSensitive?: boolean;
}

export function packItems(): PackItem[] {
  const pack = JSON.parse(readFileSync(new URL('../vectors/trust-annotations/examples.json', import.meta.url), 'utf8'));
  const items: PackItem[] = [];
  for (const c of pack.cases) {
    const wires: Array<[string, any]> = [];
    if (c.wire) wires.push([c.id, c.wire]);
    if (c.wire_cbor) wires.push([`${c.id}/cbor`, c.wire_cbor]);
    if (c.wire_jcs) wires.push([`${c.id}/jcs`, c.wire_jcs]);
    for (const [name, wire] of wires) {
      if (wire.content_block_meta) {
        items.push({
          name,
          record: c.record,
          evidenceRef: wire.content_block_meta[K].evidenceRef,
          level: 'block',
          effectiveSensitive: c.effective_sensitive,
          result: {
            _meta: wire.result_meta,
            content: [
              { type: 'text', text: 'search hit 1' },
              { type: 'text', text: 'search hit 2', _meta: wire.content_block_meta },
            ],
          },
        });
      } else {
        items.push({
          name,
          record: c.record,
          evidenceRef: wire._meta[K].evidenceRef,
          level: 'result',
          result: { _meta: wire._meta, content: [{ type: 'text', text: 'tool output' }] },
        });
      }
    }
  }
  return items;
}
