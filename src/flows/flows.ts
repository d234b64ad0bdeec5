/**
 * Values between results and calls (docs/behaviour/flows.md): what a
 * forwarded result adds to its session, and what a call's arguments carry
 * of what the session has seen. Pure: the digests are made by the caller
 * with the store's key.
 */
import { parse as parseYaml } from 'yaml';
import { isRecord } from '../json/record.js';
import { IN_TEXT, SENSITIVE, TRUSTED, UNTRUSTED, USER, type FlowEntry } from './origin.js';
import { isWord, quotedValues, valuesOf, type ValueKind } from './values.js';
import { escapePointerToken } from '../json/pointer.js';

/** Longest text read as the YAML or JSON it may hold; a longer one is read as running text. */
const MAX_STRUCTURED_TEXT = 512 * 1024;
/** A string value with more words than this is running text, not a field's value. */
const TEXT_WORDS = 7;

/** Most entries of `call.flows`; the rest are counted in `call.flowsOmitted`. */
export const MAX_CALL_FLOWS = 64;

/** The values a request adds to its session: each normalized value once, its bits ORed; `dropped` counts those past the bound. */
export interface SeenValues {
  values: Map<string, number>;
  dropped: number;
  /** The decision's deadline: past it the read stops, and what was not read counts as dropped (the session overflows: fail closed). */
  until?: (() => boolean) | undefined;
  /** The read stopped at the deadline. */
  cut?: boolean;
  /** Values and tokens read so far: the deadline is asked every READS_PER_CHECK of them. */
  reads: number;
}

/** How many reads pass between two asks of the deadline. */
const READS_PER_CHECK = 256;

/** An empty collection; `until` is the decision's deadline, when it has one. */
export function seenValues(until?: () => boolean): SeenValues {
  return { values: new Map(), dropped: 0, until, reads: 0 };
}

/** Whether the read must stop: it was cut, or the deadline has just passed (then it is cut, and counts one value dropped). */
function expired(seen: SeenValues): boolean {
  if (seen.cut === true) return true;
  if ((++seen.reads & (READS_PER_CHECK - 1)) !== 0 || seen.until === undefined || !seen.until()) return false;
  seen.cut = true;
  seen.dropped++;
  return true;
}

/** The bits of content labelled so: untrusted and/or sensitive, else trusted. */
export function contentBits(untrusted: boolean, sensitive: boolean): number {
  const bits = (untrusted ? UNTRUSTED : 0) | (sensitive ? SENSITIVE : 0);
  return bits === 0 ? TRUSTED : bits;
}

/** A sink adding each value with `bits` to `seen`, at most `max` distinct values (past it nothing more is read: the session overflows anyway). */
function into(seen: SeenValues, bits: number, max: number): (value: string) => boolean {
  return (value) => {
    if (expired(seen)) return false;
    const had = seen.values.get(value);
    if (had !== undefined) seen.values.set(value, had | bits);
    else if (seen.values.size < max) seen.values.set(value, bits);
    else {
      seen.dropped++;
      return false;
    }
    return true;
  };
}

/** Whether a string reads as running text: several words, or several lines. */
function isRunningText(s: string): boolean {
  let spaces = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x0a) return true;
    if (c === 0x20 && ++spaces >= TEXT_WORDS) return true;
  }
  return false;
}

/** Adds the values of one string: running text with IN_TEXT (and its quoted spans), a field's value as it is. A string outside structured data is running text. */
function addString(seen: SeenValues, s: string, bits: number, max: number, field: boolean): boolean {
  const text = !field || isRunningText(s);
  if (seen.cut === true) return false;
  const add = into(seen, text ? bits | IN_TEXT : bits, max);
  let going = true;
  valuesOf(s, (v) => (going = add(v)), true, () => expired(seen));
  if (going && text) going = quotedValues(s, add);
  return going;
}

