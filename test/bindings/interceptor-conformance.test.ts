/**
 * The MCP Interceptors conformance fixtures (test/vectors/interceptors/,
 * see its SOURCE.md) that apply to a single interceptor server: the
 * fixture's interceptors are registered with their sample behaviours on the
 * same registry and SDK server Trustgate serves, and driven by the SDK
 * Client. Fixtures whose steps are `apply` (a chain run) test what the
 * invoking host does with the answers (order, modes, failOpen), not a
 * server: they are listed below with the reason.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import canonicalize from 'canonicalize';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpError, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { InterceptorRegistry, readMode, type RegisteredInterceptor } from '../../src/bindings/interceptors/registry.js';
import { createInterceptorServer } from '../../src/bindings/interceptors/mcp-server.js';

const DIR = fileURLToPath(new URL('../vectors/interceptors/', import.meta.url));
const manifest = JSON.parse(readFileSync(DIR + 'manifest.json', 'utf8')) as { fixtures: Array<{ id: string; kind: string; file: string }> };

/** Fixtures that do not apply to one interceptor server, and why (kept in docs/bindings/interceptors.md too). */
const NOT_APPLICABLE: Record<string, string> = {
  'protocol/chain-request-order-mutate-then-validate': 'chain order (mutations before validations when sending) is run by the invoking host',
  'protocol/chain-response-order-validate-then-mutate': 'chain order (validations before mutations when receiving) is run by the invoking host',
  'protocol/chain-validation-blocks': 'blocking on an active validator error is the invoking host\'s decision',
  'protocol/chain-audit-never-blocks': 'audit mode is applied by the invoking host (the server only declares it)',
  'protocol/chain-audit-mutation-shadowed': 'not applying an audit mutation is the invoking host\'s job',
  'protocol/chain-fail-closed': 'failOpen is applied by the invoking host to invocation failures',
  'protocol/chain-fail-open': 'failOpen is applied by the invoking host to invocation failures',
  'behavior/*': 'not copied: they test the extension\'s own sample guard and redactor (secret formats, cross-server relays), not a policy server (see SOURCE.md)',
};

interface FixtureInterceptor {
  name: string;
  type: 'validation' | 'mutation';
  behavior: string;
  events: string[];
  phases: 'request' | 'response' | 'both';
  mode?: string;
  failOpen?: boolean;
}

const note = (payload: unknown): unknown => (payload as { arguments?: { note?: unknown } })?.arguments?.note;

/** The fixture vocabulary of sample behaviours (SOURCE.md section 3). */
function behaviour(b: string): RegisteredInterceptor['handle'] {
  switch (b) {
    case 'allow-all':
      return async () => ({ valid: true });
    case 'deny-all':
      return async () => ({ valid: false, severity: 'error', messages: [{ message: 'denied by policy', severity: 'error' }] });
    case 'require-note':
      return async (p) =>
        typeof note(p.payload) === 'string' && note(p.payload) !== ''
          ? { valid: true }
          : { valid: false, severity: 'error', messages: [{ message: 'note is required', severity: 'error' }] };
    case 'require-uppercase-note':
      return async (p) => {
        const n = note(p.payload);
        return typeof n === 'string' && n === n.toUpperCase()
          ? { valid: true }
          : { valid: false, severity: 'error', messages: [{ message: 'note must be uppercase', severity: 'error' }] };
      };
    case 'uppercase-note':
      return async (p) => {
        const n = note(p.payload);
        if (typeof n !== 'string') return { modified: false, payload: p.payload };
        const payload = structuredClone(p.payload) as { arguments: { note: string } };
        payload.arguments.note = n.toUpperCase();
        return { modified: true, payload };
      };
    case 'crash':
      return async () => {
        throw new Error('crash');
      };
    default:
      throw new Error(`unknown fixture behaviour ${b}`);
  }
}

function registryOf(list: FixtureInterceptor[]): InterceptorRegistry {
  return new InterceptorRegistry(
    list.map((i) => {
      const phases = i.phases === 'both' ? (['request', 'response'] as const) : [i.phases];
      const descriptor = {
        name: i.name,
        type: i.type,
        hooks: phases.map((phase) => ({ events: i.events, phase })),
        ...(i.mode !== undefined ? { mode: readMode(i.mode) } : {}),
        ...(i.failOpen === true ? { failOpen: true } : {}),
      };
      return { descriptor: () => descriptor, handle: behaviour(i.behavior) };
    }),
  );
}

function strip(v: unknown, volatile: string[]): unknown {
  if (Array.isArray(v)) return v.map((x) => strip(x, volatile));
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).filter(([k]) => !volatile.includes(k)).map(([k, x]) => [k, strip(x, volatile)]));
  }
  return v;
}

