/**
 * Wire schemas: each is the route's validator, its serializer and its
 * OpenAPI entry (openapi.yaml is generated from these). Shared shapes are
 * registered with `$id` and referenced as `Name#`, so they appear once under
 * `components.schemas`. The TypeScript type of a request or an answer is
 * derived from its schema (`FromWire`), never written again by hand.
 */
import { EVIDENCE_STATUSES } from '../evidence/status.js';
import { PROTOCOL_VERSIONS } from '../mcp/revisions.js';
import { EFFECTS, MODES, SCOPES } from '../policy/vocabulary.js';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import { ERRORS } from '../errors.js';
import { SESSION_ID_PATTERN } from '../session/store.js';

const triState = { type: ['boolean', 'null'] } as const;

/** `trace` in /v1/evaluate and /v1/evaluate-call answers (docs/policy-testing.md). */
export const traceList = {
  type: 'array',
  description:
    'Present with `options.explain`: every rule evaluated, in policy (file) order, then rule order, then block order, each with the value its condition had, so a rule that did not match shows why (`false`) and one that failed shows its error. Rules of the scopes the request does not evaluate (call rules on /v1/evaluate, result and block rules on /v1/evaluate-call) are not listed, nor block rules when the result has no blocks.',
  items: { $ref: 'TraceEntry#' },
} as const;

const hint = (dflt: boolean, what: string) => ({ type: 'boolean', description: `${what}; ${dflt} when the definition does not say` }) as const;

