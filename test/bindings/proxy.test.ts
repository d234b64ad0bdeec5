/**
 * `trustgate proxy` end to end: the SDK Client on the proxy, the proxy in
 * front of real MCP servers (server-everything, server-filesystem, and a
 * small server of the tests' own), over stdio and Streamable HTTP.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive, childrenOf, freePort, ROOT } from '../helpers/process.js';
import { CHANGING, direct, EVERYTHING, FILESYSTEM, httpServer, MCP_POLICIES, proxied, type Connected } from '../helpers/mcp.js';

const NONE = join(MCP_POLICIES, 'none');
const GUARD = join(MCP_POLICIES, 'guard');

/** A client that answers the server's own requests (sampling, elicitation, roots) the same way whoever relays them. */
function answering(c: Client): void {
  c.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled answer' } }));
  c.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///tmp', name: 'tmp' }] }));
}
const CAPS = { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } };

/** Arguments for every tool of server-everything (a tool missing here fails the test, so new tools are noticed). */
const EVERYTHING_ARGS: Record<string, Record<string, unknown>> = {
  echo: { message: 'hello through the proxy' },
  'get-annotated-message': { messageType: 'success', includeImage: true },
  'get-env': {},
  'get-resource-links': { count: 2 },
  'get-resource-reference': { resourceType: 'Text', resourceId: 2 },
  'get-structured-content': { location: 'Chicago' },
  'get-sum': { a: 2, b: 40 },
  'get-tiny-image': {},
  'gzip-file-as-resource': { name: 'hello.txt.gz', data: 'data:text/plain;base64,aGVsbG8gd29ybGQ=' },
  'toggle-simulated-logging': {},
  'toggle-subscriber-updates': {},
  'trigger-long-running-operation': { duration: 0.2, steps: 2 },
  'get-roots-list': {},
  'trigger-elicitation-request': {},
  'trigger-sampling-request': { prompt: 'say hi', maxTokens: 5 },
  'simulate-research-query': { topic: 'trust' },
};

async function closeAll(...cs: Connected[]): Promise<void> {
  await Promise.all(cs.map((c) => c.client.close()));
}

/** Progress tokens and task ids are chosen per run; compare everything else. */
// The server's own clock times (a resource "created at 6:53:23 AM") differ when the two calls straddle a second.
const stable = (v: unknown): unknown =>
  JSON.parse(
    JSON.stringify(v)
      .replace(/"_meta":\{"progressToken":\d+\},?/g, '')
      .replace(/"taskId":"[0-9a-f]+"/g, '"taskId":"<task>"')
      .replace(/\b\d{1,2}:\d{2}:\d{2}( [AP]M)?/g, '<time>'),
  );

