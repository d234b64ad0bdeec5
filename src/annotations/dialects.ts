/**
 * Label dialects (docs/behaviour/dialects.md): trust labels that real servers
 * write in shapes other than the Trust Annotations claim, read as claims of
 * the same union (they assert `true` and `false` like the trust key).
 *
 * - `ifc`: GitHub's MCP server (`ifc_labels` feature), also read by
 *   Microsoft agent-framework. `_meta["ifc"]` on the result, on a block, or
 *   (like the trust key) on a block's embedded resource:
 *   `{ "integrity": "trusted" | "untrusted", "confidentiality": "public" | "private" | [readers] }`.
 * - `fides`: Microsoft fides-gateway. `_meta["com.github.ifc/labels"]` on the
 *   result: a map from JSONPath (see jsonpath.ts) to
 *   `{ "integrity", "confidentiality": [readers] }`.
 *
 * Mapping: integrity `untrusted` -> `untrusted: true`, `trusted` ->
 * `untrusted: false`; confidentiality `"public"`, or a list holding
 * `"public"` (the "everyone" reader of both servers) -> `sensitive: false`;
 * `"private"` or any other list of readers (`[]` included) ->
 * `sensitive: true`. A member that is absent claims nothing, except a fides
 * entry without `confidentiality`, which fides itself reads as `[]` (no
 * reader): `sensitive: true`. Anything else is malformed: rule
 * `trust.dialect.shape` (error), and the flag it would set counts as `true`
 * (both flags, for a label that is not an object). A member spelt like one
 * of the two in another case (`Integrity`) is malformed too, since Go's
 * encoding/json would read it as that member. Other members are ignored
 * (agent-framework adds `metadata`).
 *
 * Provenance: each claim's pointer is the RFC 6901 pointer of the member
 * that made it (`/_meta/ifc/integrity`,
 * `/content/0/_meta/ifc/confidentiality`,
 * `/_meta/com.github.ifc~1labels/$['content'][0]/integrity`), so the
 * `_meta` key in the pointer names the dialect.
 *
 * Reading is own-property lookups only: a result that carries no dialect
 * key costs one `hasOwnProperty` per `_meta` object.
 */
import { escapePointerToken, pointer } from '../json/pointer.js';
import { isRecord, own } from '../json/record.js';
import { jsonType } from '../json/type-name.js';
import type { ValidationFinding } from '../mcp/findings.js';
import { parseSingularPath } from './jsonpath.js';

/** The dialects Trustgate can read, as `TRUSTGATE_DIALECTS` names them. */
export const DIALECTS = Object.freeze(['trust-annotations', 'ifc', 'fides'] as const);
export type Dialect = (typeof DIALECTS)[number];

/** The `_meta` key of the `ifc` dialect. */
export const IFC_KEY = 'ifc';
/** The `_meta` key of the `fides` dialect. */
export const FIDES_KEY = 'com.github.ifc/labels';

/** Pointers of the claims saying `true` (`t`) and `false` (`f`) for one flag. */
export interface FlagTally {
  t: string[];
  f: string[];
}

/** A tally per flag: the shape claims.ts combines with union semantics. */
export interface ClaimTallies {
  sensitive: FlagTally;
  untrusted: FlagTally;
}

export function newClaimTallies(): ClaimTallies {
  return { sensitive: { t: [], f: [] }, untrusted: { t: [], f: [] } };
}

/**
 * Parse a `TRUSTGATE_DIALECTS` value: comma-separated dialect names,
 * spaces around names allowed. Throws an Error naming the bad entry.
 */
export function parseDialectList(raw: string): readonly Dialect[] {
  const out: Dialect[] = [];
  for (const part of raw.split(',')) {
    const name = part.trim();
    if (name === '') throw new Error(`holds an empty name; list dialects separated by commas, from ${DIALECTS.join(', ')}`);
    if (!(DIALECTS as readonly string[]).includes(name)) {
      throw new Error(`names an unknown dialect ${JSON.stringify(name)}; known: ${DIALECTS.join(', ')}`);
    }
    if (!out.includes(name as Dialect)) out.push(name as Dialect);
  }
  return Object.freeze(out);
}

/**
 * Read `_meta["ifc"]` of one `_meta` object into `tally`. `metaPointer` is
 * the pointer of that `_meta` (`/_meta`, `/content/3/_meta`, ...).
 */
export function readIfc(meta: Record<string, unknown>, metaPointer: string, tally: ClaimTallies, findings: ValidationFinding[]): void {
  const label = own(meta, IFC_KEY);
  if (label === undefined) return;
  readLabel(label, `${metaPointer}/${IFC_KEY}`, tally, findings, 'ifc');
}