export const sharedSchemas = [
  {
    $id: 'ToolHints',
    type: 'object',
    additionalProperties: false,
    description: "MCP's tool annotations as hints, each with MCP's value when not given",
    required: ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'],
    properties: {
      readOnlyHint: hint(false, 'the tool does not modify its environment'),
      destructiveHint: hint(true, 'the tool may perform destructive updates'),
      idempotentHint: hint(false, 'calling it again with the same arguments has no further effect'),
      openWorldHint: hint(true, 'the tool may interact with an open world of external entities'),
    },
  },
  {
    $id: 'Problem',
    type: 'object',
    description: 'RFC 9457 problem details. `code` is stable; see docs/errors.md.',
    required: ['type', 'title', 'status', 'detail', 'code'],
    properties: {
      type: { type: 'string', description: '`urn:trustgate:problem:<code>`' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      code: { type: 'string', enum: Object.keys(ERRORS) },
      errors: {
        type: 'array',
        description:
          'Present when the request body failed validation: the first place it breaks the request schema (checking stops there, so a body that breaks it a million times costs no more than one that breaks it once).',
        items: {
          type: 'object',
          required: ['pointer', 'message'],
          properties: {
            pointer: { type: 'string', description: 'RFC 6901 pointer into the request body' },
            message: { type: 'string' },
          },
        },
      },
    },
  },
  {
    $id: 'CallToolResult',
    type: 'object',
    description:
      'An MCP CallToolResult as the tool returned it. Any object is accepted here; its MCP shape is checked by the validation rules and reported under `validation`. It may nest at most 128 levels below itself.\n\n' +
      'Trust labels are read from the dialects TRUSTGATE_DIALECTS lists (default all three), as claims of one union: ' +
      '`_meta["io.modelcontextprotocol/trust-annotations"]` (trust annotations; excluding this dialect also stops reading misplaced flags in `annotations`); ' +
      '`_meta["ifc"]` on the result, a block or a block\'s embedded resource (GitHub\'s MCP server: `{ integrity: "trusted" | "untrusted", confidentiality: "public" | "private" | [readers] }`); ' +
      '`_meta["com.github.ifc/labels"]` on the result (fides-gateway: a map from JSONPath to `{ integrity, confidentiality: [readers] }`). ' +
      'integrity `untrusted` is untrusted: true, `trusted` untrusted: false; confidentiality `"public"` or a list holding `"public"` is sensitive: false, any other list (`[]` too) or `"private"` sensitive: true. ' +
      'Spellings are exact (`"Trusted"` is malformed, and so is a member spelt `Integrity`, which Go decoders would read as integrity); an absent member claims nothing, except a fides entry without confidentiality, which fides reads as readable by no one (sensitive: true); other members are ignored. ' +
      'A malformed value is `trust.dialect.shape` (error) and counts as true: a label that is not an object counts as both flags. ' +
      'fides paths are RFC 9535 singular queries without whitespace: `$[\'name\']` or `$["name"]` (RFC 9535 escapes), `.name`, `[index]` (negative from the end). ' +
      '`$` governs the whole result; `$[\'content\'][N]` and paths below it govern block N; `$[\'content\']` every block; `$[\'structuredContent\']...` structuredContent (and the labels). ' +
      'A path that cannot be placed (a missing block, `$[\'isError\']`, no structuredContent) governs the whole result with its true claims only (its false ones are dropped), without a finding; a path that does not parse does the same and is `trust.dialect.shape`.',
    additionalProperties: true,
  },
  {
    $id: 'ProtocolVersion',
    type: 'string',
    description: `MCP protocol revision whose rules apply: ${PROTOCOL_VERSIONS.join(', ')}. \`2024-10-07\` (still negotiated by the official SDKs) is validated with the 2024-11-05 rules, and the answer's \`protocolVersion\` then says \`2024-11-05\`: it always names the revision whose rules applied. When absent: 2026-07-28 if the result carries \`resultType\`, else 2025-11-25. Any other value is a 400 (TG_ERR_PROTOCOL_VERSION_UNKNOWN).`,
    examples: ['2025-06-18'],
  },
  {
    $id: 'ValidationFinding',
    type: 'object',
    additionalProperties: false,
    required: ['rule', 'severity', 'pointer', 'message'],
    properties: {
      rule: {
        type: 'string',
        description:
          'Rule id, e.g. `mcp.annotations.priority`, `trust.annotation.type`, `trust.dialect.shape` (a malformed ifc or fides label, which counts as true). `mcp.content.type` also reports `data` of an image/audio block and a resource `blob` that are not base64 (RFC 4648 section 4): padding required, no whitespace or line breaks, the URL-safe alphabet refused; non-zero bits before the padding are accepted (section 3.5 lets decoders), and the empty string is base64',
      },
      severity: { type: 'string', enum: ['error', 'warning'] },
      pointer: { type: 'string', description: 'RFC 6901 pointer into the request `result`' },
      message: { type: 'string' },
    },
  },
  {
    $id: 'EvidenceOutcome',
    type: 'object',
    additionalProperties: false,
    required: ['pointer', 'type', 'canonicalization', 'status'],
    properties: {
      pointer: { type: 'string', description: 'Pointer of the evidenceRef in the request `result`' },
      type: { type: ['string', 'null'] },
      canonicalization: { type: ['string', 'null'] },
      status: { type: 'string', enum: [...EVIDENCE_STATUSES] },
      expected: { type: 'string', description: 'The evidenceRef digest, hex lower-cased' },
      derived: { type: 'string', description: 'The digest re-derived from the supplied record' },
      message: { type: 'string' },
    },
  },
  {
    $id: 'Finding',
    type: 'object',
    additionalProperties: false,
    required: ['policy', 'rule', 'mode', 'effect', 'scope', 'pointer', 'message', 'applied'],
    properties: {
      policy: { type: 'string' },
      rule: { type: 'string' },
      mode: { type: 'string', enum: [...MODES], description: 'The mode the rule ran under (after TRUSTGATE_MODE)' },
      effect: { type: 'string', enum: [...EFFECTS] },
      scope: { type: 'string', enum: [...SCOPES] },
      pointer: { type: 'string', description: '`/content/<i>` for a block rule, `` for a result or call rule' },
      message: { type: 'string' },
      applied: { type: 'boolean', description: 'True when the effect was applied (enforce mode)' },
      error: { type: 'string', description: 'Set when the rule condition failed to evaluate; it then counts as matched (fail closed)' },
    },
  },
  {
    $id: 'TraceEntry',
    type: 'object',
    additionalProperties: false,
    description:
      'One rule evaluated on one scope instance (`options.explain`): scope `block` rules once per block, `result` and `call` rules once. `value` is what the condition yielded, or `"error: <message>"` when it failed to evaluate (the rule then counted as matched, fail closed; a rule left unevaluated because the per-decision CEL budget was spent says so here).',
    required: ['policy', 'rule', 'scope', 'pointer', 'value'],
    properties: {
      policy: { type: 'string' },
      rule: { type: 'string' },
      scope: { type: 'string', enum: [...SCOPES] },
      pointer: { type: 'string', description: '`/content/<i>` for a block rule, `` for a result or call rule' },
      value: { oneOf: [{ type: 'boolean' }, { type: 'string', pattern: '^error: ' }] },
    },
  },
  {
    $id: 'SessionRef',
    type: 'object',
    description:
      'The session (one conversation between a host and a model) the request belongs to. Its labels are read before the request (the `session` policy variable; a result is read first only when a block or result rule reads `session`) and raised after it; the answer then carries `session`, the state after the request.',
    additionalProperties: false,
    required: ['id'],
    properties: { id: { $ref: 'SessionId#' } },
  },
  {
    $id: 'SessionId',
    type: 'string',
    pattern: SESSION_ID_PATTERN,
    description: 'A session id: 1 to 256 characters of A-Z a-z 0-9 . _ : - (anything else is a 400)',
    examples: ['conv-7f3a'],
  },
  {
    $id: 'Session',
    type: 'object',
    additionalProperties: false,
    description:
      'What a session has been shown (docs/behaviour/sessions.md). Labels only go up: `untrusted`/`sensitive` turn true once a forwarded block (fenced ones included) or forwarded structuredContent carried that label; `dataClass` is the most restrictive verified data class forwarded (public < internal < personal < confidential < restricted < highly_confidential; other classes rank with highly_confidential; of equal rank the first seen stays) with the union of `regulatory`, `{}` while none was. Withheld blocks and denied results add no labels. `results` counts answered /v1/evaluate requests (denied ones included), `calls` answered /v1/evaluate-call requests (denied ones included) and `tools` their tool names, first call first (at most 1000 names).',
    required: ['id', 'forgotten', 'sensitive', 'untrusted', 'flowsOverflow', 'dataClass', 'calls', 'results', 'tools'],
    properties: {
      id: { type: 'string' },
      forgotten: {
        type: 'boolean',
        description:
          'The store lost what this session was shown, so it is assumed tainted: `untrusted` and `sensitive` are true, the counts started over, and it stays so until the host ends it (DELETE /v1/sessions/{id}). It reads so: (1) an id whose TRUSTGATE_SESSION_TTL ran out, when it is used again within one more TTL (the store keeps the id, not its labels, that long; every use keeps it, forgotten, like a live session); (2) with Redis, every id the store does not hold, for one TTL after Trustgate noticed that Redis lost its data (its marker key `trustgate:store` vanished or changed: a restart without persistence, FLUSHALL, an eviction). An id unused for two TTLs, or ended by the host, starts a new, clean session. See docs/behaviour/forgotten-sessions.md.',
      },
      sensitive: { type: 'boolean' },
      untrusted: { type: 'boolean' },
      flowsOverflow: {
        type: 'boolean',
        description:
          'The session saw more values than it keeps (TRUSTGATE_MAX_FLOW_VALUES), or forgot them (`forgotten`): what a call\'s arguments carry cannot be told, so the shipped policies ask before every call that is not read-only (docs/behaviour/flows.md). Stays true until the host ends the session.',
      },
      dataClass: {
        type: 'object',
        additionalProperties: false,
        properties: { class: { type: 'string' }, regulatory: { type: 'array', items: { type: 'string' } } },
      },
      calls: { type: 'integer', minimum: 0 },
      results: { type: 'integer', minimum: 0 },
      tools: { type: 'array', items: { type: 'string' } },
    },
  },
] as const;

export const validateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: {
    result: { $ref: 'CallToolResult#' },
    protocolVersion: { $ref: 'ProtocolVersion#' },
  },
} as const;

