/**
 * The request bodies of /v1/evaluate and /v1/evaluate-call, checked with the
 * routes' own JSON Schemas (the same ones the HTTP layer validates with), so
 * a case or an `eval` request the service would answer 400 is refused here
 * too, with the pointer and the reason.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { sharedSchemas } from '../wire/shared.js';
import { evaluateBody } from '../wire/evaluate.js';
import { evaluateCallBody } from '../wire/evaluate-call.js';

// As the HTTP layer validates: never coerce, never fill defaults, never drop members.
const ajv = new Ajv({ strict: false, allErrors: false, coerceTypes: false, useDefaults: false, removeAdditional: false });
for (const s of sharedSchemas) ajv.addSchema(s);
const checkEvaluate = ajv.compile(evaluateBody);
const checkCall = ajv.compile(evaluateCallBody);

/** One problem with a request body: where (RFC 6901 pointer into the body) and what. */
export interface BodyProblem {
  pointer: string;
  message: string;
}

function describe(e: ErrorObject): BodyProblem {
  let message = e.message ?? 'is invalid';
  if (e.keyword === 'additionalProperties') message = `has unknown member ${JSON.stringify((e.params as { additionalProperty: string }).additionalProperty)}`;
  return { pointer: e.instancePath, message };
}

/** The first problem of a /v1/evaluate body (`call: false`) or /v1/evaluate-call body (`call: true`); undefined when it is valid. */
export function requestProblem(body: unknown, call: boolean): BodyProblem | undefined {
  const check = call ? checkCall : checkEvaluate;
  if (check(body)) return undefined;
  const first = check.errors?.[0];
  return first === undefined ? { pointer: '', message: 'does not match the request schema' } : describe(first);
}
