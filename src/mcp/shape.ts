/**
 * MCP-level validation of a `CallToolResult` per protocol revision
 * (docs/behaviour/validation.md, rules `mcp.*`).
 *
 * What exists in a revision (block types, members, JSON types, required
 * fields) comes from the schema-derived `MCP_TABLES`. The contract's stricter
 * rules are applied here on top: content blocks and their annotations are
 * closed, `_meta` keys follow the MCP key grammar, `lastModified` is an
 * RFC 3339 date-time, `resultType` is `"complete"`, and `structuredContent`
 * is absent from error results.
 *
 * Conventions:
 * - A member whose JSON type differs from the schema's is reported under the
 *   rule of the object that holds it: `mcp.result.shape` for result members,
 *   `mcp.content.type` for block and embedded-resource members (optional ones
 *   too, since the schema types them all). An `annotations` value that is not
 *   an object is therefore `mcp.content.type`; `mcp.annotations.members` is
 *   kept for what an annotations object holds.
 * - A member missing from an object is reported at the object's pointer.
 * - Messages name members and expectations but never quote values: values
 *   may be the very content the policies protect.
 */
import { TRUST_KEY } from './meta-key.js';
import { pointer } from '../json/pointer.js';
import { hasOwn, isRecord, own } from '../json/record.js';
import { REVISIONS, atLeast, type Revision } from './revisions.js';
import { isBase64 } from './base64.js';
import { collisionTokens, findCasefoldCollisions, type Collision } from './casefold.js';
import { isRfc3339DateTime } from './datetime.js';
import { FindingList, type ValidationFinding } from './findings.js';
import { isMetaKey } from './meta-key.js';
import type { JsonType, ObjectShape } from './schema-table.js';
import { MCP_TABLES } from './tables.generated.js';

/** Revision from which `_meta` keys must follow the key grammar (docs/behaviour/validation.md). */
const META_KEY_FROM: Revision = '2025-06-18';

/** Revision from which the contract requires `resultType: "complete"`. */
const RESULT_TYPE_REVISION: Revision = '2026-07-28';

/** Member names quoted in messages are cut to this many UTF-16 code units. */
const NAME_LIMIT = 64;

interface Shape {
  readonly label: string;
  readonly members: ReadonlyMap<string, JsonType>;
  readonly required: readonly string[];
  /** Earliest revision defining a member this revision lacks (for messages). */
  readonly since: ReadonlyMap<string, Revision>;
  /** String members that must be base64 (docs/behaviour/forwarding.md). */
  readonly base64: ReadonlySet<string>;
}

interface Variant extends Shape {
  readonly discriminator: string;
}

interface Prepared {
  readonly revision: Revision;
  readonly result: Shape;
  readonly blocks: ReadonlyMap<string, Shape>;
  readonly resource: readonly Variant[];
  readonly annotations: Shape;
  readonly annotationNames: string;
  readonly audience: ReadonlySet<string>;
  readonly audienceText: string;
  readonly priorityMin: number;
  readonly priorityMax: number;
  readonly icon: Shape | null;
  readonly metaKeys: boolean;
}

/** For each member `current` lacks: the earliest revision whose shape (from `pick`) defines it. */
function sinceMap(current: ObjectShape, pick: (rev: Revision) => ObjectShape | null | undefined): Map<string, Revision> {
  const since = new Map<string, Revision>();
  for (const rev of REVISIONS) {
    const shape = pick(rev);
    if (!shape) continue;
    for (const m of Object.keys(shape.members)) {
      if (!since.has(m) && !hasOwn(current.members, m)) since.set(m, rev);
    }
  }
  return since;
}

/**
 * Members whose string is base64 (the schemas' `format: byte`), by block
 * type or embedded-resource discriminator (docs/behaviour/forwarding.md).
 */
