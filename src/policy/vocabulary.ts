/**
 * The closed sets a policy file is written in: modes, rule scopes and
 * effects. They are `as const` arrays so that the loader, the schemas and
 * the docs list the same values, and an unknown value fails the load with
 * the list of valid ones.
 */

export const MODES = ['audit', 'warn', 'enforce'] as const;
export type Mode = (typeof MODES)[number];

export const SCOPES = ['block', 'result', 'call', 'tool'] as const;
export type Scope = (typeof SCOPES)[number];

/** Effects a `scope: call` rule may have (docs/behaviour/sessions.md): a call is allowed, stopped or put to the user, never edited. */
export const CALL_EFFECTS = ['deny', 'consent', 'flag'] as const;

/** Effects a `scope: tool` rule may have (docs/bindings/proxy.md): a listed definition is dropped from the list or flagged. */
export const TOOL_EFFECTS = ['drop', 'flag'] as const;

export const EFFECTS = ['deny', 'redact', 'drop', 'spotlight', 'consent', 'flag', 'label', 'mask'] as const;
export type Effect = (typeof EFFECTS)[number];
