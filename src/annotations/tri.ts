/** The value a trust flag takes (the `_meta` key claims live under is TRUST_KEY, src/mcp/meta-key.ts). */

/** Tri-state trust flag: asserted true, asserted false, or no claim. */
export type Tri = boolean | null;
