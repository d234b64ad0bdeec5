/** Placeholder: the deterministic CBOR encoder is being written. */
export function encodeDeterministic(_value: unknown): Uint8Array {
  throw new Error('not implemented');
}
