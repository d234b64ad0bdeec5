/** The shape of gitleaks' rules as secret-rules.generated.ts carries them (see scripts/gen-secret-rules.ts). */
export interface GitleaksAllow {
  readonly and?: boolean;
  readonly target?: string;
  readonly regexes?: readonly string[];
  readonly stopwords?: readonly string[];
}

export interface GitleaksRule {
  readonly id: string;
  readonly regex: string;
  readonly keywords: readonly string[];
  readonly entropy?: number;
  readonly secretGroup?: number;
  /** (Own rules) a list every word of the secret is on, or the match is none: BIP-39's English words. */
  readonly words?: 'bip39-english';
  readonly allow?: readonly GitleaksAllow[];
}
