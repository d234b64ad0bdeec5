/**
 * The JSON body parser: the pre-parse scan and JSON.parse of
 * src/json/parse.ts, with the scan kept on the request.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { JsonScan, ScanFocus } from '../json/scan.js';
import { parseRequestText } from '../json/parse.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the pre-parse scan saw in the body text; undefined for bodiless requests. */
    jsonScan?: JsonScan;
  }
  interface FastifyContextConfig {
    /** Where the route needs repeated member names and unsafe integers found (see scanJson); the whole body when absent. */
    jsonScanFocus?: ScanFocus;
  }
}

export function jsonBodyParser(request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void {
  try {
    const { value, scan } = parseRequestText(body as string, request.routeOptions?.config?.jsonScanFocus ?? []);
    request.jsonScan = scan;
    done(null, value);
  } catch (err) {
    done(err as Error, undefined);
  }
}

export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser);
}

/** Pointers the scan found under `prefix` (an RFC 6901 pointer), or none. */
export function issuesUnder(list: readonly string[], prefix: string): string[] {
  return list.filter((p) => p === prefix || p.startsWith(prefix + '/'));
}
