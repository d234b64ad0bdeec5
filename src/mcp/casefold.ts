/**
 * Member names that differ only by case folding (docs/behaviour/forwarding.md, law 3;
 * rule `mcp.member.casefold`).
 *
 * Hosts written in Go decode JSON with encoding/json, which matches member
 * names to struct fields case-insensitively under Unicode simple case folding
 * (so `ſ` reads as `s` and the Kelvin sign `K` as `k`). Such a host reads
 * `{"text": "benign", "TEXT": "<injection>"}` as the injection, an
 * `Annotations` member as the annotations, `ſensitive: false` as a claim.
 * Trustgate reads names exactly; every member a case-insensitive reader could
 * take for another one is therefore found here, reported, and withheld from
 * the forwarded result.
 *
 * A member collides when its folded name equals the folded name of a member
 * its object defines (in any protocol revision: a host may be built against
 * any of them) without being that name, or the folded name of another member
 * of the same object. Defined names are known for the result, content blocks
 * (per type), annotations, embedded resources, icons, `_meta` (the trust key),
 * trust claims and evidenceRefs; every other object (inside
 * `structuredContent`, unknown members, other `_meta` entries) is checked
 * member against member. Where a folded name is shared by a defined name and
 * others, the defined name is kept; where it is shared by undefined names only,
 * every one of them collides.
 */
import { TRUST_KEY } from './meta-key.js';
import { isRecord } from '../json/record.js';
import { REVISIONS } from './revisions.js';
import { MCP_TABLES } from './tables.generated.js';

/** Whether a string is exactly one code point. */
function single(s: string): boolean {
  return s.length === 1 || (s.length === 2 && s.codePointAt(0)! > 0xffff);
}

/**
 * Code points whose simple case folding the upper/lower round trip below
 * does not reach: `ı` folds to itself (only its full and Turkic foldings
 * touch `i`), and three pairs Unicode 14/15 added to CaseFolding.txt.
 * test/unit/mcp/casefold.test.ts checks the whole fold against the
 * JavaScript regular-expression engine, whose `iu` matching is defined by
 * simple case folding.
 */
const SPECIAL: ReadonlyMap<number, string> = new Map([
  [0x0131, '\u0131'],
  [0x1fd3, '\u0390'],
  [0x1fe3, '\u03b0'],
  [0xfb05, '\ufb06'],
]);

/** One representative of the simple case folding class of one code point. */
function foldChar(ch: string): string {
  const special = SPECIAL.get(ch.codePointAt(0)!);
  if (special !== undefined) return special;
  const upper = ch.toUpperCase();
  if (single(upper)) {
    const lower = upper.toLowerCase();
    return single(lower) ? lower : upper;
  }
  const lower = ch.toLowerCase();
  return single(lower) ? lower : ch;
}

/**
 * A name under Unicode simple case folding: two names fold equal exactly
 * when a case-insensitive decoder (Go's encoding/json) takes one for the
 * other. Lower-case ASCII names, the common case, are returned as they are.
 */
export function foldName(name: string): string {
  let i = 0;
  for (; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x80 || (c >= 65 && c <= 90)) break;
  }
  if (i === name.length) return name;
  const cached = CACHE.get(name);
  if (cached !== undefined) return cached;
  const f = fold(name);
  // Member names repeat from request to request (mimeType, lastModified, _meta):
  // remember the short ones, a bounded number of them.
  if (name.length <= 64) {
    if (CACHE.size >= CACHE_LIMIT) CACHE.clear();
    CACHE.set(name, f);
  }
  return f;
}

const CACHE = new Map<string, string>();
const CACHE_LIMIT = 4096;

function fold(name: string): string {
  let upper = false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x80) {
      let out = '';
      for (const ch of name) out += foldChar(ch);
      return out;
    }
    if (c >= 65 && c <= 90) upper = true;
  }
  return upper ? name.toLowerCase() : name;
}

/**
 * An object of the result that holds a case-fold collision, or holds one
 * further down: the tree of these is what the forwarding leaves out. Paths
 * are shared through `parent`, so a collision costs the same at any depth.
 */
export interface CasefoldNode {
  readonly parent: CasefoldNode | null;
  /** Reference token of this object in its parent (array indexes as numbers). */
  readonly token: string | number;
  /** Members to leave out (`true`) or to look inside, by name or index (as a string). */
  readonly kids: Map<string, CasefoldNode | true>;
}

/** One member withheld under law 3. */
export interface Collision {
  /** The object holding the member. */
  holder: CasefoldNode;
  /** The member's name. */
  name: string;
  /** The name it folds together with: a defined name, or another member of the same object. */
  clash: string;
  /** Whether `clash` is a name the object defines (else another member's name). */
  defined: boolean;
}

