import type { FastifyInstance } from 'fastify';
import { canonicalBytes, CanonicalizationError, digestOf, MAX_RECORD_DEPTH } from '../../evidence/digest.js';
import { TrustgateError } from '../../errors.js';
import { pointerOf } from '../../json/scan.js';
import { digestSchema, type DigestRequest } from '../../wire/digests.js';

/** POST /v1/digest: mint the digest of a record (docs/bindings/http.md). */
export function digestRoutes(app: FastifyInstance): void {
  app.post<{ Body: DigestRequest }>(
    '/v1/digest',
    {
      schema: digestSchema,
      config: { jsonScanFocus: ['record'] },
    },
    async (request) => {
      const { record, canonicalization } = request.body;
      const algorithm = request.body.algorithm ?? 'sha256';
      const scan = request.jsonScan;
      // The scan looked only below `record` (the route's focus): whatever it found is in the record.
      if (scan && (scan.duplicateKeys.count > 0 || scan.unsafeIntegers.count > 0)) {
        const found = [
          ...scan.duplicateKeys.first.map((n) => ({ n, message: 'object repeats a member name' })),
          ...scan.unsafeIntegers.first.map((n) => ({ n, message: 'number of integral value is outside -(2^53-1)..2^53-1' })),
        ];
        // At most 20 places, and pointers of at most 16 Ki characters together past the first:
        // places below one long member name would otherwise repeat it in every pointer.
        const errors: Array<{ pointer: string; message: string }> = [];
        let chars = 0;
        for (const { n, message } of found.slice(0, 20)) {
          const pointer = pointerOf(n);
          chars += pointer.length;
          if (errors.length > 0 && chars > 16 * 1024) break;
          errors.push({ pointer, message });
        }
        throw new TrustgateError('TG_ERR_RECORD_NOT_IJSON', 'record is not I-JSON (RFC 7493): no two producers could agree on its digest', errors);
      }
      let bytes: Uint8Array;
      try {
        bytes = canonicalBytes(record, canonicalization);
      } catch (err) {
        if (err instanceof CanonicalizationError) {
          if (err.reason === 'too-deep') {
            throw new TrustgateError('TG_ERR_RECORD_TOO_DEEP', `record nests deeper than ${MAX_RECORD_DEPTH} levels below itself`, [
              { pointer: '/record', message: 'nests too deeply' },
            ]);
          }
          throw new TrustgateError('TG_ERR_RECORD_NOT_CANONICALIZABLE', `record cannot be canonicalized: ${err.message}`, [
            { pointer: '/record', message: err.message },
          ]);
        }
        throw err;
      }
      const canonical =
        canonicalization === 'jcs/rfc8785' ? Buffer.from(bytes).toString('utf8') : Buffer.from(bytes).toString('base64');
      return { digest: digestOf(bytes, algorithm), canonicalization, algorithm, canonical };
    },
  );
}