async function connect(registry: InterceptorRegistry): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  await createInterceptorServer(registry, '0.0.0').connect(a);
  const client = new Client({ name: 'conformance', version: '0' });
  await client.connect(b);
  return client;
}

const protocol = manifest.fixtures.filter((f) => f.kind === 'protocol');
const fixtures = protocol.map((f) => ({ entry: f, data: JSON.parse(readFileSync(DIR + f.file, 'utf8')) }));
const applicable = fixtures.filter((f) => (f.data.steps as Array<{ op: string }>).every((s) => s.op === 'list' || s.op === 'invoke'));

describe('interceptor conformance fixtures', () => {
  it('every protocol fixture either runs here or is listed with a reason', () => {
    const skipped = fixtures.filter((f) => !applicable.includes(f)).map((f) => f.entry.id).sort();
    expect(skipped).toEqual(Object.keys(NOT_APPLICABLE).filter((k) => k.startsWith('protocol/')).sort());
    expect(applicable.length).toBe(7);
  });

  for (const { entry, data } of applicable) {
    it(entry.id, async () => {
      const client = await connect(registryOf(data.interceptors));
      try {
        const caps = client.getServerCapabilities() as { extensions?: Record<string, unknown> };
        expect(caps.extensions).toHaveProperty(['io.modelcontextprotocol/interceptors']);
        for (const step of data.steps) {
          const request =
            step.op === 'list'
              ? { method: 'interceptors/list', ...(step.event === null ? {} : { params: { event: step.event } }) }
              : { method: 'interceptor/invoke', params: step.params };
          if (step.expect.errorCode !== undefined) {
            const err = await client.request(request, ResultSchema).then(
              () => undefined,
              (e: unknown) => e,
            );
            expect(err).toBeInstanceOf(McpError);
            expect((err as McpError).code).toBe(step.expect.errorCode);
            continue;
          }
          const result = await client.request(request, ResultSchema);
          const canonical = step.expect.canonical ?? canonicalize(step.expect.result);
          expect(canonicalize(strip(result, data.volatile))).toBe(canonical);
        }
      } finally {
        await client.close();
      }
    });
  }
});

describe('interceptor wire rules beyond the fixtures', () => {
  const registry = registryOf([
    { name: 'v', type: 'validation', behavior: 'allow-all', events: ['tools/call'], phases: 'request', mode: 'audit', failOpen: true },
    { name: 'c', type: 'validation', behavior: 'crash', events: ['tools/call'], phases: 'request' },
  ]);

  it('writes mode and failOpen only when the interceptor declares them; reads enforce as active', async () => {
    const client = await connect(registry);
    const r = (await client.request({ method: 'interceptors/list' }, ResultSchema)) as { interceptors: Array<Record<string, unknown>> };
    expect(r.interceptors[0]).toMatchObject({ name: 'v', mode: 'audit', failOpen: true });
    expect(r.interceptors[1]).not.toHaveProperty('mode');
    expect(r.interceptors[1]).not.toHaveProperty('failOpen');
    expect(readMode('enforce')).toBe('active');
    await client.close();
  });

  const fails = async (request: { method: string; params?: Record<string, unknown> }) => {
    const client = await connect(registry);
    const err = await client.request(request, ResultSchema).then(
      () => undefined,
      (e: unknown) => e as McpError,
    );
    await client.close();
    return err;
  };

  it('refuses a wildcard list filter with -32602', async () => {
    expect((await fails({ method: 'interceptors/list', params: { event: '*' } }))?.code).toBe(-32602);
  });

  it('names the unknown interceptor and the advertised hooks in -32602 data', async () => {
    const unknown = await fails({ method: 'interceptor/invoke', params: { name: 'nope', event: 'tools/call', phase: 'request', payload: {} } });
    expect(unknown?.code).toBe(-32602);
    expect(unknown?.data).toEqual({ name: 'nope' });
    const hook = await fails({ method: 'interceptor/invoke', params: { name: 'v', event: 'tools/call', phase: 'response', payload: {} } });
    expect(hook?.code).toBe(-32602);
    expect(hook?.data).toEqual({ advertisedHooks: [{ events: ['tools/call'], phase: 'request' }] });
  });

  it('answers bad params with -32602 and a failing handler with -32603, never a result', async () => {
    expect((await fails({ method: 'interceptor/invoke', params: { name: 'v', event: 'tools/call', phase: 'both', payload: {} } }))?.code).toBe(-32602);
    expect((await fails({ method: 'interceptor/invoke', params: { name: 'v', event: 'tools/call', phase: 'request' } }))?.code).toBe(-32602);
    expect((await fails({ method: 'interceptor/invoke', params: { name: 'c', event: 'tools/call', phase: 'request', payload: {} } }))?.code).toBe(-32603);
  });
});
