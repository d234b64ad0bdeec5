/**
 * Who may ask (contract section 20; docs/operations/authentication.md),
 * on the service's fronts: `/v1/*`, `POST /mcp` and the Docker interceptor
 * route. A real OpenID provider (oidc-provider, test/helpers/oidc.ts)
 * issues access tokens through its real token endpoint; the service checks
 * them against its JWKS over HTTP, with a key rotation. Every forged token
 * is refused 401 on every front, and no token text reaches a log line or
 * the metrics.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url, exportSPKI, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf, post, SHIPPED_POLICIES, testApp, type TestApp } from '../helpers/app.js';
import { startProvider, type TestProvider } from '../helpers/oidc.js';

const dir = mkdtempSync(join(tmpdir(), 'trustgate-auth-'));
const TOKENS = join(dir, 'tokens');
const ALICE = 'alice-token-0123456789abcdefghij';
const BOB = 'bob-token-0123456789abcdefghijkl';
writeFileSync(TOKENS, `# test principals\nalice ${ALICE}\nbob   ${BOB}\n`);

/** A policy set that reads `principal` in every scope it can. */
const POLICIES = mkdtempSync(join(tmpdir(), 'trustgate-auth-policies-'));
writeFileSync(
  join(POLICIES, 'who.yaml'),
  `id: who
mode: enforce
rules:
  - id: ci-bot-never-writes
    scope: call
    when: principal.id == "ci-bot" && call.name == "write_file"
    effect: deny
    message: the CI client only reads
  - id: scoped-readers-only
    scope: result
    when: principal.issuer != "" && !("read" in principal.scopes)
    effect: deny
    message: a token without the read scope reads nothing
  - id: anonymous-marked
    scope: block
    when: principal.id == "" && block.index == 0
    effect: flag
    message: nobody said who they are
`,
);

const RESULT = { result: { content: [{ type: 'text', text: 'hello' }] } };
const INTERCEPTOR = '/v1/interceptors/docker-mcp-gateway';
const MCP_INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

/** Every front of the service, asked with `token` as a bearer header (or none); the status of each. */
async function fronts(app: TestApp['app'], token: string | undefined): Promise<Record<string, number>> {
  const auth: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const evaluate = await post(app, '/v1/evaluate', RESULT, auth);
  const call = await post(app, '/v1/evaluate-call', { call: { name: 'read_file' } }, auth);
  const mcp = await post(app, '/mcp', MCP_INIT, { accept: 'application/json, text/event-stream', ...auth });
  const session = answerOf(await app.inject({ method: 'GET', url: '/v1/sessions/s-1', headers: auth }));
  // The Docker gateway cannot send headers: the token comes as ?token=, and a refusal is an isError result (status 200).
  const docker = await post(app, token === undefined ? INTERCEPTOR : `${INTERCEPTOR}?token=${encodeURIComponent(token)}`, RESULT.result);
  return {
    evaluate: evaluate.status,
    call: call.status,
    mcp: mcp.status,
    session: session.status,
    docker: docker.json?.isError === true && /TG_ERR_AUTH_TOKEN/.test(JSON.stringify(docker.json)) ? 401 : docker.status,
  };
}

