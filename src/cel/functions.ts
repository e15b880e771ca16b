/**
 * The functions and operators a filter may use. Anything not listed here is rejected at compile time, so
 * the strings extension (e.g. the super-linear `replace`) and message construction can never run.
 *
 * Decisions:
 * - `type(x)` is allowed (harmless; `type` alone is still the event type variable, bindings shadow the builtin),
 *   and so are the type names `string`, `int`, `double`, ... as values for comparisons with it.
 * - `filter` and `map` are allowed: their cost is bounded like `exists`/`all` by the nesting limit and by
 *   the size of the event's lists.
 * - Arithmetic is allowed, with int/double mixing rejected statically (CEL has no such overloads).
 * - `matches` only as a method: @bufbuild/cel 0.6.1 has no global `matches(s, re)` overload. Its regex
 *   engine is RE2-style (linear time), so it is safe against ReDoS.
 * - Not allowed: `bytes()`, optional types, anything from the CEL extensions, message construction.
 */
import { T, accepts, describeType, join, listOf, type Kind, type StaticType } from './static-types.js';

export interface FunctionRule {
  /** Accepted argument counts of the global form `f(a, ...)`; absent: not callable that way. */
  global?: readonly number[];
  /** Accepted argument counts (receiver not counted) of the method form `x.f(...)`; absent: not a method. */
  method?: readonly number[];
  /** Kinds allowed for the receiver (method form) or the first argument (global form). */
  subject?: readonly Kind[];
  /** Kinds allowed for every other argument. */
  rest?: readonly Kind[];
  /** Result type from [subject, ...rest]; a string is a type error to report at the call. */
  result: (types: readonly StaticType[]) => StaticType | string;
}

const bool = () => T.bool;
const NUMERIC: readonly Kind[] = ['int', 'uint', 'double'];
const TIME_GETTERS = [
  'getFullYear',
  'getMonth',
  'getDayOfYear',
  'getDayOfMonth',
  'getDate',
  'getDayOfWeek',
  'getHours',
  'getMinutes',
  'getSeconds',
  'getMilliseconds',
] as const;

/** Operators, by the parser's internal names. `_[_]` and the macros are handled by the checker itself. */
const OPERATORS: Readonly<Record<string, FunctionRule>> = {
  '_&&_': { global: [2], subject: ['bool'], rest: ['bool'], result: bool },
  '_||_': { global: [2], subject: ['bool'], rest: ['bool'], result: bool },
  '!_': { global: [1], subject: ['bool'], result: bool },
  '_==_': { global: [2], result: bool },
  '_!=_': { global: [2], result: bool },
  '_<_': { global: [2], result: bool },
  '_<=_': { global: [2], result: bool },
  '_>_': { global: [2], result: bool },
  '_>=_': { global: [2], result: bool },
  '@in': { global: [2], rest: ['list', 'map', 'object'], result: bool },
  '_+_': { global: [2], result: (t) => arithmetic('+', t) },
  '_-_': { global: [2], result: (t) => arithmetic('-', t) },
  '_*_': { global: [2], result: (t) => arithmetic('*', t) },
  '_/_': { global: [2], result: (t) => arithmetic('/', t) },
  '_%_': { global: [2], result: (t) => arithmetic('%', t) },
  '-_': { global: [1], subject: ['int', 'double'], result: (t) => t[0] ?? T.dyn },
  '_?_:_': { global: [3], subject: ['bool'], result: (t) => join(t[1] ?? T.dyn, t[2] ?? T.dyn) },
};

const FUNCTIONS: Readonly<Record<string, FunctionRule>> = {
  size: { global: [1], method: [0], subject: ['string', 'bytes', 'list', 'map', 'object'], result: () => T.int },
  startsWith: { method: [1], subject: ['string'], rest: ['string'], result: bool },
  endsWith: { method: [1], subject: ['string'], rest: ['string'], result: bool },
  contains: { method: [1], subject: ['string'], rest: ['string'], result: bool },
  matches: { method: [1], subject: ['string'], rest: ['string'], result: bool },
  int: { global: [1], subject: [...NUMERIC, 'string', 'timestamp'], result: () => T.int },
  uint: { global: [1], subject: [...NUMERIC, 'string'], result: () => T.uint },
  double: { global: [1], subject: [...NUMERIC, 'string'], result: () => T.double },
  string: { global: [1], result: () => T.string },
  bool: { global: [1], subject: ['bool', 'string'], result: bool },
  dyn: { global: [1], result: () => T.dyn },
  type: { global: [1], result: () => T.type },
  timestamp: { global: [1], subject: ['string', 'timestamp', 'int'], result: () => T.timestamp },
  duration: { global: [1], subject: ['string', 'duration'], result: () => T.duration },
  ...Object.fromEntries(
    TIME_GETTERS.map((name) => [name, { method: [0, 1], subject: ['timestamp', 'duration'], rest: ['string'], result: () => T.int }]),
  ),
};

export const FUNCTION_RULES: Readonly<Record<string, FunctionRule>> = { ...OPERATORS, ...FUNCTIONS };

/** Macros the checker accepts. `has` tests a field; the others are comprehensions over a list or map. */
export const COMPREHENSION_MACROS = new Set(['all', 'exists', 'exists_one', 'filter', 'map']);
export const MACROS = new Set([...COMPREHENSION_MACROS, 'has']);

/** Type names usable as values, e.g. `type(data.ruleId) == double`. `type` itself is the event type variable. */
export const TYPE_NAMES = new Set(['bool', 'int', 'uint', 'double', 'string', 'bytes', 'list', 'map', 'null_type']);

/** Calls whose string-literal argument is checked at compile time (regex syntax, timestamp and duration formats). */
export const LITERAL_CHECKED = new Set(['matches', 'timestamp', 'duration']);

export function isOperator(fn: string): boolean {
  return fn in OPERATORS || fn === '_[_]';
}

/** How an operator is written, for messages: `_&&_` → `&&`, `@in` → `in`. */
export function operatorSymbol(fn: string): string {
  if (fn === '@in') return 'in';
  if (fn === '_?_:_') return '?:';
  if (fn === '_[_]') return '[]';
  return fn.replaceAll('_', '');
}

/** CEL arithmetic overloads; mixing int and double is an error in CEL (write 3.0 or use int()). */
function arithmetic(op: '+' | '-' | '*' | '/' | '%', types: readonly StaticType[]): StaticType | string {
  const [a = T.dyn, b = T.dyn] = types;
  if (a.kind === 'dyn' || b.kind === 'dyn') return T.dyn;
  if (accepts(NUMERIC, a) && accepts(NUMERIC, b)) {
    if (a.kind !== b.kind) {
      return `'${op}' needs operands of the same numeric type, got ${a.kind} and ${b.kind} (JSON numbers are double: write 3.0, or convert with int())`;
    }
    if (op === '%' && a.kind === 'double') return `'%' is not defined for double`;
    return a;
  }
  const pair = `${a.kind} ${op} ${b.kind}`;
  const ok: Readonly<Record<string, StaticType>> = {
    'string + string': T.string,
    'bytes + bytes': T.bytes,
    'duration + duration': T.duration,
    'duration - duration': T.duration,
    'timestamp + duration': T.timestamp,
    'duration + timestamp': T.timestamp,
    'timestamp - duration': T.timestamp,
    'timestamp - timestamp': T.duration,
  };
  if (pair in ok) return ok[pair] ?? T.dyn;
  if (op === '+' && a.kind === 'list' && b.kind === 'list') return listOf(T.dyn);
  return `no '${op}' for ${describeType(a)} and ${describeType(b)}`;
}
