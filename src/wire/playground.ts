/**
 * Wire schema of POST /v1/playground (docs/policy-testing.md).
 */
import { MAX_POLICY_FILE_BYTES } from '../policy/load.js';
import { type FromWire, problemReplies, v1Security } from './shared.js';

/** Most policies one playground request may carry. */
export const MAX_PLAYGROUND_POLICIES = 64;

export const playgroundBody = {
  type: 'object',
  additionalProperties: false,
  required: ['policies', 'request'],
  properties: {
    policies: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_PLAYGROUND_POLICIES,
      description: 'The policies to decide with, in this order, as files of a policy folder would be (only these: the loaded set is not used)',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'text'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', description: 'A file name (`*.json` is read as JSON, anything else as YAML); named in load errors' },
          text: { type: 'string', maxLength: MAX_POLICY_FILE_BYTES, description: 'The policy file\'s text: one policy' },
        },
      },
    },
    request: { type: 'object', description: 'A /v1/evaluate body, or a /v1/evaluate-call body when `call` is true; checked as those routes check it' },
    call: { type: 'boolean', default: false, description: 'Decide a tool call (/v1/evaluate-call) rather than a result' },
  },
} as const;

export const playgroundEvaluateSchema = {
  operationId: 'playgroundEvaluate',
  security: v1Security,
  tags: ['policies'],
  summary: 'Decide one request with the policies given (TRUSTGATE_PLAYGROUND=1 only)',
  description: [
    'Served only when TRUSTGATE_PLAYGROUND=1 (off by default), for the page at `/playground`. The answer is the /v1/evaluate answer (or the /v1/evaluate-call answer with `call: true`) as if the given policies were the loaded set; `policyRevision` is theirs.',
    'Nothing is written: a `session` in the request starts empty and is forgotten, and a tool is always `first-seen` (no pin is read or written).',
    'Policies that do not load are a 422 `TG_ERR_POLICY_INVALID` naming the file, the rule and the error, as a failed reload reports them; a request the evaluate route would refuse is the same 400, its pointers under `/request`.',
  ].join('\n\n'),
  body: playgroundBody,
  response: { 200: { type: 'object', additionalProperties: true, description: 'The decision' }, ...problemReplies(400, 401, 403, 413, 415, 422) },
} as const;

/** POST /v1/playground's body. */
export type PlaygroundRequest = FromWire<typeof playgroundBody>;