describe('proxy in front of server-everything (stdio)', () => {
  let d: Connected;
  let p: Connected;
  beforeAll(async () => {
    [d, p] = await Promise.all([direct(EVERYTHING, CAPS, answering), proxied(NONE, EVERYTHING, CAPS, answering)]);
  });
  afterAll(async () => closeAll(d, p));

  it('passes initialize, tools/list, resources, prompts and completion through unchanged', async () => {
    expect(p.client.getServerVersion()).toEqual(d.client.getServerVersion());
    expect(p.client.getServerCapabilities()).toEqual(d.client.getServerCapabilities());
    expect(p.client.getInstructions()).toEqual(d.client.getInstructions());
    expect(await p.client.listTools()).toEqual(await d.client.listTools());
    expect(await p.client.listResources()).toEqual(await d.client.listResources());
    expect(await p.client.listResourceTemplates()).toEqual(await d.client.listResourceTemplates());
    const first = (await d.client.listResources()).resources[0]!;
    expect(await p.client.readResource({ uri: first.uri })).toEqual(await d.client.readResource({ uri: first.uri }));
    const prompts = await d.client.listPrompts();
    expect(await p.client.listPrompts()).toEqual(prompts);
    const simple = prompts.prompts.find((x) => !x.arguments?.some((a) => a.required))!;
    expect(await p.client.getPrompt({ name: simple.name })).toEqual(await d.client.getPrompt({ name: simple.name }));
    expect(await p.client.ping()).toEqual(await d.client.ping());
    await expect(p.client.setLoggingLevel('debug')).resolves.toBeDefined();
  });

  it('every tool answers through the proxy as it does directly when no policy applies', async () => {
    const tools = (await d.client.listTools()).tools;
    expect(tools.map((t) => t.name).filter((n) => !(n in EVERYTHING_ARGS))).toEqual([]);
    for (const tool of tools) {
      const params = { name: tool.name, arguments: EVERYTHING_ARGS[tool.name] };
      if (tool.execution?.taskSupport === 'required') {
        // Task-augmented: the result comes through tasks/result, which the proxy judges too.
        const run = async (c: Client) => {
          const out: unknown[] = [];
          for await (const m of c.experimental.tasks.callToolStream(params, CallToolResultSchema, { task: { ttl: 60_000 } })) {
            if (m.type === 'result') out.push(m.result);
            if (m.type === 'error') out.push({ error: String(m.error) });
          }
          return out;
        };
        const [a, b] = await Promise.all([run(d.client), run(p.client)]);
        expect(stable(b), tool.name).toEqual(stable(a));
        continue;
      }
      const progress: { direct: number; proxied: number } = { direct: 0, proxied: 0 };
      const a = await d.client.callTool(params, undefined, { onprogress: () => progress.direct++ });
      const b = await p.client.callTool(params, undefined, { onprogress: () => progress.proxied++ });
      expect(stable(b), tool.name).toEqual(stable(a));
      // How many progress notifications beat the answer depends on timing; that they pass through does not.
      expect(progress.proxied > 0, `${tool.name} progress`).toBe(progress.direct > 0);
    }
  });
});

