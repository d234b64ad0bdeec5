/**
 * `npm run conformance:proxy [-- options]`: the official MCP conformance
 * suite (`@modelcontextprotocol/conformance`, server scenarios) against one
 * Streamable HTTP server, directly and through `trustgate proxy --upstream`,
 * and a table of both (scenario, direct, proxied). Exits 1 when a scenario
 * that passes directly fails through the proxy.
 *
 * The suite needs Node 22: it runs under a Node 22 binary from the npm
 * registry (`npx -p node@22`), for this tool alone. The first run downloads
 * both, so the script is not part of `npm test`.
 *
 * The suite speaks Streamable HTTP to the server it tests, and the proxy
 * serves its host on stdio (as hosts start it), so "through the proxy" is:
 * suite -> a pass-through HTTP front in this script (one `trustgate proxy
 * --upstream <server>` process per session, messages relayed unchanged) ->
 * the proxy -> the server. Scenarios about the HTTP layer itself
 * (`server-sse-*`, `dns-rebinding-protection`) then test that front, not
 * the proxy.
 *
 * Options:
 *   --server '<command>'  the server to test, started with PORT set; it must print its port or "listening"
 *                         (default: @modelcontextprotocol/server-everything streamableHttp). The suite's
 *                         documented reference server is examples/servers/typescript/everything-server.ts of
 *                         its repository (not on npm): from a checkout, --server 'npx tsx everything-server.ts'
 *                         --cwd <that folder>. scripts/conformance-server.ts has the fixtures of every server
 *                         scenario (tools of each content type and those that ask the client during a call,
 *                         resources, prompts, completion): --server 'node --import tsx scripts/conformance-server.ts'.
 *   --cwd <dir>           working folder of --server
 *   --url <url>           an already running server instead of --server
 *   --policies <dir>      the proxy's policies (default: test/fixtures/mcp/policies/none, which decide nothing, so
 *                         that what is compared is the relay; under the shipped set the suite's calls to tools it
 *                         did not list first are denied by session/deny-unlisted-tool, as designed)
 *   --scenario <name>     one scenario (repeatable); default: the suite's active server scenarios
 *   --version <v>         the conformance package version (default: CONFORMANCE_VERSION below)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const CONFORMANCE_VERSION = '0.1.16';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist/cli.js');
const require = createRequire(import.meta.url);

const { values } = parseArgs({
  options: {
    server: { type: 'string' },
    cwd: { type: 'string' },
    url: { type: 'string' },
    policies: { type: 'string' },
    scenario: { type: 'string', multiple: true },
    version: { type: 'string', default: CONFORMANCE_VERSION },
  },
});

const children = new Set<ChildProcess>();
function stopAll(): void {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}
process.on('exit', stopAll);
for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => process.exit(130));

/** Start the server under test on a free port; its URL once it says it listens. */
async function startServer(): Promise<string> {
  if (values.url) return values.url;
  const port = await freePort();
  const command = values.server ? ['sh', '-c', `exec ${values.server}`] : [process.execPath, require.resolve('@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'];
  const child = spawn(command[0]!, command.slice(1), { cwd: values.cwd ?? ROOT, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const seen = (d: unknown) => {
      out += String(d);
      if (/listening|running on|port/i.test(out)) resolve();
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`the server exited with code ${code}: ${out.slice(-500)}`)));
    setTimeout(() => reject(new Error(`the server did not say it listens within 60 s: ${out.slice(-500)}`)), 60_000).unref();
  });
  return `http://127.0.0.1:${port}/mcp`;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The HTTP front of the proxy: each session the suite opens starts one
 * `trustgate proxy --upstream <url>` and relays its messages both ways,
 * unchanged. A message the proxy sends on its own (a server request,
 * a notification) goes on the stream of the suite's request in flight (by
 * progress token, else the latest), as the server itself would send it.
 */
