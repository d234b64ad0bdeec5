/**
 * A server's `tools/list` answer as the relay passes it on
 * (docs/bindings/proxy.md): every definition pinned (trust on first use,
 * under the operator's name for the server), listed only while its pin is
 * `first-seen` or `match`, a name the server lists twice withheld (which
 * definition would a call be judged against?), and the rules of scope
 * `tool` judging each definition left (drop takes it off the list, flag is
 * logged). The definitions kept are what later calls are judged against.
 */
import type { DecisionCore, ToolJudgement } from '../../decision/core.js';
import { errorDetail } from '../../decision/verdict.js';
import { deepFreeze } from '../../json/frozen.js';
import { isRecord } from '../../json/record.js';
import type { OperatorEntry } from '../../trust/operator.js';
import { maskedGroups, maskedStrings } from './mask-strings.js';

type Msg = Record<string, unknown>;

/** Pin statuses a tool is listed under; any other (changed, unavailable) withholds it. */
const LISTED_PINS = new Set(['first-seen', 'match']);

/** The tools a server listed, by exact name, frozen: what its calls are judged against; a call to a name not here is `unlisted`. */
export type ListedTools = Map<string, Record<string, unknown>>;

export interface ToolListDeps {
  core: DecisionCore;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void };
  /** `server` of the judgement: the operator's name, and what the server reports of itself. */
  server: Readonly<{ name: string; reported?: string }>;
  /** Pins the definitions (trust on first use); without it every definition counts as pinned. */
  pinTools?: (server: string, tools: Record<string, unknown>[]) => Promise<Map<string, string>>;
  context?: Msg;
  /** The operator's entry for the server: which of its hints the `scope: tool` rules believe. */
  operator?: OperatorEntry | undefined;
}

/** The list to pass on (`tools`, and the server's `nextCursor`), or why the whole answer is withheld. */
export async function judgeToolList(deps: ToolListDeps, tools: ListedTools, result: Msg): Promise<{ ok: true; payload: Msg } | { ok: false; text: string }> {
  if (!Array.isArray(result.tools)) return { ok: false, text: 'Trustgate withheld this answer: the server answered tools/list without a list of tools' };
  const { core, log, server } = deps;
  const frozen = result.tools.filter((t): t is Msg => isRecord(t) && typeof t.name === 'string').map((t) => deepFreeze(t));
  let pins: Map<string, string> | undefined;
  try {
    pins = deps.pinTools ? await deps.pinTools(server.name, frozen) : undefined;
  } catch (err) {
    // No pin, no listing: fail closed.
    log.warn({ err: errorDetail(err) }, 'tool definitions could not be pinned');
    return { ok: false, text: `Trustgate withheld the list of tools: ${errorDetail(err)}` };
  }
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const t of frozen) (seen.has(t.name as string) ? twice : seen).add(t.name as string);
  const listed: Msg[] = [];
  const withheld: string[] = [];
  for (const t of frozen) {
    const name = t.name as string;
    const pin = pins?.get(name) ?? (pins ? 'none' : 'match');
    // A name listed twice is ambiguous: which definition would a call be judged against? Neither is callable.
    if (twice.has(name)) {
      tools.delete(name);
      withheld.push(name);
      continue;
    }
    // A call is judged against the definition the server listed last: a changed one is denied by its pin.
    tools.set(name, t);
    if (!LISTED_PINS.has(pin)) withheld.push(name);
    else listed.push(t);
  }
  // Rules of scope tool see each definition left (its description, its hints): drop takes it off the list, flag is logged.
  let judged: ToolJudgement[];
  try {
    judged = core.judgeTools({ tools: listed, server, operator: deps.operator, ...(deps.context ? { context: deps.context } : {}) });
  } catch (err) {
    log.error({ err: errorDetail(err) }, 'tool definitions could not be checked');
    return { ok: false, text: `Trustgate withheld the list of tools: ${errorDetail(err)}` };
  }
  const kept = listed.filter((t, i) => {
    const j = judged[i]!;
    const rules = j.findings.map((f) => `${f.policy}/${f.rule}`);
    if (j.dropped) {
      tools.delete(t.name as string);
      withheld.push(t.name as string);
      log.info({ server: server.name, tool: t.name, rules }, 'tool dropped from the list by a policy');
    } else if (rules.length > 0) log.warn({ server: server.name, tool: t.name, rules }, 'tool definition flagged by a policy');
    return !j.dropped;
  });
  if (withheld.length > 0) log.warn({ server: server.name, tools: withheld.slice(0, 20), count: withheld.length }, 'tools withheld from the list (definition changed since it was pinned, or not pinned)');
  let read: Read;
  try {
    read = await readDefinitions(deps, kept, typeof result.nextCursor === 'string' ? result.nextCursor : undefined);
  } catch (err) {
    log.error({ err: errorDetail(err) }, 'tool definitions could not be read for the host');
    return { ok: false, text: `Trustgate withheld the list of tools: ${errorDetail(err)}` };
  }
  // A tool whose name, or a name in its definition, holds a finding is not listed: renamed, it would be another tool.
  for (const name of read.withheld) tools.delete(name);
  if (read.withheld.length > 0) log.warn({ server: server.name, tools: read.withheld.slice(0, 20), count: read.withheld.length }, 'tools withheld from the list (a name in the definition holds what a rule masks)');
  const payload: Msg = { tools: read.shown };
  // A cursor that holds a finding is not passed on: the list ends there.
  if (read.cursor !== undefined) payload.nextCursor = read.cursor;
  return { ok: true, payload };
}

