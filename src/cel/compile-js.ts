/**
 * Checked filters compiled to plain JavaScript closures (no eval, no `new Function`), doing what
 * @bufbuild/cel 0.6.1's planned program does, for the subset filters use in practice. @bufbuild/cel stays the
 * reference: whatever is not covered here makes the whole filter run on the interpreter (`compileToJs` returns
 * undefined), and test/cel/compile-js.prop.test.ts compares both on random allowed expressions and events.
 *
 * Values are the event's own JSON values, never wrapped: string, double (number), int (bigint, literals and
 * int()), bool, null, list (array), map (plain object, from the event only). Outcomes of a closure:
 *  - a value (true/false for a well-typed filter);
 *  - ERR, a CEL error value: produced exactly where the interpreter produces an error *value*, so that `&&`,
 *    `||`, the ternary and the comprehensions absorb or propagate it as CEL does;
 *  - a thrown BAIL (or any exception): "not sure", e.g. a value the interpreter would refuse to convert (it
 *    throws, and a throw is not absorbed by `||`). Never absorbed.
 * The caller re-runs the interpreter for anything but true/false, so errors keep their reference message.
 */
import { RE2JS } from '@bufbuild/re2';
import type { Literal, Node } from './ast.js';

/** The CEL error value of a compiled closure (its message comes from re-running the interpreter). */
export const ERR: unique symbol = Symbol('cel error');

/** Thrown when the compiled code cannot be sure of the interpreter's outcome. */
class Bail {}
const BAIL = new Bail();

interface Ctx {
  t: unknown;
  d: unknown;
  /** Comprehension variables, one slot per comprehension of the expression. */
  v: unknown[];
}
type Fn = (c: Ctx) => unknown;

/** `(type, data) => value | ERR`, throws when unsure. */
export type CompiledJs = (type: string, data: unknown) => unknown;

class Unsupported extends Error {}

/** The closure of a checked filter, or undefined when it uses something this compiler does not cover. */
export function compileToJs(root: Node): CompiledJs | undefined {
  const compiler = new Compiler();
  let fn: Fn;
  try {
    fn = compiler.compile(root, new Map());
  } catch (e) {
    if (e instanceof Unsupported) return undefined;
    throw e;
  }
  const slots = compiler.slots;
  // decided once here, not per evaluation: only comprehensions need variable slots
  if (slots === 0) return (type, data) => fn({ t: type, d: checked(data), v: NO_VARS });
  return (type, data) => fn({ t: type, d: checked(data), v: new Array<unknown>(slots) });
}

const NO_VARS: unknown[] = [];
/** 2^53: every integer up to it is exactly a double. */
const MAX_EXACT = 9007199254740992n;
const MAX_INT = 9223372036854775807n;
const MIN_INT = -9223372036854775808n;

type Scope = ReadonlyMap<string, number>;

class Compiler {
  slots = 0;

  compile(node: Node, scope: Scope): Fn {
    switch (node.kind) {
      case 'literal': {
        const value = literal(node.literal);
        return () => value;
      }
      case 'ident':
        return this.ident(node.name, scope);
      case 'select': {
        const field = node.field;
        // `data.field`, the usual filter: one closure call fewer
        if (node.operand.kind === 'ident' && node.operand.name === 'data' && !scope.has('data')) return (c) => select(c.d, field);
        const operand = this.compile(node.operand, scope);
        return (c) => select(operand(c), field);
      }
      case 'list': {
        if (node.elements.every((e) => e.kind === 'literal')) {
          // never mutated: list results are always fresh arrays
          const value = node.elements.map((e) => literal((e as Node & { kind: 'literal' }).literal));
          return () => value;
        }
        const elements = node.elements.map((e) => this.compile(e, scope));
        return (c) => {
          const out: unknown[] = [];
          for (const e of elements) {
            const v = e(c);
            if (v === ERR) return ERR;
            out.push(v);
          }
          return out;
        };
      }
      case 'call':
        return node.macro ? this.macro(node, scope) : this.call(node, scope);
      default:
        throw new Unsupported();
    }
  }

