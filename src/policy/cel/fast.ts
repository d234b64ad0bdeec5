/**
 * A compiled fast path for the common part of CEL, next to the engine.
 *
 * At load every `when` is parsed and type-checked by the engine
 * (engine.ts). This module then turns the engine's AST into
 * JavaScript closures when the expression stays inside a small subset —
 * literals, the variables, member and index access, `has()`, `!`,
 * `&&`, `||`, `?:`, `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `size()`,
 * `exists()`, `all()`, `startsWith()`, `endsWith()`, `contains()`,
 * `secrets()`, `pii()` — which
 * is what policies on tool results are made of. The closures read the
 * decision's variables as the plain JSON data they are, with no conversion
 * to the engine's values and no interpretation of the tree.
 *
 * The fast path never decides anything it is not sure of. Whenever a value
 * is not one it handles with the engine's exact meaning (an error such as a
 * missing key, a comparison across types, a map where a list was expected,
 * a string ordering, ...) it yields UNKNOWN, and the caller evaluates the
 * expression with the engine instead. `&&`, `||`, `exists()` and `all()`
 * treat UNKNOWN like CEL treats an error (commutative absorption: `false &&
 * x` is false whatever `x` is), which is exact because the engine's result
 * for those operators does not depend on what the unknown operand holds.
 * test/unit/policy/cel-fast.test.ts checks the fast path against the engine on
 * generated expressions and data: wherever the fast path answers, the
 * engine gives the same bool.
 */

import { detectKinds, detectKindsOfJoined, JoinedText } from '../../detect/index.js';
import { checkDeadline, runningDeadline } from './deadline.js';
import { isRecord } from '../../json/record.js';
import { CEL_VARIABLES, type CelVariable } from './variables.js';

/** Elements the loops below have read, for asking the deadline every so many (deadline.ts). */
let ticks = 0;

/** "The fast path cannot tell": evaluate with the engine. */
export const UNKNOWN: unique symbol = Symbol('cel-fast.unknown');
type Unknown = typeof UNKNOWN;

/** The variables of the table (variables.ts) as plain JSON data (objects are maps, arrays are lists). */
export type PlainVars = { readonly [name in CelVariable]: unknown };

type Locals = unknown[];
const NO_LOCALS: Locals = Object.freeze([]) as unknown as Locals;
type Node = (vars: PlainVars, locals: Locals) => unknown;

/** The engine's AST node, read defensively (engine.ts keeps the engine behind one module). */
interface AstNode {
  op: string;
  args: unknown;
}

const VARIABLES: ReadonlySet<string> = new Set(CEL_VARIABLES);

/** Thrown while compiling: the expression leaves the subset, so it always runs on the engine. */
class Unsupported extends Error {}

function isNode(v: unknown): v is AstNode {
  return typeof v === 'object' && v !== null && typeof (v as AstNode).op === 'string';
}

/** A map member, or UNKNOWN when it is missing (the engine's `no such key`); a joined text (`result.text`) as its string. */
function member(target: unknown, key: string): unknown {
  if (!isRecord(target) || !Object.hasOwn(target, key)) return UNKNOWN;
  const v = target[key];
  if (v === undefined) return UNKNOWN;
  return typeof v === 'object' && v instanceof JoinedText ? v.text : v;
}

/** CEL equality where both sides have one simple type; UNKNOWN otherwise. */
function equals(a: unknown, b: unknown): boolean | Unknown {
  const t = typeof a;
  if (a === null || b === null) return a === null && b === null ? true : UNKNOWN;
  if ((t === 'string' || t === 'number' || t === 'boolean') && typeof b === t) return a === b;
  return UNKNOWN;
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function literal(v: unknown): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : unsupported();
  if (typeof v === 'bigint') {
    // ints compare with doubles by value in the engine; only exactly representable ones are kept.
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) unsupported();
    return Number(v);
  }
  return unsupported();
}

function unsupported(): never {
  throw new Unsupported();
}

function argList(node: AstNode): unknown[] {
  return Array.isArray(node.args) ? node.args : unsupported();
}

function child(v: unknown): AstNode {
  return isNode(v) ? v : unsupported();
}

class Compiler {
  /** Names of comprehension variables in scope, innermost last; a name's slot is its index. */
  readonly #locals: string[] = [];
  /** Whether the expression binds comprehension variables (and so needs a locals array per evaluation). */
  usesLocals = false;