async function proxyFront(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, { http: StreamableHTTPServerTransport; stdio: StdioClientTransport }>();
  const args = [CLI, 'proxy', '--policies', values.policies ?? join(ROOT, 'test/fixtures/mcp/policies/none'), '--upstream', upstream];
  const http: HttpServer = createServer((req, res) => {
    const sid = req.headers['mcp-session-id'];
    const known = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (known) return void known.http.handleRequest(req, res);
    if (typeof sid === 'string') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      return;
    }
    const front: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { http: front, stdio }),
    });
    const stdio = new StdioClientTransport({ command: process.execPath, args, env: { ...(process.env as Record<string, string>), LOG_LEVEL: 'warn' }, stderr: process.env.CONFORMANCE_DEBUG ? 'inherit' : 'ignore' });
    /** The suite's requests in flight (ids in arrival order) and their progress tokens. */
    const inFlight: (string | number)[] = [];
    const tokens = new Map<string | number, string | number>();
    front.onmessage = (m) => {
      if (process.env.CONFORMANCE_DEBUG) console.error('suite ->', JSON.stringify(m).slice(0, 200));
      const r = m as { id?: string | number; method?: string; params?: { _meta?: { progressToken?: string | number } } };
      if (r.method !== undefined && r.id !== undefined) {
        inFlight.push(r.id);
        const token = r.params?._meta?.progressToken;
        if (token !== undefined) tokens.set(token, r.id);
      }
      void stdio.send(m).catch(() => {});
    };
    stdio.onmessage = (m) => {
      if (process.env.CONFORMANCE_DEBUG) console.error('proxy ->', JSON.stringify(m).slice(0, 200));
      const r = m as { id?: string | number; method?: string; params?: { progressToken?: string | number } };
      if (r.method === undefined && r.id !== undefined) {
        const at = inFlight.indexOf(r.id);
        if (at >= 0) inFlight.splice(at, 1);
        for (const [t, id] of tokens) if (id === r.id) tokens.delete(t);
        return void front.send(m).catch(() => {});
      }
      const token = r.params?.progressToken;
      const related = (token !== undefined ? tokens.get(token) : undefined) ?? inFlight.at(-1);
      void front.send(m as JSONRPCMessage, related !== undefined ? { relatedRequestId: related } : undefined).catch(() => {});
    };
    front.onclose = () => {
      if (front.sessionId) sessions.delete(front.sessionId);
      void stdio.close();
    };
    stdio.onclose = () => void front.close();
    stdio
      .start()
      .then(() => front.handleRequest(req, res))
      .catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(502).end(String(err));
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    async close() {
      await Promise.allSettled([...sessions.values()].map((s) => s.http.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Run the suite against one URL: scenario -> "n passed, m failed" (and whether it passed). */
async function runSuite(url: string): Promise<Map<string, { ok: boolean; text: string }>> {
  const scenarios = values.scenario ?? [undefined];
  const out = new Map<string, { ok: boolean; text: string }>();
  const cwd = mkdtempSync(join(tmpdir(), 'trustgate-conformance-'));
  try {
    for (const scenario of scenarios) {
      // Not spawnSync: the proxy's HTTP front runs in this process and must keep serving while the suite runs.
      const args = ['-y', '-p', 'node@22', '-p', `@modelcontextprotocol/conformance@${values.version}`, '--', 'conformance', 'server', '--url', url, ...(scenario ? ['--scenario', scenario] : [])];
      const child = spawn('npx', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let text = '';
      child.stdout.on('data', (d) => (text += String(d)));
      child.stderr.on('data', (d) => (text += String(d)));
      const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
      children.delete(child);
      if (process.env.CONFORMANCE_DEBUG) process.stderr.write(`--- ${url} ${scenario ?? 'all'}\n${text}\n`);
      // The suite's summary: "✓ name: 1 passed, 0 failed" / "✗ name: 0 passed, 1 failed".
      for (const m of text.matchAll(/^([✓✗]) ([\w./-]+): (\d+ passed, \d+ failed)/gmu)) out.set(m[2]!, { ok: m[1] === '✓', text: m[3]! });
      // One scenario alone ends with "Passed: 1/1, 0 failed, 0 warnings" instead.
      const one = scenario ? /^Passed: (\d+)\/\d+, (\d+) failed/m.exec(text) : null;
      if (scenario && one) out.set(scenario, { ok: one[2] === '0', text: `${one[1]} passed, ${one[2]} failed` });
      if (out.size === 0 || (scenario && !out.has(scenario))) throw new Error(`the conformance suite printed no summary (exit ${status}):\n${text.slice(-2000)}`);
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
  return out;
}

const upstream = await startServer();
console.error(`server under test: ${upstream}`);
const direct = await runSuite(upstream);
const front = await proxyFront(upstream);
let proxied: Map<string, { ok: boolean; text: string }>;
try {
  proxied = await runSuite(front.url);
} finally {
  await front.close();
}

const names = [...new Set([...direct.keys(), ...proxied.keys()])];
const cell = (r: { ok: boolean; text: string } | undefined) => (r ? `${r.ok ? 'pass' : 'FAIL'} (${r.text})` : 'not run');
const rows = names.map((n) => [n, cell(direct.get(n)), cell(proxied.get(n))]);
const widths = [0, 1, 2].map((i) => Math.max(...[['scenario', 'direct', 'proxied'], ...rows].map((r) => r[i]!.length)));
const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log(line(['scenario', 'direct', 'proxied']));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const r of rows) console.log(line(r));
const lost = names.filter((n) => direct.get(n)?.ok && !proxied.get(n)?.ok);
const passed = (m: Map<string, { ok: boolean }>) => [...m.values()].filter((r) => r.ok).length;
console.log(`\ndirect: ${passed(direct)} of ${direct.size} passed; through the proxy: ${passed(proxied)} of ${proxied.size}`);
if (lost.length > 0) console.log(`passed directly but not through the proxy: ${lost.join(', ')}`);
process.exitCode = lost.length > 0 ? 1 : 0;
stopAll();
process.exit();
