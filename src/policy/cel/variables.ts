/**
 * THE CEL variable table: every variable a policy `when` may read, the CEL
 * type the engine declares it with, the rule scopes that bind it, and what
 * it holds. Everything else derives from this table: the engine's
 * declarations (engine.ts), the variables the fast path reads (fast.ts),
 * the loader's scope check (../load.ts), the engine benchmark
 * (bench/cel.ts) and the variables table of docs/policies/reference.md (a test
 * holds the README to {@link variableTableMarkdown}).
 *
 * Below the table: the TypeScript shapes of the values the decision core
 * binds to these variables.
 */
import type { EvidenceStatus } from '../../evidence/status.js';
import type { Severity } from '../../mcp/findings.js';
import { SCOPES, type Scope } from '../vocabulary.js';
import type { JoinedText } from '../../detect/index.js';

/**
 * The CEL types variables are declared with: maps with dyn values rather
 * than typed messages, since optional members must be absent (for `has()`),
 * `block` is an empty map for scope `result`, and `tool`/`context` are
 * free-form request objects.
 */
export type CelVariableType = 'map<string, dyn>' | 'list<map<string, dyn>>';

/** One row of the variable table. */
export interface CelVariableSpec {
  readonly name: string;
  readonly type: CelVariableType;
  /** The rule scopes whose `when` may read it; reading it elsewhere fails the load. */
  readonly scopes: readonly Scope[];
  /** What it holds, in the words of docs/policies/reference.md (Markdown). */
  readonly description: string;
}

const RESULT_SCOPES = ['block', 'result'] as const;
const EVERY_SCOPE = ['block', 'result', 'call', 'tool'] as const;

/** Every variable a `when` may read, in the order messages and docs list them (docs/policies/reference.md). */
export const CEL_VARIABLE_TABLE = [
  {
    name: 'result',
    type: 'map<string, dyn>',
    scopes: RESULT_SCOPES,
    description: '`{ sensitive: bool, untrusted: bool, isError: bool, blockCount: int, asserted: map, claimed: map }`; `claimed` is `{ sensitive: bool, untrusted: bool }` as the result says of itself, before label rules (a detector\'s find) raised a flag: its trust claims and the operator\'s `labels` for its server, and for `sensitive` verified data-class evidence of a class above `internal`',
  },
  {
    name: 'block',
    type: 'map<string, dyn>',
    scopes: RESULT_SCOPES,
    description:
      'scope `block`: `{ index: int, type: string, sensitive: bool, untrusted: bool, asserted: map, audience: list<string>, audienceMalformed: bool, priority?: double, mimeType?: string, uri?: string }`; scope `result`: an empty map',
  },
  {
    name: 'tool',
    type: 'map<string, dyn>',
    scopes: EVERY_SCOPE,
    description: 'the request\'s `tool`; `{ name: "", annotations: {} }` when absent; `name` and `annotations` are always there',
  },
  {
    name: 'server',
    type: 'map<string, dyn>',
    scopes: EVERY_SCOPE,
    description: 'the request\'s `server`; `{ name: "" }` when absent; `name` is always there',
  },
  {
    name: 'context',
    type: 'map<string, dyn>',
    scopes: EVERY_SCOPE,
    description: 'the request\'s `context` as given; `{}` when absent',
  },
  {
    name: 'principal',
    type: 'map<string, dyn>',
    scopes: EVERY_SCOPE,
    description:
      'who is asking ([authentication](../operations/authentication.md)): `{ id: string, issuer: string, scopes: list<string>, claims: map }`; `id` is the access token\'s `sub` (its `client_id` when it has none) or the static token\'s name, `issuer` the token\'s `iss` (`""` for a static token), `scopes` its `scope` (or `scp`) split on spaces, `claims` the claims named in `TRUSTGATE_JWT_CLAIMS`; without authentication `id` and `issuer` are `""` and the lists empty',
  },
  {
    name: 'evidence',
    type: 'list<map<string, dyn>>',
    scopes: RESULT_SCOPES,
    description: '`list` of `{ type: string or null, status: string, canonicalization: string or null, pointer: string }`',
  },
  {
    name: 'dataClass',
    type: 'map<string, dyn>',
    scopes: RESULT_SCOPES,
    description: '`{ class: string, regulatory: list<string> }` from verified `data-class.v1` evidence, or an empty map',
  },
  {
    name: 'validation',
    type: 'list<map<string, dyn>>',
    scopes: RESULT_SCOPES,
    description: '`list` of `{ rule: string, severity: "error" or "warning", pointer: string }`',
  },
  {
    name: 'session',
    type: 'map<string, dyn>',
    scopes: EVERY_SCOPE,
    description:
      'what the session had been shown **before** this request, `{ id: string, forgotten: bool, sensitive: bool, untrusted: bool, flowsOverflow: bool, dataClass: map, calls: int, results: int, tools: list<string> }`; `flowsOverflow`: the session saw more values than it keeps, or forgot them, so what arguments carry cannot be told ([flows](../behaviour/flows.md)); without a session id `id` is `""`, the flags `false`, the counts `0`, `dataClass` `{}` and `tools` `[]`',
  },
  {
    name: 'call',
    type: 'map<string, dyn>',
    scopes: ['block', 'result', 'call'],
    description:
      '`{ name: string, method: string, arguments: map, flows: list<map>, flowsOmitted: int, untrustedArgs: list<string>, sensitiveArgs: list<string>, unknownArgs: list<string>, unconfirmedIds: list<string> }`; scope `call`: the call about to run, and `flows` the values of its arguments the session has seen, each `{ pointer, kind, untrusted, sensitive, trusted, user, inText, sources }` (at most 64, the rest counted in `flowsOmitted`); `untrustedArgs` and `sensitiveArgs` the pointers of arguments holding a value seen untrusted (and not given by the user) or sensitive, `unknownArgs` of arguments that are an identifier (a string without spaces) the session never saw, `unconfirmedIds` of those the user did not give ([flows](../behaviour/flows.md)); scopes `block` and `result`: what the judged message is, which the proxy names (`method` `"resources/read"`, `"prompts/get"`, ...; `name` the tool, resource URI or prompt name); `{ name: "", method: "tools/call", arguments: {} }` for what is not given',
  },
] as const satisfies readonly CelVariableSpec[];

