/**
 * A server's tool list as the proxy, the gateway and the discovery
 * interceptor pass it on (src/bindings/proxy/tool-list.ts): every string of
 * a definition the host shows (descriptions, titles, the texts of its
 * schemas, wherever they sit) is read by the detectors and masked, while
 * the definition a call is judged and pinned against stays the server's own.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../src/config.js';
import { createDecisionCore, type DecisionCore } from '../../../src/decision/core.js';
import { loadPolicyDir } from '../../../src/policy/load.js';
import { judgeToolList, type ListedTools } from '../../../src/bindings/proxy/tool-list.js';

const SHIPPED = fileURLToPath(new URL('../../../policies', import.meta.url));
const quiet = { info() {}, warn() {}, error() {} };

/** Credentials the shipped set masks, and the part of each that must never reach the host. */
const SECRETS: Array<[string, string]> = [
  ['AKIAIOSFODNN7EXAMPLE', 'AKIAIOSFODNN7EXAMPLE'],
  ['ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8', 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'],
  ['aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
  ['postgres://app:Xk9mQ2vL7pR@db.example.com', 'Xk9mQ2vL7pR'],
];

let core: DecisionCore;
beforeAll(async () => {
  const set = await loadPolicyDir(SHIPPED);
  core = createDecisionCore({ config: loadConfig({}), policies: () => set });
});

const judge = (tools: unknown[], listed: ListedTools = new Map()) => judgeToolList({ core, log: quiet, server: { name: 'srv' } }, listed, { tools });

describe('a tool list passed on', () => {
  it('masks a credential wherever a definition holds it as text, and keeps the server\'s own definition for calls and pins', async () => {
    // Where in a definition a string may sit: its description or title, a property's description (whatever the
    // property is called, `type` and `name` included), an enum, an example, its annotations, its _meta.
    const place = fc.constantFrom<(s: string, key: string) => Record<string, unknown>>(
      (s) => ({ description: `Reads a page. ${s}` }),
      (s) => ({ title: s }),
      (s, key) => ({ inputSchema: { type: 'object', properties: { [key]: { type: 'string', description: `use ${s} here` } } } }),
      (s, key) => ({ inputSchema: { type: 'object', properties: { [key]: { type: 'string', enum: ['a', s] } } } }),
      (s, key) => ({ inputSchema: { type: 'object', properties: { outer: { type: 'object', properties: { [key]: { type: 'string', examples: [s] } } } } } }),
      (s) => ({ annotations: { title: s, readOnlyHint: true } }),
      (s) => ({ _meta: { note: s } }),
      (s) => ({ outputSchema: { type: 'object', description: s } }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SECRETS), place, fc.constantFrom('path', 'type', 'name', 'format', 'query'), async ([secret, core_], at, key) => {
        const def = { name: 'read', inputSchema: { type: 'object' }, ...at(secret, key) };
        const listed: ListedTools = new Map();
        const j = await judge([def, { name: 'write', description: 'Writes a note' }], listed);
        expect(j.ok).toBe(true);
        if (!j.ok) return;
        expect(JSON.stringify(j.payload)).not.toContain(core_);
        expect((j.payload.tools as Array<{ name: string }>).map((t) => t.name)).toEqual(['read', 'write']);
        // The host still calls `read`; the call is judged against the definition the server listed.
        expect(JSON.stringify(listed.get('read'))).toContain(core_);
      }),
      { numRuns: 60 },
    );
  });

  it('leaves a list without findings as the server wrote it', async () => {
    const tools = [{ name: 'read', description: 'Reads a page', inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'where', enum: ['a', 'b'] } }, required: ['path'] } }];
    const j = await judge(tools);
    expect(j.ok && j.payload.tools).toEqual(tools);
  });

  it('reads a list longer than one decision may hold, in parts', async () => {
    const tools = Array.from({ length: 1200 }, (_, i) => ({ name: `t${i}`, description: i === 1100 ? `key ${SECRETS[0]![0]}` : `tool ${i}` }));
    const j = await judge(tools);
    expect(j.ok).toBe(true);
    if (!j.ok) return;
    expect((j.payload.tools as unknown[]).length).toBe(1200);
    expect(JSON.stringify(j.payload)).not.toContain(SECRETS[0]![1]);
    expect((j.payload.tools as Array<{ description: string }>)[5]!.description).toBe('tool 5');
  });

  it('passes on no credential anywhere in a list: a tool\'s name, a member name at any depth, a schema keyword, an icon, the cursor', async () => {
    // Where a definition may hold a string the host reads, though no reader takes it for prose: the tool's name, the
    // names of its schema's properties and of its _meta, schema keywords (type, format, pattern, $ref, required), the
    // media type and source of an icon.
    const place = fc.constantFrom<(s: string) => { tool: Record<string, unknown>; cursor?: string }>(
      (s) => ({ tool: { name: s } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: 'object', properties: { [s]: { type: 'string' } } } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: 'object', properties: { outer: { type: 'object', properties: { [`x ${s}`]: { type: 'string' } } } } } } }),
      (s) => ({ tool: { name: 'read', _meta: { [s]: true } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: 'object', properties: { p: { type: 'string', format: s } } } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: 'object', properties: { p: { type: 'string', pattern: `^${s}$` } } } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: 'object', properties: { p: { $ref: `#/defs/${s}` } } } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: s } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: 'object', required: [s] } } }),
      (s) => ({ tool: { name: 'read', icons: [{ src: `https://icons.example/a.png?key=${s}`, mimeType: 'image/png' }] } }),
      (s) => ({ tool: { name: 'read', icons: [{ src: 'https://icons.example/a.png', sizes: [s] }] } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: ['object', s] } } }),
      (s) => ({ tool: { name: 'read', inputSchema: { type: { note: s } } } }),
      (s) => ({ tool: { name: 'read' }, cursor: s }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SECRETS), place, async ([secret, core_], at) => {
        const { tool, cursor } = at(secret);
        const j = await judgeToolList({ core, log: quiet, server: { name: 'srv' } }, new Map(), { tools: [tool, { name: 'write', description: 'Writes a note' }], ...(cursor === undefined ? {} : { nextCursor: cursor }) });
        if (!j.ok) return;
        expect(JSON.stringify(j.payload)).not.toContain(core_);
        // The other tool is listed as it was.
        expect(j.payload.tools).toContainEqual({ name: 'write', description: 'Writes a note' });
      }),
      { numRuns: 150 },
    );
  });

  it('reads a long list in turns: whatever else waits (another server of the gateway) runs between its decisions', async () => {
    const tools = Array.from({ length: 3000 }, (_, i) => ({ name: `t${i}`, description: `tool ${i} reads a page` }));
    const ran: boolean[] = [];
    let done = false;
    setImmediate(() => ran.push(done));
    const j = await judge(tools);
    done = true;
    expect(j.ok).toBe(true);
    // Run while the list was still being read, not after.
    expect(ran).toEqual([false]);
  });
});