/** The YAML or JSON a text holds when it is structured data (an object or a list), else undefined. */
function structured(text: string): unknown {
  if (text.length > MAX_STRUCTURED_TEXT) return undefined;
  const first = /\S/.exec(text)?.[0];
  const looksJson = first === '{' || first === '[';
  // YAML when it opens as YAML does: a list item or a `key:` on its first line.
  if (!looksJson && !/^\s*(?:- |[A-Za-z_][\w.-]{0,63}:(?: |\n|$))/.test(text.slice(0, 256))) return undefined;
  try {
    const v: unknown = looksJson ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 16, uniqueKeys: false, prettyErrors: false, strict: false });
    return isRecord(v) || Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Adds the values a text shows with `bits` to `seen`, at most `max`
 * distinct values (the rest counted). A text that holds YAML or JSON is read
 * as its fields: a field's short value is data; a value that is running
 * text, and any text that is not structured, is read with IN_TEXT.
 */
export function addValues(seen: SeenValues, text: string, bits: number, max: number): void {
  const data = structured(text);
  if (data === undefined) {
    addString(seen, text, bits, max, false);
    return;
  }
  const stack: unknown[] = [data];
  while (stack.length > 0) {
    if (expired(seen)) return;
    const x = stack.pop();
    if (typeof x === 'string') {
      if (!addString(seen, x, bits, max, true)) return;
    } else if (typeof x === 'number' || typeof x === 'bigint') {
      if (!into(seen, bits, max)(String(x))) return;
    } else if (Array.isArray(x)) {
      for (let i = x.length - 1; i >= 0; i--) stack.push(x[i]);
    } else if (x instanceof Date) {
      if (!into(seen, bits, max)(x.toISOString())) return;
    } else if (isRecord(x)) {
      const keys = Object.keys(x);
      for (let i = keys.length - 1; i >= 0; i--) stack.push(x[keys[i]!]);
    }
  }
}

/** The user's own words: every value with bit USER. */
export function userValues(text: string, max: number): SeenValues {
  const seen = seenValues();
  addValues(seen, text, USER, max);
  return seen;
}

/** One value found in a call's arguments. */
export interface ArgValue {
  /** RFC 6901 pointer into `call.arguments` of the string holding it. */
  pointer: string;
  value: string;
  kind: ValueKind;
  /** The whole argument is this value and reads as an identifier: a string of at most 64 characters, no space, holding a digit or one of `@/._:-`, not a word, a date or a time. */
  identifier?: true;
}

/** A date or time as a model writes one (`2024-05-26`, `2024-05-26 17:00`, `17:00`): computed, not copied. */
const DATE_TIME = /^(?:\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?)$/;

function isIdentifier(whole: string): boolean {
  if (whole.length === 0 || whole.length > 64 || whole.includes(' ') || DATE_TIME.test(whole) || isWord(whole)) return false;
  return /[0-9@/._:-]/.test(whole);
}


/**
 * Every value of every string in `args`, in argument order (depth first),
 * each (pointer, value) once; at most `max` (the rest counted as dropped:
 * a call too large to read whole is read as the overflow it is).
 */
export function argumentValues(args: Record<string, unknown>, max: number): { values: ArgValue[]; dropped: number } {
  const values: ArgValue[] = [];
  let dropped = 0;
  const stack: Array<[unknown, string]> = [[args, '']];
  while (stack.length > 0) {
    const [item, at] = stack.pop()!;
    // A number an argument carries is read as the text it would be written as (an id, an amount); it is a quantity, never an identifier.
    const x = typeof item === 'number' && Number.isFinite(item) ? String(item) : item;
    const quantity = typeof item === 'number';
    if (typeof x === 'string') {
      if (values.length >= max) {
        dropped++;
        continue;
      }
      const seen = new Set<string>();
      let first = true;
      valuesOf(x, (value, kind) => {
        // The first value handed over is the whole string when it is short enough (valuesOf's order).
        const whole = first && kind === 'string';
        first = false;
        if (seen.has(value)) return true;
        if (values.length >= max) {
          dropped++;
          return false;
        }
        seen.add(value);
        values.push(whole && !quantity && isIdentifier(value) ? { pointer: at, value, kind, identifier: true } : { pointer: at, value, kind });
        return true;
      });
    } else if (Array.isArray(x)) {
      for (let i = x.length - 1; i >= 0; i--) stack.push([x[i], `${at}/${i}`]);
    } else if (x instanceof MemberName) {
      // A member name carries a value as well as a member's value does (`{"attacker@evil.example": "cc"}`): its
      // addresses, links and numbers are read; not the name whole, as an identifier or as a host name, which names
      // of schemas and files (`user_id`, `package.json`) would match wherever a text mentions them.
      valuesOf(x.name, (value, kind) => {
        if (!NAME_KINDS.has(kind)) return true;
        if (values.length >= max) {
          dropped++;
          return false;
        }
        values.push({ pointer: at, value, kind });
        return true;
      });
    } else if (isRecord(x)) {
      const keys = Object.keys(x);
      for (let i = keys.length - 1; i >= 0; i--) {
        const where = `${at}/${escapePointerToken(keys[i]!)}`;
        stack.push([x[keys[i]!], where]);
        stack.push([new MemberName(keys[i]!), where]);
      }
    }
  }
  return { values, dropped };
}