/** `server` of a decision request, as policies see it; `more` adds to its description. */
export function serverMember(more = '') {
  return {
    type: 'object',
    description: `The MCP server; handed to policies as \`server\` (\`{ name: "" }\` when absent)${more}`,
    properties: { name: { type: 'string' } },
    additionalProperties: true,
  } as const;
}

/** `context` of a decision request, handed to policies as it is; `example` adds to its description. */
export function contextMember(example = '') {
  return { type: 'object', description: `Free-form; handed to policies as \`context\` as-is${example}`, additionalProperties: true } as const;
}

/** `validation` of /v1/validate and /v1/evaluate answers, and the count of findings left out of it. */
export const validationList = {
  type: 'array',
  description:
    'The mcp.* findings in result order, then the trust.* ones; at most TRUSTGATE_MAX_VALIDATION_FINDINGS of them (default 1000), and no more than the answer size bound allows (the lists of an answer together stay within 8 times the request plus 48 KiB): past that only the first finding of each rule and severity not yet listed is added, so every rule and severity that fired is always there',
  items: { $ref: 'ValidationFinding#' },
} as const;

export const validationOmitted = {
  type: 'integer',
  minimum: 1,
  description: 'How many validation findings were left out of `validation` past TRUSTGATE_MAX_VALIDATION_FINDINGS or the answer size bound; absent when none were',
} as const;

