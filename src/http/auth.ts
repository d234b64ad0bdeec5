/**
 * Bearer tokens (docs/operations/deploying.md): the token of a request, the
 * constant-time comparison, and the route a request was matched to. Both
 * sides are hashed to a fixed length first so timingSafeEqual compares in
 * constant time whatever the length of what was sent. The check routes opt
 * into is bearer.ts.
 */
import { hash, timingSafeEqual } from 'node:crypto';

const digest = (s: string): Buffer => hash('sha256', s, 'buffer');

export function tokenMatcher(token: string): (presented: string | undefined) => boolean {
  const expected = digest(token);
  return (presented) => {
    // Hash even when nothing was presented so a miss costs the same as a wrong token.
    const got = digest(presented ?? '');
    return timingSafeEqual(got, expected) && presented !== undefined;
  };
}

/** The token from an `Authorization: Bearer <token>` header, if any. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer +([^ ]+) *$/i.exec(header);
  return m ? m[1] : undefined;
}

/**
 * The route a request was matched to, not its raw text: the router decodes
 * percent-escapes (`/%761/evaluate`) and accepts absolute-form targets, so
 * access decisions must look at what will actually handle the request.
 */
export function routeOf(request: { routeOptions: { url?: string | undefined }; url: string }): string {
  return request.routeOptions.url ?? request.url.split('?')[0]!;
}
