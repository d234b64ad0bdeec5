/**
 * Wire schemas of the session and pin routes (docs/behaviour/sessions.md).
 */
import { PIN_DIGEST_PATTERN } from '../session/pins.js';
import { type FromWire, problemReplies, v1Security } from './shared.js';

export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { $ref: 'SessionId#' } },
} as const;

export const pinName = {
  server: { type: 'string', maxLength: 1024, description: '`server.name` as the calls send it; `""` (the default) for calls without a server' },
  tool: { type: 'string', maxLength: 1024, description: '`tool.name` of the definition (the call name when the definition has none)' },
} as const;

export const pinQuery = { type: 'object', additionalProperties: false, required: ['tool'], properties: pinName } as const;

export const pinReply = {
  type: 'object',
  required: ['server', 'tool', 'digest'],
  properties: {
    server: { type: 'string' },
    tool: { type: 'string' },
    digest: { type: 'string', description: 'The pinned digest (`tool.digest` of /v1/evaluate-call answers)' },
    previous: { type: ['string', 'null'], description: 'PUT only: the digest pinned before, null when there was none' },
  },
} as const;

/** The `{id}` of /v1/sessions/{id}. */
export type SessionParams = FromWire<typeof idParams>;

/** GET /v1/pins's query. */
export type PinQuery = FromWire<typeof pinQuery>;

export const getSessionSchema = {
  operationId: 'getSession',
  security: v1Security,
  tags: ['sessions'],
  summary: 'Show what a session has been shown',
  description:
    'Reading a session is a use: it starts its TRUSTGATE_SESSION_TTL again. A session whose labels the store lost (its TTL ran out and it is used within one more TTL; with Redis, any id not held for one TTL after Redis lost its data) reads as `forgotten: true` with `untrusted` and `sensitive` true. A session belongs to the principal whose request created it (docs/operations/authentication.md): 404 (TG_ERR_SESSION_NOT_FOUND) when no session has the id (never used, or unused for two TTLs) and when it is another principal\'s. No store evicts a session to make room.',
  params: idParams,
  response: { 200: { $ref: 'Session#' }, ...problemReplies(400, 401, 404, 503) },
} as const;

export const deleteSessionSchema = {
  operationId: 'deleteSession',
  security: v1Security,
  tags: ['sessions'],
  summary: 'End a session',
  description:
    'Its labels, counts and values are dropped and the id reads as `forgotten` (untrusted and sensitive), still this principal\'s, for one more TRUSTGATE_SESSION_TTL: ending a session never makes it clean, so a request naming it after a DELETE is judged as after untrusted content. Tool pins are not per session and stay. 204 when a session was ended (a forgotten one included), 404 (TG_ERR_SESSION_NOT_FOUND) when there was none or it is another principal\'s.',
  params: idParams,
  response: { 204: { type: 'null', description: 'The session was ended' }, ...problemReplies(400, 401, 404, 503) },
} as const;

export const userWordsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['text'],
  properties: { text: { type: 'string', description: 'What the user typed this turn' } },
} as const;

/** POST /v1/sessions/{id}/user's body. */
export type UserWordsBody = FromWire<typeof userWordsBody>;

export const userWordsSchema = {
  operationId: 'userWords',
  security: v1Security,
  tags: ['sessions'],
  summary: "Record the user's own words",
  description:
    "One call per user turn (docs/behaviour/flows.md): the values of what the user typed (addresses, URLs, accounts, numbers, paths, identifiers, short strings whole) are recorded in the session with origin `user`, so a call carrying them is not taken for one carrying what a tool result showed. Creates the session when it does not exist yet (as a decision naming it does); answers the session after. Only keyed digests of the values are kept, never the text. The same as `context.userText` on /v1/evaluate-call. 404 (TG_ERR_SESSION_NOT_FOUND) when the session is another principal's.",
  params: idParams,
  body: userWordsBody,
  response: { 200: { $ref: 'Session#' }, ...problemReplies(400, 401, 404, 413, 415, 503) },
} as const;

export const getPinSchema = {
  operationId: 'getPin',
  security: v1Security,
  tags: ['sessions'],
  summary: 'Show the digest pinned for a tool of a server',
  description: 'The pin of a (`server`, `tool`) pair (`server` `""` for calls without one); 404 (TG_ERR_PIN_NOT_FOUND) before any definition was pinned for it.',
  querystring: pinQuery,
  response: { 200: pinReply, ...problemReplies(400, 401, 404, 503) },
} as const;

export const acceptPinSchema = {
  operationId: 'acceptPin',
  security: v1Security,
  tags: ['sessions'],
  summary: 'Accept a tool definition: pin its digest for (server, tool)',
  description:
    'For an operator who has reviewed a definition reported `changed`: send the `tool.digest` of that /v1/evaluate-call answer. Later calls with that definition are `match`; the one pinned before becomes `changed`. Also pins a pair never seen. With TRUSTGATE_PIN_ADMINS set, only the principals it names may (403 TG_ERR_PIN_FORBIDDEN otherwise).',
  body: {
    type: 'object',
    additionalProperties: false,
    required: ['tool', 'digest'],
    properties: {
      ...pinName,
      digest: { type: 'string', pattern: PIN_DIGEST_PATTERN, description: '`sha256:` and 64 hex digits (upper case is accepted and lower-cased)' },
    },
  },
  response: { 200: pinReply, ...problemReplies(400, 401, 403, 415, 503) },
  // 503 TG_ERR_SESSION_STORE_FULL: a new pair while TRUSTGATE_MAX_PINS pins are held (no pin is evicted).
} as const;

/** PUT /v1/pins's body. */
export type PinAcceptBody = FromWire<(typeof acceptPinSchema)['body']>;