/** Where the fides labels of one result apply. */
export interface FidesClaims {
  /** `$`, and every path Trustgate cannot place (only their `true` claims): they govern the whole result. */
  result: ClaimTallies;
  /** `$['content']`: governs every block, not `structuredContent`. */
  content: ClaimTallies;
  /** `$['content'][N]` and paths below it, by block index. */
  blocks: Map<number, ClaimTallies>;
  /** `$['structuredContent']` and paths below it. */
  structured: ClaimTallies;
}

/**
 * Most pointers kept per flag and value for the fides labels that govern
 * every block (`$`, `$['content']`, paths that cannot be placed). Every
 * block's provenance repeats them, and a map can hold any number of such
 * entries (one key per spelling of `$['content']`, or per unplaceable
 * path): unbounded, blocks x entries would make the answer quadratic in the
 * request. The flags are unchanged, since a list that holds one pointer
 * says the same as a longer one.
 */
export const MAX_SHARED_SOURCES = 16;

/** `/_meta/com.github.ifc~1labels`: every fides pointer starts with it. */
const FIDES_BASE = pointer('_meta', FIDES_KEY);

/**
 * Read `result._meta["com.github.ifc/labels"]`. `undefined` when the result
 * carries none (the common case: one own-property lookup).
 *
 * Paths are placed against the result itself: `$['content'][N]` (negative
 * N counts from the end) when block N exists, `$['structuredContent']...`
 * when the result has `structuredContent`. Any other path (`$['isError']`,
 * `$['_meta']`, a block index past the end) and any path that does not
 * parse governs the whole result, fail closed: its `true` claims count at
 * result level and its `false` claims are dropped, since a label on a part
 * Trustgate cannot place cannot vouch for the whole.
 */
export function readFides(result: Record<string, unknown>, meta: Record<string, unknown>, findings: ValidationFinding[]): FidesClaims | undefined {
  const labels = own(meta, FIDES_KEY);
  if (labels === undefined) return undefined;
  const out: FidesClaims = { result: newClaimTallies(), content: newClaimTallies(), blocks: new Map(), structured: newClaimTallies() };
  if (!isRecord(labels)) {
    findings.push({
      rule: 'trust.dialect.shape',
      severity: 'error',
      pointer: FIDES_BASE,
      message: `fides labels must be an object mapping JSONPath to labels, found ${jsonType(labels)}; it counts as sensitive and untrusted for the whole result`,
    });
    out.result.sensitive.t.push(FIDES_BASE);
    out.result.untrusted.t.push(FIDES_BASE);
    return out;
  }
  const content = own(result, 'content');
  const blockCount = Array.isArray(content) ? content.length : -1;
  const hasStructured = own(result, 'structuredContent') !== undefined;
  for (const path of Object.keys(labels)) {
    const entryPointer = `${FIDES_BASE}/${escapePointerToken(path)}`;
    const parsed = parseSingularPath(path);
    let target: ClaimTallies | undefined;
    if (!parsed.ok) {
      findings.push({
        rule: 'trust.dialect.shape',
        severity: 'error',
        pointer: entryPointer,
        message: `fides label path is not a singular JSONPath this service reads: it ${parsed.message}; its label governs the whole result`,
      });
    } else {
      const s = parsed.segments;
      if (s.length === 0) target = out.result;
      else if (s[0] === 'content' && blockCount >= 0) {
        if (s.length === 1) target = out.content;
        else if (typeof s[1] === 'number') {
          const index = s[1] < 0 ? s[1] + blockCount : s[1];
          if (index >= 0 && index < blockCount) {
            target = out.blocks.get(index);
            if (target === undefined) out.blocks.set(index, (target = newClaimTallies()));
          }
        }
      } else if (s[0] === 'structuredContent' && hasStructured) target = out.structured;
    }
    if (target !== undefined) {
      readLabel(own(labels, path), entryPointer, target, findings, 'fides');
    } else {
      // Unplaceable: read into scratch, keep only what restricts.
      const scratch = newClaimTallies();
      readLabel(own(labels, path), entryPointer, scratch, findings, 'fides');
      out.result.sensitive.t.push(...scratch.sensitive.t);
      out.result.untrusted.t.push(...scratch.untrusted.t);
    }
  }
  for (const shared of [out.result, out.content]) {
    for (const list of [shared.sensitive.t, shared.sensitive.f, shared.untrusted.t, shared.untrusted.f]) {
      if (list.length > MAX_SHARED_SOURCES) list.length = MAX_SHARED_SOURCES;
    }
  }
  return out;
}

