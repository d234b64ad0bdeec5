/**
 * The proxy relay against a server that misbehaves: the relay runs over the
 * SDK's in-memory transports with the real decision core, and the "server"
 * answers whatever the test makes it answer.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { MAX_PASSED, McpProxy } from '../../src/bindings/proxy/relay.js';
import { loadConfig } from '../../src/config.js';
import { createDecisionCore, type DecisionCore } from '../../src/decision/core.js';
import { PolicyStore } from '../../src/policy/reload.js';
import { MemorySessionStore } from '../../src/session/memory.js';
import { MCP_POLICIES } from '../helpers/mcp.js';

const quiet = { info() {}, warn() {}, error() {} };
type Msg = Record<string, any>;

type End = InstanceType<typeof InMemoryTransport>;

/**
 * A started relay with the real core (guard policies) between two in-memory
 * ends the test plays: what reaches the server's end goes to `onServer`
 * (with that end, to answer on), what reaches the host's to `onHost`.
 */
async function wired(onServer: (m: Msg, upEnd: End) => void, onHost: (m: Msg) => void, onActivity?: () => void, wrap: (c: DecisionCore) => DecisionCore = (c) => c) {
  const store = new PolicyStore(join(MCP_POLICIES, 'guard'));
  await store.load();
  const core = wrap(createDecisionCore({ config: loadConfig({}), policies: () => store.current, sessions: new MemorySessionStore({ maxSessions: 100, maxPins: 100, ttlMs: 60_000 }) }));
  const [hostSide, hostEnd] = InMemoryTransport.createLinkedPair();
  const [upSide, upEnd] = InMemoryTransport.createLinkedPair();
  upEnd.onmessage = (m) => onServer(m as Msg, upEnd);
  hostEnd.onmessage = (m) => onHost(m as Msg);
  await upEnd.start();
  await hostEnd.start();
  const drops: string[] = [];
  const proxy = new McpProxy({ core, host: hostSide, upstream: upSide, log: quiet, onDrop: (r) => drops.push(r), ...(onActivity ? { onActivity } : {}) });
  await proxy.start();
  return { proxy, hostEnd, upEnd, drops };
}

/** A relay whose upstream answers each request with `answer(request)`; `send` talks as the host and resolves with the host's next message. */
async function relay(answer: (req: Msg) => Msg | undefined, onActivity?: () => void) {
  const seen: Msg[] = [];
  const inbox: Msg[] = [];
  let waiter: (() => void) | undefined;
  const { proxy, hostEnd } = await wired(
    (m, upEnd) => {
      seen.push(m);
      const reply = answer(m);
      if (reply) void upEnd.send(reply as JSONRPCMessage);
    },
    (m) => {
      inbox.push(m);
      waiter?.();
    },
    onActivity,
  );
  const next = async (): Promise<Msg> => {
    while (inbox.length === 0) await new Promise<void>((r) => (waiter = r));
    return inbox.shift()!;
  };
  const send = async (m: Msg) => {
    await hostEnd.send(m as JSONRPCMessage);
    return next();
  };
  return { send, seen, close: () => proxy.close() };
}

const reply = (req: Msg, result: unknown) => ({ jsonrpc: '2.0', id: req.id, result });

