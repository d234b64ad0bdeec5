/**
 * Wire schema of POST /v1/digests (docs/behaviour/trust-claims.md).
 */
import { CANONICALIZATIONS, DIGEST_ALGORITHMS } from '../evidence/algorithms.js';
import { type FromWire, v1Schema } from './shared.js';

export const digestBody = {
  type: 'object',
  additionalProperties: false,
  required: ['record', 'canonicalization'],
  properties: {
    record: { description: 'The evidence record (I-JSON; nests at most 128 levels below itself).' },
    canonicalization: { type: 'string', enum: [...CANONICALIZATIONS] },
    algorithm: { type: 'string', enum: [...DIGEST_ALGORITHMS], default: 'sha256' },
  },
} as const;

export const digestReply = {
  type: 'object',
  description: 'The digest to put in an evidenceRef, and the canonical form it was computed over',
  required: ['digest', 'canonicalization', 'canonical'],
  properties: {
    digest: { type: 'string', description: '`<alg>:<lowercase hex>`' },
    canonicalization: { type: 'string', enum: [...CANONICALIZATIONS] },
    algorithm: { type: 'string', enum: [...DIGEST_ALGORITHMS] },
    canonical: { type: 'string', description: 'The JCS text, or the base64 of the deterministic CBOR bytes' },
  },
} as const;

/** POST /v1/digest's body. */
export type DigestRequest = FromWire<typeof digestBody>;

export const digestSchema = v1Schema({
  operationId: 'digest',
  tags: ['evidence'],
  summary: 'Canonicalize a record and digest it, to mint an evidenceRef',
  body: digestBody,
  reply: digestReply,
  problems: [400, 401, 403, 413, 415],
});
