import type { FastifyInstance, FastifyRequest } from 'fastify';
import pino from 'pino';
import type { DecisionLogEntry } from '../../decision/log.js';
import type { EvaluateRequest } from '../../decision/pipeline.js';
import { resultRepeatsNames } from '../body.js';
import { decisionLineWriter } from '../../logger.js';
import { v1Security, problemReplies, triState, validationList, validationOmitted } from '../schemas.js';

const sources = {
  type: 'object',
  description: 'Pointers of the claims (or verified data-class evidenceRefs) that produced each effective flag; present with `options.explain`',
  properties: { sensitive: { type: 'array', items: { type: 'string' } }, untrusted: { type: 'array', items: { type: 'string' } } },
} as const;

export const evaluateBody = {
  type: 'object',
  additionalProperties: false,
  required: ['result'],
  properties: {
    result: { $ref: 'CallToolResult#' },
    protocolVersion: { $ref: 'ProtocolVersion#' },
    tool: {
      type: 'object',
      description: 'The tool that produced the result; handed to policies as `tool` (`{ name: "", annotations: {} }` when absent)',
      properties: { name: { type: 'string' }, annotations: { type: 'object', additionalProperties: true } },
      additionalProperties: true,
    },
    server: {
      type: 'object',
      description: 'The MCP server; handed to policies as `server` (`{ name: "" }` when absent)',
      properties: { name: { type: 'string' } },
      additionalProperties: true,
    },
    context: {
      type: 'object',
      description: 'Free-form; handed to policies as `context` as-is (e.g. `destination`, `reader`)',
      additionalProperties: true,
    },
    session: { $ref: 'SessionRef#' },
    options: {
      type: 'object',
      additionalProperties: false,
      description: 'Answer options',
      properties: {
        explain: {
          type: 'boolean',
          default: false,
          description:
            'Add provenance: `labelSources` and `blocks[].sources`, the RFC 6901 pointers of the claims (or verified non-public data-class evidenceRefs) behind each effective flag. Off by default: on a typical result it is a third of the decision.',
        },
        omitUnmodifiedResult: {
          type: 'boolean',
          default: false,
          description:
            'Leave `result` out of the answer when nothing was applied (`modified: false`); the answer then carries `resultOmitted: true` and the host forwards the result it already holds. Halves the answer for the common case of a result that passes unchanged. A result whose request text repeats a member name (or a body that repeats a top-level member) is never left out: JSON parsers disagree on which copy wins, so the host gets the result as it was judged.',
        },
      },
    },
    evidence: {
      type: 'array',
      description: 'Records the host holds, matched to evidenceRefs by digest first, then by ref',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['record'],
        properties: {
          digest: { type: 'string', description: '`<alg>:<hex>` of the record, as the evidenceRef names it' },
          ref: { type: 'string', description: 'Locator, matched to the evidenceRef `ref`' },
          record: { description: 'The evidence record (I-JSON)' },
        },
      },
    },
  },
} as const;

export const evaluateReply = {
  type: 'object',
  description: 'The decision; `result` is the result to forward, absent when `outcome` is `deny`',
  required: ['decisionId', 'outcome', 'modified', 'requiresConsent', 'policyRevision', 'labels', 'blocks', 'evidence', 'findings', 'validation'],
  properties: {
    decisionId: { type: 'string' },
    outcome: { type: 'string', enum: ['allow', 'warn', 'deny'] },
    modified: { type: 'boolean', description: 'True when enforced effects changed the result' },
    requiresConsent: { type: 'boolean', description: 'The host must ask the user before forwarding' },
    policyRevision: { type: 'string' },
    protocolVersion: { type: 'string', description: 'The revision whose validation rules applied' },
    labels: { type: 'object', required: ['sensitive', 'untrusted'], properties: { sensitive: triState, untrusted: triState } },
    labelSources: sources,
    structuredContent: {
      type: 'object',
      description: 'Flags of `structuredContent`, which the result-level claim governs (block claims do not reach it); present when the result has one',
      required: ['sensitive', 'untrusted'],
      properties: { sensitive: triState, untrusted: triState },
    },
    blocks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'type', 'sensitive', 'untrusted', 'actions'],
        properties: {
          index: { type: 'integer' },
          type: { type: 'string' },
          sensitive: triState,
          untrusted: triState,
          actions: { type: 'array', items: { type: 'string', enum: ['drop', 'redact', 'spotlight', 'spotlight-skipped'] } },
          sources,
        },
      },
    },
    evidence: { type: 'array', items: { $ref: 'EvidenceOutcome#' } },
    findings: { type: 'array', items: { $ref: 'Finding#' } },
    validation: validationList,
    validationOmitted,
    result: { $ref: 'CallToolResult#' },
    resultOmitted: { type: 'boolean', description: 'Present (true) when `options.omitUnmodifiedResult` left out an unchanged result' },
    session: { $ref: 'Session#' },
  },
} as const;

