/**
 * The gateway's HTTP front (`trustgate proxy --config FILE --listen`) as
 * an OAuth 2.1 resource server (contract section 20): hosts authenticate
 * with JWT access tokens from a real OpenID provider, or static tokens;
 * forged tokens get 401 with `resource_metadata`; the RFC 9728 document
 * names the issuer; without configured authentication on loopback a token
 * is made into a file only its user reads; beyond loopback it does not
 * start. Host connections are per principal and within a quota, and a host
 * that went away (the SDK client's close() sends no DELETE) has its server
 * processes stopped within the grace, counted as processes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { base64url, importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ENV, listeningGateway, MCP_POLICIES, type ListeningGateway } from '../helpers/mcp.js';
import { startProvider, type TestProvider } from '../helpers/oidc.js';
import { childrenOf, freePort, ROOT } from '../helpers/process.js';

const HOSTILE = join(ROOT, 'test/fixtures/mcp/hostile-server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'tg-gateway-auth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SERVERS = join(dir, 'servers.json');
writeFileSync(SERVERS, JSON.stringify({ mcpServers: { pages: { command: process.execPath, args: [HOSTILE] } }, trustgate: { policies: join(MCP_POLICIES, 'gateway') } }));
const TOKENS = join(dir, 'tokens');
const ALICE = 'alice-gateway-token-0123456789ab';
const BOB = 'bob-gateway-token-0123456789abcd';
writeFileSync(TOKENS, `alice ${ALICE}\nbob ${BOB}\n`);

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

type Gateway = ListeningGateway;

/** The gateway over SERVERS, logging at info, its private files under this test's folder. */
const gateway = (env: Record<string, string>, args: string[] = []): Promise<Gateway> => listeningGateway(SERVERS, args, { LOG_LEVEL: 'info', XDG_RUNTIME_DIR: dir, ...env });

const initialize = (url: string, headers: Record<string, string> = {}) => fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: INIT });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('the gateway front with JWT access tokens from a real OpenID provider', () => {
  let provider: TestProvider;
  let gw: Gateway;
  beforeAll(async () => {
    provider = await startProvider('urn:trustgate:gateway');
    gw = await gateway({ TRUSTGATE_JWKS: provider.jwksUrl, TRUSTGATE_JWT_ISSUER: provider.issuer, TRUSTGATE_JWT_AUDIENCE: provider.audience, TRUSTGATE_JWKS_COOLDOWN_MS: '0' });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await provider?.close();
  });

  it('the SDK client with the provider\'s token in its Authorization header lists and calls tools', async () => {
    const token = await provider.token();
    const client = new Client({ name: 'host', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: bearer(token) } }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('pages__read');
      expect((await client.callTool({ name: 'pages__read', arguments: {} })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  }, 60_000);

  it('refuses every forged token with 401 and a WWW-Authenticate that points at its resource metadata; never logs a token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const real = provider.signingKey();
    const key = await importJWK(real, 'RS256');
    const claims = { iss: provider.issuer, aud: provider.audience, sub: 'mallory', iat: now, exp: now + 600 };
    const signed = (c: Record<string, unknown>) => new SignJWT(c).setProtectedHeader({ alg: 'RS256', kid: real.kid! }).sign(key);
    const publicPem = JSON.stringify({ kty: real.kty, n: real.n, e: real.e });
    const forged: Array<[string, string | undefined]> = [
      ['no token', undefined],
      ['alg none', `${base64url.encode(JSON.stringify({ alg: 'none' }))}.${base64url.encode(JSON.stringify(claims))}.`],
      ['wrong audience', await signed({ ...claims, aud: 'urn:other' })],
      ['wrong issuer', await signed({ ...claims, iss: 'http://127.0.0.1:1' })],
      ['expired', await signed({ ...claims, exp: now - 3600 })],
      ['not yet valid', await signed({ ...claims, nbf: now + 3600 })],
      ['HS256 signed with the public key', await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: real.kid! }).sign(new TextEncoder().encode(publicPem))],
      ['malformed', 'not.a.token'],
    ];
    const running = childrenOf(gw.pid).length;
    for (const [name, token] of forged) {
      const r = await initialize(gw.url, token === undefined ? {} : bearer(token));
      expect(r.status, name).toBe(401);
      expect(r.headers.get('www-authenticate'), name).toBe(
        `Bearer realm="trustgate"${token === undefined ? '' : ', error="invalid_token"'}, resource_metadata="${gw.base}/.well-known/oauth-protected-resource/mcp"`,
      );
      expect(((await r.json()) as { error: { code: number } }).error.code, name).toBe(-32001);
    }
    const metadata = (await (await fetch(`${gw.base}/.well-known/oauth-protected-resource/mcp`)).json()) as Record<string, unknown>;
    expect(metadata).toEqual({ resource: gw.url, authorization_servers: [provider.issuer], bearer_methods_supported: ['header'], resource_name: 'Trustgate gateway' });
    // No server process was started for a refused request.
    expect(childrenOf(gw.pid).length).toBeLessThanOrEqual(running);
    for (const [, token] of forged) if (token !== undefined && token.length > 20) expect(gw.stderr()).not.toContain(token.slice(-20));
  });
});

