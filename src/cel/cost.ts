/**
 * Evaluation cost of a filter, after cel-go's checker/cost.go (the model Kubernetes uses for its CEL cost
 * limits): every step of the interpreter costs 1, string work costs about one unit per 10 characters, and a
 * comprehension costs its range plus, for each element, its body. The same function gives
 *  - the estimated (worst-case) cost at compile time, with the sizes of lists and strings taken from the
 *    event schema's maxItems / maxLength (src/events/schemas.ts), and
 *  - the cost of one evaluation at run time, with this event's real sizes (computed before evaluating).
 * It is an upper bound: `exists` may stop early and `&&` short-circuit, but both are charged in full.
 *
 * Modelled on @bufbuild/cel 0.6's interpreter, not on cel-go's: `size(string)` counts code points (linear),
 * and the lists that `map` / `filter` build are nested concatenations, so reading one element of an n-element
 * result walks up to n levels (`access`).
 */
import type { FieldNode } from '../events/field-tree.js';
import type { Node } from './ast.js';

/** The worst-case shape of a value: how long it is and what iterating or indexing it costs. */
export interface Shape {
  /** Characters of a string, elements of a list, entries of a map or object; 0 for scalars. */
  readonly len: number;
  /** Cost of reaching one element when iterating or indexing (1, or the nesting of a built list). */
  readonly access: number;
  /** Shape of list elements (or of map / object keys). */
  readonly elem?: Shape;
  /** Shape of map values (for `m[k]` and `m.k` on a map literal). */
  readonly value?: Shape;
  /** Member shapes of an object from the event; undefined for values that are not objects. */
  readonly field?: (name: string) => Shape | undefined;
  /** Cost of reading the whole value (equality, conversion); derived from len / elem when absent. */
  readonly weight?: number;
}

/** Cost of reading a whole value of this shape. */
function weightOf(s: Shape): number {
  if (s.weight !== undefined) return s.weight;
  if (s.elem) return mul(s.len, add(s.access, weightOf(s.elem), s.value ? weightOf(s.value) : 0));
  return add(1, chars(s.len));
}

const SCALAR: Shape = { len: 0, access: 1 };
/** Upper bound for a string written by `string(x)` of a number, timestamp, duration or type. */
const CONVERTED_STRING: Shape = { len: 64, access: 1 };
/** Costs saturate here instead of overflowing to Infinity / NaN. */
const CAP = 1e15;

const add = (...xs: number[]): number =>
  Math.min(
    CAP,
    xs.reduce((a, b) => a + b, 0),
  );
const mul = (a: number, b: number): number => (a === 0 || b === 0 ? 0 : Math.min(CAP, a * b));
/** String traversal: about one unit per 10 characters, as cel-go's StringTraversalCostFactor (0.1). */
const chars = (n: number): number => Math.ceil(n / 10);

function joinShapes(a: Shape | undefined, b: Shape | undefined): Shape | undefined {
  if (!a) return b;
  if (!b) return a;
  const elem = joinShapes(a.elem, b.elem);
  const value = joinShapes(a.value, b.value);
  const fa = a.field;
  const fb = b.field;
  const field = fa && fb ? (name: string) => joinShapes(fa(name), fb(name)) : (fa ?? fb);
  const weight = Math.max(weightOf(a), weightOf(b));
  return {
    len: Math.max(a.len, b.len),
    access: Math.max(a.access, b.access),
    weight,
    ...(elem && { elem }),
    ...(value && { value }),
    ...(field && { field }),
  };
}

export interface CostResult {
  cost: number;
  /** The deepest node whose own cost is over `limit` (where to point a compile error), when the total is. */
  culprit?: Node;
}

/**
 * Cost of evaluating `root` when `data` has the shape `data` and `type` is at most `typeLength` characters.
 * With `limit`, also finds the node to blame when the cost is over it.
 */
export function estimateCost(root: Node, data: Shape, typeLength: number, limit = Infinity): CostResult {
  let culprit: Node | undefined;
  const visit = (node: Node, scope: ReadonlyMap<string, Shape>): { cost: number; shape: Shape } => {
    const r = costOf(node, scope, visit, data, typeLength);
    if (r.cost > limit && culprit === undefined) culprit = node;
    return r;
  };
  const { cost } = visit(root, new Map());
  return culprit ? { cost, culprit } : { cost };
}

type Visit = (node: Node, scope: ReadonlyMap<string, Shape>) => { cost: number; shape: Shape };