  private ident(name: string, scope: Scope): Fn {
    const slot = scope.get(name);
    if (slot !== undefined) return (c) => c.v[slot];
    if (name === 'type') return (c) => c.t;
    if (name === 'data') return (c) => c.d;
    // type names (`int`, `string`, ...) are type values: not represented here
    throw new Unsupported();
  }

  private call(node: Node & { kind: 'call' }, scope: Scope): Fn {
    const operands = node.target ? [node.target, ...node.args] : node.args;
    switch (node.fn) {
      case '_&&_':
        return junction(
          operands.map((o) => this.compile(o, scope)),
          false,
        );
      case '_||_':
        return junction(
          operands.map((o) => this.compile(o, scope)),
          true,
        );
      case '_?_:_': {
        const [cond, t, f] = this.all(operands, scope, 3) as [Fn, Fn, Fn];
        return (c) => {
          const v = cond(c);
          return v === true ? t(c) : v === false ? f(c) : ERR;
        };
      }
      case '_[_]': {
        const [operand, key] = this.all(operands, scope, 2) as [Fn, Fn];
        return (c) => {
          const o = operand(c);
          if (o === ERR) return ERR;
          const k = key(c);
          return k === ERR ? ERR : index(o, k);
        };
      }
      case '_==_':
      case '_!=_': {
        const negate = node.fn === '_!=_';
        const [a, b] = operands;
        // the spec patterns: `field == 'literal'`
        if (b?.kind === 'literal' && b.literal.type === 'string') {
          const lhs = this.compile(a as Node, scope);
          const s = b.literal.value;
          return negate ? (c) => strNe(lhs(c), s) : (c) => strEq(lhs(c), s);
        }
        if (b?.kind === 'literal' && (b.literal.type === 'int' || b.literal.type === 'double')) {
          const lhs = this.compile(a as Node, scope);
          const n = b.literal.value;
          // `number == bigint` is a slow runtime call in V8: compare as a double when the literal is exactly one
          const d = typeof n === 'bigint' && n >= -MAX_EXACT && n <= MAX_EXACT ? Number(n) : undefined;
          if (d !== undefined) {
            return (c) => {
              const v = lhs(c);
              if (v === ERR) return ERR;
              const eq = typeof v === 'number' ? v === d : typeof v === 'bigint' && v === n;
              return negate ? !eq : eq;
            };
          }
          // numbers are equal across int and double; nothing else equals a number
          return (c) => {
            const v = lhs(c);
            if (v === ERR) return ERR;
            const eq = (typeof v === 'number' || typeof v === 'bigint') && v == n;
            return negate ? !eq : eq;
          };
        }
        return binary(this.all(operands, scope, 2), negate ? (x, y) => !equals(x, y) : equals);
      }
      case '_<_':
        return binary(this.all(operands, scope, 2), (x, y) => relate(x, y, lt));
      case '_<=_':
        return binary(this.all(operands, scope, 2), (x, y) => relate(x, y, le));
      case '_>_':
        return binary(this.all(operands, scope, 2), (x, y) => relate(x, y, gt));
      case '_>=_':
        return binary(this.all(operands, scope, 2), (x, y) => relate(x, y, ge));
      case '@in': {
        const [a, b] = operands;
        if (b?.kind === 'list' && b.elements.length > 0 && b.elements.every((e) => e.kind === 'literal' && e.literal.type === 'string')) {
          const set = new Set(b.elements.map((e) => (e as { literal: { value: string } }).literal.value));
          const lhs = this.compile(a as Node, scope);
          // a string is only equal to a string; anything else is in no list of strings
          return (c) => {
            const v = lhs(c);
            return v === ERR ? ERR : typeof v === 'string' && set.has(v);
          };
        }
        if (a?.kind === 'literal' && a.literal.type === 'string') {
          const lit = a.literal.value;
          const rhs = this.compile(b as Node, scope);
          return (c) => {
            const l = rhs(c);
            if (!Array.isArray(l)) return l === ERR ? ERR : inOp(lit, l);
            // a string equals only the same string; the others are converted in order, as the interpreter does
            for (const e of l as unknown[]) {
              if (e === lit) return true;
              checked(e);
            }
            return false;
          };
        }
        return binary(this.all(operands, scope, 2), inOp);
      }
      case '!_':
        return unary(this.all(operands, scope, 1), (x) => (typeof x === 'boolean' ? !x : ERR));
      case '-_':
        return unary(this.all(operands, scope, 1), negate);
      case '_+_':
        return binary(this.all(operands, scope, 2), add);
      case '_-_':
        return binary(this.all(operands, scope, 2), (x, y) =>
          numeric(
            x,
            y,
            (a, b) => a - b,
            (a, b) => a - b,
          ),
        );
      case '_*_':
        return binary(this.all(operands, scope, 2), (x, y) =>
          numeric(
            x,
            y,
            (a, b) => a * b,
            (a, b) => a * b,
          ),
        );
      case '_/_':
        return binary(this.all(operands, scope, 2), divide);
      case '_%_':
        return binary(this.all(operands, scope, 2), modulo);
      case 'size':
        return unary(this.all(operands, scope, 1), size);
      case 'contains':
      case 'startsWith':
      case 'endsWith':
        return this.stringMethod(node.fn, operands, scope);
      case 'matches':
        return this.matches(operands, scope);
      case 'int':
        return unary(this.all(operands, scope, 1), toInt);
      case 'double':
        return unary(this.all(operands, scope, 1), toDouble);
      case 'string':
        return unary(this.all(operands, scope, 1), toStr);
      case 'bool':
        return unary(this.all(operands, scope, 1), toBool);
      case 'dyn':
        return unary(this.all(operands, scope, 1), (x) => x);
      default:
        // uint, type, timestamp, duration and their getters: values not represented here
        throw new Unsupported();
    }
  }