describe('the gateway front without configured authentication', () => {
  it('on loopback makes a token, writes it where only its user can read it, says where; requests without it are refused', async () => {
    const gw = await gateway({ TRUSTGATE_TOKEN: '', TRUSTGATE_TOKENS_FILE: '' });
    try {
      const m = /the token in ([^ >]+)>/.exec(gw.stderr());
      expect(m, gw.stderr()).not.toBeNull();
      const file = m![1]!;
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(file, '..')).mode & 0o777).toBe(0o700);
      const token = readFileSync(file, 'utf8').trim();
      expect(token.length).toBeGreaterThanOrEqual(40);
      expect((await initialize(gw.url)).status).toBe(401);
      expect((await initialize(gw.url, bearer('a-guess-0123456789012345678'))).status).toBe(401);
      const ok = await initialize(gw.url, bearer(token));
      expect(ok.status).toBe(200);
      await ok.text();
    } finally {
      await gw.stop();
    }
  }, 60_000);

  it('beyond loopback does not start (exit 2, saying what to set)', async () => {
    const port = await freePort();
    const r = await new Promise<{ code: number | null; err: string }>((resolve) => {
      const child = spawn(process.execPath, [CLI, 'proxy', '--config', SERVERS, '--listen', `0.0.0.0:${port}`], { env: { ...ENV, TRUSTGATE_TOKEN: '' }, cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d) => (err += String(d)));
      child.once('exit', (code) => resolve({ code, err }));
    });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/beyond loopback, without authentication: set TRUSTGATE_TOKENS_FILE, TRUSTGATE_TOKEN or TRUSTGATE_JWKS/);
  }, 60_000);
});

describe('host connections per principal', () => {
  it('one principal past its connection quota gets 429 with Retry-After while another is served; a connection is its opener\'s only', async () => {
    const gw = await gateway({ TRUSTGATE_TOKENS_FILE: TOKENS, TRUSTGATE_QUOTA_CONNECTIONS: '1' });
    try {
      const first = await initialize(gw.url, bearer(ALICE));
      expect(first.status).toBe(200);
      await first.text();
      const sid = first.headers.get('mcp-session-id')!;
      const second = await initialize(gw.url, bearer(ALICE));
      expect(second.status).toBe(429);
      expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const bob = await initialize(gw.url, bearer(BOB));
      expect(bob.status).toBe(200);
      await bob.text();
      // Bob cannot use (or end) alice's connection: it is not there for him.
      const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      const theirs = await fetch(gw.url, { method: 'POST', headers: { ...MCP_HEADERS, ...bearer(BOB), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' }, body: list });
      expect(theirs.status).toBe(404);
      const del = await fetch(gw.url, { method: 'DELETE', headers: { ...bearer(BOB), 'mcp-session-id': sid } });
      expect(del.status).toBe(404);
      // Alice ends hers (DELETE): her quota is free again.
      const end = await fetch(gw.url, { method: 'DELETE', headers: { ...bearer(ALICE), 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' } });
      expect(end.status).toBe(200);
      await expect.poll(async () => {
        const again = await initialize(gw.url, bearer(ALICE));
        await again.text();
        return again.status;
      }, { timeout: 10_000 }).toBe(200);
    } finally {
      await gw.stop();
    }
  }, 60_000);

  it('a host that held the event stream and closed without DELETE (the SDK client\'s close()) has its server processes stopped within the grace', async () => {
    const gw = await gateway({ TRUSTGATE_TOKENS_FILE: TOKENS }, ['--idle-timeout', '600']);
    try {
      const clients = await Promise.all(
        [ALICE, BOB].map(async (token) => {
          const c = new Client({ name: 'host', version: '1' });
          await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: bearer(token) } }));
          await c.listTools();
          return c;
        }),
      );
      // Each connection started its server (one process each), and the SDK client opened its event stream (GET).
      await expect.poll(() => childrenOf(gw.pid).length, { timeout: 10_000 }).toBe(2);
      await new Promise((r) => setTimeout(r, 500));
      const started = Date.now();
      for (const c of clients) await c.close();
      await expect.poll(() => childrenOf(gw.pid).length, { timeout: 30_000, interval: 250 }).toBe(0);
      // Within the grace (10 s) and a sweep, not the idle timeout (600 s).
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await gw.stop();
    }
  }, 60_000);
});

describe('--session on the default store', () => {
  it('a second proxy given the same session id refuses to start, naming the store, while the first runs; then it may', async () => {
    const env = { ...ENV, LOG_LEVEL: 'info', XDG_RUNTIME_DIR: dir, TRUSTGATE_SESSION_STORE: '' };
    const args = [CLI, 'proxy', '--session-file', join(dir, 'session-id'), '--', process.execPath, HOSTILE];
    writeFileSync(join(dir, 'session-id'), 'conv-shared-by-two\n');
    const first = spawn(process.execPath, args, { env, cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let err1 = '';
    first.stderr.on('data', (d) => (err1 += String(d)));
    try {
      await expect.poll(() => err1, { timeout: 30_000 }).toMatch(/proxy ready on stdio/);
      const second = await new Promise<{ code: number | null; err: string }>((resolve) => {
        const c = spawn(process.execPath, args, { env, cwd: ROOT, stdio: ['pipe', 'ignore', 'pipe'] });
        let err = '';
        c.stderr.on('data', (d) => (err += String(d)));
        c.once('exit', (code) => resolve({ code, err }));
      });
      expect(second.code).toBe(2);
      expect(second.err).toMatch(/already judged by trustgate process \d+ on the memory store.*TRUSTGATE_SESSION_STORE=redis/);
      // The id is not in the message (it may be secret), and it was not on the command line either.
      expect(second.err).not.toContain('conv-shared-by-two');
    } finally {
      first.stdin.end();
      await new Promise((r) => first.once('exit', r));
    }
    // The first is gone (its lock with it): the id may be used again.
    const third = spawn(process.execPath, args, { env, cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let err3 = '';
    third.stderr.on('data', (d) => (err3 += String(d)));
    try {
      await expect.poll(() => err3, { timeout: 30_000 }).toMatch(/proxy ready on stdio/);
    } finally {
      third.stdin.end();
      await new Promise((r) => third.once('exit', r));
    }
  }, 90_000);
});