const BASE64_MEMBERS: Readonly<Record<string, readonly string[]>> = { image: ['data'], audio: ['data'], blob: ['blob'] };
const NO_MEMBERS: ReadonlySet<string> = new Set();

function toShape(label: string, s: ObjectShape, pick: (rev: Revision) => ObjectShape | null | undefined, base64Key = ''): Shape {
  const b64 = hasOwn(BASE64_MEMBERS, base64Key) ? BASE64_MEMBERS[base64Key]! : [];
  return {
    label,
    members: new Map(Object.entries(s.members)),
    required: s.required,
    since: sinceMap(s, pick),
    base64: b64.length > 0 ? new Set(b64.filter((m) => hasOwn(s.members, m))) : NO_MEMBERS,
  };
}

function quoteList(items: readonly string[]): string {
  return items.map((i) => `"${i}"`).join(' or ');
}

/** Built once at import: lookups per request are Map/Set hits, never schema walks. */
function prepare(rev: Revision): Prepared {
  const t = MCP_TABLES[rev];
  const blocks = new Map<string, Shape>();
  for (const [type, shape] of Object.entries(t.blocks)) {
    blocks.set(type, toShape(`"${type}" blocks`, shape, (r) => own(MCP_TABLES[r].blocks, type) as ObjectShape | undefined, type));
  }
  const resource = t.resourceContents.map((v) => ({
    ...toShape(
      `embedded ${v.discriminator} resources`,
      v,
      (r) => MCP_TABLES[r].resourceContents.find((o) => o.discriminator === v.discriminator),
      v.discriminator,
    ),
    discriminator: v.discriminator,
  }));
  const annotationMembers = Object.keys(t.annotations.members);
  return {
    revision: rev,
    result: toShape('CallToolResult', t.callToolResult, (r) => MCP_TABLES[r].callToolResult),
    blocks,
    resource,
    annotations: toShape('annotations', t.annotations, (r) => MCP_TABLES[r].annotations),
    annotationNames: annotationMembers.join(', '),
    audience: new Set(t.audience),
    audienceText: quoteList(t.audience),
    priorityMin: t.priority.minimum,
    priorityMax: t.priority.maximum,
    icon: t.icon ? toShape('icons', t.icon, (r) => MCP_TABLES[r].icon) : null,
    metaKeys: atLeast(rev, META_KEY_FROM),
  };
}

const PREPARED: ReadonlyMap<Revision, Prepared> = new Map(REVISIONS.map((r) => [r, prepare(r)]));

/** Block types per revision of first appearance, for "defined from" messages. */
const BLOCK_SINCE: ReadonlyMap<string, Revision> = (() => {
  const m = new Map<string, Revision>();
  for (const rev of REVISIONS) for (const type of Object.keys(MCP_TABLES[rev].blocks)) if (!m.has(type)) m.set(type, rev);
  return m;
})();

/** A member name fit for a message: JSON-quoted, control characters escaped, at most NAME_LIMIT code units. */
function nameOf(key: string): string {
  if (key.length <= NAME_LIMIT) return JSON.stringify(key);
  let cut = key.slice(0, NAME_LIMIT);
  // Do not leave half of a surrogate pair at the cut.
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return JSON.stringify(cut + '…');
}

const TYPE_TEXT: Readonly<Record<JsonType, string>> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  any: 'a JSON value',
};

/** JSON type test of the MCP tables (numbers finite). */
export function hasType(v: unknown, t: JsonType): boolean {
  switch (t) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'object':
      return isRecord(v);
    case 'array':
      return Array.isArray(v);
    case 'any':
      return v !== undefined;
  }
}

/** `mcp.meta.key` for every key of one `_meta` object. */
function checkMetaKeys(p: Prepared, meta: Record<string, unknown>, base: string, out: FindingList): void {
  if (!p.metaKeys) return;
  for (const key of Object.keys(meta)) {
    if (!isMetaKey(key)) {
      out.add('mcp.meta.key', base + pointer('_meta', key), `_meta key ${nameOf(key)} does not follow the MCP key grammar`);
    }
  }
}