export const validateReply = {
  type: 'object',
  additionalProperties: false,
  description: 'The validation findings for the revision applied',
  required: ['valid', 'protocolVersion', 'validation'],
  properties: {
    valid: { type: 'boolean', description: 'False when any finding has severity `error`' },
    protocolVersion: { type: 'string', description: 'The revision whose rules were applied (a requested `2024-10-07` is answered as `2024-11-05`, whose rules it shares)' },
    validation: validationList,
    validationOmitted,
  },
} as const;

/** What each problem status means (docs/behaviour/limits.md); the `code` tells the cases apart. */
const problemDescriptions: Record<number, string> = {
  400: 'Bad request: malformed JSON, a body that fails the request schema, an unknown `protocolVersion`, nesting too deep, a limit exceeded, or (digest) a record that is not I-JSON or cannot be canonicalized; `code` says which',
  401: 'Missing or refused bearer token (TG_ERR_AUTH_TOKEN; only when authentication is configured: TRUSTGATE_TOKEN, TRUSTGATE_TOKENS_FILE or TRUSTGATE_JWKS, docs/operations/authentication.md); sent with `WWW-Authenticate: Bearer`',
  429: 'The principal is past one of its quotas (TG_ERR_QUOTA_EXCEEDED: TRUSTGATE_QUOTA_RPS, TRUSTGATE_QUOTA_SESSIONS, TRUSTGATE_QUOTA_INFLIGHT_BYTES); sent with `Retry-After`. Other principals are served as usual',
  403: 'Cross-origin request refused (TG_ERR_CROSS_ORIGIN): an `Origin` other than the service\'s own (`http://` or `https://` and the `Host`, where the `Host` is a loopback name or address) not listed in TRUSTGATE_ALLOWED_ORIGINS, or `Sec-Fetch-Site: cross-site`/`same-site`; or (PUT /v1/pins) a principal not in TRUSTGATE_PIN_ADMINS (TG_ERR_PIN_FORBIDDEN)',
  413: 'Request body over TRUSTGATE_BODY_LIMIT (default 8388608 bytes, 8 MiB)',
  415: 'Request body is not application/json (`text/plain`, form and multipart bodies are refused on every route, with or without a body)',
  404: 'No such session (never used, unused for two TTLs, or another principal\'s: a session belongs to the principal that created it), or no pin for that server and tool',
  422: 'Policies that do not load: a failed reload (`TG_ERR_POLICY_RELOAD`, the previous policy set stays in force) or playground policies (`TG_ERR_POLICY_INVALID`); `detail` names the file, the rule and the error',
  503: 'No policy set is loaded yet (`TG_ERR_SERVER_NOT_READY`), the service is overloaded (`TG_ERR_SERVER_OVERLOADED`: the event loop is saturated; `TG_ERR_OVERLOADED`: TRUSTGATE_MAX_INFLIGHT_BYTES of requests and answers are in flight), the session store (TRUSTGATE_SESSION_STORE) cannot be read or written (`TG_ERR_SESSION_STORE_UNAVAILABLE`: a request that names a session fails closed rather than being judged without it), or it holds TRUSTGATE_MAX_SESSIONS and the request names a new session (`TG_ERR_SESSION_STORE_FULL`: no live session is evicted to make room); sent with `Retry-After`',
};

