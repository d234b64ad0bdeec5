/**
 * The decision's data as the values policies read: converted to the
 * engine's CEL values on first read (toCel), and kept as plain data for the
 * fast path (PlainScope). One Activation per scope, over one Shared per
 * decision; the variables they bind are those of variables.ts.
 */
import { deepFreeze, isDeepFrozen, perFrozen } from '../../json/frozen.js';
import { isRecord } from '../../json/record.js';
import { hintViews } from '../../mcp/hints.js';
import type { PlainVars } from './fast.js';
import { ANONYMOUS, NO_SESSION, type CallVar, type ScopeVarsInput, type SessionVar, type SharedVarsInput } from './variables.js';
import { JoinedText } from '../../detect/index.js';

declare const sharedBrand: unique symbol;
declare const activationBrand: unique symbol;

/** Shared members already in CEL form: build once per decision with {@link prepareShared}. */
export interface SharedActivation {
  readonly [sharedBrand]: true;
}

/** All the variables in CEL form: build once per scope with {@link buildActivation}. */
export interface CelActivation {
  readonly [activationBrand]: true;
}

/** Members that are CEL ints where they appear (`result.blockCount`, `block.index`). */
const INT_MEMBERS = new Set(['blockCount', 'index']);

/**
 * Converts JSON data to the engine's CEL values: string -> string,
 * boolean -> bool, null -> null_type, number -> double, array -> list,
 * object -> map. Like JSON.stringify, `undefined` members are left out
 * (so `has()` is false) and `undefined` list items become null; functions
 * and symbols are left out. With `intMembers`, the top-level members named
 * in INT_MEMBERS become ints.
 *
 * Maps are `Map`s, not objects: the engine tells maps from other values by
 * their `constructor` property, so an object holding a data member named
 * `constructor` would stop being a map, and a `__proto__` key would need
 * care; in a `Map` every key is plain data.
 */
function toCel(v: unknown, intMembers = false): unknown {
  if (v === null) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'number':
    case 'bigint':
      return v;
    case 'object':
      break;
    default:
      return undefined;
  }
  // `result.text`, joined when a rule reads it as a string.
  if (v instanceof JoinedText) return v.text;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = toCel(v[i]) ?? null;
    return out;
  }
  const out = new Map<string, unknown>();
  for (const key of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[key];
    const value = intMembers && INT_MEMBERS.has(key) && typeof x === 'number' && Number.isSafeInteger(x) ? BigInt(x) : toCel(x);
    if (value !== undefined) out.set(key, value);
  }
  return out;
}

function mapWithDefaults(v: Record<string, unknown> | undefined, defaults: Record<string, () => unknown>): Map<string, unknown> {
  const out = isRecord(v) ? (toCel(v) as Map<string, unknown>) : new Map<string, unknown>();
  for (const [key, make] of Object.entries(defaults)) if (!out.has(key)) out.set(key, make());
  return out;
}

/**
 * A definition's plain form with the contract defaults, and that with its
 * hints: kept per deep-frozen definition (the proxy judges every call of a
 * connection against the one its tools/list answer gave), computed afresh
 * for any other. What is kept is frozen: the fast path only reads it.
 */
const plainToolOf = perFrozen((tool: Record<string, unknown> | undefined) => {
  const plain = plainWithDefaults(tool, { name: '', annotations: {} });
  return isDeepFrozen(tool) ? deepFreeze(plain) : plain;
});
// Without the decision's own `hints`/`declared` (an operator entry's), the hints of a server nobody vouched for.
const plainToolWithHints = perFrozen((tool: Record<string, unknown> | undefined): Record<string, unknown> => {
  const plain = { ...plainToolOf(tool), ...hintViews(tool, undefined) };
  return isDeepFrozen(tool) ? deepFreeze(plain) : plain;
});

const emptyMap = () => new Map<string, unknown>();
const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/** `v` with the default members it lacks (as mapWithDefaults gives the engine), or the defaults alone. */
function plainWithDefaults(v: Record<string, unknown> | undefined, defaults: Record<string, unknown>): Record<string, unknown> {
  if (!isRecord(v)) return { ...defaults };
  for (const key of Object.keys(defaults)) {
    if (!Object.prototype.hasOwnProperty.call(v, key) || v[key] === undefined) return { ...defaults, ...definedMembers(v) };
  }
  return v;
}

function definedMembers(v: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) {
    const value = v[key];
    if (value === undefined) continue;
    // Assigning `__proto__` would set the prototype; define it as the plain member it is in the JSON.
    if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
  return out;
}