/** Every collision of a result, and the tree of the objects that hold them (absent when there are none). */
export interface Collisions {
  list: Collision[];
  root: CasefoldNode | undefined;
}

/** Reference tokens of a collision's member from the result. */
export function collisionTokens(c: Collision): Array<string | number> {
  const out: Array<string | number> = [c.name];
  for (let n: CasefoldNode | null = c.holder; n !== null && n.parent !== null; n = n.parent) out.push(n.token);
  return out.reverse();
}

/** The names one kind of object defines: by folded name, and as written. */
interface Defined {
  /** Folded name -> defined name. */
  fold: ReadonlyMap<string, string>;
  exact: ReadonlySet<string>;
}

function definedOf(names: Iterable<string>): Defined {
  const fold = new Map<string, string>();
  for (const n of names) fold.set(foldName(n), n);
  return { fold, exact: new Set(fold.values()) };
}

const union = <T>(pick: (r: (typeof REVISIONS)[number]) => Iterable<T>): Set<T> => {
  const s = new Set<T>();
  for (const r of REVISIONS) for (const x of pick(r)) s.add(x);
  return s;
};

const RESULT = definedOf(union((r) => Object.keys(MCP_TABLES[r].callToolResult.members)));
const ANNOTATIONS = definedOf(union((r) => Object.keys(MCP_TABLES[r].annotations.members)));
const RESOURCE = definedOf(union((r) => MCP_TABLES[r].resourceContents.flatMap((v) => Object.keys(v.members))));
const ICON = definedOf(union((r) => Object.keys(MCP_TABLES[r].icon?.members ?? {})));
const META = definedOf([TRUST_KEY]);
const CLAIM = definedOf(['sensitive', 'untrusted', 'evidenceRef']);
const EVIDENCE_REF = definedOf(['type', 'digest', 'canonicalization', 'schema', 'ref']);
const FREE: Defined = { fold: new Map(), exact: new Set() };
const BLOCK_TYPES = union((r) => Object.keys(MCP_TABLES[r].blocks));
const BLOCKS: ReadonlyMap<string, Defined> = new Map(
  [...BLOCK_TYPES].map((t) => [t, definedOf(union((r) => Object.keys(MCP_TABLES[r].blocks[t]?.members ?? {})))]),
);
/** A block of a type no revision defines: the members any block type defines. */
const ANY_BLOCK = definedOf(union((r) => Object.values(MCP_TABLES[r].blocks).flatMap((s) => Object.keys(s.members))));

type Kind = 'result' | 'block' | 'annotations' | 'resource' | 'icon' | 'meta' | 'claim' | 'evidenceRef' | 'free';

function definedFor(kind: Kind, obj: Record<string, unknown>): Defined {
  switch (kind) {
    case 'result':
      return RESULT;
    case 'block': {
      const t = Object.prototype.hasOwnProperty.call(obj, 'type') ? obj.type : undefined;
      return (typeof t === 'string' && BLOCKS.get(t)) || ANY_BLOCK;
    }
    case 'annotations':
      return ANNOTATIONS;
    case 'resource':
      return RESOURCE;
    case 'icon':
      return ICON;
    case 'meta':
      return META;
    case 'claim':
      return CLAIM;
    case 'evidenceRef':
      return EVIDENCE_REF;
    case 'free':
      return FREE;
  }
}

/** What a member's value is, by the kind of object holding it. */
function childKind(kind: Kind, key: string): Kind {
  switch (kind) {
    case 'result':
      return key === '_meta' ? 'meta' : 'free';
    case 'block':
      return key === 'annotations' ? 'annotations' : key === '_meta' ? 'meta' : key === 'resource' ? 'resource' : 'free';
    case 'resource':
      return key === '_meta' ? 'meta' : 'free';
    case 'meta':
      return key === TRUST_KEY ? 'claim' : 'free';
    case 'claim':
      return key === 'evidenceRef' ? 'evidenceRef' : 'free';
    default:
      return 'free';
  }
}

/** Kind of the items of an array member (content blocks, icons), by the kind of object holding it. */
function itemKind(kind: Kind, key: string): Kind {
  if (kind === 'result' && key === 'content') return 'block';
  if (kind === 'block' && key === 'icons') return 'icon';
  return 'free';
}

/** The walk's position: the tokens of the current path and, per depth, the tree node of that object once it has one. */
interface Walk {
  tokens: Array<string | number>;
  nodes: Array<CasefoldNode | undefined>;
  out: Collision[];
  root: CasefoldNode | undefined;
}