/**
 * The titles and descriptions of listed tools, as the one text block a
 * result of the server would carry: text the host's model reads, judged as
 * content under the session, which takes in its labels and values (a
 * planted address in a description is then the server's, untrusted).
 * Undefined when the list holds none.
 */
export function descriptionsOf(list: Msg): Msg | undefined {
  const texts: string[] = [];
  for (const t of Array.isArray(list.tools) ? list.tools : []) {
    if (!isRecord(t)) continue;
    for (const x of [t.title, t.description]) if (typeof x === 'string' && x !== '') texts.push(x);
  }
  return texts.length === 0 ? undefined : { content: [{ type: 'text', text: texts.join('\n\n') }] };
}

/** Members of a definition whose strings are identifiers or schema keywords (and an icon's), not prose. */
const DEFINITION_KEYWORDS: ReadonlySet<string> = new Set(['type', 'required', '$schema', '$ref', '$id', 'format', 'pattern', 'mimeType', 'uri', 'icons']);

/**
 * What a string of a definition is: its `name` (the tool's own, or a
 * member's), a `keyword`'s (DEFINITION_KEYWORDS, or anything under one but
 * an object, which is read whatever its member's name: a property may be
 * called `type`), or a `value` (a description, a title, an example, an
 * enum value).
 */
type Kind = 'name' | 'keyword' | 'value';

/** Where a string sits in its definition: the member or index, and where its holder sits (none at the definition). */
interface Path {
  up: Path | undefined;
  key: string | number;
}

/** The keys from the definition down to `at`. Made only for a string a rule changed: each slot keeps one link, not a copy of its path. */
function keysOf(at: Path | undefined): Array<string | number> {
  const keys: Array<string | number> = [];
  for (let p = at; p !== undefined; p = p.up) keys.push(p.key);
  return keys.reverse();
}

/** A string of a definition the host sees: where it is, and what it is. Every string is read: a server can put anything anywhere. */
interface Slot {
  tool: number;
  at: Path | undefined;
  text: string;
  kind: Kind;
}

function slotsOf(v: unknown, tool: number, at: Path | undefined, out: Slot[], kind: Kind = 'value'): void {
  if (typeof v === 'string') {
    if (v !== '') out.push({ tool, at, text: v, kind });
  } else if (Array.isArray(v)) v.forEach((x, i) => slotsOf(x, tool, { up: at, key: i }, out, kind));
  else if (isRecord(v)) {
    for (const k of Object.keys(v)) {
      const here: Path = { up: at, key: k };
      if (k !== '') out.push({ tool, at: here, text: k, kind: 'name' });
      const x = v[k];
      const of: Kind = at === undefined && k === 'name' ? 'name' : isRecord(x) ? 'value' : kind === 'keyword' || DEFINITION_KEYWORDS.has(k) ? 'keyword' : 'value';
      slotsOf(x, tool, here, out, of);
    }
  }
}

/** A copy of `t` with the string at `path` replaced. */
function replaced(t: unknown, path: ReadonlyArray<string | number>, text: string): unknown {
  if (path.length === 0) return text;
  const [head, ...rest] = path;
  if (Array.isArray(t)) return t.map((x, i) => (i === head ? replaced(x, rest, text) : x));
  const o = t as Msg;
  return { ...o, [head as string]: replaced(o[head as string], rest, text) };
}

/** The definitions as the host is shown them, the names of those withheld, and the cursor to pass on. */
interface Read {
  shown: Msg[];
  withheld: string[];
  cursor: string | undefined;
}

/**
 * Every string of the listed definitions (contract section 19: their
 * descriptions, titles, schemas, names and keywords), and the list's
 * cursor, read by the detectors as a result's text would be
 * (mask-strings.ts). A value is masked in place; a name cannot be (the tool
 * or the member would be another), so a definition with a name a rule
 * masks is withheld whole, and so is a cursor. The definitions a call is
 * judged and pinned against stay the server's own.
 */
async function readDefinitions(deps: ToolListDeps, tools: Msg[], cursor: string | undefined): Promise<Read> {
  const all: Slot[] = [];
  tools.forEach((t, i) => slotsOf(t, i, undefined, all));
  const of = (kind: Kind) => all.filter((x) => x.kind === kind);
  const [values, keywords, names] = [of('value'), of('keyword'), of('name')];
  const d = { core: deps.core, server: deps.server, context: deps.context, method: 'tools/list' };
  // A definition's values as a result's blocks (a value split over two is read whole), no two definitions' together;
  // its names and keywords, and the cursor, each by itself (their neighbours in a definition are not their text).
  const byTool = tools.map(() => [] as Slot[]);
  for (const x of values) byTool[x.tool]!.push(x);
  const maskedValues = (await maskedGroups(d, byTool.map((g) => g.map((x) => x.text)))).flat();
  const alone = [...keywords, ...names].map((x) => x.text);
  if (cursor !== undefined) alone.push(cursor);
  const maskedAlone = alone.length === 0 ? [] : await maskedStrings(d, alone, { alone: true });
  const out: unknown[] = tools.slice();
  const put = (x: Slot, masked: string) => {
    if (masked !== x.text) out[x.tool] = replaced(out[x.tool], keysOf(x.at), masked);
  };
  byTool.flat().forEach((x, k) => put(x, maskedValues[k]!));
  keywords.forEach((x, k) => put(x, maskedAlone[k]!));
  const named = new Set(names.filter((x, k) => maskedAlone[keywords.length + k] !== x.text).map((x) => x.tool));
  return {
    shown: (out as Msg[]).filter((_, i) => !named.has(i)),
    withheld: [...named].map((i) => tools[i]!.name as string),
    cursor: cursor !== undefined && maskedAlone[alone.length - 1] === cursor ? cursor : undefined,
  };
}