  private all(nodes: readonly Node[], scope: Scope, n: number): Fn[] {
    if (nodes.length !== n) throw new Unsupported();
    return nodes.map((o) => this.compile(o, scope));
  }

  private stringMethod(fn: 'contains' | 'startsWith' | 'endsWith', operands: readonly Node[], scope: Scope): Fn {
    const [receiver, arg] = this.all(operands, scope, 2) as [Fn, Fn];
    const lit = operands[1]?.kind === 'literal' && operands[1].literal.type === 'string' ? operands[1].literal.value : undefined;
    if (lit !== undefined) {
      switch (fn) {
        case 'contains':
          return (c) => {
            const s = receiver(c);
            return typeof s === 'string' ? s.includes(lit) : ERR;
          };
        case 'startsWith':
          return (c) => {
            const s = receiver(c);
            return typeof s === 'string' ? s.startsWith(lit) : ERR;
          };
        case 'endsWith':
          return (c) => {
            const s = receiver(c);
            return typeof s === 'string' ? s.endsWith(lit) : ERR;
          };
      }
    }
    const op = { contains: String.prototype.includes, startsWith: String.prototype.startsWith, endsWith: String.prototype.endsWith }[fn];
    return binary([receiver, arg], (s, a) => (typeof s === 'string' && typeof a === 'string' ? op.call(s, a) : ERR));
  }

  private matches(operands: readonly Node[], scope: Scope): Fn {
    const [receiver, arg] = this.all(operands, scope, 2) as [Fn, Fn];
    const pattern = operands[1];
    if (pattern?.kind === 'literal' && pattern.literal.type === 'string') {
      const re = compileRegex(pattern.literal.value);
      return (c) => {
        const s = receiver(c);
        return typeof s !== 'string' ? ERR : re === undefined ? ERR : re.test(s);
      };
    }
    return binary([receiver, arg], (s, p) => {
      if (typeof s !== 'string' || typeof p !== 'string') return ERR;
      const re = compileRegex(p);
      return re === undefined ? ERR : re.test(s);
    });
  }

