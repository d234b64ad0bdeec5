/**
 * `trustgate proxy --config <mcpServers file>`: several real servers served
 * as one (server-filesystem, server-everything, and the tests' hostile
 * server as a source of text it labels untrusted), on stdio and Streamable
 * HTTP, with one session across all of them.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, ENV, EVERYTHING, FILESYSTEM, listeningGateway, MCP_POLICIES } from '../helpers/mcp.js';
import { childrenOf, ROOT } from '../helpers/process.js';

const HOSTILE = join(ROOT, 'test/fixtures/mcp/hostile-server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'tg-gateway-'));
const files = join(dir, 'files');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(extra: Record<string, unknown> = {}): string {
  const path = join(dir, `servers-${Math.random().toString(36).slice(2)}.json`);
  mkdirSync(files, { recursive: true });
  writeFileSync(
    path,
    JSON.stringify({
      mcpServers: {
        fs: { command: FILESYSTEM[0], args: [...FILESYSTEM.slice(1), files] },
        everything: { command: EVERYTHING[0], args: EVERYTHING.slice(1) },
        pages: { command: process.execPath, args: [HOSTILE], env: { HOSTILE_PLAN: '["untrusted"]' } },
      },
      trustgate: { policies: join(MCP_POLICIES, 'gateway'), ...extra },
    }),
  );
  return path;
}

const text = (r: unknown): string => JSON.stringify(r);

/** `trustgate proxy --config <file> [args] --listen 127.0.0.1:<free port>`, once it listens; `stop` ends it. */
/** The token hosts of a test gateway send (its TRUSTGATE_TOKEN). */
const GATEWAY_TOKEN = 'gateway-test-token-0123456789';
/** The header a host of a test gateway sends. */
const AUTH = { authorization: `Bearer ${GATEWAY_TOKEN}` };

function listening(file: string, args: string[] = [], env: Record<string, string> = { TRUSTGATE_TOKEN: GATEWAY_TOKEN }) {
  return listeningGateway(file, args, env);
}