/** What a forger can make: each a token the service must refuse. */
async function forgeries(p: TestProvider): Promise<Array<[string, string | undefined]>> {
  const now = Math.floor(Date.now() / 1000);
  const real = p.signingKey();
  const kid = real.kid!;
  const key = await importJWK(real, 'RS256');
  const claims = { iss: p.issuer, aud: p.audience, sub: 'mallory', scope: 'read write', iat: now, exp: now + 600 };
  const signed = (c: Record<string, unknown>, k: CryptoKey | Uint8Array = key as CryptoKey, alg = 'RS256') => new SignJWT(c).setProtectedHeader({ alg, kid, typ: 'at+jwt' }).sign(k);
  const other = await generateKeyPair('RS256');
  const publicJwk: JWK = { kty: real.kty!, n: real.n!, e: real.e! };
  const publicPem = createPublicKey({ key: publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
  const enc = (o: object) => base64url.encode(JSON.stringify(o));
  return [
    ['no token', undefined],
    ['alg none', `${enc({ alg: 'none', typ: 'at+jwt', kid })}.${enc(claims)}.`],
    ['alg none, signature kept', `${enc({ alg: 'none', kid })}.${enc(claims)}.${(await signed(claims)).split('.')[2]}`],
    ['another key, same kid', await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' }).sign(other.privateKey)],
    ['another key, unknown kid', await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'forged', typ: 'at+jwt' }).sign(other.privateKey)],
    ['wrong audience', await signed({ ...claims, aud: 'urn:another:service' })],
    ['wrong issuer', await signed({ ...claims, iss: 'http://127.0.0.1:1/evil' })],
    ['expired', await signed({ ...claims, iat: now - 7200, exp: now - 3600 })],
    ['not yet valid', await signed({ ...claims, nbf: now + 3600 })],
    ['no expiry', await signed({ iss: p.issuer, aud: p.audience, sub: 'mallory' })],
    ['HS256 signed with the public key (PEM)', await signed(claims, new TextEncoder().encode(publicPem), 'HS256')],
    ['HS256 signed with the public key (JWK text)', await signed(claims, new TextEncoder().encode(JSON.stringify(publicJwk)), 'HS256')],
    ['HS256 signed with the public key (SPKI of jose)', await signed(claims, new TextEncoder().encode(await exportSPKI(await importJWK(publicJwk, 'RS256') as CryptoKey)), 'HS256')],
    ['payload changed after signing', (await signed(claims)).replace(/\.[^.]+\./, `.${enc({ ...claims, sub: 'admin' })}.`)],
    ['malformed: two parts', 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0'],
    ['malformed: not base64', '!!!.???.***'],
    ['malformed: JSON header is not an object', `${base64url.encode('[1]')}.${enc(claims)}.x`],
    ['a static token with one character changed', `${ALICE.slice(0, -1)}X`],
    ['empty', ''],
  ];
}

describe('authentication on every front of the service (JWT from a real OpenID provider, and static tokens)', () => {
  let provider: TestProvider;
  let t: TestApp;
  beforeAll(async () => {
    provider = await startProvider();
    t = await testApp(
      {
        TRUSTGATE_TOKENS_FILE: TOKENS,
        TRUSTGATE_JWKS: provider.jwksUrl,
        TRUSTGATE_JWT_ISSUER: provider.issuer,
        TRUSTGATE_JWT_AUDIENCE: provider.audience,
        TRUSTGATE_JWT_CLAIMS: 'client_id',
        TRUSTGATE_JWKS_COOLDOWN_MS: '0',
        TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0',
      },
      POLICIES,
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await provider?.close();
  });

  it('accepts an access token from the provider\'s token endpoint, and a static token, on every front', async () => {
    const jwt = await provider.token('host-app', 'read');
    const ok = { evaluate: 200, call: 200, mcp: 200, session: 404, docker: 200 };
    expect(await fronts(t.app, jwt)).toEqual(ok);
    expect(await fronts(t.app, ALICE)).toEqual(ok);
  });

  it('refuses every forged token with 401 on every front, saying Bearer, never quoting the token', async () => {
    const tried: Record<string, Record<string, number>> = {};
    for (const [name, token] of await forgeries(provider)) {
      tried[name] = await fronts(t.app, token);
      expect(tried[name], name).toEqual({ evaluate: 401, call: 401, mcp: 401, session: 401, docker: 401 });
      const r = await post(t.app, '/v1/evaluate', RESULT, token === undefined ? {} : { authorization: `Bearer ${token}` });
      expect(r.json.code, name).toBe('TG_ERR_AUTH_TOKEN');
      expect(r.headers['www-authenticate'], name).toMatch(/^Bearer realm="trustgate"/);
      if (token !== undefined && token.length > 8) expect(r.body, name).not.toContain(token.slice(-16));
    }
    expect(Object.keys(tried).length).toBeGreaterThanOrEqual(15);
  });

  it('an Authorization header of another scheme is refused as malformed', async () => {
    for (const header of [`Basic ${Buffer.from(`alice:${ALICE}`).toString('base64')}`, `Token ${ALICE}`, `Bearer ${ALICE} extra`]) {
      const r = await post(t.app, '/v1/evaluate', RESULT, { authorization: header });
      expect(r.status, header).toBe(401);
    }
  });

  it('no token text reaches a log line or the metrics; refusals are counted by reason', async () => {
    const jwt = await provider.token('host-app', 'read');
    await fronts(t.app, jwt);
    await fronts(t.app, `${jwt.slice(0, -4)}AAAA`);
    await fronts(t.app, ALICE);
    await fronts(t.app, `${BOB}x`);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const logs = t.logs.join('');
    for (const secret of [jwt, jwt.split('.')[2]!, ALICE, BOB]) {
      expect(logs).not.toContain(secret);
      expect(metrics).not.toContain(secret);
    }
    expect(metrics).toMatch(/trustgate_auth_refused_total\{reason="invalid"\} [1-9]/);
    expect(metrics).toMatch(/trustgate_auth_refused_total\{reason="unknown"\} [1-9]|trustgate_auth_refused_total\{reason="malformed"\} [1-9]/);
  });

  it('policies read principal: id, issuer, scopes and the claims named; the decision log records the id', async () => {
    const ci = await provider.token('ci-bot', 'read write');
    const denied = await post(t.app, '/v1/evaluate-call', { call: { name: 'write_file', arguments: { path: '/x' } }, tool: { name: 'write_file', annotations: { readOnlyHint: false } } }, { authorization: `Bearer ${ci}` });
    expect(denied.status).toBe(200);
    expect(denied.json.outcome).toBe('deny');
    expect(denied.json.findings.map((f: { rule: string }) => f.rule)).toContain('ci-bot-never-writes');
    // The same call by another client, or by a static token named otherwise, is not this rule's.
    const host = await post(t.app, '/v1/evaluate-call', { call: { name: 'write_file', arguments: { path: '/x' } } }, { authorization: `Bearer ${await provider.token('host-app', 'read')}` });
    expect(host.json.findings.map((f: { rule: string }) => f.rule)).not.toContain('ci-bot-never-writes');
    // A token without the read scope reads nothing; a static token has no issuer, so the rule is not its.
    const writeOnly = await post(t.app, '/v1/evaluate', RESULT, { authorization: `Bearer ${await provider.token('host-app', 'write')}` });
    expect(writeOnly.json.outcome).toBe('deny');
    const stat = await post(t.app, '/v1/evaluate', RESULT, { authorization: `Bearer ${ALICE}` });
    expect(stat.json.outcome).not.toBe('deny');
    const lines = t.logs.flatMap((l) => l.split('\n')).filter((l) => l.includes('"decisionId"') && l.includes('"principal"'));
    expect(lines.some((l) => JSON.parse(l).principal === 'ci-bot')).toBe(true);
    expect(lines.some((l) => JSON.parse(l).principal === 'alice')).toBe(true);
  });

  it('a token signed with a rotated key is accepted once the key set is fetched again; tokens of the old key still are', async () => {
    const before = await provider.token();
    expect((await post(t.app, '/v1/evaluate', RESULT, { authorization: `Bearer ${before}` })).status).toBe(200);
    await provider.rotate();
    const after = await provider.token();
    expect(after.split('.')[0]).not.toBe(before.split('.')[0]);
    expect((await post(t.app, '/v1/evaluate', RESULT, { authorization: `Bearer ${after}` })).status).toBe(200);
    expect((await post(t.app, '/v1/evaluate', RESULT, { authorization: `Bearer ${before}` })).status).toBe(200);
  });
});

describe('without authentication', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({}, POLICIES);
  });
  afterAll(() => t.close());

  it('every caller is the anonymous principal: id "" and empty lists, so policies that read it compile and run', async () => {
    const r = await post(t.app, '/v1/evaluate', RESULT);
    expect(r.status).toBe(200);
    expect(r.json.findings.map((f: { rule: string }) => f.rule)).toContain('anonymous-marked');
  });
});

describe('a bad authentication setting stops start-up naming it', () => {
  it.each([
    [{ TRUSTGATE_JWKS: '/nonexistent/jwks.json', TRUSTGATE_JWT_ISSUER: 'https://i', TRUSTGATE_JWT_AUDIENCE: 'a' }, /TRUSTGATE_JWKS/],
    [{ TRUSTGATE_TOKENS_FILE: '/nonexistent/tokens' }, /TRUSTGATE_TOKENS_FILE/],
  ])('%j', async (env, message) => {
    await expect(testApp(env as Record<string, string>, SHIPPED_POLICIES)).rejects.toThrow(message);
  });
});
