import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { encodeDeterministic } from './cbor.js';
import { CanonicalizationError } from './canonicalization-error.js';
import { jsonDepth } from '../json/depth.js';
import { CANONICALIZATIONS, DIGEST_ALGORITHMS, type Canonicalization, type DigestAlgorithm } from './algorithms.js';

/** Callers catch it from here, beside the functions that throw it. */
export { CanonicalizationError };

/** Records nesting deeper than this below themselves cannot be canonicalized (docs/behaviour/trust-claims.md). */
export const MAX_RECORD_DEPTH = 128;

/** Hex length of each supported digest. */
const HEX_LENGTH: Record<DigestAlgorithm, number> = { sha256: 64, sha384: 96, sha512: 128 };

export function isCanonicalization(v: unknown): v is Canonicalization {
  return typeof v === 'string' && (CANONICALIZATIONS as readonly string[]).includes(v);
}

export function isDigestAlgorithm(v: unknown): v is DigestAlgorithm {
  return typeof v === 'string' && (DIGEST_ALGORITHMS as readonly string[]).includes(v);
}

/**
 * Canonical bytes of a record under one scheme: JCS text as UTF-8, or the
 * deterministic CBOR encoding. Throws CanonicalizationError.
 */
export function canonicalBytes(record: unknown, scheme: Canonicalization): Uint8Array {
  const form = canonicalForm(record, scheme);
  return typeof form === 'string' ? Buffer.from(form, 'utf8') : form;
}

/**
 * The canonical form of a record: the JCS text (its bytes are its UTF-8
 * encoding) or the deterministic CBOR bytes. Digests hash the text as it is,
 * with no byte copy of it. `depthChecked`: the caller knows the record nests
 * no deeper than MAX_RECORD_DEPTH (its request text does not). Throws
 * CanonicalizationError.
 */
export function canonicalForm(record: unknown, scheme: Canonicalization, depthChecked = false): string | Uint8Array {
  if (!depthChecked && jsonDepth(record, MAX_RECORD_DEPTH) > MAX_RECORD_DEPTH) {
    throw new CanonicalizationError(`record nests deeper than ${MAX_RECORD_DEPTH} levels`, 'too-deep');
  }
  if (scheme === 'cbor/rfc8949') return encodeDeterministic(record);
  return jcsText(record);
}

/** The RFC 8785 text of a record. Throws CanonicalizationError. */
export function jcsText(record: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(record);
  } catch (err) {
    const lone = err instanceof Error && /surrogate/i.test(err.message);
    throw new CanonicalizationError(
      lone ? 'record holds a lone surrogate, which has no UTF-8 form' : 'record is not JSON data',
      lone ? 'lone-surrogate' : 'not-json',
    );
  }
  if (text === undefined) throw new CanonicalizationError('record is not JSON data', 'not-json');
  return text;
}

/**
 * `alg:lowercasehex` of some bytes, or of a text's UTF-8 encoding (one-shot
 * crypto.hash: no Hash object per digest, under half the cost for a small record).
 */
export function digestOf(bytes: Uint8Array | string, alg: DigestAlgorithm): string {
  return `${alg}:${hash(alg, bytes, 'hex')}`;
}

export type ParsedDigest = Readonly<
  { ok: true; alg: DigestAlgorithm; hex: string; normalized: string } | { ok: false; status: 'unsupported' | 'malformed'; message: string }
>;

/** The digest parseDigest read last, and what it read: a decision reads each evidenceRef's digest twice (its shape check, then its verification). */
let lastText: string | undefined;
let lastParsed: ParsedDigest | undefined;

/**
 * Parse `<alg>:<hex>`. An unknown alg is `unsupported`; a value of the wrong
 * length or not hex is `malformed`. Upper-case hex is accepted and normalised.
 * The answer is shared with the next call for the same text: read it only.
 */
export function parseDigest(text: string): ParsedDigest {
  if (text !== lastText || lastParsed === undefined) {
    lastParsed = Object.freeze(parseDigestFresh(text));
    lastText = text;
  }
  return lastParsed;
}

/** parseDigest without keeping the last answer (the tests hold the two equal). */
export function parseDigestFresh(text: string): ParsedDigest {
  const colon = text.indexOf(':');
  if (colon <= 0) return { ok: false, status: 'malformed', message: 'digest is not of the form <alg>:<hex>' };
  const alg = text.slice(0, colon);
  const value = text.slice(colon + 1);
  if (!isDigestAlgorithm(alg)) {
    return {
      ok: false,
      status: 'unsupported',
      message: `digest algorithm is not one of ${DIGEST_ALGORITHMS.join(', ')}`,
    };
  }
  if (value.length !== HEX_LENGTH[alg] || !/^[0-9a-fA-F]*$/.test(value)) {
    return {
      ok: false,
      status: 'malformed',
      message: `${alg} digest value must be ${HEX_LENGTH[alg]} hex digits`,
    };
  }
  const hex = value.toLowerCase();
  return { ok: true, alg, hex, normalized: `${alg}:${hex}` };
}

/** Canonicalize and hash in one step. Throws CanonicalizationError. */
export function deriveDigest(
  record: unknown,
  scheme: Canonicalization,
  alg: DigestAlgorithm,
): { digest: string; bytes: Uint8Array } {
  const bytes = canonicalBytes(record, scheme);
  return { digest: digestOf(bytes, alg), bytes };
}