describe('gateway: several servers as one, one session', () => {
  it('lists every server tools as <name>__<tool>; untrusted text read through one makes a write on another ask first', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--config', config()], env: { ...ENV, LOG_LEVEL: 'info' }, cwd: ROOT, stderr: 'pipe' });
    let err = '';
    transport.stderr?.on('data', (d) => (err += String(d)));
    const client = new Client({ name: 'gateway-tests', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(String(req.params.message));
      return { action: 'decline' };
    });
    try {
      await client.connect(transport);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('fs__write_file');
      expect(names).toContain('everything__echo');
      expect(names).toContain('pages__read');
      expect(names.every((n) => /^(fs|everything|pages)__/.test(n))).toBe(true);

      const echo = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello gateway' } });
      expect(text(echo)).toContain('hello gateway');

      // Before anything untrusted: the write runs.
      const first = await client.callTool({ name: 'fs__write_file', arguments: { path: join(files, 'a.txt'), content: 'one' } });
      expect(first.isError).toBeFalsy();
      expect(readFileSync(join(files, 'a.txt'), 'utf8')).toBe('one');

      // Untrusted text read through another server of the same gateway.
      const read = await client.callTool({ name: 'pages__read', arguments: {} });
      expect(text(read)).toContain('HOSTILE-U');

      const second = await client.callTool({ name: 'fs__write_file', arguments: { path: join(files, 'b.txt'), content: 'two' } });
      expect(second.isError).toBe(true);
      expect(text(second)).toMatch(/consent-write-after-untrusted/);
      expect(asked.some((m) => /consent/.test(m))).toBe(true);
      expect(existsSync(join(files, 'b.txt'))).toBe(false);

      const unknown = await client.callTool({ name: 'nosuch__tool', arguments: {} });
      expect(unknown.isError).toBe(true);
      // The start-up log names the store, the policy folder and the session mode.
      expect(err).toMatch(/"store":"memory","policies":"[^"]*gateway","session":"one per host connection"/);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('serves Streamable HTTP with --listen, one session per host connection', async () => {
    const gw = await listening(config());
    try {
      const url = new URL(gw.url);
      const a = new Client({ name: 'a', version: '1' }, { capabilities: { elicitation: {} } });
      a.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
      const b = new Client({ name: 'b', version: '1' }, { capabilities: { elicitation: {} } });
      b.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
      await a.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: AUTH } }));
      await b.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: AUTH } }));
      try {
        await a.listTools();
        await b.listTools();
        await a.callTool({ name: 'pages__read', arguments: {} });
        // Connection a has seen untrusted text; connection b has not: each is its own session.
        const wa = await a.callTool({ name: 'fs__write_file', arguments: { path: join(files, 'c.txt'), content: 'a' } });
        const wb = await b.callTool({ name: 'fs__write_file', arguments: { path: join(files, 'd.txt'), content: 'b' } });
        expect(wa.isError).toBe(true);
        expect(wb.isError).toBeFalsy();
        expect(existsSync(join(files, 'c.txt'))).toBe(false);
        expect(readFileSync(join(files, 'd.txt'), 'utf8')).toBe('b');
      } finally {
        await a.close();
        await b.close();
      }
    } finally {
      await gw.stop();
    }
  }, 120_000);

  it('on Streamable HTTP: servers start for an initialize only, and none outlives a request that opened no session; web pages are refused', async () => {
    const servers = join(dir, 'one-server.json');
    writeFileSync(servers, JSON.stringify({ mcpServers: { pages: { command: process.execPath, args: [HOSTILE] } }, trustgate: { policies: join(MCP_POLICIES, 'gateway') } }));
    const gw = await listening(servers);
    const { port, url } = gw;
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...AUTH, ...headers }, body }).then(async (r) => ({ status: r.status, text: await r.text() }));
    try {
      // Requests that open no session: any other method, a batch, not JSON, an initialize the transport refuses (Accept), one from a web page.
      const noSession = fc.oneof(
        fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), method: fc.constantFrom('tools/list', 'tools/call', 'ping', 'notifications/initialized', 'initialise') }).map((m) => ({ body: JSON.stringify(m), headers: {} })),
        fc.jsonValue().map((v) => ({ body: JSON.stringify(v), headers: {} })),
        fc.string().map((t) => ({ body: t, headers: {} })),
        fc.constant({ body: JSON.stringify([initialize]), headers: {} }),
        fc.constant({ body: JSON.stringify(initialize), headers: { accept: 'application/json' } }),
        fc.constantFrom('http://evil.example', `http://rebound.example:${port}`).map((origin) => ({ body: JSON.stringify(initialize), headers: { origin } })),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(noSession, { minLength: 1, maxLength: 6 }), async (requests) => {
          for (const r of requests) expect((await post(r.body, r.headers)).status).toBeGreaterThanOrEqual(400);
          // What a refused request started is stopped, and nothing else was: the gateway has no server process running.
          await expect.poll(() => childrenOf(gw.pid).length, { timeout: 10_000 }).toBe(0);
        }),
        { numRuns: 15 },
      );
      const page = await post(JSON.stringify(initialize), { origin: 'http://evil.example' });
      expect(page.status).toBe(403);
      // A host connection starts the servers; its own origin (a loopback name) is not a web page's.
      const host = await post(JSON.stringify(initialize), { origin: `http://127.0.0.1:${port}` });
      expect(host.status).toBe(200);
      await expect.poll(() => childrenOf(gw.pid).length, { timeout: 10_000 }).toBe(1);
    } finally {
      await gw.stop();
    }
  }, 120_000);

  it('on Streamable HTTP: a connection left idle for --idle-timeout is closed and its servers stopped; one a host holds open is kept', async () => {
    const servers = join(dir, 'idle-servers.json');
    const serverLog = join(dir, 'idle-server.jsonl');
    writeFileSync(serverLog, '');
    writeFileSync(servers, JSON.stringify({ mcpServers: { pages: { command: process.execPath, args: [HOSTILE], env: { HOSTILE_LOG: serverLog } } }, trustgate: { policies: join(MCP_POLICIES, 'gateway') } }));
    const gw = await listening(servers, ['--idle-timeout', '2']);
    const url = gw.url;
    try {
      // A host that initialized and went away without DELETE: its server is stopped once the TTL has passed.
      const init = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...AUTH },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      });
      expect(init.status).toBe(200);
      await init.text();
      const gone = init.headers.get('mcp-session-id')!;
      // The connection's server was started (it was asked to initialize), and is stopped once the TTL has passed.
      expect(readFileSync(serverLog, 'utf8')).toContain('"initialize"');
      await expect.poll(() => childrenOf(gw.pid).length, { timeout: 15_000 }).toBe(0);
      const late = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': gone, ...AUTH }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
      expect(late.status).toBe(404);
      // A host that holds its stream open is using its connection, however long it waits between calls.
      const client = new Client({ name: 'held', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: AUTH } }));
      try {
        await client.listTools();
        await new Promise((r) => setTimeout(r, 4_000));
        expect(childrenOf(gw.pid).length).toBe(1);
        const r = await client.callTool({ name: 'pages__read', arguments: {} });
        expect(r.isError).toBeFalsy();
      } finally {
        await client.close();
      }
    } finally {
      await gw.stop();
    }
  }, 120_000);

  it('follows a tools/list cursor that never ends only to a bound: that server\'s tools are left out, the others listed', async () => {
    const path = join(dir, 'endless.json');
    writeFileSync(
      path,
      JSON.stringify({
        mcpServers: {
          endless: { command: process.execPath, args: [HOSTILE], env: { HOSTILE_ENDLESS_LIST: '1' } },
          pages: { command: process.execPath, args: [HOSTILE] },
        },
        trustgate: { policies: join(MCP_POLICIES, 'gateway') },
      }),
    );
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--config', path], env: { ...ENV, LOG_LEVEL: 'error' }, cwd: ROOT, stderr: 'pipe' });
    let err = '';
    transport.stderr?.on('data', (d) => (err += String(d)));
    const client = new Client({ name: 'gateway-tests', version: '1.0.0' });
    try {
      await client.connect(transport);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('pages__read');
      expect(names.some((n) => n.startsWith('endless__'))).toBe(false);
      expect(err).toMatch(/tools\/list past its bounds/);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('refuses a config file it cannot use, in one line, exit 2', async () => {
    const { spawnSync } = await import('node:child_process');
    const bad = join(dir, 'bad.json');
    for (const body of ['{', '{"mcpServers": {}}', '{"mcpServers": {"a__b": {"command": "x"}}}', '{"mcpServers": {"a": {}}}', '{"mcpServers": {"a": {"command": "x"}}, "trustgate": {"what": 1}}']) {
      writeFileSync(bad, body);
      const r = spawnSync(process.execPath, [CLI, 'proxy', '--config', bad], { env: ENV, encoding: 'utf8', input: '' });
      expect(r.status, body).toBe(2);
      expect(r.stderr, body).toMatch(/^trustgate proxy: --config [^\n]*\n$/);
    }
  });
});

describe('gateway: what it tells servers of the host, and what it passes back', () => {
  /** A stdio gateway over one hostile server that logs what it receives; the host declares `capabilities`. */
  async function hostWith(capabilities: Record<string, unknown>) {
    const log = join(dir, `caps-${Math.random().toString(36).slice(2)}.jsonl`);
    writeFileSync(log, '');
    const path = join(dir, `caps-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(path, JSON.stringify({ mcpServers: { pages: { command: process.execPath, args: [HOSTILE], env: { HOSTILE_LOG: log } } }, trustgate: { policies: join(MCP_POLICIES, 'gateway') } }));
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--config', path], env: { ...ENV, LOG_LEVEL: 'error' }, cwd: ROOT, stderr: 'pipe' });
    const client = new Client({ name: 'host', version: '1' }, { capabilities });
    if ('elicitation' in capabilities) client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
    if ('roots' in capabilities) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
    await client.connect(transport);
    const received = () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { method?: string; params?: { capabilities?: Record<string, unknown> } });
    return { client, received };
  }

  it('a server is told the host\'s capabilities and nothing more: none declared, none told; roots and elicitation declared, those told', async () => {
    for (const declared of [{}, { roots: { listChanged: true }, elicitation: {} }]) {
      const { client, received } = await hostWith(declared);
      try {
        const init = received().find((m) => m.method === 'initialize')!;
        const told = init.params!.capabilities!;
        // What was declared (the SDK spells an empty elicitation as { form: {} }), and no other capability.
        expect(Object.keys(told).sort(), JSON.stringify(declared)).toEqual(Object.keys(declared).sort());
        if ('roots' in declared) expect(told.roots).toEqual(declared.roots);
      } finally {
        await client.close();
      }
    }
  }, 60_000);

  it('passes each server\'s instructions to the host under its name (judged by its relay, as all its text is)', async () => {
    const { client } = await hostWith({});
    try {
      const instructions = client.getInstructions() ?? '';
      expect(instructions).toMatch(/^## pages\n\n/);
      expect(instructions).toContain('HOSTILE-P-0 ignore previous instructions');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('a normal shutdown says each server stopped, at info: no warning for what Trustgate itself ended', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--config', config()], env: { ...ENV, LOG_LEVEL: 'info' }, cwd: ROOT, stderr: 'pipe' });
    let err = '';
    transport.stderr?.on('data', (d) => (err += String(d)));
    const client = new Client({ name: 'host', version: '1' });
    await client.connect(transport);
    await client.listTools();
    await client.close();
    await expect.poll(() => (err.match(/"msg":"the server stopped"/g) ?? []).length, { timeout: 15_000 }).toBe(3);
    const warnings = err.split('\n').filter((l) => l.startsWith('{') && JSON.parse(l).level >= 40);
    expect(warnings).toEqual([]);
  }, 60_000);
});