/**
 * The members shared by every scope of a decision, converted on first read
 * and then kept for the decision's other scopes: a policy set that never
 * reads `tool` or `server` never pays for converting them. Absent `tool`,
 * `server`, `context` get the contract defaults (`{ name: "", annotations:
 * {} }`, `{ name: "" }`, `{}`); a given `tool` or `server` lacking
 * `name`/`annotations` gets those members too, since policies may rely on
 * them being there.
 *
 * Numbers: `result.blockCount` is an int; every number inside `tool`,
 * `server` and `context` is a double (JSON does not tell `1` from `1.0`).
 * `context.n == 1` and `context.n > 0` hold for `n: 1` (CEL compares
 * numbers across types), while `context.n + 1` is an error (CEL has no
 * mixed int/double arithmetic): write `context.n + 1.0` or `int(context.n) + 1`.
 */
class Shared {
  #vars: SharedVarsInput;
  #result: unknown;
  #tool: unknown;
  #server: unknown;
  #context: unknown;
  #validation: unknown;
  #plainTool: unknown;
  #plainServer: unknown;
  #plainValidation: unknown;
  #session: unknown;
  #call: unknown;
  #plainCall: unknown;
  #principal: unknown;

  constructor(vars: SharedVarsInput) {
    this.#vars = vars;
  }

