/**
 * Wire schemas of GET /v1/policies and POST /v1/policies/reload (docs/policies/reference.md).
 */
import { EFFECTS, MODES, SCOPES } from '../policy/vocabulary.js';
import { problemReplies, v1Security } from './shared.js';

export const policyList = {
  type: 'object',
  required: ['policyRevision', 'policies'],
  properties: {
    policyRevision: { type: 'string', description: 'sha256 over the loaded files' },
    policies: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'mode', 'file', 'rules', 'ruleDetails'],
        properties: {
          id: { type: 'string' },
          description: { type: 'string' },
          mode: { type: 'string', enum: [...MODES], description: 'The mode written in the file' },
          effectiveMode: { type: 'string', enum: [...MODES], description: 'The mode it runs under after TRUSTGATE_MODE' },
          file: { type: 'string' },
          rules: { type: 'array', description: 'The rule ids, in evaluation order', items: { type: 'string' } },
          ruleDetails: {
            type: 'array',
            description: 'Each rule as loaded',
            items: {
              type: 'object',
              required: ['id', 'scope', 'effect', 'when'],
              properties: {
                id: { type: 'string' },
                scope: { type: 'string', enum: [...SCOPES] },
                mode: {
                  type: 'string',
                  enum: [...MODES],
                  description: "The rule's own mode, when the file gives one: the rule runs under the milder of it and the policy's mode (audit < warn < enforce), then TRUSTGATE_MODE",
                },
                effect: { type: 'string', enum: [...EFFECTS] },
                when: { type: 'string' },
              },
            },
          },
        },
      },
    },
  },
} as const;

export const listPoliciesSchema = {
  operationId: 'listPolicies',
  security: v1Security,
  tags: ['policies'],
  summary: 'The loaded policy set and its revision',
  response: { 200: { ...policyList, description: 'The policy set in force' }, ...problemReplies(401, 403, 503) },
} as const;

export const reloadPoliciesSchema = {
  operationId: 'reloadPolicies',
  security: v1Security,
  tags: ['policies'],
  summary: 'Reload the policy folder atomically; on failure the previous set stays in force (422)',
  description:
    'With worker processes (TRUSTGATE_WORKERS above 1) any worker takes the request, the folder is read once, and the answer comes once every worker serves the new set; a failed reload leaves every worker on the previous set. SIGHUP to the started process does the same.',
  response: { 200: { ...policyList, description: 'The reloaded policy set, now in force' }, ...problemReplies(401, 403, 415, 422) },
} as const;