/** A variable's name. */
export type CelVariable = (typeof CEL_VARIABLE_TABLE)[number]['name'];

/** Names of the variables a `when` may read, in table order. */
export const CEL_VARIABLES: readonly CelVariable[] = Object.freeze(CEL_VARIABLE_TABLE.map((v) => v.name));

/**
 * The variables of one scope: the scope's own subject first (`call` in
 * scope call, `tool` in scope tool), then the others in table order.
 */
function ofScope(scope: Scope): readonly CelVariable[] {
  const names = CEL_VARIABLE_TABLE.filter((v) => (v.scopes as readonly Scope[]).includes(scope)).map((v) => v.name);
  const own = names.findIndex((n) => n === scope);
  return Object.freeze(own > 0 ? [names[own]!, ...names.slice(0, own), ...names.slice(own + 1)] : names);
}

const BY_SCOPE = Object.freeze(Object.fromEntries(SCOPES.map((s) => [s, ofScope(s)]))) as Readonly<Record<Scope, readonly CelVariable[]>>;

/**
 * The variables a rule of `scope` may read (docs/behaviour/sessions.md,
 * docs/bindings/proxy.md): a call has no result, blocks, evidence or
 * validation; a listed tool definition has only `tool` and what surrounds it.
 */
export function scopeVariables(scope: Scope): readonly CelVariable[] {
  return BY_SCOPE[scope];
}

/** The variables table of docs/policies/reference.md ("Variables"), rendered from the table. */
export function variableTableMarkdown(): string {
  const rows = CEL_VARIABLE_TABLE.map((v) => {
    const scopes = v.scopes.length === SCOPES.length ? 'every' : v.scopes.map((s) => `\`${s}\``).join(', ');
    return `| \`${v.name}\` | ${scopes} | ${v.description} |`;
  });
  return ['| name | scopes | value |', '|---|---|---|', ...rows].join('\n') + '\n';
}

// ------------------------------------------------------------ values

/** The value of `result` (docs/policies/reference.md). `blockCount` is a CEL int. */
export interface ResultVar {
  sensitive: boolean;
  untrusted: boolean;
  isError: boolean;
  blockCount: number;
  /** Keys `sensitive`/`untrusted`, present only where some claim asserted that flag. */
  asserted: AssertedVar;
  /** The flags as the claims and verified evidence say, before any label rule raised one (a detector's find is a label rule's). */
  claimed?: { sensitive: boolean; untrusted: boolean };
  /**
   * The flags that govern `structuredContent` (the result-level claims and
   * fides labels on `$['structuredContent']`); both false when the result has
   * none. A label here may be on no block at all (docs/bindings/proxy.md).
   */
  structured?: { sensitive: boolean; untrusted: boolean };
  /**
   * Every string of the result the host will see (blocks, the envelope's other members, `structuredContent`), joined
   * with newlines (docs/behaviour/labels-and-detectors.md); left out when no rule reads `text`. In a decision, a
   * JoinedText: the string is made when a rule reads it as one (`secrets()` and `pii()` read its parts).
   */
  text?: string | JoinedText;
}

/** `asserted`: a key per flag that some claim asserted, with the effective value. */
export type AssertedVar = Readonly<{ sensitive?: boolean; untrusted?: boolean }>;

/**
 * The value of `block` for scope `block` (docs/policies/reference.md). `index` is a
 * CEL int, `priority` a double; optional members are left out, never
 * `undefined`-valued, so `has()` tells them apart.
 */
export type BlockVar = {
  index: number;
  type: string;
  sensitive: boolean;
  untrusted: boolean;
  asserted: AssertedVar;
  /**
   * `annotations.audience`; empty when absent; `["malformed"]` when it is
   * not an array of `"user"`/`"assistant"` (it then excludes every reader).
   */
  audience: readonly string[];
  /** True when `annotations.audience` is present and not an array of `"user"`/`"assistant"`. */
  audienceMalformed: boolean;
  priority?: number;
  mimeType?: string;
  uri?: string;
  /** The text the block shows (docs/behaviour/labels-and-detectors.md); `""` for blocks without text. */
  text?: string;
};

