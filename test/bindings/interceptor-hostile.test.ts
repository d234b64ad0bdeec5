/**
 * Hostile invocations of the Trustgate interceptors: whatever params a
 * client sends, the answer is a result or a JSON-RPC error (-32602 for
 * what the caller got wrong), never a crash, a hang or another code.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpError, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InterceptorRegistry } from '../../src/bindings/interceptors/registry.js';
import { createInterceptorServer } from '../../src/bindings/interceptors/mcp-server.js';
import { trustgateInterceptors } from '../../src/bindings/interceptors/trustgate.js';
import { loadConfig } from '../../src/config.js';
import { createDecisionCore } from '../../src/decision/core.js';
import { PolicyStore } from '../../src/policy/reload.js';
import { MemorySessionStore } from '../../src/session/memory.js';
import { MCP_POLICIES } from '../helpers/mcp.js';

describe('interceptor/invoke with hostile params', () => {
  let client: Client;
  beforeAll(async () => {
    const store = new PolicyStore(join(MCP_POLICIES, 'guard'));
    await store.load();
    const core = createDecisionCore({ config: loadConfig({}), policies: () => store.current, sessions: new MemorySessionStore({ maxSessions: 100, maxPins: 100, ttlMs: 60_000 }) });
    const registry = new InterceptorRegistry(trustgateInterceptors({ core, policies: () => store.current, version: '0' }));
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createInterceptorServer(registry, '0').connect(a);
    client = new Client({ name: 'hostile', version: '0' });
    await client.connect(b);
  });
  afterAll(async () => client.close());

  const name = fc.constantFrom('trustgate-call', 'trustgate-result', 'trustgate-redact', 'trustgate-discovery', 'other');
  const phase = fc.constantFrom('request', 'response', 'both', 1);
  const params = fc.record(
    {
      name,
      event: fc.constantFrom('tools/call', 'tools/list', 'resources/list', 'resources/templates/list', 'prompts/list', '*', ''),
      phase,
      // Any JSON, and lists of the discovery shapes holding any JSON.
      payload: fc.oneof(fc.jsonValue(), fc.record({ tools: fc.array(fc.jsonValue()), resources: fc.array(fc.jsonValue()), prompts: fc.jsonValue(), resourceTemplates: fc.jsonValue() }, { requiredKeys: [] })),
      config: fc.jsonValue(),
      context: fc.jsonValue(),
    },
    { requiredKeys: [] },
  );

  it('answers a result or -32602, nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(params, async (p) => {
        const r = await client.request({ method: 'interceptor/invoke', params: p as Record<string, unknown> }, ResultSchema).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        if ('error' in r) {
          expect(r.error).toBeInstanceOf(McpError);
          expect((r.error as McpError).code).toBe(-32602);
        } else {
          expect(['validation', 'mutation']).toContain((r.result as { type?: string }).type);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('trustgate-call judges the tool called', () => {
  it('a definition whose name is not the call name is -32602, whatever the two names', async () => {
    const store = new PolicyStore(join(MCP_POLICIES, 'guard'));
    await store.load();
    const core = createDecisionCore({ config: loadConfig({}), policies: () => store.current, sessions: new MemorySessionStore({ maxSessions: 100, maxPins: 100, ttlMs: 60_000 }) });
    const registry = new InterceptorRegistry(trustgateInterceptors({ core, policies: () => store.current, version: '0' }));
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createInterceptorServer(registry, '0').connect(a);
    const client = new Client({ name: 'hostile', version: '0' });
    await client.connect(b);
    try {
      await fc.assert(
        fc.asyncProperty(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 }), async (called, defined) => {
          fc.pre(called !== defined);
          const invoke = (tool: string) =>
            client.request(
              {
                method: 'interceptor/invoke',
                params: {
                  name: 'trustgate-call',
                  event: 'tools/call',
                  phase: 'request',
                  payload: { method: 'tools/call', params: { name: called, arguments: {} } },
                  config: { tool: { name: tool, annotations: { readOnlyHint: true } } },
                },
              },
              ResultSchema,
            );
          const err = await invoke(defined).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(McpError);
          expect((err as McpError).code).toBe(-32602);
          expect((err as McpError).message).toContain('tool.name must equal call.name');
          // The same call with its own definition is judged.
          expect(await invoke(called)).toMatchObject({ type: 'validation' });
        }),
        { numRuns: 50 },
      );
    } finally {
      await client.close();
    }
  });
});