function unknownMemberMessage(p: Prepared, shape: Shape, key: string): string {
  const since = shape.since.get(key);
  if (since !== undefined && !atLeast(p.revision, since)) {
    return `${nameOf(key)} is not defined on ${shape.label} before ${since}`;
  }
  return `${nameOf(key)} is not a member of ${shape.label} at ${p.revision}`;
}

function checkAnnotations(p: Prepared, ann: Record<string, unknown>, base: string, out: FindingList): void {
  for (const key of Object.keys(ann)) {
    const value = ann[key];
    // Pointers are built only for findings, so valid members cost no string work.
    const at = (): string => base + pointer(key);
    if (!p.annotations.members.has(key)) {
      let message: string;
      if (key === 'sensitive' || key === 'untrusted') {
        message = `trust claim ${nameOf(key)} belongs in _meta["${TRUST_KEY}"], not in annotations`;
      } else {
        const since = p.annotations.since.get(key);
        message =
          since !== undefined && !atLeast(p.revision, since)
            ? `annotations member ${nameOf(key)} is not defined before ${since}`
            : `annotations hold only ${p.annotationNames}; ${nameOf(key)} is not allowed`;
      }
      out.add('mcp.annotations.members', at(), message);
      continue;
    }
    switch (key) {
      case 'audience':
        if (!Array.isArray(value)) {
          out.add('mcp.annotations.audience', at(), `audience must be an array of ${p.audienceText}`);
        } else {
          for (let j = 0; j < value.length; j++) {
            const item: unknown = value[j];
            if (typeof item !== 'string' || !p.audience.has(item)) {
              out.add('mcp.annotations.audience', at() + '/' + j, `audience items must be ${p.audienceText}`);
            }
          }
        }
        break;
      case 'priority':
        if (typeof value !== 'number' || !Number.isFinite(value) || value < p.priorityMin || value > p.priorityMax) {
          out.add('mcp.annotations.priority', at(), `priority must be a number from ${p.priorityMin} to ${p.priorityMax}`);
        }
        break;
      case 'lastModified':
        if (typeof value !== 'string') {
          out.add('mcp.annotations.lastModified', at(), 'lastModified must be a string');
        } else if (!isRfc3339DateTime(value)) {
          // MCP only says "should be" ISO 8601, hence a warning (docs/behaviour/validation.md).
          out.add('mcp.annotations.lastModified', at(), 'lastModified should be an RFC 3339 date-time', 'warning');
        }
        break;
      // No other member is defined: test/unit/mcp/tables.test.ts pins the
      // annotations members of every revision to these three.
    }
  }
}

function checkIcons(p: Prepared, icons: unknown[], base: string, out: FindingList): void {
  const icon = p.icon;
  if (!icon) return;
  for (let j = 0; j < icons.length; j++) {
    const item: unknown = icons[j];
    const at = base + '/' + j;
    if (!isRecord(item)) {
      out.add('mcp.content.type', at, 'icons items must be objects');
      continue;
    }
    // Icon is an open MCP object (only content blocks are closed by the
    // contract), so unknown icon members are left alone.
    for (const [key, t] of icon.members) {
      if (hasOwn(item, key) && !hasType(item[key], t)) {
        out.add('mcp.content.type', at + pointer(key), `icon member ${nameOf(key)} must be ${TYPE_TEXT[t]}`);
      }
    }
    for (const r of icon.required) {
      if (!hasOwn(item, r)) out.add('mcp.content.type', at, `icons items require ${nameOf(r)}`);
    }
  }
}

/** Members whose inside is checked further; the others end at their JSON type. */
const NESTED: ReadonlySet<string> = new Set(['annotations', '_meta', 'resource', 'icons']);

