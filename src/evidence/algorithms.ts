/** The canonicalizations and digest algorithms an evidence reference may name. */

export const CANONICALIZATIONS = ['jcs/rfc8785', 'cbor/rfc8949'] as const;
export type Canonicalization = (typeof CANONICALIZATIONS)[number];

export const DIGEST_ALGORITHMS = ['sha256', 'sha384', 'sha512'] as const;
export type DigestAlgorithm = (typeof DIGEST_ALGORITHMS)[number];