function costOf(
  node: Node,
  scope: ReadonlyMap<string, Shape>,
  visit: Visit,
  data: Shape,
  typeLength: number,
): { cost: number; shape: Shape } {
  switch (node.kind) {
    case 'literal': {
      const l = node.literal;
      return {
        cost: 1,
        shape: l.type === 'string' ? { len: l.value.length, access: 1 } : l.type === 'bytes' ? { len: l.value.length, access: 1 } : SCALAR,
      };
    }
    case 'ident': {
      const bound = scope.get(node.name);
      if (bound) return { cost: 1, shape: bound };
      if (node.name === 'data') return { cost: 1, shape: data };
      if (node.name === 'type') return { cost: 1, shape: { len: typeLength, access: 1 } };
      return { cost: 1, shape: SCALAR };
    }
    case 'select': {
      const o = visit(node.operand, scope);
      return { cost: add(o.cost, 1), shape: member(o.shape, node.field) };
    }
    case 'list': {
      const elems = node.elements.map((e) => visit(e, scope));
      const elem = elems.reduce<Shape | undefined>((a, e) => joinShapes(a, e.shape), undefined);
      return { cost: add(1, elems.length, ...elems.map((e) => e.cost)), shape: { len: elems.length, access: 1, ...(elem && { elem }) } };
    }
    case 'map': {
      const parts = node.entries.flatMap((e) => [visit(e.key, scope), visit(e.value, scope)]);
      const join = (from: number) =>
        parts.filter((_, i) => i % 2 === from).reduce<Shape | undefined>((a, e) => joinShapes(a, e.shape), undefined);
      const key = join(0);
      const value = join(1);
      const shape: Shape = { len: node.entries.length, access: 1, ...(key && { elem: key }), ...(value && { value }) };
      return { cost: add(1, node.entries.length, ...parts.map((p) => p.cost)), shape };
    }
    case 'message':
      return { cost: 1, shape: SCALAR };
    case 'call':
      return node.macro ? macroCost(node, scope, visit) : callCost(node, scope, visit);
  }
}

function member(operand: Shape, name: string): Shape {
  // An object from the event has its fields' shapes; a map literal its values' shape.
  return operand.field?.(name) ?? operand.value ?? SCALAR;
}

function macroCost(node: Node & { kind: 'call' }, scope: ReadonlyMap<string, Shape>, visit: Visit): { cost: number; shape: Shape } {
  if (node.fn === 'has' || !node.target) {
    const args = node.args.map((a) => visit(a, scope));
    return { cost: add(1, ...args.map((a) => a.cost)), shape: SCALAR };
  }
  const range = visit(node.target, scope);
  const [variable, ...body] = node.args;
  const n = range.shape.len;
  const elem = range.shape.elem ?? SCALAR;
  const inner = variable?.kind === 'ident' ? new Map(scope).set(variable.name, elem) : scope;
  const bodies = body.map((b) => visit(b, inner));
  // Each step binds the variable and evaluates the loop condition and step of the expansion (about 4 steps).
  // On @bufbuild/cel a step also costs about one unit per 2 characters of the element, even when the body does
  // not read it.
  const perStep = add(range.shape.access, 4, Math.ceil(weightOf(elem) * 5), ...bodies.map((b) => b.cost));
  // map and filter also build their result one concatenation per element (about three exists steps)
  const perElement = node.fn === 'map' || node.fn === 'filter' ? mul(3, perStep) : perStep;
  const cost = add(range.cost, 2, mul(n, perElement));
  // map and filter build their result by concatenating one-element lists: reading it walks up to n levels.
  if (node.fn === 'map') return { cost, shape: { len: n, access: Math.max(1, n), elem: bodies[bodies.length - 1]?.shape ?? SCALAR } };
  if (node.fn === 'filter') return { cost, shape: { len: n, access: Math.max(1, n), elem } };
  return { cost, shape: SCALAR };
}

/** Cost of comparing two values of these shapes for equality: reading the smaller one. */
function equalityCost(a: Shape, b: Shape): number {
  return add(1, Math.min(weightOf(a), weightOf(b)));
}