/** A member name of a call's arguments, on the stack of argumentValues. */
class MemberName {
  constructor(readonly name: string) {}
}

/** The kinds of value a member name of the arguments is read for. */
const NAME_KINDS: ReadonlySet<ValueKind> = new Set<ValueKind>(['email', 'url', 'ip', 'iban', 'card', 'phone']);

/** One entry of `call.flows`: a value of an argument the session has seen, with its origins; never the value itself. */
export interface FlowVar {
  pointer: string;
  kind: ValueKind;
  untrusted: boolean;
  sensitive: boolean;
  trusted: boolean;
  user: boolean;
  /** Seen inside running text (where instructions hide), not only as a field's value of structured data. */
  inText: boolean;
  sources: string[];
}

/** What a call carries of the session: `call.flows`, `call.flowsOmitted`, `call.untrustedArgs`, `call.sensitiveArgs`, `call.unknownArgs`. */
export interface CallFlows {
  flows: FlowVar[];
  flowsOmitted: number;
  /** Pointers of arguments holding a value with `untrusted && !user`. */
  untrustedArgs: string[];
  /** Pointers of arguments holding a value with `sensitive`. */
  sensitiveArgs: string[];
  /** Pointers of arguments that are an identifier (a string of no space, at most 64 characters, not a date) the session never saw. */
  unknownArgs: string[];
  /** Pointers of arguments that are an identifier the user did not give: seen only in results, or never seen. */
  unconfirmedIds: string[];
}

/** The flows of a call: each argument value the session holds (`digests[i]` is `values[i]`'s), in argument order. */
export function callFlows(values: readonly ArgValue[], digests: readonly string[], held: ReadonlyMap<string, FlowEntry>): CallFlows {
  const out: CallFlows = { flows: [], flowsOmitted: 0, untrustedArgs: [], sensitiveArgs: [], unknownArgs: [], unconfirmedIds: [] };
  const untrusted = new Set<string>();
  const sensitive = new Set<string>();
  for (let i = 0; i < values.length; i++) {
    const e = held.get(digests[i]!);
    const v = values[i]!;
    if (e === undefined) {
      if (v.identifier) {
        out.unknownArgs.push(v.pointer);
        out.unconfirmedIds.push(v.pointer);
      }
      continue;
    }
    if (v.identifier && (e.bits & USER) === 0) out.unconfirmedIds.push(v.pointer);
    const f: FlowVar = {
      pointer: v.pointer,
      kind: v.kind,
      untrusted: (e.bits & UNTRUSTED) !== 0,
      sensitive: (e.bits & SENSITIVE) !== 0,
      trusted: (e.bits & TRUSTED) !== 0,
      user: (e.bits & USER) !== 0,
      inText: (e.bits & IN_TEXT) !== 0,
      sources: e.sources.slice(),
    };
    if (f.untrusted && !f.user) untrusted.add(v.pointer);
    if (f.sensitive) sensitive.add(v.pointer);
    if (out.flows.length < MAX_CALL_FLOWS) out.flows.push(f);
    else out.flowsOmitted++;
  }
  out.untrustedArgs = [...untrusted];
  out.sensitiveArgs = [...sensitive];
  return out;
}