export const problemReplies = (...statuses: number[]) => {
  const out: Record<number, unknown> = {};
  // A route behind authentication is charged to its principal's quotas too.
  for (const s of statuses.includes(401) ? [...statuses, 429] : statuses) {
    out[s] = {
      description: problemDescriptions[s] ?? 'Problem details',
      content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } },
    };
  }
  return out;
};

export { triState };

/**
 * OpenAPI security requirement of /v1/*, /mcp and the playground. It is also
 * what the service enforces when authentication is configured: a route whose
 * schema lists `bearer` is authenticated and charged to its principal's
 * quotas (src/http/bearer.ts), so the document and the check cannot disagree.
 */
export const v1Security = [{ bearer: [] }];

/** The schema of a route left out of the OpenAPI document that still takes the bearer token (the playground's page, /mcp's 405 answers). */
export const hiddenBehindToken = { hide: true, security: v1Security } as const;

/** The schema of a /v1 route answering `reply` (200) or problem+json with one of `problems` (docs/errors.md), behind the bearer token. */
export function v1Schema(route: { operationId: string; tags: string[]; summary: string; description?: string; body: unknown; reply: unknown; problems: number[] }) {
  const { operationId, tags, summary, description, body, reply, problems } = route;
  return { operationId, security: v1Security, tags, summary, ...(description !== undefined ? { description } : {}), body, response: { 200: reply, ...problemReplies(...problems) } };
}

/** The interceptor also takes the token as the `token` query parameter (docs/bindings/docker-gateway.md). */
export const interceptorSecurity: Array<Record<string, string[]>> = [{ bearer: [] }, { queryToken: [] }];

/**
 * The TypeScript type of what a wire schema admits, its `Name#` references
 * resolved against sharedSchemas. Members with a `default` stay optional:
 * the core also takes requests no validator filled in (the MCP bindings).
 */
export type FromWire<S extends JSONSchema> = FromSchema<S, { references: [...typeof sharedSchemas]; keepDefaultedPropertiesOptional: true }>;

/** POST /v1/validate's body (docs/behaviour/validation.md): a result checked without policies. */
export type ValidateRequest = FromWire<typeof validateBody>;

/** The 200 answer of POST /v1/validate. */
export type ValidateAnswer = FromWire<typeof validateReply>;

/** The TypeScript type of the shared schema registered as `$id` (`Finding`, `Session`, ...). */
export type WireShape<Id extends (typeof sharedSchemas)[number]['$id']> = FromWire<Extract<(typeof sharedSchemas)[number], { $id: Id }>>;

/** `tool.hints` and `tool.declared` of an answer, both of the shared `ToolHints` shape (HINTS_TEXT says which is which). */
export const HINT_VIEWS = { hints: { $ref: 'ToolHints#' }, declared: { $ref: 'ToolHints#' } } as const;

/** What `tool.hints` and `tool.declared` of an answer are (docs/behaviour/operator.md). */
export const HINTS_TEXT =
  "`hints`: the hints believed: what the server declared where its operator entry says `hints: \"declared\"`, otherwise MCP's default wherever a declared hint would lower protection (docs/behaviour/operator.md), and the operator's own `tools.<tool>.annotations` always. `declared`: the hints the server declared, MCP's default for each it leaves out (or gives as anything but a boolean)";