/** The decision log line writer for a request, or nothing when info is off (the entry is then never built). */
export function decisionLogger<T extends object = DecisionLogEntry>(request: FastifyRequest): ((entry: T) => void) | undefined {
  if ((pino.levels.values[request.log.level] ?? Infinity) > pino.levels.values.info!) return undefined;
  const write = decisionLineWriter(request.log as pino.Logger);
  return (entry) => {
    request.decisionLogged = true;
    write(entry);
  };
}

/**
 * Decisions are built from allow-listed fields only, so plain JSON.stringify
 * serializes them; the schema stays the validator of tests and the OpenAPI
 * entry. (fast-json-stringify was the larger cost on this route.)
 */
export const plainJson = () => (data: unknown) => JSON.stringify(data);

/** POST /v1/evaluate (contract section 3). */
export function evaluateRoutes(app: FastifyInstance): void {
  const { core } = app.trustgate;
  app.post<{ Body: EvaluateRequest & { session?: { id: string } } }>(
    '/v1/evaluate',
    {
      schema: {
        operationId: 'evaluate',
        security: v1Security,
        tags: ['decisions'],
        summary: 'Decide on a CallToolResult before it is forwarded to a model',
        description:
          [
            '`deny` is a 200 without `result` (so is an unchanged result when `options.omitUnmodifiedResult` is set). `findings` list every matched rule with the mode it ran under (after TRUSTGATE_MODE); only enforce findings are applied (`applied: true`).',
            'Outcome: `deny` if an applied finding has effect deny; else `warn` if any finding ran in warn mode or consent is required; else `allow`.',
            'When several effects hit one block, drop beats redact beats spotlight; `blocks[].actions` says which was applied (`spotlight-skipped` for blocks spotlight cannot fence).',
            'A rule whose condition fails to evaluate, or that runs past the per-decision CEL budget (TRUSTGATE_EVAL_BUDGET_MS), counts as matched and its finding carries `error` (fail closed).',
            'Every pointer is an RFC 6901 JSON Pointer into the request `result`; a missing required MCP member is reported at the pointer of the object that should hold it.',
            'An evidence record whose request text repeats a member name or holds an integer literal outside -(2^53-1)..2^53-1 is not I-JSON: its evidenceRef is `malformed`.',
            'With `session`, policies see what the session was shown before (`session` variable), and the session then takes in what this answer forwards: `untrusted`/`sensitive` from forwarded blocks (fenced ones included) and forwarded structuredContent, the most restrictive verified data class among them. Withheld blocks add nothing; a denied result adds no labels but is counted in `results`. When the session store cannot be read or written the request fails closed (503).',
          ].join('\n\n'),
        body: evaluateBody,
        response: { 200: evaluateReply, ...problemReplies(400, 401, 413, 415, 503) },
      },
      serializerCompiler: plainJson,
      // Only evidence records are judged as I-JSON (repeated member names, unsafe integers).
      config: { jsonScanFocus: ['evidence', '*', 'record'] },
    },
    async (request) =>
      core.evaluateResult({
        request: request.body,
        scan: request.jsonScan,
        log: decisionLogger(request),
        resultRepeatsNames: () => resultRepeatsNames(request.jsonText),
      }),
  );
}