describe('proxy relay against a misbehaving server', () => {
  it('counts a repeated answer as repeated for the last 1,024 ids answered, and an older one as unknown', async () => {
    const ids: unknown[] = [];
    let answered = 0;
    const { proxy, hostEnd, upEnd, drops } = await wired(
      (m, up) => {
        ids.push(m.id);
        void up.send({ jsonrpc: '2.0', id: m.id, result: {} } as JSONRPCMessage);
      },
      () => void answered++,
    );
    const total = 1_100;
    for (let i = 0; i < total; i++) await hostEnd.send({ jsonrpc: '2.0', id: i, method: 'ping' } as JSONRPCMessage);
    while (answered < total) await new Promise((r) => setTimeout(r, 5));
    for (const id of [ids[0], ids[total - 1_024 - 1], ids[total - 1_024], ids[total - 1]]) await upEnd.send({ jsonrpc: '2.0', id, result: {} } as JSONRPCMessage);
    await new Promise((r) => setTimeout(r, 20));
    expect(drops).toEqual(['unknown-id', 'unknown-id', 'repeated', 'repeated']);
    expect(answered).toBe(total);
    await proxy.close();
  });

  it("the server's requests waiting on the host are bounded: past MAX_PASSED one is refused to the server, and an answer makes room", async () => {
    const toServer: Msg[] = [];
    const toHost: Msg[] = [];
    const { proxy, hostEnd, upEnd, drops } = await wired(
      (m) => void toServer.push(m),
      (m) => void toHost.push(m),
    );
    // All at once, as a hostile server would: none is judged before the next arrives.
    const burst = MAX_PASSED + 50;
    await Promise.all(Array.from({ length: burst }, (_, i) => upEnd.send({ jsonrpc: '2.0', id: i, method: 'ping' } as JSONRPCMessage)));
    await expect.poll(() => toHost.length + toServer.length).toBe(burst);
    expect(toHost.length).toBe(MAX_PASSED);
    expect(toServer.every((m) => m.error?.code === -32000)).toBe(true);
    expect(drops.filter((d) => d === 'too-many')).toHaveLength(50);
    // The host answers one: there is room for the next.
    await hostEnd.send({ jsonrpc: '2.0', id: toHost[0]!.id, result: {} } as JSONRPCMessage);
    await expect.poll(() => toServer.some((m) => m.id === 0 && 'result' in m)).toBe(true);
    await upEnd.send({ jsonrpc: '2.0', id: 'late', method: 'ping' } as JSONRPCMessage);
    await expect.poll(() => toHost.length).toBe(MAX_PASSED + 1);
    await proxy.close();
  });

  it('a tools/call answer that is not an object is never passed on', async () => {
    for (const bad of [['LEAK'], 'LEAK', 42, null]) {
      const r = await relay((req) => ({ jsonrpc: '2.0', id: req.id, result: bad }));
      const got = await r.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: {} } });
      expect(got).toMatchObject({ id: 1, result: { isError: true } });
      expect(JSON.stringify(got)).not.toContain('LEAK');
      await r.close();
    }
  });

  it('a message of the server nested deeper than a result may be is not read: an answer is replaced, a request refused, a notification dropped, and the relay goes on', async () => {
    // Nesting built as the server's JSON would be, objects and lists in any order, with text at the bottom.
    const deep = (kinds: boolean[], depth: number) => {
      let v: unknown = 'LEAK';
      for (let i = 0; i < depth; i++) v = kinds[i % kinds.length] ? { k: v } : [v];
      return v;
    };
    const answers: Array<[string, Msg, (d: unknown) => Msg]> = [
      ['resources/read', { uri: 'file:///a' }, (d) => ({ contents: [{ uri: 'file:///a', text: 'x', _meta: { d } }] })],
      ['prompts/get', { name: 'p' }, (d) => ({ messages: [], description: 'd', x: d })],
      ['tools/list', {}, (d) => ({ tools: [{ name: 't', inputSchema: { type: 'object', properties: { p: d } } }] })],
      ['tools/call', { name: 't', arguments: {} }, (d) => ({ content: [{ type: 'text', text: 'x' }], structuredContent: { d } })],
      ['completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: 'b' } }, (d) => ({ completion: { values: [d] } })],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...answers), fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }), fc.integer({ min: 130, max: 30_000 }), async ([method, params, result], kinds, depth) => {
        const toServer: Msg[] = [];
        const { proxy, hostEnd, upEnd, drops } = await wired(
          (m, up) => {
            toServer.push(m);
            if (!('method' in m) || !('id' in m)) return;
            if (m.method === 'tools/list' && method !== 'tools/list') return void up.send(reply(m, { tools: [{ name: 't', inputSchema: { type: 'object' } }] }) as JSONRPCMessage);
            void up.send(reply(m, m.method === method ? result(deep(kinds, depth)) : {}) as JSONRPCMessage);
          },
          (m) => inbox.push(m),
        );
        const inbox: Msg[] = [];
        const next = async (id: number) => {
          for (let i = 0; i < 500 && !inbox.some((m) => m.id === id); i++) await new Promise((r) => setTimeout(r, 2));
          return inbox.find((m) => m.id === id)!;
        };
        // The server's own request and notification, nested as deep, before the host's request.
        await upEnd.send({ jsonrpc: '2.0', id: 'srv-1', method: 'roots/list', params: { _meta: { d: deep(kinds, depth) } } } as JSONRPCMessage);
        await upEnd.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: deep(kinds, depth) } } as JSONRPCMessage);
        await hostEnd.send({ jsonrpc: '2.0', id: 5, method, params } as JSONRPCMessage);
        const got = await next(5);
        expect(JSON.stringify(got), `${method} at ${depth}`).not.toContain('LEAK');
        expect(JSON.stringify(got), `${method} at ${depth}`).toMatch(/nests deeper/);
        // The relay goes on: the next request is answered.
        await hostEnd.send({ jsonrpc: '2.0', id: 6, method: 'ping', params: {} } as JSONRPCMessage);
        expect(await next(6)).toMatchObject({ id: 6, result: {} });
        // Nothing of the request or the notification reached the host; the server was told why its request was refused.
        expect(JSON.stringify(inbox)).not.toContain('LEAK');
        expect(toServer.find((m) => m.id === 'srv-1')).toMatchObject({ error: { code: -32600 } });
        expect(drops.filter((d) => d === 'too-deep').length).toBe(3);
        await proxy.close();
      }),
      { numRuns: 30 },
    );
  });

  it('a failure no judgement caught still answers the host, and the relay answers the next request: never a silence, never a crash', async () => {
    // A core that fails where no judgement catches it (its answer for the tool rules is malformed, or it throws).
    const broken = (c: DecisionCore): DecisionCore => ({ ...c, judgeTools: () => [undefined] as never, evaluateCall: () => Promise.reject(new TypeError('boom')) });
    const inbox: Msg[] = [];
    const { proxy, hostEnd } = await wired(
      (m, up) => {
        if ('method' in m && 'id' in m) void up.send(reply(m, m.method === 'tools/list' ? { tools: [{ name: 't', inputSchema: { type: 'object' } }] } : {}) as JSONRPCMessage);
      },
      (m) => inbox.push(m),
      undefined,
      broken,
    );
    const next = async (id: number) => {
      for (let i = 0; i < 500 && !inbox.some((m) => m.id === id); i++) await new Promise((r) => setTimeout(r, 2));
      return inbox.find((m) => m.id === id);
    };
    await hostEnd.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} } as JSONRPCMessage);
    expect(await next(1)).toMatchObject({ id: 1, error: { code: -32603 } });
    await hostEnd.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't', arguments: {} } } as JSONRPCMessage);
    expect(await next(2)).toMatchObject({ id: 2, result: { isError: true } });
    await hostEnd.send({ jsonrpc: '2.0', id: 3, method: 'ping', params: {} } as JSONRPCMessage);
    expect(await next(3)).toMatchObject({ id: 3, result: {} });
    await proxy.close();
  });

  it("a server's error answer reaches the host as its judged message, whatever the method", async () => {
    for (const [method, params] of [
      ['resources/read', { uri: 'file:///a' }],
      ['prompts/get', { name: 'p' }],
      ['completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: 'b' } }],
      ['ping', {}],
      ['resources/list', {}],
    ] as const) {
      const r = await relay((req) => ({ jsonrpc: '2.0', id: req.id, error: { code: -32002, message: 'no such thing here', data: { LEAK: 1 } } }));
      const got = await r.send({ jsonrpc: '2.0', id: 4, method, params });
      expect(got.error?.code, method).toBe(-32002);
      expect(got.error?.message, method).toContain('no such thing here');
      expect(JSON.stringify(got)).not.toContain('LEAK');
      await r.close();
    }
  });

  it('judges the tasks/result of a task it did not see created', async () => {
    const K = 'io.modelcontextprotocol/trust-annotations';
    const r = await relay((req) => reply(req, { content: [{ type: 'text', text: 'secret', _meta: { [K]: { sensitive: true } } }] }));
    const got = await r.send({ jsonrpc: '2.0', id: 'a', method: 'tasks/result', params: { taskId: 'elsewhere' } });
    expect(JSON.stringify(got)).not.toContain('"secret"');
    expect(got.result.content[0].text).toMatch(/withheld by results\/redact-sensitive/);
    await r.close();
  });

  it('forwards only what the core judged, as a fresh message, for any result the server sends', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), fc.boolean(), async (extra, untrusted) => {
        const K = 'io.modelcontextprotocol/trust-annotations';
        const block = { type: 'text', text: 'PAYLOAD', ...(untrusted ? { _meta: { [K]: { untrusted: true } } } : {}), extra };
        const r = await relay((req) => ({ ...reply(req, { content: [block], structuredContent: { v: extra } }), stray: 'STRAY' }));
        const got = await r.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 't' } });
        expect(Object.keys(got).sort()).toEqual(['id', 'jsonrpc', 'result']);
        expect(got.id).toBe(7);
        if (untrusted) expect(got.result.content[0].text).toMatch(/^<untrusted-content boundary=/);
        await r.close();
      }),
      { numRuns: 25 },
    );
  });

  it('a call whose name or arguments the policies cannot read is refused, not forwarded', async () => {
    const r = await relay((req) => reply(req, { content: [] }));
    for (const params of [{ name: 'echo', arguments: ['x'] }, { name: 7 }, {}]) {
      const got = await r.send({ jsonrpc: '2.0', id: 9, method: 'tools/call', params });
      expect(got.error.code).toBe(-32602);
    }
    expect(r.seen.filter((m) => m.method === 'tools/call')).toEqual([]);
    await r.close();
  });

  it('a denied call is answered by the proxy and never sent to the server', async () => {
    const r = await relay((req) => reply(req, { content: [] }));
    const got = await r.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'write_file', arguments: { path: '/x' } } });
    expect(got.result.isError).toBe(true);
    expect(r.seen.filter((m) => m.method === 'tools/call')).toEqual([]);
    await r.close();
  });

  it('a call made before the host listed tools is judged against the list the proxy asks the server for itself', async () => {
    const r = await relay((req) => (req.method === 'tools/list' ? reply(req, { tools: [{ name: 't', inputSchema: { type: 'object' } }] }) : reply(req, { content: [{ type: 'text', text: 'ok' }] })));
    const answer = await r.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: {} } });
    // The server was asked for its list first (nothing of it reached the host), then the call went through.
    expect(r.seen.map((m) => m.method)).toEqual(['tools/list', 'tools/call']);
    expect(JSON.stringify(answer)).not.toMatch(/unlisted|not listed/);
    await r.close();
  });

  it('tells its idle strategy of every message, in and out, on both sides', async () => {
    let active = 0;
    const r = await relay((req) => reply(req, { content: [{ type: 'text', text: 'ok' }] }), () => active++);
    await r.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const listed = active;
    await r.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't', arguments: {} } });
    // The call in from the host and on to the server, its result in from the server and on to the host.
    expect(active - listed).toBe(4);
    await r.close();
  });
});