  compile(node: AstNode): Node {
    switch (node.op) {
      case 'value': {
        const v = literal(node.args);
        return () => v;
      }
      case 'id': {
        const name = node.args;
        if (typeof name !== 'string') unsupported();
        const slot = this.#locals.lastIndexOf(name);
        if (slot >= 0) return (_vars, locals) => locals[slot];
        if (!VARIABLES.has(name)) unsupported();
        const key = name as keyof PlainVars;
        return (vars) => vars[key];
      }
      case '.': {
        const [target, field] = argList(node);
        if (typeof field !== 'string') unsupported();
        const t = this.compile(child(target));
        return (vars, locals) => member(t(vars, locals), field);
      }
      case '[]': {
        // Only literal keys: the engine tells an int index from a double one, plain numbers do not.
        const [target, index] = argList(node);
        const t = this.compile(child(target));
        const k = child(index);
        if (k.op === 'value' && typeof k.args === 'string') {
          const key = k.args;
          return (vars, locals) => member(t(vars, locals), key);
        }
        if (k.op === 'value' && typeof k.args === 'bigint' && k.args >= 0n && k.args <= 0xffffffffn) {
          const at = Number(k.args);
          return (vars, locals) => {
            const c = t(vars, locals);
            if (!Array.isArray(c) || at >= c.length) return UNKNOWN;
            const v: unknown = c[at];
            return v === undefined ? UNKNOWN : v;
          };
        }
        return unsupported();
      }
      case 'list': {
        const items = argList(node).map((a) => this.compile(child(a)));
        return (vars, locals) => {
          const out = new Array<unknown>(items.length);
          for (let j = 0; j < items.length; j++) {
            const v = items[j]!(vars, locals);
            if (v === UNKNOWN) return UNKNOWN;
            out[j] = v;
          }
          return out;
        };
      }
      case '!_': {
        const a = this.compile(child(node.args));
        return (vars, locals) => {
          const v = a(vars, locals);
          return typeof v === 'boolean' ? !v : UNKNOWN;
        };
      }
      case '-_': {
        const a = this.compile(child(node.args));
        return (vars, locals) => {
          const v = a(vars, locals);
          return typeof v === 'number' ? -v : UNKNOWN;
        };
      }
      case '&&':
      case '||':
        return this.#logical(node);
      case '?:': {
        const [c, y, n] = argList(node).map((a) => this.compile(child(a)));
        return (vars, locals) => {
          const v = c!(vars, locals);
          if (v === true) return y!(vars, locals);
          if (v === false) return n!(vars, locals);
          return UNKNOWN;
        };
      }
      case '==':
      case '!=': {
        const [a, b] = argList(node).map((x) => this.compile(child(x)));
        const negate = node.op === '!=';
        return (vars, locals) => {
          const r = equals(a!(vars, locals), b!(vars, locals));
          return r === UNKNOWN ? UNKNOWN : r !== negate;
        };
      }
      case '<':
      case '<=':
      case '>':
      case '>=':
        return this.#ordering(node);
      case 'in': {
        const [x, c] = argList(node).map((a) => this.compile(child(a)));
        return (vars, locals) => {
          const v = x!(vars, locals);
          if (v === UNKNOWN) return UNKNOWN;
          const coll = c!(vars, locals);
          if (Array.isArray(coll)) {
            let unknown = false;
            for (const e of coll) {
              const r = equals(v, e);
              if (r === true) return true;
              if (r === UNKNOWN) unknown = true;
            }
            return unknown ? UNKNOWN : false;
          }
          if (isRecord(coll) && typeof v === 'string') return member(coll, v) !== UNKNOWN;
          return UNKNOWN;
        };
      }
      case 'call':
        return this.#call(node);
      case 'rcall':
        return this.#receiverCall(node);
      default:
        return unsupported();
    }
  }