/**
 * Members of one object against a closed shape: unknown members, JSON types,
 * required members. `nested` is called for each member of the right type that
 * is in NESTED, so the caller can look inside it.
 */
function checkMembers(
  p: Prepared,
  obj: Record<string, unknown>,
  shape: Shape,
  base: string,
  out: FindingList,
  nested: (key: string, value: unknown, at: string) => void,
): void {
  for (const key of Object.keys(obj)) {
    const t = shape.members.get(key);
    if (t === undefined) {
      out.add('mcp.content.members', base + pointer(key), unknownMemberMessage(p, shape, key));
      continue;
    }
    const value = obj[key];
    if (!hasType(value, t)) {
      out.add('mcp.content.type', base + pointer(key), `${nameOf(key)} must be ${TYPE_TEXT[t]}`);
      continue;
    }
    if (shape.base64.has(key) && !isBase64(value as string)) {
      out.add('mcp.content.type', base + pointer(key), `${nameOf(key)} must be padded base64 (RFC 4648 section 4) without whitespace`);
      continue;
    }
    if (NESTED.has(key)) nested(key, value, base + pointer(key));
  }
  for (const r of shape.required) {
    if (!hasOwn(obj, r)) out.add('mcp.content.type', base, `${shape.label} require ${nameOf(r)}`);
  }
}

function checkResource(p: Prepared, res: Record<string, unknown>, base: string, out: FindingList): void {
  // The variant is chosen by its discriminating member (`text` or `blob`);
  // with both present, the second is reported as a member the first lacks.
  const variant = p.resource.find((v) => hasOwn(res, v.discriminator));
  if (!variant) {
    const names = p.resource.map((v) => `"${v.discriminator}"`).join(' or ');
    out.add('mcp.content.type', base, `embedded resource requires ${names}`);
    return;
  }
  checkMembers(p, res, variant, base, out, (key, value) => {
    if (key === '_meta') checkMetaKeys(p, value as Record<string, unknown>, base, out);
  });
}

function checkBlock(p: Prepared, block: unknown, i: number, out: FindingList): void {
  const base = '/content/' + i;
  if (!isRecord(block)) {
    out.add('mcp.result.shape', base, 'content items must be objects');
    return;
  }
  if (!hasOwn(block, 'type')) {
    out.add('mcp.result.shape', base, 'content items require a string "type"');
    return;
  }
  const type = block.type;
  if (typeof type !== 'string') {
    out.add('mcp.result.shape', base + '/type', '"type" must be a string');
    return;
  }
  const shape = p.blocks.get(type);
  if (!shape) {
    // One finding only: members of an unknown type cannot be judged.
    const since = BLOCK_SINCE.get(type);
    out.add(
      'mcp.content.type',
      base + '/type',
      since !== undefined ? `${nameOf(type)} blocks are defined from ${since}` : `unknown content block type at ${p.revision}`,
    );
    return;
  }
  checkMembers(p, block, shape, base, out, (key, value, at) => {
    switch (key) {
      case 'annotations':
        checkAnnotations(p, value as Record<string, unknown>, at, out);
        break;
      case '_meta':
        checkMetaKeys(p, value as Record<string, unknown>, base, out);
        break;
      case 'resource':
        checkResource(p, value as Record<string, unknown>, at, out);
        break;
      case 'icons':
        checkIcons(p, value as unknown[], at, out);
        break;
    }
  });
}