describe('proxy in front of server-filesystem (stdio)', () => {
  let root: string;
  const fill = () => {
    rmSync(join(root, 'w'), { recursive: true, force: true });
    mkdirSync(join(root, 'w', 'sub'), { recursive: true });
    writeFileSync(join(root, 'w', 'a.txt'), 'alpha\nbeta\n');
    writeFileSync(join(root, 'w', 'sub', 'b.md'), '# b\n');
  };
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'tg-proxy-fs-'));
    fill();
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const W = () => join(root, 'w');
  const ARGS: Record<string, () => Record<string, unknown>> = {
    read_file: () => ({ path: join(W(), 'a.txt') }),
    read_text_file: () => ({ path: join(W(), 'a.txt'), head: 1 }),
    read_media_file: () => ({ path: join(W(), 'sub', 'b.md') }),
    read_multiple_files: () => ({ paths: [join(W(), 'a.txt'), join(W(), 'sub', 'b.md')] }),
    write_file: () => ({ path: join(W(), 'new.txt'), content: 'new' }),
    edit_file: () => ({ path: join(W(), 'a.txt'), edits: [{ oldText: 'beta', newText: 'gamma' }] }),
    create_directory: () => ({ path: join(W(), 'made') }),
    list_directory: () => ({ path: W() }),
    list_directory_with_sizes: () => ({ path: W(), sortBy: 'name' }),
    directory_tree: () => ({ path: W() }),
    move_file: () => ({ source: join(W(), 'a.txt'), destination: join(W(), 'moved.txt') }),
    search_files: () => ({ path: W(), pattern: '*.md' }),
    get_file_info: () => ({ path: join(W(), 'sub') }),
    list_allowed_directories: () => ({}),
  };

  it('every tool answers through the proxy as it does directly when no policy applies', async () => {
    const [d, p] = await Promise.all([direct([...FILESYSTEM, root]), proxied(NONE, [...FILESYSTEM, root])]);
    try {
      const tools = (await d.client.listTools()).tools;
      expect(await p.client.listTools()).toEqual({ tools });
      expect(tools.map((t) => t.name).filter((n) => !(n in ARGS))).toEqual([]);
      for (const tool of tools) {
        fill();
        const a = await d.client.callTool({ name: tool.name, arguments: ARGS[tool.name]!() });
        if (!tool.annotations?.readOnlyHint) fill();
        const b = await p.client.callTool({ name: tool.name, arguments: ARGS[tool.name]!() });
        // Access times move when a file is read; everything else must be equal.
        const noTimes = (v: unknown) => JSON.parse(JSON.stringify(v).replace(/(accessed|modified|created): [^\\]+/g, '$1'));
        expect(noTimes(b), tool.name).toEqual(noTimes(a));
      }
    } finally {
      await closeAll(d, p);
    }
  });

  it('a denied call never reaches the server: the file is not written', async () => {
    fill();
    const p = await proxied(GUARD, [...FILESYSTEM, root]);
    try {
      await p.client.listTools();
      const r = await p.client.callTool({ name: 'write_file', arguments: { path: join(W(), 'evil.txt'), content: 'x' } });
      expect(r.isError).toBe(true);
      const text = (r.content as Array<{ text: string }>)[0]!.text;
      expect(text).toMatch(/calls\/deny-write/);
      expect(text).toMatch(/decision [0-9a-f-]{36}/);
      expect(existsSync(join(W(), 'evil.txt'))).toBe(false);
      // Other calls still go through.
      const ok = await p.client.callTool({ name: 'list_allowed_directories', arguments: {} });
      expect(ok.isError).not.toBe(true);
    } finally {
      await p.client.close();
    }
  });

  const withConsent = (answer: 'accept' | 'decline' | 'cancel') => (c: Client) => {
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: answer };
    });
  };
  let asked: string[] = [];

  it('consent: a client that declares elicitation is asked; accept runs the call', async () => {
    fill();
    asked = [];
    const p = await proxied(GUARD, [...FILESYSTEM, root], { capabilities: { elicitation: {} } }, withConsent('accept'));
    try {
      await p.client.listTools();
      const r = await p.client.callTool({ name: 'create_directory', arguments: { path: join(W(), 'yes') } });
      expect(r.isError).not.toBe(true);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatch(/consent-mkdir/);
      expect(existsSync(join(W(), 'yes'))).toBe(true);
    } finally {
      await p.client.close();
    }
  });

  it('consent: decline, or a client without elicitation, denies the call', async () => {
    fill();
    asked = [];
    const p = await proxied(GUARD, [...FILESYSTEM, root], { capabilities: { elicitation: {} } }, withConsent('decline'));
    const q = await proxied(GUARD, [...FILESYSTEM, root]);
    try {
      const r = await p.client.callTool({ name: 'create_directory', arguments: { path: join(W(), 'no') } });
      expect(r.isError).toBe(true);
      expect((r.content as Array<{ text: string }>)[0]!.text).toMatch(/did not consent/);
      expect(asked).toHaveLength(1);
      const s = await q.client.callTool({ name: 'create_directory', arguments: { path: join(W(), 'no') } });
      expect(s.isError).toBe(true);
      expect((s.content as Array<{ text: string }>)[0]!.text).toMatch(/did not declare elicitation/);
      expect(existsSync(join(W(), 'no'))).toBe(false);
    } finally {
      await closeAll(p, q);
    }
  });
});