  #logical(node: AstNode): Node {
    const [a, b] = argList(node).map((x) => this.compile(child(x)));
    // The value that decides the operator whatever the other side holds.
    const decisive = node.op === '||';
    return (vars, locals) => {
      const l = a!(vars, locals);
      if (l === decisive) return decisive;
      const r = b!(vars, locals);
      if (r === decisive) return decisive;
      return l === !decisive && r === !decisive ? !decisive : UNKNOWN;
    };
  }

  #ordering(node: AstNode): Node {
    const [a, b] = argList(node).map((x) => this.compile(child(x)));
    const op = node.op;
    return (vars, locals) => {
      const l = a!(vars, locals);
      const r = b!(vars, locals);
      if (typeof l !== 'number' || typeof r !== 'number') return UNKNOWN;
      switch (op) {
        case '<':
          return l < r;
        case '<=':
          return l <= r;
        case '>':
          return l > r;
        default:
          return l >= r;
      }
    };
  }

  #call(node: AstNode): Node {
    const [name, args] = argList(node);
    if (!Array.isArray(args)) unsupported();
    if (name === 'size' && args.length === 1) return size(this.compile(child(args[0])));
    if ((name === 'secrets' || name === 'pii') && args.length === 1) {
      const arg = this.compile(child(args[0]));
      const scan = (vars: PlainVars, locals: Locals) => {
        const s = arg(vars, locals);
        return typeof s === 'string' ? detectKinds(name, s, runningDeadline()) : UNKNOWN;
      };
      if (!this.#isResultText(child(args[0]))) return scan;
      // `secrets(result.text)`: answered from the text's parts when the input carries them, no joined string made.
      return (vars, locals) => {
        const r = vars.result;
        const joined = isRecord(r) && Object.hasOwn(r, 'text') ? r.text : undefined;
        return joined instanceof JoinedText ? detectKindsOfJoined(name, joined, runningDeadline()) : scan(vars, locals);
      };
    }
    if (name === 'has' && args.length === 1) {
      const sel = child(args[0]);
      if (sel.op !== '.') unsupported();
      const [target, field] = argList(sel);
      if (typeof field !== 'string') unsupported();
      const t = this.compile(child(target));
      return (vars, locals) => {
        const obj = t(vars, locals);
        return isRecord(obj) ? member(obj, field) !== UNKNOWN : UNKNOWN;
      };
    }
    return unsupported();
  }

  /** Whether `node` is `result.text`, `result` the variable (not a comprehension's local of that name). */
  #isResultText(node: AstNode): boolean {
    if (node.op !== '.') return false;
    const [target, field] = argList(node);
    if (field !== 'text' || !isNode(target)) return false;
    return target.op === 'id' && target.args === 'result' && !this.#locals.includes('result');
  }

  #receiverCall(node: AstNode): Node {
    const [name, receiver, args] = argList(node);
    if (!Array.isArray(args)) unsupported();
    const recv = this.compile(child(receiver));
    switch (name) {
      case 'size':
        if (args.length !== 0) unsupported();
        return size(recv);
      case 'startsWith':
      case 'endsWith':
      case 'contains': {
        if (args.length !== 1) unsupported();
        const arg = this.compile(child(args[0]));
        return (vars, locals) => {
          const s = recv(vars, locals);
          const x = arg(vars, locals);
          if (typeof s !== 'string' || typeof x !== 'string') return UNKNOWN;
          return name === 'startsWith' ? s.startsWith(x) : name === 'endsWith' ? s.endsWith(x) : s.includes(x);
        };
      }
      case 'exists':
      case 'all': {
        if (args.length !== 2) unsupported();
        const v = child(args[0]);
        if (v.op !== 'id' || typeof v.args !== 'string') unsupported();
        this.#locals.push(v.args);
        this.usesLocals = true;
        const slot = this.#locals.length - 1;
        let pred: Node;
        try {
          pred = this.compile(child(args[1]));
        } finally {
          this.#locals.pop();
        }
        // exists: true once any element holds; all: false once any element fails.
        const decisive = name === 'exists';
        return (vars, locals) => {
          const list = recv(vars, locals);
          if (!Array.isArray(list)) return UNKNOWN;
          const saved = locals[slot];
          let unknown = false;
          try {
            for (const e of list) {
              // The deadline every 256 elements, counted across loops: nested ones ask it as often as flat ones.
              if ((++ticks & 255) === 0) checkDeadline();
              locals[slot] = e;
              const r = pred(vars, locals);
              if (r === decisive) return decisive;
              if (r !== !decisive) unknown = true;
            }
          } finally {
            locals[slot] = saved;
          }
          return unknown ? UNKNOWN : !decisive;
        };
      }
      default:
        return unsupported();
    }
  }
}

function size(a: Node): Node {
  return (vars, locals) => {
    const v = a(vars, locals);
    if (Array.isArray(v)) return v.length;
    if (typeof v === 'string') return codePoints(v);
    return UNKNOWN;
  };
}

/**
 * The fast evaluator of a checked expression, or undefined when the
 * expression leaves the subset. It returns a bool, or UNKNOWN when the
 * engine has to answer.
 */
export function compileFast(ast: unknown): ((vars: PlainVars) => boolean | Unknown) | undefined {
  if (!isNode(ast)) return undefined;
  const compiler = new Compiler();
  let root: Node;
  try {
    root = compiler.compile(ast);
  } catch (err) {
    if (err instanceof Unsupported) return undefined;
    throw err;
  }
  if (!compiler.usesLocals) {
    return (vars) => {
      const v = root(vars, NO_LOCALS);
      return typeof v === 'boolean' ? v : UNKNOWN;
    };
  }
  return (vars) => {
    const v = root(vars, []);
    return typeof v === 'boolean' ? v : UNKNOWN;
  };
}