/** One entry of `evidence`; `type`/`canonicalization` are null when the evidenceRef lacks them. */
export type EvidenceVar = {
  type: string | null;
  status: EvidenceStatus;
  canonicalization: string | null;
  /** RFC 6901 pointer of the evidenceRef in the request's `result`. */
  pointer: string;
};

/** One entry of `validation`; extra members such as `message` are not exposed to policies. */
export type ValidationVar = {
  rule: string;
  severity: Severity;
  pointer: string;
};

/**
 * The value of `session` (docs/behaviour/sessions.md): what the session had been
 * shown before this request. `calls` and `results` are CEL ints.
 */
export interface SessionVar {
  /** `""` without a session id. */
  id: string;
  /** The store lost what the session was shown (docs/bindings/proxy.md); `sensitive` and `untrusted` are then true. */
  forgotten?: boolean;
  sensitive: boolean;
  untrusted: boolean;
  /** `{ class, regulatory }`, or an empty map when no verified class was forwarded in the session. */
  dataClass: DataClassVar;
  calls: number;
  results: number;
  /** Names of the tools called in the session, first call first. */
  tools: readonly string[];
  /** The session saw more values than it keeps, or forgot them (docs/behaviour/flows.md). */
  flowsOverflow?: boolean;
}

/** `session` without a session id: flags false, counts 0, no data class, no tools. */
export const NO_SESSION: Readonly<SessionVar> = Object.freeze({
  id: '',
  forgotten: false,
  sensitive: false,
  untrusted: false,
  dataClass: Object.freeze({}),
  calls: 0,
  results: 0,
  tools: Object.freeze([]) as readonly string[],
  flowsOverflow: false,
});

/** The value of `call`: the tool call about to run (scope `call`), or what the judged message is (scopes block and result). */
export interface CallVar {
  name: string;
  /** The MCP method: "tools/call" when absent. */
  method?: string;
  /** The call's arguments as sent; `{}` when absent. */
  arguments: Record<string, unknown>;
  /** Scope call: the values of the arguments the session has seen (docs/behaviour/flows.md); `[]` when absent. */
  flows?: readonly object[];
  /** Entries left out of `flows` past its bound; `flowsOmitted` is a CEL int. */
  flowsOmitted?: number;
  untrustedArgs?: readonly string[];
  sensitiveArgs?: readonly string[];
  unknownArgs?: readonly string[];
  unconfirmedIds?: readonly string[];
}

/** The value of `principal`: who is asking (docs/operations/authentication.md). Never holds the token. */
export interface PrincipalVar {
  /** The token's `sub` (else `client_id`), or the static token's name; `""` without authentication. */
  readonly id: string;
  /** The token's `iss`; `""` for a static token and without authentication. */
  readonly issuer: string;
  /** The token's `scope` (or `scp`), split on spaces. */
  readonly scopes: readonly string[];
  /** The claims TRUSTGATE_JWT_CLAIMS names, as the token has them. */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** `principal` when no authentication is configured (or the request came from inside the process). */
export const ANONYMOUS: PrincipalVar = Object.freeze({ id: '', issuer: '', scopes: Object.freeze([]) as readonly string[], claims: Object.freeze({}) });

/** Members shared by every scope of one decision. Absent tool/server/context/session/call get the defaults of the variable table. */
export interface SharedVarsInput {
  result: ResultVar;
  /** The request's `tool`; `{ name: "", annotations: {} }` when absent. */
  tool?: Record<string, unknown> | undefined;
  /** The request's `server`; `{ name: "" }` when absent. */
  server?: Record<string, unknown> | undefined;
  /** The request's `context`; `{}` when absent. */
  context?: Record<string, unknown> | undefined;
  /** Who is asking; ANONYMOUS when absent. */
  principal?: PrincipalVar | undefined;
  validation: readonly ValidationVar[];
  /** What the session had been shown before this request; NO_SESSION when absent. */
  session?: SessionVar | undefined;
  /** Scopes block and result: what the judged message is (the proxy); `{ name: "", method: "tools/call", arguments: {} }` when absent. */
  call?: CallVar | undefined;
  /** Members computed for `tool` (scope `call`: `hints`, `digest`, `pin`), replacing the request's members of those names. */
  toolMembers?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * `dataClass` of a scope: `{ class, regulatory }` from verified
 * `data-class.v1` evidence, or an empty object when none governs it.
 */
export type DataClassVar = Readonly<{ class?: string; regulatory?: readonly string[] }> | Readonly<Record<string, unknown>>;

/** Members that differ per scope (one block, or the whole result). */
export interface ScopeVarsInput {
  /** A BlockVar for scope `block`, an empty object for scope `result`. */
  block: Readonly<Record<string, unknown>>;
  evidence: readonly EvidenceVar[];
  dataClass: DataClassVar;
}