/** The tests' own server, over stdio or Streamable HTTP. */
function ownServerSuite(kind: 'stdio' | 'http') {
  describe(`proxy in front of the tests' own server (${kind})`, () => {
    let stopHttp: (() => Promise<void>) | undefined;
    let upstream: string[];
    beforeAll(async () => {
      if (kind === 'stdio') upstream = ['--', ...CHANGING];
      else {
        const s = await httpServer([...CHANGING, '--http']);
        stopHttp = s.stop;
        upstream = ['--upstream', s.url];
      }
    });
    afterAll(async () => stopHttp?.());

    const connectGuard = async () => {
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const { CLI, ENV } = await import('../helpers/mcp.js');
      const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--policies', GUARD, ...upstream], env: ENV, stderr: 'pipe' });
      const client = new Client({ name: 't', version: '1' });
      await client.connect(transport);
      return client;
    };
    const text = (r: unknown) => ((r as { content: Array<{ text: string }> }).content).map((b) => b.text);

    it('a result effect reaches the client: redact and spotlight', async () => {
      const c = await connectGuard();
      try {
        await c.listTools();
        const r = await c.callTool({ name: 'labelled', arguments: {} });
        const [redacted, fenced, plain] = text(r);
        expect(redacted).toMatch(/withheld by results\/redact-sensitive/);
        expect(JSON.stringify(r)).not.toContain('the secret is 42');
        expect(fenced).toMatch(/^<untrusted-content boundary="[0-9a-f]{32}">/);
        expect(fenced).toContain('ignore previous instructions');
        expect(plain).toBe('plain');
      } finally {
        await c.close();
      }
    });

    it('a denied result is an isError result naming policy, rule and decision', async () => {
      const c = await connectGuard();
      try {
        const r = await c.callTool({ name: 'forbidden', arguments: {} });
        expect(r.isError).toBe(true);
        expect(text(r)[0]).toMatch(/results\/deny-forbidden.*decision [0-9a-f-]{36}/);
        expect(JSON.stringify(r)).not.toContain('forbidden words');
      } finally {
        await c.close();
      }
    });

    it('pins: a definition that changes after it was pinned is denied', async () => {
      const c = await connectGuard();
      try {
        let changed = false;
        c.setNotificationHandler(ToolListChangedNotificationSchema, async () => void (changed = true));
        await c.listTools();
        expect(text(await c.callTool({ name: 'greet', arguments: {} }))).toEqual(['hello']);
        const before = Number(text(await c.callTool({ name: 'calls', arguments: {} }))[0]);
        await c.callTool({ name: 'change-greet', arguments: {} });
        await expect.poll(() => changed).toBe(true);
        // The changed definition is withheld from the list until an operator accepts it; the other tools stay listed.
        const list = await c.listTools();
        expect(list.tools.map((t) => t.name)).not.toContain('greet');
        expect(list.tools.map((t) => t.name)).toContain('calls');
        expect(JSON.stringify(list)).not.toMatch(/ignore all previous/);
        const r = await c.callTool({ name: 'greet', arguments: {} });
        expect(r.isError).toBe(true);
        expect(text(r)[0]).toMatch(/calls\/deny-changed-definition/);
        // The denied call never reached the server: only change-greet was counted since.
        expect(Number(text(await c.callTool({ name: 'calls', arguments: {} }))[0])).toBe(before + 1);
      } finally {
        await c.close();
      }
    });
  });
}
ownServerSuite('stdio');
ownServerSuite('http');

describe('proxy in front of server-everything over Streamable HTTP', () => {
  it('tools answer through the proxy as they do directly', async () => {
    const port = await freePort();
    const s = await httpServer([...EVERYTHING, 'streamableHttp'], { PORT: String(port) });
    const d = new Client({ name: 'd', version: '1' });
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { CLI, ENV } = await import('../helpers/mcp.js');
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--policies', NONE, '--upstream', s.url], env: ENV, stderr: 'pipe' });
    const p = new Client({ name: 'p', version: '1' });
    try {
      await d.connect(new StreamableHTTPClientTransport(new URL(s.url)));
      await p.connect(transport);
      expect(await p.listTools()).toEqual(await d.listTools());
      for (const name of ['echo', 'get-sum', 'get-structured-content', 'get-tiny-image', 'get-resource-links']) {
        const params = { name, arguments: EVERYTHING_ARGS[name] };
        expect(await p.callTool(params), name).toEqual(await d.callTool(params));
      }
      expect(await p.listPrompts()).toEqual(await d.listPrompts());
      const pid = transport.pid!;
      await p.close();
      await expect.poll(() => alive(pid)).toBe(false);
    } finally {
      await d.close();
      await s.stop();
    }
  });
});

