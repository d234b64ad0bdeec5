/**
 * Wire schemas of POST /v1/evaluate (docs/behaviour/decisions.md): the request, the decision answered.
 */
import { type FromWire, HINT_VIEWS, HINTS_TEXT, contextMember, problemReplies, serverMember, traceList, triState, v1Security, validateBody, validationList, validationOmitted } from './shared.js';

export const sources = {
  type: 'object',
  additionalProperties: false,
  required: ['sensitive', 'untrusted'],
  description:
    'Pointers of the claims (or verified data-class evidenceRefs) that produced each effective flag; present with `options.explain`. The `_meta` key in a pointer names the dialect of the claim: `/_meta/io.modelcontextprotocol~1trust-annotations/sensitive` (trust annotations), `/_meta/ifc/confidentiality` (ifc), `/_meta/com.github.ifc~1labels/$[\'content\'][0]/integrity` (fides: the path key, then the label member; the entry itself when the whole label counts). At most 16 fides entries that govern every block (`$`, `$[\'content\']`, paths that cannot be placed) are listed per flag and value',
  properties: { sensitive: { type: 'array', items: { type: 'string' } }, untrusted: { type: 'array', items: { type: 'string' } } },
} as const;

export const evaluateBody = {
  ...validateBody,
  properties: {
    ...validateBody.properties,
    tool: {
      type: 'object',
      description: 'The tool that produced the result; handed to policies as `tool` (`{ name: "", annotations: {} }` when absent)',
      properties: { name: { type: 'string' }, annotations: { type: 'object', additionalProperties: true } },
      additionalProperties: true,
    },
    server: serverMember(),
    context: contextMember(' (e.g. `destination`, `reader`)'),
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
            'Add `trace` (every rule evaluated, with the value of its condition) and provenance: `labelSources` and `blocks[].sources`, the RFC 6901 pointers of the claims (trust annotations and the label dialects read, see TRUSTGATE_DIALECTS) or verified non-public data-class evidenceRefs behind each effective flag. Off by default: on a typical result it is a third of the decision.',
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

/** One `blocks` entry of a decision: the block's flags and what it went through. */
export const blockOutcome = {
  type: 'object',
  additionalProperties: false,
  required: ['index', 'type', 'sensitive', 'untrusted', 'actions'],
  properties: {
    index: { type: 'integer' },
    type: { type: 'string' },
    sensitive: triState,
    untrusted: triState,
    actions: {
      type: 'array',
      description:
        'What the block went through, in order: `label` (a label rule raised its flags, docs/behaviour/labels-and-detectors.md), `mask` (a mask rule replaced spans in it), then the transforming action (`drop`, `redact`, `spotlight`, `spotlight-skipped`).',
      items: { type: 'string', enum: ['label', 'mask', 'drop', 'redact', 'spotlight', 'spotlight-skipped'] },
    },
    sources,
  },
} as const;

export const evaluateReply = {
  type: 'object',
  additionalProperties: false,
  description: 'The decision; `result` is the result to forward, absent when `outcome` is `deny`',
  required: ['decisionId', 'outcome', 'modified', 'requiresConsent', 'policyRevision', 'protocolVersion', 'labels', 'blocks', 'evidence', 'findings', 'validation', 'withheld', 'masked'],
  properties: {
    decisionId: { type: 'string' },
    outcome: { type: 'string', enum: ['allow', 'warn', 'deny'] },
    modified: {
      type: 'boolean',
      description:
        'True when the forwarded `result` differs from the input: enforced effects changed it, or members were withheld (`withheld`), which happens even when no policy matched if a member name differs from another only by case folding (`mcp.member.casefold`). False exactly when `result` is the input as it came.',
    },
    requiresConsent: { type: 'boolean', description: 'The host must ask the user before forwarding' },
    policyRevision: { type: 'string' },
    protocolVersion: { type: 'string', description: 'The revision whose validation rules applied (a requested `2024-10-07` is answered as `2024-11-05`, whose rules it shares)' },
    labels: { type: 'object', additionalProperties: false, required: ['sensitive', 'untrusted'], properties: { sensitive: triState, untrusted: triState } },
    tool: {
      type: 'object',
      additionalProperties: false,
      description: `Present when the request has a \`tool\`, as policies read them (\`tool.hints\`, \`tool.declared\`). ${HINTS_TEXT}`,
      required: ['hints', 'declared'],
      properties: HINT_VIEWS,
    },
    labelSources: sources,
    structuredContent: {
      type: 'object',
      additionalProperties: false,
      description:
        "Flags of `structuredContent`, which the result-level claims govern, with fides labels on `$['structuredContent']` paths (block claims do not reach it); present when the result has one",
      required: ['sensitive', 'untrusted'],
      properties: { sensitive: triState, untrusted: triState },
    },
    blocks: { type: 'array', items: blockOutcome },
    evidence: { type: 'array', items: { $ref: 'EvidenceOutcome#' } },
    findings: {
      type: 'array',
      description:
        'Every matched rule with the mode it ran under, at most TRUSTGATE_MAX_FINDINGS of them (default 1000) and no more than the answer size bound allows (the lists of an answer together stay within 8 times the request plus 48 KiB): past that only the first finding of each further policy, rule and mode is listed. Every effect is applied to every block it matched whatever is listed.',
      items: { $ref: 'Finding#' },
    },
    findingsOmitted: { type: 'integer', minimum: 1, description: 'How many findings were left out of `findings`; absent when none were' },
    validation: validationList,
    validationOmitted,
    evidenceOmitted: {
      type: 'integer',
      minimum: 1,
      description: 'How many evidenceRef outcomes were left out of `evidence` (the last ones) by the answer size bound; absent when none were',
    },
    blocksOmitted: {
      type: 'integer',
      minimum: 1,
      description:
        'How many entries were left out of `blocks` (the last ones) by the answer size bound, which only a result of many tiny blocks reaches; absent when none were. Each listed entry names its block by `index`.',
    },
    result: { $ref: 'CallToolResult#' },
    withheld: {
      type: 'array',
      items: { type: 'string' },
      description: [
        'RFC 6901 pointers into the request `result` of everything withheld from the forwarded `result` beyond whole blocks that an effect redacted or dropped (docs/behaviour/forwarding.md, law 4), sorted by their reference tokens (array indexes numerically). Empty when nothing was, and on `deny`.',
        'Whenever a transforming effect (redact, drop, spotlight, at block or result scope) applies, the forwarded result is rebuilt from what was judged: `content`, a boolean `isError`, a string `resultType` (from 2026-07-28) and a `_meta` holding only the trust claim; `structuredContent` (it mirrors the blocks), `toolResult`, unknown members and other `_meta` entries are withheld and listed (`/structuredContent`, `/toolResult`, `/_meta/com.example~1trace`).',
        'A spotlit block keeps only the members its type defines in the revision (others listed, e.g. `/content/0/TEXT`, `/content/0/_meta/com.example~1x`, `/content/2/icons`, `/content/1/resource/blob` of a resource that also has `text`); a block spotlight cannot fence at all (a `blob` whose mimeType is not textual, a content item that is not an object) is replaced by a placeholder and listed whole (`/content/3`).',
        'Members a case-insensitive host could read as another member (`mcp.member.casefold`) are withheld wherever they are and listed, with or without effects.',
      ].join(' '),
    },
    withheldOmitted: {
      type: 'integer',
      description:
        'Pointers left out of `withheld` past TRUSTGATE_MAX_VALIDATION_FINDINGS (1000; the first ones in document order are listed): what they name is withheld all the same. Present when some were.',
    },
    masked: {
      type: 'array',
      description: [
        'Each string a `mask` rule changed (docs/behaviour/labels-and-detectors.md), once per kind masked in it: `pointer` (RFC 6901, into the request `result`), `kind` (a detector kind such as `aws-access-key-id` or `email`, or `unchecked` for a string left unscanned when the decision ran out of time: masked whole) and the `policy`/`rule` named in its placeholders `[<kind> withheld by <policy>/<rule>]`; a binary `blob` whose stretches of text held a masked kind is withheld whole (listed in `withheld` too), the resource keeping its `uri` and `mimeType` and a placeholder `text`. Empty when nothing was masked, and on `deny`.',
        'Scope `result` masks every string of the result (blocks, `structuredContent`, other members); scope `block` masks its block, and `structuredContent` strings holding a kind masked in a block. A textual `blob` holding a span is forwarded as masked `text` (the `blob` listed in `withheld`); a member whose name holds a span is withheld. Precedence on one block: drop > redact > mask, then spotlight fences what is left.',
      ].join(' '),
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['pointer', 'kind', 'policy', 'rule'],
        properties: { pointer: { type: 'string' }, kind: { type: 'string' }, policy: { type: 'string' }, rule: { type: 'string' } },
      },
    },
    maskedOmitted: {
      type: 'integer',
      minimum: 1,
      description: 'Entries left out of `masked` past TRUSTGATE_MAX_VALIDATION_FINDINGS or the answer size bound (the spans are masked all the same); absent when none were.',
    },
    resultOmitted: { type: 'boolean', description: 'Present (true) when `options.omitUnmodifiedResult` left out an unchanged result' },
    session: { $ref: 'Session#' },
    trace: traceList,
    traceOmitted: {
      type: 'integer',
      minimum: 1,
      description: 'How many `trace` entries the answer size bound left out: the trace gets the room the other lists leave (asking for it never cuts them), and past that keeps the first entry of every rule, so every rule evaluated stays listed; absent when none were',
    },
  },
} as const;

export const evaluateSchema = {
  operationId: 'evaluate',
  security: v1Security,
  tags: ['decisions'],
  summary: 'Decide on a CallToolResult before it is forwarded to a model',
  description:
    [
      '`deny` is a 200 without `result` (so is an unchanged result when `options.omitUnmodifiedResult` is set). `findings` list every matched rule with the mode it ran under (after TRUSTGATE_MODE); only enforce findings are applied (`applied: true`).',
      'Outcome: `deny` if an applied finding has effect deny; else `warn` if any finding ran in warn mode or consent is required; else `allow`.',
      'When several effects hit one block, drop beats redact beats spotlight; `blocks[].actions` says which was applied (`spotlight` when something of the block was fenced or it was replaced by a placeholder; `spotlight-skipped` when it holds nothing to fence: the base64 `data` of image and audio, a block type the revision does not define).',
      'What is forwarded (docs/behaviour/forwarding.md) is built from what was judged, never copied with known parts removed. Redact: a text placeholder naming `<policy>/<rule>`; from 2025-06-18 its `_meta` trust claim holds the block\'s effective flags that are `true` (a `sensitive` from verified non-public data-class evidence included) and the block\'s own first evidenceRef (its `_meta` claim\'s, else its embedded resource\'s; string members `type`, `digest`, `canonicalization`, `schema`, `ref` only). Spotlight fences, each with the per-decision boundary: `text`; an embedded resource\'s `text`; a `blob` with a textual mimeType (`text/*`, `application/json`, `application/xml`, `*+json`, `*+xml`), decoded from base64 with the mimeType\'s charset (UTF-8 when none) and forwarded as fenced `text` in place of `blob` (`withheld` lists the `blob`); a `resource_link`\'s `name`, `title` and `description` (each fenced on its own; `icons` withheld). Blocks have no `_meta` before 2025-06-18, so a spotlit block\'s `_meta` is withheld there. Any applied spotlight withholds `structuredContent` (its text mirror is fenced). See `withheld` for what else is left out.',
      'Case folding (`mcp.member.casefold`, docs/behaviour/forwarding.md law 3): names are compared under Unicode simple case folding (Go\'s `ſ`->`s`, `K`->`k` included) against the names every revision defines for the result, blocks (by type), annotations, embedded resources, icons, `_meta` (the trust key), trust claims and evidenceRefs, and against the other members of the same object anywhere in the result; where no defined name is among the names that fold together, all of them are withheld. Read fail closed: a trust flag written `ſensitive` or `UNTRUSTED` counts as `true` whatever its value, and a `_meta` key that folds to the trust key is read as a claim whose every named flag counts as `true` (its evidenceRef is not read).',
      'A rule whose condition fails to evaluate, or that runs past the per-decision CEL budget (TRUSTGATE_EVAL_BUDGET_MS), counts as matched and its finding carries `error` (fail closed).',
      'Every pointer is an RFC 6901 JSON Pointer into the request `result`; a missing required MCP member is reported at the pointer of the object that should hold it.',
      'An evidence record whose request text repeats a member name or holds a number of integral value outside -(2^53-1)..2^53-1 in any notation (`9007199254740993`, `9007199254740993.0`, `9.007199254740993e15`) is not I-JSON: its evidenceRef is `malformed`.',
      'A `data-class.v1` evidenceRef whose status is `unsupported` or `malformed` (a near-miss canonicalization such as `"jcs/rfc8785 "` included) cannot say what class the data has: its scope counts as sensitive, policies see `dataClass.class` `unknown`, and the shipped evidence policy flags it at `warn` (rule `flag-dataclass-unchecked`, a rule-level `mode`). It adds no `trust.sensitive.missing` finding, which speaks of verified records only.',
      'A malformed `annotations.audience` (not an array of `"user"`/`"assistant"`: `"assistant"`, `[null]`, `["user", 3]`) excludes every reader: policies see `block.audienceMalformed: true` and `block.audience` `["malformed"]`, and the shipped audience policy drops the block for the model and for the user (`context.reader` `"user"`).',
      'With `session`, policies see what the session was shown before (`session` variable), and the session then takes in what this answer forwards: `untrusted`/`sensitive` from forwarded blocks (fenced ones included) and forwarded structuredContent, the most restrictive verified data class among them. Withheld blocks add nothing; a denied result adds no labels but is counted in `results`. When the session store cannot be read or written the request fails closed (503).',
    ].join('\n\n'),
  body: evaluateBody,
  response: { 200: evaluateReply, ...problemReplies(400, 401, 403, 404, 413, 415, 503) },
} as const;

/** The body of POST /v1/evaluate apart from `session` (docs/behaviour/decisions.md). */
export type EvaluateRequest = Omit<EvaluateBody, 'session'>;

/** The 200 answer of POST /v1/evaluate (docs/behaviour/decisions.md). */
export type Decision = FromWire<typeof evaluateReply>;

/** The whole body of POST /v1/evaluate, `session` included. */
export type EvaluateBody = FromWire<typeof evaluateBody>;
