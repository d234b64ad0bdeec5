/**
 * The one error of evidence canonicalization, apart from both encoders
 * (digest.ts for RFC 8785 text, cbor.ts for deterministic CBOR) so that
 * neither imports the other for it. Messages never quote record content.
 */
export class CanonicalizationError extends Error {
  constructor(
    message: string,
    readonly reason: 'too-deep' | 'lone-surrogate' | 'not-json',
  ) {
    super(message);
    this.name = 'CanonicalizationError';
  }
}
