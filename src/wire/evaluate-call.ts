/**
 * Wire schemas of POST /v1/evaluate-call (docs/behaviour/sessions.md): the call, the pre-call decision answered.
 */
import { type FromWire, HINT_VIEWS, HINTS_TEXT, contextMember, serverMember, traceList, v1Schema } from './shared.js';

export const evaluateCallBody = {
  type: 'object',
  additionalProperties: false,
  required: ['call'],
  properties: {
    call: {
      type: 'object',
      description:
        'The `tools/call` request params. Policies see `call.name` and `call.arguments` (`{}` when absent); the decision log records only the argument names, never their values.',
      additionalProperties: false,
      required: ['name'],
      properties: {
        name: { type: 'string', maxLength: 256, description: 'The tool called' },
        arguments: { type: 'object', additionalProperties: true, description: 'The call arguments, as the model gave them' },
        _meta: { type: 'object', additionalProperties: true, description: 'Accepted and not read' },
      },
    },
    tool: {
      type: 'object',
      description:
        'The tool definition from `tools/list`. Handed to policies as `tool`, with `tool.hints` (the hints believed), `tool.declared` (the hints the server said), `tool.digest` and `tool.pin` added. Pinned by (`server.name`, `tool.name`; the call name when the definition has none). Its `name`, when present, must equal `call.name` (400 otherwise): the definition judged is the one of the tool called.',
      properties: { name: { type: 'string' }, annotations: { type: 'object', additionalProperties: true } },
      additionalProperties: true,
    },
    server: serverMember('; its name keys the tool pins'),
    session: { $ref: 'SessionRef#' },
    context: contextMember(),
    options: {
      type: 'object',
      additionalProperties: false,
      description: 'Answer options',
      properties: {
        explain: { type: 'boolean', default: false, description: 'Add `trace`: every call rule evaluated, with the value of its condition' },
      },
    },
  },
} as const;

export const evaluateCallReply = {
  type: 'object',
  additionalProperties: false,
  description: 'The pre-call decision: run the call when `outcome` is not `deny`, after asking the user when `requiresConsent` is true',
  required: ['decisionId', 'outcome', 'requiresConsent', 'policyRevision', 'findings', 'tool'],
  properties: {
    decisionId: { type: 'string' },
    outcome: { type: 'string', enum: ['allow', 'warn', 'deny'] },
    requiresConsent: { type: 'boolean', description: 'The host must ask the user before running the call' },
    policyRevision: { type: 'string' },
    findings: { type: 'array', items: { $ref: 'Finding#' } },
    tool: {
      type: 'object',
      additionalProperties: false,
      description: HINTS_TEXT,
      required: ['hints', 'declared', 'pin'],
      properties: {
        ...HINT_VIEWS,
        digest: {
          type: 'string',
          description: 'sha256 of the JCS text of the definition\'s name, title, description, inputSchema, outputSchema and annotations (those present); absent without a tool',
        },
        pin: {
          type: 'string',
          enum: ['first-seen', 'match', 'changed', 'unavailable', 'none', 'unlisted'],
          description:
            '`first-seen`: nothing was pinned for (server, tool), this digest now is; `match`: the pinned digest; `changed`: another digest is pinned (accept the new one with PUT /v1/pins); `unavailable`: nothing was pinned and the store already holds TRUSTGATE_MAX_PINS pins, so this one was refused (pins are never evicted; counted in `trustgate_pins_refused_total`; the shipped session policy denies the call); `none`: the request has no `tool`; `unlisted` (`trustgate proxy` only): the server did not list the tool called, so there is no definition and nothing is pinned',
        },
      },
    },
    session: { $ref: 'Session#' },
    trace: traceList,
  },
} as const;

export const evaluateCallSchema = v1Schema({
  operationId: 'evaluateCall',
  tags: ['decisions'],
  summary: 'Decide on a tool call before it runs',
  description: [
    'Runs the `scope: call` rules (and only those; result and block rules never run here). Their effects are deny, consent and flag. Outcome as for /v1/evaluate: `deny` if an applied finding has effect deny; else `warn` if any finding ran in warn mode or consent is required; else `allow`.',
    'Policies see `call`, `tool` (with `hints`, `declared`, `digest`, `pin`), `server`, `context` and `session` (the values before this request; without a session id: id "", flags false, counts 0).',
    'The first definition seen for a (server, tool) pair is pinned (trust on first use); a later different one is `changed` until an operator accepts it with PUT /v1/pins.',
    'Every request reads the pins, so when the session store cannot be read or written it fails closed (503). A request that names a session the store does not hold while it holds TRUSTGATE_MAX_SESSIONS is refused (503 `TG_ERR_SESSION_STORE_FULL`): no live session is evicted to make room.',
  ].join('\n\n'),
  body: evaluateCallBody,
  reply: evaluateCallReply,
  problems: [400, 401, 404, 413, 415, 503],
});

/** POST /v1/evaluate-call's body (docs/behaviour/sessions.md). */
export type EvaluateCallRequest = FromWire<typeof evaluateCallBody>;

/** The 200 answer of POST /v1/evaluate-call. */
export type CallDecision = FromWire<typeof evaluateCallReply>;
