/** The `_meta` key trust claims live under, and the value a trust flag takes. */

/** The `_meta` key under which trust claims live. */
export const TRUST_KEY = 'io.modelcontextprotocol/trust-annotations';

/** Tri-state trust flag: asserted true, asserted false, or no claim. */
export type Tri = boolean | null;
