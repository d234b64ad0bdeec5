/** What re-deriving one evidence reference's digest came to. */

export const EVIDENCE_STATUSES = ['verified', 'mismatch', 'unresolved', 'unsupported', 'malformed'] as const;
export type EvidenceStatus = (typeof EVIDENCE_STATUSES)[number];