/** Read one label object (an `ifc` value, or one fides entry) at `base` into `tally`. */
function readLabel(label: unknown, base: string, tally: ClaimTallies, findings: ValidationFinding[], dialect: 'ifc' | 'fides'): void {
  if (!isRecord(label)) {
    findings.push({
      rule: 'trust.dialect.shape',
      severity: 'error',
      pointer: base,
      message: `${dialect} label must be an object with integrity and confidentiality, found ${jsonType(label)}; it counts as sensitive and untrusted`,
    });
    tally.sensitive.t.push(base);
    tally.untrusted.t.push(base);
    return;
  }
  checkCaseVariants(label, base, tally, findings, dialect);
  const integrity = own(label, 'integrity');
  if (integrity !== undefined) {
    const p = `${base}/integrity`;
    if (integrity === 'untrusted') tally.untrusted.t.push(p);
    else if (integrity === 'trusted') tally.untrusted.f.push(p);
    else {
      tally.untrusted.t.push(p);
      findings.push({
        rule: 'trust.dialect.shape',
        severity: 'error',
        pointer: p,
        message: `${dialect} integrity must be "trusted" or "untrusted", found ${integrity === null || typeof integrity !== 'string' ? jsonType(integrity) : 'another string'}; it counts as untrusted`,
      });
    }
  }
  const confidentiality = own(label, 'confidentiality');
  if (confidentiality === undefined) {
    // fides reads a label without confidentiality as readable by no one.
    if (dialect === 'fides') tally.sensitive.t.push(base);
    return;
  }
  const p = `${base}/confidentiality`;
  const verdict = readConfidentiality(confidentiality, dialect);
  if (verdict === 'public') tally.sensitive.f.push(p);
  else {
    tally.sensitive.t.push(p);
    if (verdict === 'malformed') {
      findings.push({
        rule: 'trust.dialect.shape',
        severity: 'error',
        pointer: p,
        message:
          dialect === 'ifc'
            ? `ifc confidentiality must be "public", "private" or a list of reader strings, found ${Array.isArray(confidentiality) ? 'a list holding a non-string' : typeof confidentiality === 'string' ? 'another string' : jsonType(confidentiality)}; it counts as sensitive`
            : `fides confidentiality must be a list of reader strings, found ${Array.isArray(confidentiality) ? 'a list holding a non-string' : jsonType(confidentiality)}; it counts as sensitive`,
      });
    }
  }
}

/**
 * A member spelt like `integrity` or `confidentiality` in another case
 * (`Integrity`, `CONFIDENTIALITY`): Go's encoding/json, which GitHub's
 * server and Go hosts decode labels with, matches member names without
 * regard to case, so such a reader may take it for the real one. It is
 * malformed and counts as true for its flag, whatever it says.
 */
function checkCaseVariants(label: Record<string, unknown>, base: string, tally: ClaimTallies, findings: ValidationFinding[], dialect: 'ifc' | 'fides'): void {
  for (const key of Object.keys(label)) {
    if (key === 'integrity' || key === 'confidentiality') continue;
    const flag = key.length === 9 && key.toLowerCase() === 'integrity' ? 'untrusted' : key.length === 15 && key.toLowerCase() === 'confidentiality' ? 'sensitive' : undefined;
    if (flag === undefined) continue;
    const p = `${base}/${escapePointerToken(key)}`;
    tally[flag].t.push(p);
    findings.push({
      rule: 'trust.dialect.shape',
      severity: 'error',
      pointer: p,
      message: `${dialect} label member names ${flag === 'untrusted' ? 'integrity' : 'confidentiality'} in another case, which readers that match names without regard to case take for it; it counts as ${flag}`,
    });
  }
}

/** `public`: readable by everyone; `restricted`: some readers (or none); `malformed`: neither shape. */
function readConfidentiality(v: unknown, dialect: 'ifc' | 'fides'): 'public' | 'restricted' | 'malformed' {
  if (typeof v === 'string') {
    if (dialect === 'fides') return 'malformed';
    return v === 'public' ? 'public' : v === 'private' ? 'restricted' : 'malformed';
  }
  if (!Array.isArray(v)) return 'malformed';
  let isPublic = false;
  for (const reader of v) {
    if (typeof reader !== 'string') return 'malformed';
    if (reader === 'public') isPublic = true;
  }
  return isPublic ? 'public' : 'restricted';
}