function callCost(node: Node & { kind: 'call' }, scope: ReadonlyMap<string, Shape>, visit: Visit): { cost: number; shape: Shape } {
  const operands = node.target ? [node.target, ...node.args] : node.args;
  const ops = operands.map((o) => visit(o, scope));
  const base = add(1, ...ops.map((o) => o.cost));
  const [a = SCALAR, b = SCALAR] = ops.map((o) => o.shape);
  switch (node.fn) {
    case '_==_':
    case '_!=_':
      return { cost: add(base, equalityCost(a, b)), shape: SCALAR };
    case '_<_':
    case '_<=_':
    case '_>_':
    case '_>=_':
      return { cost: add(base, chars(Math.min(a.len, b.len))), shape: SCALAR };
    case '@in':
      // list membership compares with every element; map / object lookup is one step
      if (b.field || !b.elem) return { cost: add(base, 1), shape: SCALAR };
      return { cost: add(base, mul(b.len, add(b.access, equalityCost(a, b.elem)))), shape: SCALAR };
    case '_+_':
      if (a.elem || b.elem) {
        const elem = joinShapes(a.elem, b.elem);
        return { cost: add(base, 1), shape: { len: add(a.len, b.len), access: Math.max(a.access, b.access) + 1, ...(elem && { elem }) } };
      }
      return { cost: add(base, chars(add(a.len, b.len))), shape: { len: add(a.len, b.len), access: 1 } };
    case '_[_]': {
      const key = node.args[1];
      if (a.field || a.value) {
        const name = key?.kind === 'literal' && key.literal.type === 'string' ? key.literal.value : undefined;
        const shape = (name !== undefined ? a.field?.(name) : undefined) ?? a.value ?? (a.field ? worstField(a) : SCALAR);
        return { cost: add(base, 1, chars(b.len)), shape };
      }
      return { cost: add(base, a.access), shape: a.elem ?? SCALAR };
    }
    case 'size':
      // @bufbuild/cel counts the code points of a string; lists and maps know their size
      return { cost: add(base, a.elem ? 1 : a.len), shape: SCALAR };
    case 'startsWith':
    case 'endsWith':
      return { cost: add(base, chars(b.len)), shape: SCALAR };
    case 'contains':
      return { cost: add(base, chars(add(a.len, b.len))), shape: SCALAR };
    case 'matches':
      // RE2-style matching: linear in the input, times the size of the program (about the pattern length)
      return { cost: add(base, mul(a.len + 1, Math.max(1, Math.ceil(b.len / 2)))), shape: SCALAR };
    case 'string':
      return {
        cost: add(base, weightOf(a)),
        shape: a.elem || a.field ? CONVERTED_STRING : a.len > 0 ? { len: a.len, access: 1 } : CONVERTED_STRING,
      };
    case 'dyn':
      return { cost: base, shape: a };
    case '_?_:_':
      return { cost: base, shape: joinShapes(ops[1]?.shape, ops[2]?.shape) ?? SCALAR };
    default:
      // conversions, arithmetic, logic, time getters: one step plus reading a string argument
      return { cost: add(base, chars(Math.max(...ops.map((o) => (o.shape.elem ? 0 : o.shape.len)), 0))), shape: SCALAR };
  }
}

/** An object indexed by a computed key (the checker only allows literal keys; this is a safe fallback). */
function worstField(o: Shape): Shape {
  return { len: UNBOUNDED, access: 1, weight: weightOf(o) };
}

/** Upper bound for strings and lists the schema leaves unbounded (every event field has a limit; tests check). */
export const UNBOUNDED = 1_000_000;

/** The worst-case shape of a schema field (its maxItems / maxLength). */
export function shapeOfField(node: FieldNode): Shape {
  switch (node.kind) {
    case 'object': {
      const keyLen = Math.max(0, ...[...node.fields.keys()].map((k) => k.length));
      const fields = new Map([...node.fields].map(([name, child]) => [name, shapeOfField(child)]));
      const weight = add(1, ...[...fields.values()].map(weightOf));
      return { len: node.fields.size, access: 1, elem: { len: keyLen, access: 1 }, field: (name) => fields.get(name), weight };
    }
    case 'array':
      return { len: node.maxItems ?? UNBOUNDED, access: 1, elem: shapeOfField(node.items) };
    case 'string':
      return { len: node.maxLength ?? UNBOUNDED, access: 1 };
    default:
      return SCALAR;
  }
}

/** The shape of an actual value from an event (JSON), computed lazily as the cost walk asks for it. */
export function shapeOfValue(value: unknown): Shape {
  if (typeof value === 'string') return { len: value.length, access: 1 };
  if (Array.isArray(value)) {
    let elem: Shape | undefined;
    return {
      len: value.length,
      access: 1,
      get elem() {
        // the worst element stands for all of them
        return (elem ??= value.reduce<Shape | undefined>((acc, v) => joinShapes(acc, shapeOfValue(v)), undefined) ?? SCALAR);
      },
    };
  }
  if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj);
    let weight: number | undefined;
    const fields = new Map<string, Shape>();
    const field = (name: string): Shape => {
      let f = fields.get(name);
      if (!f) fields.set(name, (f = Object.hasOwn(obj, name) ? shapeOfValue(obj[name]) : SCALAR));
      return f;
    };
    return {
      len: keys.length,
      access: 1,
      elem: { len: keys.reduce((m, k) => Math.max(m, k.length), 0), access: 1 },
      field,
      get weight() {
        return (weight ??= add(1, ...keys.map((k) => weightOf(field(k)))));
      },
    };
  }
  return SCALAR;
}