  private macro(node: Node & { kind: 'call' }, scope: Scope): Fn {
    if (node.fn === 'has') {
      const [field] = node.args;
      if (field?.kind !== 'select') throw new Unsupported();
      const operand = this.compile(field.operand, scope);
      const name = field.field;
      return (c) => has(operand(c), name);
    }
    const [variable, ...body] = node.args;
    if (!node.target || variable?.kind !== 'ident') throw new Unsupported();
    const range = this.compile(node.target, scope);
    const slot = this.slots++;
    const inner = new Map(scope).set(variable.name, slot);
    const fns = body.map((b) => this.compile(b, inner));
    const [first, second] = fns;
    if (!first) throw new Unsupported();
    const loop = (kernel: (c: Ctx, items: readonly unknown[]) => unknown): Fn => {
      return (c) => {
        const items = iterItems(range(c));
        return items === ERR ? ERR : kernel(c, items);
      };
    };
    switch (node.fn) {
      case 'exists':
        if (fns.length !== 1) throw new Unsupported();
        return loop((c, items) => {
          // accu = accu || test, while accu is not true (an error does not stop the loop)
          let accu: unknown = false;
          for (const item of items) {
            if (accu === true) break;
            c.v[slot] = item;
            const t = first(c);
            accu = t === true ? true : accu === false && t === false ? false : ERR;
          }
          return accu;
        });
      case 'all':
        if (fns.length !== 1) throw new Unsupported();
        return loop((c, items) => {
          let accu: unknown = true;
          for (const item of items) {
            if (accu === false) break;
            c.v[slot] = item;
            const t = first(c);
            accu = t === false ? false : accu === true && t === true ? true : ERR;
          }
          return accu;
        });
      case 'exists_one':
        if (fns.length !== 1) throw new Unsupported();
        return loop((c, items) => {
          let count = 0;
          let failed = false;
          for (const item of items) {
            c.v[slot] = item;
            const t = first(c);
            if (t === true) count++;
            else if (t !== false) failed = true;
          }
          return failed ? ERR : count === 1;
        });
      case 'filter':
        if (fns.length !== 1) throw new Unsupported();
        return loop((c, items) => {
          const out: unknown[] = [];
          let failed = false;
          for (const item of items) {
            c.v[slot] = item;
            const t = first(c);
            if (t === true) out.push(item);
            else if (t !== false) failed = true;
          }
          return failed ? ERR : out;
        });
      case 'map':
        if (fns.length === 1) {
          return loop((c, items) => {
            const out: unknown[] = [];
            for (const item of items) {
              c.v[slot] = item;
              // accu + [f(x)]: once accu is an error, f is no longer evaluated
              const v = first(c);
              if (v === ERR) return ERR;
              out.push(v);
            }
            return out;
          });
        }
        if (fns.length !== 2 || !second) throw new Unsupported();
        return loop((c, items) => {
          const out: unknown[] = [];
          let failed = false;
          for (const item of items) {
            c.v[slot] = item;
            const t = first(c);
            if (t === true) {
              if (failed) continue;
              const v = second(c);
              if (v === ERR) failed = true;
              else out.push(v);
            } else if (t !== false) failed = true;
          }
          return failed ? ERR : out;
        });
      default:
        throw new Unsupported();
    }
  }
}

function literal(l: Literal): unknown {
  switch (l.type) {
    case 'bool':
    case 'int':
    case 'double':
    case 'string':
      return l.value;
    case 'null':
      return null;
    default:
      // uint and bytes values are not represented here
      throw new Unsupported();
  }
}

/**
 * `&&` (decisive = false) and `||` (decisive = true) with CEL's error absorption: any operand equal to `decisive`
 * decides, whatever the others are (errors included); otherwise an error or non-bool operand makes an error.
 */
function junction(fns: Fn[], decisive: boolean): Fn {
  const [a, b] = fns;
  if (fns.length === 2 && a && b) {
    return (c) => {
      const x = a(c);
      if (x === decisive) return decisive;
      const y = b(c);
      if (y === decisive) return decisive;
      return x === !decisive && y === !decisive ? !decisive : ERR;
    };
  }
  return (c) => {
    let failed = false;
    for (const f of fns) {
      const v = f(c);
      if (v === decisive) return decisive;
      if (v !== !decisive) failed = true;
    }
    return failed ? ERR : !decisive;
  };
}

/** A strict call: an error operand is the result (operands evaluated left to right, stopping at an error). */
function unary(fns: Fn[], op: (x: unknown) => unknown): Fn {
  const [a] = fns as [Fn];
  return (c) => {
    const x = a(c);
    return x === ERR ? ERR : op(x);
  };
}

