/**
 * Bearer tokens (docs/operations/authentication.md): the token of a
 * request, and the route a request was matched to. What a token is worth is
 * identity.ts's; the check routes opt into is bearer.ts.
 */

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