describe('proxy in front of a Streamable HTTP server that needs a token', () => {
  const TOKEN = 'Bearer upstream-s3cret';
  let s: Awaited<ReturnType<typeof httpServer>>;
  beforeAll(async () => {
    s = await httpServer([...CHANGING, '--http'], { REQUIRE_AUTHORIZATION: TOKEN });
  });
  afterAll(async () => s.stop());

  const viaProxy = async (args: string[], env: Record<string, string> = {}) => {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { CLI, ENV } = await import('../helpers/mcp.js');
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--policies', NONE, '--upstream', s.url, ...args], env: { ...ENV, ...env }, stderr: 'pipe' });
    const client = new Client({ name: 't', version: '1' });
    await client.connect(transport);
    return client;
  };

  it('sends --header and TRUSTGATE_UPSTREAM_AUTHORIZATION on every request, and cannot connect without them', async () => {
    for (const [args, env] of [
      [['--header', `Authorization: ${TOKEN}`], {}],
      [[], { TRUSTGATE_UPSTREAM_AUTHORIZATION: TOKEN }],
    ] as Array<[string[], Record<string, string>]>) {
      const c = await viaProxy(args, env);
      try {
        const r = await c.callTool({ name: 'greet', arguments: {} });
        expect(r.content).toEqual([{ type: 'text', text: 'hello' }]);
      } finally {
        await c.close();
      }
    }
    await expect(viaProxy([])).rejects.toThrow();
    await expect(viaProxy(['--header', 'Authorization: Bearer wrong'], { TRUSTGATE_UPSTREAM_AUTHORIZATION: TOKEN })).rejects.toThrow();
  });

  it('refuses a malformed --header at start-up, in one line that names the problem', async () => {
    const { spawnSync } = await import('node:child_process');
    const { CLI, ENV } = await import('../helpers/mcp.js');
    for (const bad of [['--header'], ['--header', 'no colon'], ['--header', 'Bad Name: x'], ['--what']]) {
      const r = spawnSync(process.execPath, [CLI, 'proxy', '--upstream', s.url, ...bad], { env: ENV, encoding: 'utf8', input: '' });
      expect(r.status, bad.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^trustgate proxy: .*(--header|--what).*\(trustgate proxy --help\)\n$/);
    }
  });
});

describe('proxy with the shipped policies (the default, found next to the package)', () => {
  const connect = async (elicit?: 'accept' | 'decline', flags: string[] = ['--hints', 'declared']) => {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { CLI, ENV } = await import('../helpers/mcp.js');
    const env = { ...ENV };
    delete env.TRUSTGATE_POLICY_DIR;
    // Started from another working directory: the shipped policies are found next to the package, not in the cwd.
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', ...flags, '--', ...CHANGING], env, cwd: tmpdir(), stderr: 'pipe' });
    const client = new Client({ name: 't', version: '1' }, elicit ? { capabilities: { elicitation: {} } } : undefined);
    if (elicit) client.setRequestHandler(ElicitRequestSchema, async () => ({ action: elicit }));
    await client.connect(transport);
    await client.listTools();
    return client;
  };
  const first = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;

  it('without the operator\'s word, the server\'s own tool descriptions make the session untrusted: a write naming what the user did not give asks', async () => {
    const c = await connect(undefined, []);
    try {
      const r = await c.callTool({ name: 'write-note', arguments: { path: '/srv/notes/x.sh' } });
      expect(r.isError).toBe(true);
      expect(first(r)).toMatch(/flows\/consent-destructive-after-untrusted.*the client cannot ask/);
    } finally {
      await c.close();
    }
  });

  it('the connection is the session: after untrusted content, a call carrying what it planted needs consent', async () => {
    const c = await connect();
    const fresh = await connect();
    const asked = await connect('accept');
    const planted = { path: '/srv/notes/planted.sh' };
    try {
      expect(first(await c.callTool({ name: 'write-note', arguments: planted }))).toContain('written');
      expect(first(await c.callTool({ name: 'untrusted', arguments: {} }))).toMatch(/^<untrusted-content boundary=/);
      const r = await c.callTool({ name: 'write-note', arguments: planted });
      expect(r.isError).toBe(true);
      expect(first(r)).toMatch(/flows\/consent-untrusted-value/);
      // A call that carries none of it still runs.
      expect(first(await c.callTool({ name: 'write-note', arguments: {} }))).toContain('written');
      // Another connection is another session.
      expect(first(await fresh.callTool({ name: 'write-note', arguments: planted }))).toContain('written');
      // A host that can ask the user goes on when the user accepts.
      await asked.callTool({ name: 'untrusted', arguments: {} });
      expect(first(await asked.callTool({ name: 'write-note', arguments: planted }))).toContain('written');
    } finally {
      await Promise.all([c.close(), fresh.close(), asked.close()]);
    }
  });
});

