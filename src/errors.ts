/**
 * The error-code registry: every client-visible error, its HTTP status and
 * title. `docs/errors.md` lists the same table; a test keeps the two equal.
 * A policy outcome is never an error: `deny` is a 200.
 */
export const ERRORS = {
  TG_ERR_BODY_MALFORMED_JSON: { status: 400, title: 'Request body is not valid JSON' },
  TG_ERR_BODY_SCHEMA: { status: 400, title: 'Request body does not match the request schema' },
  TG_ERR_BODY_TOO_DEEP: { status: 400, title: 'Request body nests too deeply' },
  TG_ERR_RESULT_TOO_DEEP: { status: 400, title: 'Result nests too deeply' },
  TG_ERR_PROTOCOL_VERSION_UNKNOWN: { status: 400, title: 'Unknown MCP protocol revision' },
  TG_ERR_RECORD_TOO_DEEP: { status: 400, title: 'Record nests too deeply to canonicalize' },
  TG_ERR_RECORD_NOT_IJSON: { status: 400, title: 'Record is not I-JSON' },
  TG_ERR_RECORD_NOT_CANONICALIZABLE: { status: 400, title: 'Record cannot be canonicalized' },
  TG_ERR_LIMIT_BLOCKS: { status: 400, title: 'Too many content blocks' },
  TG_ERR_LIMIT_EVIDENCE: { status: 400, title: 'Too many evidence entries' },
  TG_ERR_LIMIT_STRING: { status: 400, title: 'String too long' },
  TG_ERR_HTTP_MALFORMED: { status: 400, title: 'Request is not valid HTTP' },
  TG_ERR_REQUEST_TARGET: { status: 400, title: 'Request target cannot be decoded' },
  TG_ERR_AUTH_TOKEN: { status: 401, title: 'Missing or wrong bearer token' },
  TG_ERR_CROSS_ORIGIN: { status: 403, title: 'Cross-origin request refused' },
  TG_ERR_PIN_FORBIDDEN: { status: 403, title: 'This principal may not accept tool pins' },
  TG_ERR_ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  TG_ERR_SESSION_NOT_FOUND: { status: 404, title: 'No such session' },
  TG_ERR_PIN_NOT_FOUND: { status: 404, title: 'No tool pin for that server and tool' },
  TG_ERR_REQUEST_TIMEOUT: { status: 408, title: 'Request took too long to arrive' },
  TG_ERR_BODY_TOO_LARGE: { status: 413, title: 'Request body is over the limit' },
  TG_ERR_HTTP_HEADERS_TOO_LARGE: { status: 431, title: 'Request headers are too large' },
  TG_ERR_QUOTA_EXCEEDED: { status: 429, title: 'Quota of this principal exceeded; retry later' },
  TG_ERR_MEDIA_TYPE: { status: 415, title: 'Request body must be application/json' },
  TG_ERR_POLICY_RELOAD: { status: 422, title: 'Policy reload failed; the previous policy set stays in force' },
  TG_ERR_POLICY_INVALID: { status: 422, title: 'The policies given do not load' },
  TG_ERR_SERVER_OVERLOADED: { status: 503, title: 'Service is overloaded; retry later' },
  TG_ERR_OVERLOADED: { status: 503, title: 'Too many bytes in flight; retry later' },
  TG_ERR_SERVER_NOT_READY: { status: 503, title: 'Service is not ready' },
  TG_ERR_SESSION_STORE_UNAVAILABLE: { status: 503, title: 'Session store is unavailable; retry later' },
  TG_ERR_SESSION_STORE_FULL: { status: 503, title: 'Session store is full; no new session until one ends or expires' },
  TG_ERR_SERVER_INTERNAL: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** RFC 6901 pointer + message for a body that failed validation. */
export interface ProblemItem {
  pointer: string;
  message: string;
}

/** RFC 9457 problem details, with Trustgate's `code` and optional `errors[]`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: ProblemItem[];
}

/** Base of every problem `type` URI; the code follows it and names its row in docs/errors.md. */
export const PROBLEM_TYPE_BASE = 'urn:trustgate:problem:';

/** An error that is meant for the client; the HTTP layer turns it into problem+json. */
export class TrustgateError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors?: ProblemItem[];
  readonly headers?: Record<string, string>;
  constructor(code: ErrorCode, detail: string, errors?: ProblemItem[], headers?: Record<string, string>) {
    super(detail);
    this.name = 'TrustgateError';
    this.code = code;
    this.status = ERRORS[code].status;
    if (errors) this.errors = errors;
    if (headers) this.headers = headers;
  }
}

/** Build the problem body for a code. */
export function problem(code: ErrorCode, detail: string, errors?: ProblemItem[]): Problem {
  const entry = ERRORS[code];
  const p: Problem = {
    type: PROBLEM_TYPE_BASE + code,
    title: entry.title,
    status: entry.status,
    detail,
    code,
  };
  if (errors && errors.length > 0) p.errors = errors;
  return p;
}