function checkResult(p: Prepared, result: Record<string, unknown>, out: FindingList): void {
  const shape = p.result;
  for (const key of Object.keys(result)) {
    const t = shape.members.get(key);
    if (t === undefined) {
      // Result objects are open in every revision; only members that a
      // different revision defines (structuredContent, resultType) are wrong here.
      const since = shape.since.get(key);
      if (since !== undefined && !atLeast(p.revision, since)) {
        out.add('mcp.result.shape', pointer(key), `${nameOf(key)} is not defined before ${since}`);
      }
      continue;
    }
    const value = result[key];
    if (!hasType(value, t)) {
      out.add('mcp.result.shape', pointer(key), `${nameOf(key)} must be ${TYPE_TEXT[t]}`);
    }
  }
  for (const r of shape.required) {
    if (!hasOwn(result, r)) {
      const since = REVISIONS.find((rev) => MCP_TABLES[rev].callToolResult.required.includes(r));
      out.add(
        'mcp.result.shape',
        '',
        since !== undefined && since !== REVISIONS[0] ? `${nameOf(r)} is required from ${since}` : `${nameOf(r)} is required`,
      );
    }
  }

  const resultType = own(result, 'resultType');
  if (atLeast(p.revision, RESULT_TYPE_REVISION) && typeof resultType === 'string' && resultType !== 'complete') {
    out.add('mcp.result.shape', '/resultType', 'resultType of a tool result must be "complete"');
  }
  if (own(result, 'isError') === true && hasOwn(result, 'structuredContent') && shape.members.has('structuredContent')) {
    out.add('mcp.result.shape', '/structuredContent', 'structuredContent must be absent when isError is true');
  }

  const meta = own(result, '_meta');
  if (isRecord(meta)) checkMetaKeys(p, meta, '', out);

  const content = own(result, 'content');
  if (Array.isArray(content)) {
    for (let i = 0; i < content.length; i++) checkBlock(p, content[i], i, out);
  }
}

/** Revision rule of docs/behaviour/decisions.md: '2026-07-28' when the result carries `resultType`, else '2025-11-25'. */
export function defaultRevision(result: unknown): Revision {
  return isRecord(result) && hasOwn(result, 'resultType') ? '2026-07-28' : '2025-11-25';
}

/** `mcp.member.casefold` for each member a case-insensitive reader could take for another (docs/behaviour/forwarding.md, law 3). */
function checkCasefold(collisions: readonly Collision[], out: FindingList): void {
  let listed = false;
  for (const c of collisions) {
    // Past the list's limit, one finding of the rule is all it keeps: count
    // the rest without building pointers, which grow with the depth.
    if (listed && out.items.length >= out.limit) {
      out.omitted++;
      continue;
    }
    listed = true;
    out.add(
      'mcp.member.casefold',
      pointer(...collisionTokens(c)),
      c.defined
        ? `${nameOf(c.name)} is not ${nameOf(c.clash)} but folds to it; hosts that match member names case-insensitively read it as ${nameOf(c.clash)}, so it is withheld`
        : `${nameOf(c.name)} and ${nameOf(c.clash)} differ only by case folding; hosts that match member names case-insensitively cannot tell them apart, so both are withheld`,
    );
  }
}

/**
 * Every mcp.* finding for this result at this revision, added to `out` (a
 * list of its own when absent, which is returned). Pointers are RFC 6901
 * into the result ('' = the result itself). Never throws, whatever the input
 * (it may be any JSON value: the HTTP layer only guarantees it is an object
 * and nests at most 128 levels). `collisions` are the result's
 * findCasefoldCollisions, when the caller has them already.
 */
export function validateMcp(
  result: unknown,
  revision: Revision,
  out: FindingList = new FindingList(),
  collisions?: readonly Collision[],
): ValidationFinding[] {
  const p = PREPARED.get(revision);
  if (!p) {
    out.add('mcp.result.shape', '', 'unknown protocol revision');
    return out.items;
  }
  if (!isRecord(result)) {
    out.add('mcp.result.shape', '', 'result must be an object');
    return out.items;
  }
  try {
    checkResult(p, result, out);
    checkCasefold(collisions ?? findCasefoldCollisions(result).list, out);
  } catch {
    // Unreachable for JSON input; kept so that a host object with a throwing
    // getter still yields findings (and an error) instead of an exception.
    out.add('mcp.result.shape', '', 'result could not be validated');
  }
  return out.items;
}
