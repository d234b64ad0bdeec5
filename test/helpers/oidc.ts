/**
 * A real OpenID provider for the tests (the npm package `oidc-provider`),
 * on a free loopback port, issuing JWT access tokens through its real token
 * endpoint (client credentials, RFC 8707 resource indicators) and serving
 * its key set at `/jwks`. The tests hold its private keys, so they can also
 * sign what a forger could not (wrong audience, expired) and rotate keys:
 * `rotate()` restarts it on the same port signing with a new key, the old
 * one still published.
 */
import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';
import { freePort } from './process.js';

export interface TestProvider {
  issuer: string;
  jwksUrl: string;
  audience: string;
  /** The private JWK signing tokens now (with `kid` and `alg`). */
  signingKey: () => JWK;
  /** A client-credentials access token from the token endpoint for `clientId` ("host-app" or "ci-bot"). */
  token(clientId?: string, scope?: string): Promise<string>;
  /** Restart with a new signing key (kid changes), the old key still in the set. */
  rotate(): Promise<void>;
  close(): Promise<void>;
}

export const CLIENT_SECRET = 'a-client-secret-for-tests-only-0123456789';

async function rsaKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

export async function startProvider(audience = 'urn:trustgate:test'): Promise<TestProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  let keys: JWK[] = [await rsaKey('key-1')];
  let server: Server | undefined;

  const start = async (): Promise<void> => {
    const provider = new Provider(issuer, {
      clients: ['host-app', 'ci-bot'].map((client_id) => ({
        client_id,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_post',
      })),
      jwks: { keys: keys as never },
      scopes: ['read', 'write'],
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => audience,
          useGrantedResource: () => true,
          getResourceServerInfo: () => ({ scope: 'read write', audience, accessTokenTTL: 600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
        },
      },
    });
    const s = createServer(provider.callback());
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    server = s;
  };
  const stop = async (): Promise<void> => {
    const s = server;
    server = undefined;
    if (s === undefined) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await start();

  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    audience,
    signingKey: () => keys[0]!,
    async token(clientId = 'host-app', scope = 'read') {
      const r = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', connection: 'close' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: CLIENT_SECRET, scope, resource: audience }).toString(),
      });
      const body = (await r.json()) as { access_token?: string; error?: string; error_description?: string };
      if (body.access_token === undefined) throw new Error(`the provider gave no token: ${r.status} ${body.error ?? ''} ${body.error_description ?? ''}`);
      return body.access_token;
    },
    async rotate() {
      keys = [await rsaKey(`key-${keys.length + 1}`), ...keys];
      await stop();
      await start();
    },
    close: stop,
  };
}
