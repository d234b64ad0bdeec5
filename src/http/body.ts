/**
 * The JSON body parser: refuses hostile nesting before JSON.parse and keeps
 * what JSON.parse hides (repeated member names, unsafe integer literals) on
 * the request, so evidence records can be judged as I-JSON.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { scanJson, type JsonScan } from '../json/scan.js';
import { TrustgateError } from '../errors.js';

/** Any body nesting deeper than this is a 400 (contract section 8). */
export const MAX_BODY_DEPTH = 256;

declare module 'fastify' {
  interface FastifyRequest {
    /** What the pre-parse scan saw in the body text; undefined for bodiless requests. */
    jsonScan?: JsonScan;
  }
}

export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request: FastifyRequest, body, done) => {
    const text = body as string;
    const scan = scanJson(text, MAX_BODY_DEPTH);
    if (scan.tooDeep) {
      done(new TrustgateError('TG_ERR_BODY_TOO_DEEP', `request body nests deeper than ${MAX_BODY_DEPTH} levels`), undefined);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      // V8's message can quote the input; keep only the position so no content reaches answers or logs.
      const at = err instanceof Error ? /position (\d+)/.exec(err.message) : null;
      const where = at ? ` (at position ${at[1]})` : /end of JSON/.test(String(err)) ? ' (unexpected end)' : '';
      done(new TrustgateError('TG_ERR_BODY_MALFORMED_JSON', `request body is not valid JSON${where}`), undefined);
      return;
    }
    request.jsonScan = scan;
    done(null, value);
  });
}

/** Pointers the scan found under `prefix` (an RFC 6901 pointer), or none. */
export function issuesUnder(list: readonly string[], prefix: string): string[] {
  return list.filter((p) => p === prefix || p.startsWith(prefix + '/'));
}