  get result(): unknown {
    return (this.#result ??= toCel(this.#vars.result, true));
  }

  get tool(): unknown {
    if (this.#tool === undefined) {
      const h = hintViews(this.#vars.tool, undefined);
      const m = mapWithDefaults(this.#vars.tool, { name: () => '', annotations: emptyMap }).set('hints', toCel(h.hints)).set('declared', toCel(h.declared));
      const extra = this.#vars.toolMembers;
      if (extra !== undefined) for (const k of Object.keys(extra)) if (extra[k] !== undefined) m.set(k, toCel(extra[k]));
      this.#tool = m;
    }
    return this.#tool;
  }

  get session(): unknown {
    return (this.#session ??= sessionToCel(this.#vars.session ?? NO_SESSION));
  }

  get call(): unknown {
    return (this.#call ??= callToCel(this.#vars.call));
  }

  get plainSession(): unknown {
    return this.#vars.session ?? NO_SESSION;
  }

  get principal(): unknown {
    return (this.#principal ??= toCel(this.#vars.principal ?? ANONYMOUS));
  }

  get plainPrincipal(): unknown {
    return this.#vars.principal ?? ANONYMOUS;
  }

  get plainCall(): unknown {
    return (this.#plainCall ??= plainWithDefaults(this.#vars.call as Record<string, unknown> | undefined, CALL_DEFAULTS));
  }

  get server(): unknown {
    return (this.#server ??= mapWithDefaults(this.#vars.server, { name: () => '' }));
  }

  get context(): unknown {
    return (this.#context ??= mapWithDefaults(this.#vars.context, {}));
  }

  /** The plain-data counterparts for the fast path: the same members and defaults, no conversion. */
  get plainTool(): unknown {
    // `hints` and `declared` are always computed, never taken from the request (a definition's own members of
    // those names are replaced); a decision passes the hints it computed with the operator's entry among its toolMembers.
    const extra = this.#vars.toolMembers;
    if (this.#plainTool !== undefined) return this.#plainTool;
    const tool = this.#vars.tool;
    return (this.#plainTool =
      extra === undefined ? plainToolWithHints(tool) : { ...plainToolOf(tool), ...(extra.hints !== undefined && extra.declared !== undefined ? extra : { ...hintViews(tool, undefined), ...extra }) });
  }

  get plainServer(): unknown {
    return (this.#plainServer ??= plainWithDefaults(this.#vars.server, { name: '' }));
  }

  get plainContext(): unknown {
    return isRecord(this.#vars.context) ? this.#vars.context : EMPTY;
  }

  get plainValidation(): unknown {
    return (this.#plainValidation ??= this.#vars.validation.map((f) => ({ rule: f.rule, severity: f.severity, pointer: f.pointer })));
  }

  get plainResult(): unknown {
    return this.#vars.result;
  }

  get validation(): unknown {
    return (this.#validation ??= this.#vars.validation.map(
      (f) =>
        new Map<string, unknown>([
          ['rule', f.rule],
          ['severity', f.severity],
          ['pointer', f.pointer],
        ]),
    ));
  }
}

/** `call` without what the request does not give: no name, `tools/call`, no arguments, no flows. */
const CALL_DEFAULTS: Readonly<Record<string, unknown>> = Object.freeze({ name: '', method: 'tools/call', arguments: {}, flows: [], flowsOmitted: 0, untrustedArgs: [], sensitiveArgs: [], unknownArgs: [], unconfirmedIds: [] });

/** CALL_DEFAULTS as the engine takes them, made fresh for each activation (`flowsOmitted`, an int, is set apart). */
const CALL_CEL_DEFAULTS: Record<string, () => unknown> = Object.fromEntries(
  Object.keys(CALL_DEFAULTS)
    .filter((k) => k !== 'flowsOmitted')
    .map((k) => [k, () => toCel(CALL_DEFAULTS[k])]),
);

/** `call` in CEL form: `flowsOmitted` is an int. */
function callToCel(v: CallVar | undefined): Map<string, unknown> {
  const out = mapWithDefaults(v as Record<string, unknown> | undefined, CALL_CEL_DEFAULTS);
  out.set('flowsOmitted', BigInt(v?.flowsOmitted ?? 0));
  return out;
}

/** `session` in CEL form: `calls` and `results` are ints. */
function sessionToCel(v: SessionVar): Map<string, unknown> {
  return new Map<string, unknown>([
    ['id', v.id],
    ['forgotten', v.forgotten === true],
    ['sensitive', v.sensitive],
    ['untrusted', v.untrusted],
    ['dataClass', isRecord(v.dataClass) ? toCel(v.dataClass) : emptyMap()],
    ['calls', BigInt(v.calls)],
    ['results', BigInt(v.results)],
    ['tools', v.tools.slice()],
    ['flowsOverflow', v.flowsOverflow === true],
  ]);
}

/** The shared members of one decision, for every activation of that decision (see Shared). */
export function prepareShared(vars: SharedVarsInput): SharedActivation {
  return new Shared(vars) as unknown as SharedActivation;
}

/**
 * Binds every variable for one scope (`block` with `index` as an int);
 * nothing is converted until a rule reads it.
 */
export function buildActivation(shared: SharedActivation, scope: ScopeVarsInput): CelActivation {
  return new Activation(shared as unknown as Shared, scope) as unknown as CelActivation;
}

/**
 * All the variables for one scope. Every member is converted on first
 * read (the shared ones once per decision): most rules read `block` and
 * `context` only, so the rest is never built for them. Variable names are
 * fixed, so one class (one hidden class) holds them; data keys live only
 * inside the Maps.
 */
export class Activation {
  #shared: Shared;
  #scope: ScopeVarsInput;
  #block: unknown;
  #evidence: unknown;
  #dataClass: unknown;
  #plain: PlainVars | undefined;

  constructor(shared: Shared, scope: ScopeVarsInput) {
    this.#shared = shared;
    this.#scope = scope;
  }

  /** The variables as plain data, for the fast path. */
  get plain(): PlainVars {
    return (this.#plain ??= new PlainScope(this.#shared, this.#scope));
  }

  get result(): unknown {
    return this.#shared.result;
  }

  get tool(): unknown {
    return this.#shared.tool;
  }

  get server(): unknown {
    return this.#shared.server;
  }

  get context(): unknown {
    return this.#shared.context;
  }

  get validation(): unknown {
    return this.#shared.validation;
  }

  get session(): unknown {
    return this.#shared.session;
  }

  get call(): unknown {
    return this.#shared.call;
  }

  get principal(): unknown {
    return this.#shared.principal;
  }

  get block(): unknown {
    return (this.#block ??= isRecord(this.#scope.block) ? toCel(this.#scope.block, true) : emptyMap());
  }

  get evidence(): unknown {
    return (this.#evidence ??= toCel(this.#scope.evidence));
  }

  get dataClass(): unknown {
    return (this.#dataClass ??= isRecord(this.#scope.dataClass) ? toCel(this.#scope.dataClass) : emptyMap());
  }
}

/**
 * The variables of one scope as plain data, for the fast path. Shared
 * members are read through the decision's Shared (built on first read), so
 * a rule that never reads `tool` never builds it.
 */
class PlainScope implements PlainVars {
  readonly result: unknown;
  readonly context: unknown;
  readonly block: unknown;
  readonly evidence: unknown;
  readonly dataClass: unknown;
  readonly #shared: Shared;

  constructor(shared: Shared, scope: ScopeVarsInput) {
    this.#shared = shared;
    this.result = shared.plainResult;
    this.context = shared.plainContext;
    this.block = isRecord(scope.block) ? scope.block : EMPTY;
    this.evidence = scope.evidence;
    this.dataClass = isRecord(scope.dataClass) ? scope.dataClass : EMPTY;
  }

  get tool(): unknown {
    return this.#shared.plainTool;
  }

  get server(): unknown {
    return this.#shared.plainServer;
  }

  get validation(): unknown {
    return this.#shared.plainValidation;
  }

  get session(): unknown {
    return this.#shared.plainSession;
  }

  get call(): unknown {
    return this.#shared.plainCall;
  }

  get principal(): unknown {
    return this.#shared.plainPrincipal;
  }
}
