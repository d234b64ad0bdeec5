/**
 * Wire schemas of GET /healthz and GET /readyz (docs/operations/admission.md).
 */
import { problemReplies } from './shared.js';

export const healthReply = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string' }, policyRevision: { type: 'string' } },
} as const;

/** Liveness and readiness (docs/bindings/http.md). Open even when a token is set (`security: []`). */
export const admissionReport = {
  type: 'object',
  description:
    'Pressure on this process\'s budget of bytes in flight (TRUSTGATE_MAX_INFLIGHT_BYTES): requests past it wait briefly, then get 503 `TG_ERR_OVERLOADED`. With worker processes, the figures are those of the worker that answered',
  required: ['inflightBytes', 'maxInflightBytes', 'waiting', 'refused'],
  properties: {
    inflightBytes: { type: 'integer', description: 'Bytes of requests being decided and of answers not yet sent' },
    maxInflightBytes: { type: 'integer', description: 'TRUSTGATE_MAX_INFLIGHT_BYTES' },
    waiting: { type: 'integer', description: 'Requests waiting for room' },
    refused: { type: 'integer', description: 'Requests refused with `TG_ERR_OVERLOADED` since the process started' },
  },
} as const;

export const healthzSchema = {
  operationId: 'healthz',
  tags: ['health'],
  summary: 'Liveness: the process answers',
  security: [],
  response: { 200: { ...healthReply, description: 'The process is up' } },
} as const;

export const readyzSchema = {
  operationId: 'readyz',
  tags: ['health'],
  summary: 'Readiness: 200 once a policy set is loaded, while the session store answers',
  description:
    '503 `TG_ERR_SERVER_NOT_READY` until a policy set is loaded; 503 `TG_ERR_SESSION_STORE_UNAVAILABLE` while the session store (TRUSTGATE_SESSION_STORE) cannot be reached: with the memory store and worker processes, while the database they share stays locked for more than a second, fails, or is gone (a deleted database does not come back: restart the service); with Redis, while the connection is down or commands fail. It turns 200 again by itself once the store answers.',
  security: [],
  response: {
    200: {
      ...healthReply,
      properties: { ...healthReply.properties, admission: admissionReport },
      description: 'A policy set is loaded; `policyRevision` names it. A process whose budget of bytes in flight is full stays ready (it sheds what does not fit); `admission` reports the pressure',
    },
    ...problemReplies(503),
  },
} as const;