function binary(fns: Fn[], op: (x: unknown, y: unknown) => unknown): Fn {
  const [a, b] = fns as [Fn, Fn];
  return (c) => {
    const x = a(c);
    if (x === ERR) return ERR;
    const y = b(c);
    return y === ERR ? ERR : op(x, y);
  };
}

function strEq(v: unknown, s: string): unknown {
  if (v === ERR) return ERR;
  return v === s;
}

function strNe(v: unknown, s: string): unknown {
  if (v === ERR) return ERR;
  return v !== s;
}

/** A value read from the event as the interpreter converts it; anything it would refuse (it throws) bails. */
function checked(v: unknown): unknown {
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return v;
    case 'object':
      if (v === null || Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype) return v;
  }
  throw BAIL;
}

/** A map of the event (every object value reaching here passed `checked`). */
function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function select(o: unknown, field: string): unknown {
  if (isMap(o)) {
    const v = Object.hasOwn(o, field) ? o[field] : undefined;
    return v === undefined ? ERR : checked(v);
  }
  return ERR;
}

function has(o: unknown, field: string): unknown {
  if (o === ERR) return ERR;
  if (!isMap(o)) return false;
  const v = Object.hasOwn(o, field) ? o[field] : undefined;
  if (v === undefined) return false;
  checked(v);
  // @bufbuild/cel: a map has a key when its value is not null
  return v !== null;
}

function index(o: unknown, k: unknown): unknown {
  switch (typeof k) {
    case 'string':
      return select(o, k);
    case 'number':
      if (Array.isArray(o)) {
        if (k < 0 || k >= o.length) return ERR;
        // the interpreter throws for a fraction (or NaN) inside the bounds
        if (!Number.isInteger(k)) throw BAIL;
        return checked(o[k]);
      }
      return ERR;
    case 'bigint':
      if (Array.isArray(o)) {
        const i = Number(k);
        return i < 0 || i >= o.length ? ERR : checked(o[i]);
      }
      return ERR;
    default:
      throw BAIL;
  }
}

function equals(a: unknown, b: unknown): boolean {
  const ta = typeof a;
  const tb = typeof b;
  if (ta !== 'object' && a === b) return true;
  if ((ta === 'number' || ta === 'bigint') && (tb === 'number' || tb === 'bigint')) return a == b;
  if (ta !== 'object' || a === null) return a === b;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!equals(checked(a[i]), checked(b[i]))) return false;
    return true;
  }
  if (!isMap(b)) return false;
  const keys = Object.keys(a as object);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) {
    const va = checked((a as Record<string, unknown>)[k]);
    const vb = Object.hasOwn(b, k) ? b[k] : undefined;
    if (vb === undefined || !equals(va, checked(vb))) return false;
  }
  return true;
}

const lt = (x: never, y: never): boolean => x < y;
const le = (x: never, y: never): boolean => x <= y;
const gt = (x: never, y: never): boolean => x > y;
const ge = (x: never, y: never): boolean => x >= y;

function relate(a: unknown, b: unknown, f: (x: never, y: never) => boolean): unknown {
  const ta = typeof a;
  const tb = typeof b;
  if (ta === tb) return ta === 'string' || ta === 'number' || ta === 'bigint' || ta === 'boolean' ? f(a as never, b as never) : ERR;
  // int against double compares as doubles, like the interpreter
  if (ta === 'bigint' && tb === 'number') return f(Number(a) as never, b as never);
  if (ta === 'number' && tb === 'bigint') return f(a as never, Number(b) as never);
  return ERR;
}

function inOp(a: unknown, b: unknown): unknown {
  if (Array.isArray(b)) {
    for (const e of b) if (equals(checked(e), a)) return true;
    return false;
  }
  if (!isMap(b)) return ERR;
  switch (typeof a) {
    case 'string': {
      const v = Object.hasOwn(b, a) ? b[a] : undefined;
      if (v === undefined) return false;
      checked(v);
      return v !== null;
    }
    case 'number':
    case 'bigint':
    case 'boolean':
      // event maps only have string keys
      return false;
    default:
      return ERR;
  }
}

function safeInt(v: bigint): unknown {
  return v >= MIN_INT && v <= MAX_INT ? v : ERR;
}