/** The tree node of the object at the current path, made (with its missing ancestors) on first need. */
function holderHere(w: Walk): CasefoldNode {
  const depth = w.tokens.length;
  let d = depth;
  while (d >= 0 && w.nodes[d] === undefined) d--;
  if (d < 0) {
    w.root = { parent: null, token: '', kids: new Map() };
    w.nodes[0] = w.root;
    d = 0;
  }
  for (; d < depth; d++) {
    const parent = w.nodes[d]!;
    const token = w.tokens[d]!;
    const node: CasefoldNode = { parent, token, kids: new Map() };
    parent.kids.set(String(token), node);
    w.nodes[d + 1] = node;
  }
  return w.nodes[depth]!;
}

/** Step into a member or item: a tree node left at that depth belongs to an earlier sibling. */
function enter(w: Walk, token: string | number): void {
  w.tokens.push(token);
  if (w.nodes.length > w.tokens.length) w.nodes.length = w.tokens.length;
}

function hit(w: Walk, name: string, clash: string, defined: boolean): void {
  const holder = holderHere(w);
  holder.kids.set(name, true);
  w.out.push({ holder, name, clash, defined });
}

function walkValue(v: unknown, kind: Kind, w: Walk): void {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i];
      if (typeof item === 'object' && item !== null) {
        enter(w, i);
        walkValue(item, kind, w);
        w.tokens.pop();
      }
    }
  } else if (isRecord(v)) {
    walkObject(v, kind, w);
  }
}

function walkObject(obj: Record<string, unknown>, kind: Kind, w: Walk): void {
  const keys = Object.keys(obj);
  const defined = definedFor(kind, obj);
  let hits: Set<string> | undefined;
  // Names that fold to themselves are distinct (JSON.parse keeps one member
  // per name), so two members fold together only when one of them changes
  // under folding: those are the only ones compared with the others.
  let changed: Array<{ key: string; fold: string }> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    // A name the object defines, written as defined: no defined-name hit, and no other member can
    // fold together with it without being a hit itself (its fold is a defined one). Nothing to compare.
    if (defined.exact.has(key)) continue;
    const f = foldName(key);
    if (f !== key) (changed ??= []).push({ key, fold: f });
    const d = defined.fold.get(f);
    if (d !== undefined && d !== key) {
      (hits ??= new Set()).add(key);
      hit(w, key, d, true);
    }
  }
  if (changed) {
    let others: Map<string, string> | undefined;
    // Changed names by their fold, when two of them could share one.
    let byFold: Map<string, string[]> | undefined;
    if (changed.length > 1) {
      byFold = new Map();
      for (const c of changed) {
        const list = byFold.get(c.fold);
        if (list) list.push(c.key);
        else byFold.set(c.fold, [c.key]);
      }
    }
    for (const c of changed) {
      if (defined.fold.has(c.fold)) continue;
      // Another member with the same folded name: one written as the fold itself, or another changed one.
      let other: string | undefined = Object.prototype.hasOwnProperty.call(obj, c.fold) ? c.fold : undefined;
      if (other === undefined) {
        const list = byFold?.get(c.fold);
        if (list && list.length > 1) other = list[0] === c.key ? list[1] : list[0];
      }
      if (other === undefined) continue;
      (others ??= new Map()).set(c.key, other);
      if (other === c.fold) others.set(other, c.key);
    }
    if (others) {
      for (const key of keys) {
        const clash = others.get(key);
        if (clash === undefined || hits?.has(key)) continue;
        (hits ??= new Set()).add(key);
        hit(w, key, clash, false);
      }
    }
  }
  for (const key of keys) {
    if (hits?.has(key)) continue;
    const v = obj[key];
    if (typeof v !== 'object' || v === null) continue;
    enter(w, key);
    if (Array.isArray(v)) walkValue(v, itemKind(kind, key), w);
    else walkObject(v as Record<string, unknown>, childKind(kind, key), w);
    w.tokens.pop();
  }
}

/**
 * Every member of the result that a case-insensitive reader could take for
 * another (see the module comment), each object's own in member order, then
 * those of the objects inside it. Members inside a colliding member are not
 * listed: it is withheld whole. Linear in the size of the result, whatever
 * its depth (the result nests at most 128 levels, checked before).
 */
export function findCasefoldCollisions(result: unknown): Collisions {
  const w: Walk = { tokens: [], nodes: [], out: [], root: undefined };
  if (isRecord(result)) walkObject(result, 'result', w);
  return { list: w.out, root: w.root };
}

/** True when `key` is not `name` but folds to the same name (a trust flag written `ſensitive`, an upper-case trust key). */
export function foldsTo(key: string, name: string): boolean {
  return key !== name && key.length === name.length && foldName(key) === name;
}
