/**
 * Who is asking (docs/operations/authentication.md): every front that
 * listens (the service, `/mcp`, the gateway's `--listen`) turns an
 * `Authorization: Bearer` header into a principal here, or refuses it.
 *
 * - Static tokens: TRUSTGATE_TOKENS_FILE (a name and a token per line) and
 *   TRUSTGATE_TOKEN (one token named `default`). A presented token is hashed
 *   and compared with every configured token's hash in constant time, all
 *   of them every time, so neither a miss nor which entry matched shows in
 *   the timing. The name is the principal's id.
 * - JWT access tokens: checked by `jose` against the JWKS (a file, or a URL
 *   fetched, cached, and fetched again when a token names an unknown `kid`,
 *   at most once per TRUSTGATE_JWKS_COOLDOWN_MS): the signature with an
 *   allow-list of asymmetric algorithms (`none` and every HMAC refused, so a
 *   token signed with the public key as an HMAC secret never verifies),
 *   issuer, audience, `exp` (required) and `nbf` with 30 s of skew. A token
 *   verified once is remembered by its digest until its expiry, at most 60 s
 *   (a bounded table), so a host's token is verified once a minute and not
 *   once per request.
 *
 * The token itself is never kept, logged or counted: only its SHA-256, in
 * memory. Reasons for a refusal are a fixed vocabulary (`missing`,
 * `unknown`, `malformed`, `expired`, `invalid`) safe for metrics and logs.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ANONYMOUS, type PrincipalVar } from '../policy/cel/variables.js';
import type { JwtSettings } from '../config.js';
import { bearerToken } from './auth.js';


/** What authentication is configured (from Config). */
export interface AuthSettings {
  /** TRUSTGATE_TOKEN: one static token named `default`. */
  readonly token?: string | undefined;
  /** TRUSTGATE_TOKENS_FILE. */
  readonly tokensFile?: string | undefined;
  readonly jwt?: JwtSettings | undefined;
}

export type RefusalReason = 'missing' | 'unknown' | 'malformed' | 'expired' | 'invalid';

export type AuthResult = { ok: true; principal: PrincipalVar } | { ok: false; reason: RefusalReason; detail: string };

export interface Authentication {
  /** False when nothing is configured: every request is the anonymous principal. */
  readonly configured: boolean;
  /** Who an `Authorization` header names; `ANONYMOUS` (ok) when nothing is configured. */
  authenticate(header: string | undefined): Promise<AuthResult>;
  /** The same for a token given some other way (the Docker gateway route's `?token=`). */
  authenticateToken(token: string | undefined): Promise<AuthResult>;
}

/** Static-token names: what a principal id looks like in logs and policies. */
const NAME = /^[A-Za-z0-9._@:-]{1,128}$/;
/** A token: printable ASCII without spaces. */
const TOKEN = /^[\x21-\x7e]+$/;
/** Shortest token a tokens file may hold: 128 bits of base64. */
export const MIN_FILE_TOKEN = 22;

export class AuthConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthConfigError';
  }
}

const digest = (s: string): Buffer => hash('sha256', s, 'buffer');

/** Read a tokens file: `name token` per line, `#` comments and blank lines skipped. Names and tokens are unique. */
export function parseTokensFile(text: string, file: string): Array<{ name: string; token: string }> {
  const out: Array<{ name: string; token: string }> = [];
  const names = new Set<string>();
  const tokens = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `${file} line ${i + 1}`;
    const parts = line.split(/\s+/);
    if (parts.length !== 2) throw new AuthConfigError(`${where}: expected "<name> <token>"`);
    const [name, token] = parts as [string, string];
    if (!NAME.test(name)) throw new AuthConfigError(`${where}: the name must be 1 to 128 characters of A-Z a-z 0-9 . _ @ : -`);
    if (!TOKEN.test(token) || token.length < MIN_FILE_TOKEN) throw new AuthConfigError(`${where}: the token must be at least ${MIN_FILE_TOKEN} printable ASCII characters without spaces`);
    if (names.has(name)) throw new AuthConfigError(`${where}: the name ${name} is given twice`);
    if (tokens.has(token)) throw new AuthConfigError(`${where}: this token is given twice`);
    names.add(name);
    tokens.add(token);
    out.push({ name, token });
  });
  return out;
}

/** The principal of a static token. */
function staticPrincipal(name: string): PrincipalVar {
  return Object.freeze({ id: name, issuer: '', scopes: Object.freeze([]) as readonly string[], claims: Object.freeze({}) });
}

/** Static tokens by the digest of what was presented, compared in constant time (see the file comment). */
function staticTokens(entries: ReadonlyArray<{ name: string; token: string }>): (got: Buffer) => PrincipalVar | undefined {
  const table = entries.map((e) => ({ hash: digest(e.token), principal: staticPrincipal(e.name) }));
  return (got) => {
    let found: PrincipalVar | undefined;
    for (const e of table) if (timingSafeEqual(got, e.hash)) found = e.principal;
    return found;
  };
}

/** A JWS compact serialization: three base64url parts. Anything else is not tried as a JWT. */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** The principal a verified access token names. */
function jwtPrincipal(p: JWTPayload, claims: readonly string[]): PrincipalVar | undefined {
  const id = typeof p.sub === 'string' && p.sub !== '' ? p.sub : typeof p.client_id === 'string' && p.client_id !== '' ? p.client_id : undefined;
  if (id === undefined) return undefined;
  const raw = p.scope ?? p.scp;
  const scopes = typeof raw === 'string' ? raw.split(' ').filter((s) => s !== '') : Array.isArray(raw) ? raw.filter((s): s is string => typeof s === 'string') : [];
  const picked: Record<string, unknown> = {};
  for (const c of claims) if (Object.hasOwn(p, c)) picked[c] = p[c];
  return Object.freeze({ id, issuer: typeof p.iss === 'string' ? p.iss : '', scopes: Object.freeze(scopes), claims: Object.freeze(picked) });
}