function numeric(a: unknown, b: unknown, int: (x: bigint, y: bigint) => bigint, dbl: (x: number, y: number) => number): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') return safeInt(int(a, b));
  if (typeof a === 'number' && typeof b === 'number') return dbl(a, b);
  return ERR;
}

function add(a: unknown, b: unknown): unknown {
  if (typeof a === 'string' && typeof b === 'string') return a + b;
  if (Array.isArray(a) && Array.isArray(b)) return [...(a as unknown[]), ...(b as unknown[])];
  return numeric(
    a,
    b,
    (x, y) => x + y,
    (x, y) => x + y,
  );
}

function divide(a: unknown, b: unknown): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') return b === 0n ? ERR : safeInt(a / b);
  if (typeof a === 'number' && typeof b === 'number') return a / b;
  return ERR;
}

function modulo(a: unknown, b: unknown): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') return b === 0n ? ERR : a % b;
  return ERR;
}

function negate(a: unknown): unknown {
  if (typeof a === 'bigint') return safeInt(-a);
  if (typeof a === 'number') return -a;
  return ERR;
}

function size(x: unknown): unknown {
  if (typeof x === 'string') {
    // code points, like the interpreter's [...x].length
    let n = 0;
    for (let i = 0; i < x.length; i++) {
      const u = x.charCodeAt(i);
      if (u < 0xdc00 || u > 0xdfff || i === 0) n++;
      else {
        const prev = x.charCodeAt(i - 1);
        if (prev < 0xd800 || prev > 0xdbff) n++;
      }
    }
    return BigInt(n);
  }
  if (Array.isArray(x)) return BigInt(x.length);
  if (isMap(x)) return BigInt(Object.keys(x).length);
  return ERR;
}

/** The items a comprehension iterates: a list's elements (all converted first, like Array.from), a map's keys. */
function iterItems(range: unknown): readonly unknown[] | typeof ERR {
  if (Array.isArray(range)) {
    for (const e of range as unknown[]) checked(e);
    return range as unknown[];
  }
  if (isMap(range)) return Object.keys(range);
  return ERR;
}

function toInt(x: unknown): unknown {
  switch (typeof x) {
    case 'bigint':
      return x;
    case 'number':
      return Number.isFinite(x) && x > Number(MIN_INT) && x < Number(MAX_INT) ? BigInt(Math.trunc(x)) : ERR;
    case 'string': {
      let v: bigint;
      try {
        v = BigInt(x);
      } catch {
        return ERR;
      }
      return safeInt(v);
    }
    default:
      return ERR;
  }
}

function toDouble(x: unknown): unknown {
  switch (typeof x) {
    case 'number':
      return x;
    case 'bigint':
    case 'string':
      return Number(x);
    default:
      return ERR;
  }
}

function toStr(x: unknown): unknown {
  switch (typeof x) {
    case 'string':
      return x;
    case 'boolean':
    case 'bigint':
    case 'number':
      return x.toString();
    default:
      return ERR;
  }
}

const STRING_BOOLS: ReadonlyMap<string, boolean> = new Map([
  ...['true', 'True', 'TRUE', 't', '1'].map((s) => [s, true] as const),
  ...['false', 'False', 'FALSE', 'f', '0'].map((s) => [s, false] as const),
]);

function toBool(x: unknown): unknown {
  if (typeof x === 'boolean') return x;
  if (typeof x === 'string') return STRING_BOOLS.get(x) ?? ERR;
  return ERR;
}

interface Regex {
  test(s: string): boolean;
}

/** Compiled patterns (the interpreter compiles on every call); bounded, patterns can come from the event. */
const regexCache = new Map<string, Regex | undefined>();
const REGEX_CACHE_MAX = 1000;

function compileRegex(pattern: string): Regex | undefined {
  if (regexCache.has(pattern)) return regexCache.get(pattern);
  let re: Regex | undefined;
  try {
    re = RE2JS.compile(pattern);
  } catch {
    re = undefined;
  }
  if (regexCache.size >= REGEX_CACHE_MAX) regexCache.clear();
  regexCache.set(pattern, re);
  return re;
}
