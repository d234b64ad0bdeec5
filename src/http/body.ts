/**
 * The JSON body parser: the pre-parse scan and JSON.parse of
 * src/json/parse.ts, with the scan kept on the request.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { scanJson, type JsonScan, type ScanFocus } from '../json/scan.js';
import { MAX_BODY_DEPTH, parseRequestText } from '../json/parse.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the pre-parse scan saw in the body text; undefined for bodiless requests. */
    jsonScan?: JsonScan;
    /** The body text the JSON body was parsed from; undefined for bodiless requests. */
    jsonText?: string;
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
    request.jsonText = body as string;
    done(null, value);
  } catch (err) {
    done(err as Error, undefined);
  }
}

export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser);
}

/**
 * Whether a request text repeats a member name inside its top-level
 * `result` or at its top level (`result` itself twice, say); true without a
 * text. A second scan of the text focused on `result` (about 4 µs for
 * 4 KB), which routes pay for only when they ask.
 */
export function resultRepeatsNames(text: string | undefined): boolean {
  if (text === undefined) return true;
  const scan = scanJson(text, MAX_BODY_DEPTH, ['result']);
  return scan.repeatsOnPath || scan.duplicateKeys.count > 0;
}