describe('what hosts put in pickers, with the shipped policies', () => {
  const SHIPPED = join(ROOT, 'policies');
  it('lists an unvouched server\'s resources by name and URI, without a fenced title or description; a server the operator believes keeps its own words', async () => {
    const unvouched = await proxied(SHIPPED, EVERYTHING);
    const believed = await proxied(SHIPPED, EVERYTHING, undefined, undefined, ['--hints', 'declared']);
    const plain = await direct(EVERYTHING);
    try {
      const [u, b, d] = await Promise.all([unvouched.client.listResources(), believed.client.listResources(), plain.client.listResources()]);
      expect(d.resources.some((r) => typeof r.description === 'string')).toBe(true);
      expect(u.resources.map((r) => [r.name, r.uri])).toEqual(d.resources.map((r) => [r.name, r.uri]));
      for (const r of u.resources) {
        expect(r).not.toHaveProperty('description');
        expect(r).not.toHaveProperty('title');
      }
      expect(JSON.stringify(u)).not.toContain('untrusted-content');
      expect(b.resources.map((r) => r.description)).toEqual(d.resources.map((r) => r.description));
    } finally {
      await Promise.all([unvouched.client.close(), believed.client.close(), plain.client.close()]);
    }
  });
});

describe('proxy process', () => {
  it('ends, and ends its server, when the host closes the connection', async () => {
    const p = await proxied(NONE, CHANGING);
    const pid = p.transport.pid!;
    const server = childrenOf(pid);
    expect(server.length).toBeGreaterThan(0);
    await p.client.close();
    await expect.poll(() => alive(pid)).toBe(false);
    await expect.poll(() => server.filter(alive)).toEqual([]);
  });

  it('refuses to start without a server to run', async () => {
    const { spawnSync } = await import('node:child_process');
    const { CLI } = await import('../helpers/mcp.js');
    const r = spawnSync(process.execPath, [CLI, 'proxy'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^trustgate proxy: name the server to start.*\n$/);
    expect(r.stdout).toBe('');
  });
});

describe('proxy and protocol revisions', () => {
  /** The SDK's stdio transport with JSON-RPC requests of the test's own making (the SDK Client always asks for its latest revision). */
  async function raw(protocolVersion: string) {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { CLI, ENV } = await import('../helpers/mcp.js');
    const t = new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--policies', GUARD, '--', ...CHANGING], env: ENV, stderr: 'pipe' });
    const waiting = new Map<number, (m: Record<string, any>) => void>();
    t.onmessage = (m: any) => waiting.get(m.id)?.(m);
    await t.start();
    let next = 1;
    const request = (method: string, params: Record<string, unknown>) =>
      new Promise<Record<string, any>>((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        void t.send({ jsonrpc: '2.0', id, method, params });
      });
    const init = await request('initialize', { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return { init, request, close: () => t.close() };
  }

  for (const revision of ['2025-06-18', '2025-11-25']) {
    it(`negotiates ${revision} end to end and judges results by its rules`, async () => {
      const s = await raw(revision);
      try {
        expect(s.init.result.protocolVersion).toBe(revision);
        await s.request('tools/list', {});
        const r = await s.request('tools/call', { name: 'labelled', arguments: {} });
        expect(r.result.content[0].text).toMatch(/withheld by results\/redact-sensitive/);
        // From 2025-06-18 a redact placeholder carries the block's claim.
        expect(r.result.content[0]._meta).toEqual({ 'io.modelcontextprotocol/trust-annotations': { sensitive: true } });
        const denied = await s.request('tools/call', { name: 'write_file', arguments: {} });
        expect(denied.result.isError).toBe(true);
      } finally {
        await s.close();
      }
    });
  }
});