/** Most verified tokens remembered; past it the oldest are forgotten first. */
const VERIFIED_MAX = 10_000;
/** Longest a verified token is remembered, ms. */
const VERIFIED_MS = 60_000;

function jwtVerifier(s: JwtSettings): (token: string, tokenDigest: Buffer) => Promise<AuthResult> {
  let keys: JWTVerifyGetKey;
  if (/^https?:\/\//.test(s.jwks)) {
    keys = createRemoteJWKSet(new URL(s.jwks), { cooldownDuration: s.cooldownMs, cacheMaxAge: 600_000, timeoutDuration: 5_000 });
  } else {
    let jwks: unknown;
    try {
      jwks = JSON.parse(readFileSync(s.jwks, 'utf8'));
    } catch (err) {
      throw new AuthConfigError(`TRUSTGATE_JWKS: ${s.jwks} cannot be read as a JSON Web Key Set (${(err as Error).message})`);
    }
    try {
      keys = createLocalJWKSet(jwks as Parameters<typeof createLocalJWKSet>[0]);
    } catch (err) {
      throw new AuthConfigError(`TRUSTGATE_JWKS: ${s.jwks} is not a JSON Web Key Set (${(err as Error).message})`);
    }
  }
  const verified = new Map<string, { principal: PrincipalVar; until: number }>();
  const options = { issuer: s.issuer, audience: s.audience, algorithms: [...s.algorithms], clockTolerance: 30, requiredClaims: ['exp'] };
  return async (token, tokenDigest) => {
    const key = tokenDigest.toString('base64');
    const now = Date.now();
    const hit = verified.get(key);
    if (hit !== undefined) {
      if (hit.until > now) return { ok: true, principal: hit.principal };
      verified.delete(key);
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, options));
    } catch (err) {
      return refusal(err);
    }
    const principal = jwtPrincipal(payload, s.claims);
    if (principal === undefined) return { ok: false, reason: 'invalid', detail: 'the access token names no subject (sub or client_id)' };
    if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
    verified.set(key, { principal, until: Math.min(now + VERIFIED_MS, (payload.exp ?? 0) * 1000) });
    return { ok: true, principal };
  };
}

/** A jose error as a refusal: a fixed reason and a detail that quotes nothing of the token. */
function refusal(err: unknown): AuthResult {
  if (err instanceof joseErrors.JWTExpired) return { ok: false, reason: 'expired', detail: 'the access token has expired' };
  if (err instanceof joseErrors.JWTClaimValidationFailed) return { ok: false, reason: 'invalid', detail: `the access token's ${err.claim} claim is not accepted` };
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid || err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) {
    return { ok: false, reason: 'malformed', detail: 'the access token is malformed or uses an algorithm not accepted' };
  }
  if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys) return { ok: false, reason: 'invalid', detail: 'no key of the JWKS verifies the access token' };
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return { ok: false, reason: 'invalid', detail: 'the access token signature does not verify' };
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) return { ok: false, reason: 'invalid', detail: 'the JWKS could not be fetched' };
  return { ok: false, reason: 'invalid', detail: 'the access token is not accepted' };
}

/** The authentication of one process, from its settings (read once: a tokens file change needs a restart). */
export function createAuthentication(s: AuthSettings): Authentication {
  const entries: Array<{ name: string; token: string }> = [];
  if (s.tokensFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(s.tokensFile, 'utf8');
    } catch (err) {
      throw new AuthConfigError(`TRUSTGATE_TOKENS_FILE: ${s.tokensFile} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    entries.push(...parseTokensFile(text, s.tokensFile));
  }
  if (s.token !== undefined) {
    if (entries.some((e) => e.name === 'default')) throw new AuthConfigError('TRUSTGATE_TOKEN is the token named default, and TRUSTGATE_TOKENS_FILE names one default too');
    entries.push({ name: 'default', token: s.token });
  }
  const byToken = entries.length > 0 ? staticTokens(entries) : undefined;
  const jwt = s.jwt !== undefined ? jwtVerifier(s.jwt) : undefined;
  const configured = byToken !== undefined || jwt !== undefined;
  const authenticateToken = async (token: string | undefined): Promise<AuthResult> => {
    if (!configured) return { ok: true, principal: ANONYMOUS };
    // Hashed once: every static token is compared with it first, whatever was presented (nothing included), and a JWT is remembered by it.
    const got = digest(token ?? '');
    const named = byToken?.(got);
    if (token === undefined || token === '') return { ok: false, reason: 'missing', detail: 'send Authorization: Bearer <token>' };
    if (named !== undefined) return { ok: true, principal: named };
    if (jwt !== undefined && JWT_SHAPE.test(token)) return jwt(token, got);
    return { ok: false, reason: jwt !== undefined ? 'malformed' : 'unknown', detail: 'the bearer token is not accepted' };
  };
  return {
    configured,
    authenticateToken,
    authenticate: (header) => {
      if (!configured) return Promise.resolve({ ok: true, principal: ANONYMOUS });
      if (header !== undefined && bearerToken(header) === undefined) return Promise.resolve({ ok: false, reason: 'malformed', detail: 'send Authorization: Bearer <token>' });
      return authenticateToken(bearerToken(header));
    },
  };
}
