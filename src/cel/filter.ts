/**
 * Routing filters: CEL expressions over an internal event `{ type, data }`, compiled once per router
 * (parse, check, plan) and evaluated per event with @bufbuild/cel's standard library only.
 */
import { celEnv, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';
import { familyOf, isEventTypeId, type EventTypeId } from '../events/families.js';
import { FAMILY_FIELD_TREES } from '../events/schemas.js';
import { startOffset, toSourceTree, type Node, type SourceTree } from './ast.js';
import { checkFilterTree } from './check.js';
import { compileToJs, constantValue, isEventData, leafOf, type CompiledJs, type Leaf } from './compile-js.js';
import { extractConstraints, type FilterConstraints } from './constraints.js';
import { estimateCost, shapeOfField, shapeOfValue, type Shape } from './cost.js';
import { FilterCompileError } from './errors.js';
import { describeEvalError } from './eval-error.js';
import { foldLiterals } from './fold.js';
import { memberNameOffset } from './position.js';
import { findDeepNesting, findSyntaxProblem } from './syntax.js';

export const FILTER_LIMITS = {
  /** Characters (UTF-16 code units) in an expression. */
  maxLength: 2000,
  /** Nodes of the expression as written (a macro call counts once, not its expansion). */
  maxNodes: 300,
  /** all/exists/exists_one/filter/map inside each other's bodies. */
  maxComprehensionDepth: 2,
  /**
   * Estimated (worst-case) cost, src/cel/cost.ts, with the event schema's size limits: filters over it are
   * rejected when a router is created or updated, and stored ones count as not compiling.
   */
  maxEstimatedCost: 1_000_000,
  /**
   * Cost budget of one evaluation, with the event's real sizes, checked before evaluating when the estimate is
   * over it: an evaluation over the budget fails (no notification) without running.
   */
  maxEvaluationCost: 20_000,
} as const;

export interface CompileOptions {
  /** Overrides FILTER_LIMITS.maxEstimatedCost (tests of the run-time budget). */
  maxEstimatedCost?: number;
  /** Overrides FILTER_LIMITS.maxEvaluationCost. */
  maxEvaluationCost?: number;
  /** Evaluate with @bufbuild/cel's interpreter only (the reference, for differential tests and benches). */
  interpreterOnly?: boolean;
}

export interface FilterResult {
  /** True only when the expression evaluated to exactly `true`. */
  matched: boolean;
  /** Why the filter could not decide (evaluation error or non-bool result). Never contains event data. */
  error?: string;
}

export interface CompiledFilter {
  readonly expression: string;
  readonly eventTypeId: EventTypeId;
  /** True for an empty (or whitespace-only) expression: every event of the family matches. */
  readonly matchesAll: boolean;
  /** Worst-case cost of one evaluation under the event size limits (0 for an empty filter). */
  readonly estimatedCost: number;
  /**
   * How events are evaluated: `compiled`, by JavaScript closures (src/cel/compile-js.ts; the interpreter only
   * for an event they cannot decide, e.g. to word an error); `interpreted`, by @bufbuild/cel's planned
   * program, for a filter using something the compiler does not cover. Absent on filters compileFilter did not make.
   */
  readonly engine?: 'compiled' | 'interpreted';
  evaluate(event: { type: string; data: unknown }): FilterResult;
}

export type FilterValidation = { ok: true } | { ok: false; message: string; line: number; column: number };

/** Standard library only: no strings extension (its `replace` is super-linear), no custom functions. */
const env = celEnv();

/**
 * Compiles a filter for routers of one event family. Throws FilterCompileError (code
 * INVALID_FILTER_EXPRESSION) with a 1-based line and column; throws RangeError for an unknown eventTypeId.
 */
export function compileFilter(expression: string, eventTypeId: EventTypeId, options: CompileOptions = {}): CompiledFilter {
  const steps = compileFilterSteps(expression, eventTypeId, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * compileFilter as steps (parse; check and price; fold and plan; the closures): a caller compiling in time
 * slices (routing snapshot builds) may yield to the event loop between them. Draining it is compileFilter.
 */
export function* compileFilterSteps(
  expression: string,
  eventTypeId: EventTypeId,
  options: CompileOptions = {},
): Generator<void, CompiledFilter, void> {
  if (!isEventTypeId(eventTypeId)) throw new RangeError(`unknown event type identifier ${JSON.stringify(eventTypeId)}`);
  const inFamily = familyTest(familyOf(eventTypeId).types);
  const outsideFamily = (type: unknown): FilterResult => ({
    matched: false,
    error: `event type ${JSON.stringify(String(type).slice(0, 100))} is not in ${eventTypeId}`,
  });

  if (expression.trim() === '') {
    return {
      expression,
      eventTypeId,
      matchesAll: true,
      estimatedCost: 0,
      engine: 'compiled',
      evaluate: (event) => (inFamily(event.type) ? MATCHED : outsideFamily(event.type)),
    };
  }

  const maxEstimatedCost = options.maxEstimatedCost ?? FILTER_LIMITS.maxEstimatedCost;
  const budget = options.maxEvaluationCost ?? FILTER_LIMITS.maxEvaluationCost;
  const { program, tree, estimatedCost, fast: compiledJs } = yield* compileProgram(expression, eventTypeId, maxEstimatedCost);
  const fast = options.interpreterOnly ? undefined : compiledJs;
  if (!compiledJs) interpretedFilters++;
  const types = familyOf(eventTypeId).types;
  /** Every check, then the closures unless told not to, then the interpreter for what they cannot decide. */
  const guarded = (event: { type: string; data: unknown }, compiled: boolean): FilterResult => {
    if (!inFamily(event.type)) return outsideFamily(event.type);
    // Only a filter whose worst case is over the budget can exceed it: then price this event before running.
    if (estimatedCost > budget) {
      const actual = estimateCost(tree.root, dataShape(event.data), event.type.length).cost;
      if (actual > budget) {
        return {
          matched: false,
          error: `evaluation cost ${formatCost(actual)} for this event exceeds the budget of ${formatCost(budget)}; not evaluated`,
        };
      }
    }
    if (compiled && fast) {
      const r = runCompiled(fast, types, event);
      if (r === true) return MATCHED;
      if (r === false) return NOT_MATCHED;
    }
    // an error or a non-bool result: the interpreter words it (rare, so its cost does not matter)
    const result = program({ type: event.type, data: event.data as CelInput });
    if (result === true) return MATCHED;
    if (result === false) return NOT_MATCHED;
    if (isCelError(result)) return { matched: false, error: describeEvalError(result, tree, expression) };
    return { matched: false, error: `filter result is ${runtimeKind(result)}, not bool` };
  };
  const compiled: CompiledFilter = {
    expression,
    eventTypeId,
    matchesAll: false,
    estimatedCost,
    engine: fast ? 'compiled' : 'interpreted',
    // a filter within the budget for every event needs no pricing: the closures first, the checks only when they cannot decide
    evaluate:
      fast && estimatedCost <= budget ? fastEvaluate(types, fast, (event) => guarded(event, false)) : (event) => guarded(event, true),
  };
  sourceTrees.set(compiled, tree);
  return compiled;
}

const MATCHED: FilterResult = Object.freeze({ matched: true });
const NOT_MATCHED: FilterResult = Object.freeze({ matched: false });

/** Membership in a family's types: string comparisons for the usual one or two types (cheaper than a Set lookup per evaluation). */
function familyTest(types: readonly string[]): (type: string) => boolean {
  const [a, b] = types;
  if (types.length === 1 && a !== undefined) return (type) => type === a;
  if (types.length === 2 && a !== undefined && b !== undefined) return (type) => type === a || type === b;
  const set: ReadonlySet<string> = new Set(types);
  return (type) => set.has(type);
}

type Evaluate = CompiledFilter['evaluate'];

/**
 * The hot path (routing evaluates the prefilter index's candidates with it): the family check is the pick of the
 * event type's closure, then one data check and one call, and true/false comes back without allocating. Anything else (an event outside the family, data the
 * closures do not take, an error, a non-bool, unsure) goes to `otherwise`, which checks again and words it.
 */
function fastEvaluate(types: readonly string[], fns: readonly CompiledJs[], otherwise: Evaluate): Evaluate {
  const general = generalEvaluate(types, fns, otherwise);
  return fusedEvaluate(types, fns, general) ?? general;
}

/** The unfused evaluation: the type's closure on checked data, its true/false, else `otherwise`. */
function generalEvaluate(types: readonly string[], fns: readonly CompiledJs[], otherwise: Evaluate): Evaluate {
  const [a, b] = types;
  const [fa, fb] = fns;
  if (types.length <= 2 && fa) {
    // a type whose closure reads no data has its result here already (no call, no data check)
    const ra = fa && settled(fa);
    const rb = fb && settled(fb);
    return (event) => {
      const t = event.type;
      let f: CompiledJs | undefined;
      if (t === a) {
        if (ra) return ra;
        f = fa;
      } else if (t === b) {
        if (rb) return rb;
        f = fb;
      }
      const data = f && eventData(event.data);
      if (f && data) {
        let r: unknown;
        try {
          r = f(data);
        } catch {
          r = undefined;
        }
        if (r === true) return MATCHED;
        if (r === false) return NOT_MATCHED;
      }
      return otherwise(event);
    };
  }
  return (event) => {
    const r = runCompiled(fns, types, event);
    if (r === true) return MATCHED;
    if (r === false) return NOT_MATCHED;
    return otherwise(event);
  };
}

/**
 * The evaluation of a filter whose closure is one of the usual leaves (`data.f == 3`, `data.f == 's'`, `data.f in
 * [...]`, `data.f.contains('s')`, `'s' in data.f`; compile-js.ts Leaf) for one or both types of the family, the
 * other type (if any) settled: the leaf's test written out here, so that an evaluation is one call, the type
 * compare, the data check and a property read (profiled: the call into the leaf closure, megamorphic across
 * filters, and its try were half of `data.ruleId == 3`). Only the values the leaf is sure of are answered here;
 * anything else (another type, odd data, a missing field, a value of another kind) goes to `general`, the
 * unfused path, which gives what it gave before.
 */
function fusedEvaluate(types: readonly string[], fns: readonly CompiledJs[], general: Evaluate): Evaluate | undefined {
  const [a, b] = types;
  const [fa, fb] = fns;
  if (a === undefined || fa === undefined || types.length > 2) return undefined;
  // t1/t2: the types the leaf is for; other: the type settled without data (t1 when none: never reached)
  let shape: Leaf | undefined;
  let t1 = a;
  let t2 = a;
  let other = a;
  let otherResult: FilterResult = NOT_MATCHED;
  const sa = settled(fa);
  const sb = fb && settled(fb);
  if (b === undefined || fb === fa) {
    shape = leafOf(fa);
    t2 = b ?? a;
  } else if (fb !== undefined && sb) {
    shape = leafOf(fa);
    other = b;
    otherResult = sb;
  } else if (fb !== undefined && sa) {
    shape = leafOf(fb);
    t1 = t2 = b;
    otherResult = sa;
  }
  if (!shape) return undefined;
  const field = shape.field;
  // jscpd:ignore-start -- the num and str cases differ only in their typeof test and stay two closures: one shared
  // closure taking the kind would make the hot evaluation polymorphic (see above)
  switch (shape.kind) {
    case 'num': {
      const x = shape.value;
      const [eq, ne] = shape.negate ? [NOT_MATCHED, MATCHED] : [MATCHED, NOT_MATCHED];
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const v = d[field];
            if (typeof v === 'number') return v === x ? eq : ne;
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
    case 'str': {
      const s = shape.value;
      const [eq, ne] = shape.negate ? [NOT_MATCHED, MATCHED] : [MATCHED, NOT_MATCHED];
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const v = d[field];
            if (typeof v === 'string') return v === s ? eq : ne;
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
    // jscpd:ignore-end
    case 'strIn': {
      const values = shape.values;
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const v = d[field];
            if (typeof v === 'string') return values.has(v) ? MATCHED : NOT_MATCHED;
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
    // one closure per method: its call site then sees one String builtin
    case 'contains': {
      const lit = shape.value;
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const v = d[field];
            if (typeof v === 'string') return v.includes(lit) ? MATCHED : NOT_MATCHED;
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
    case 'startsWith': {
      const lit = shape.value;
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const v = d[field];
            if (typeof v === 'string') return v.startsWith(lit) ? MATCHED : NOT_MATCHED;
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
    case 'endsWith': {
      const lit = shape.value;
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const v = d[field];
            if (typeof v === 'string') return v.endsWith(lit) ? MATCHED : NOT_MATCHED;
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
    case 'litIn': {
      const lit = shape.value;
      return (event) => {
        const t = event.type;
        if (t === t1 || t === t2) {
          const d = event.data;
          if (isEventData(d)) {
            const l = d[field];
            if (Array.isArray(l)) {
              // a string equals only the same string; another kind of element before it: the general path
              for (let i = 0; i < l.length; i++) {
                const e: unknown = l[i];
                if (e === lit) return MATCHED;
                if (typeof e !== 'string') return general(event);
              }
              return NOT_MATCHED;
            }
          }
        } else if (t === other) return otherResult;
        return general(event);
      };
    }
  }
}

/** The result of a closure that reads no data, when it is true or false. */
function settled(fn: CompiledJs): FilterResult | undefined {
  const v = constantValue(fn);
  return v === true ? MATCHED : v === false ? NOT_MATCHED : undefined;
}

/** The compiled closures' result; undefined when they could not decide (outside the family, odd data, it threw). */
function runCompiled(fns: readonly CompiledJs[], types: readonly string[], event: { type: string; data: unknown }): unknown {
  const f = fns[types.indexOf(event.type)];
  const data = f && eventData(event.data);
  if (!data) return undefined;
  try {
    return f(data);
  } catch {
    return undefined;
  }
}

function eventData(d: unknown): Parameters<CompiledJs>[0] | undefined {
  return isEventData(d) ? d : undefined;
}

let interpretedFilters = 0;

/** Non-empty filters compiled so far that evaluate on the interpreter (a monotonic count, for a metric). */
export function interpretedFilterCount(): number {
  return interpretedFilters;
}

/** The shape of an event's data, shared by every router pricing the same event (lazy; events are not mutated after validation). */
const dataShapes = new WeakMap<object, Shape>();
function dataShape(data: unknown): Shape {
  if (typeof data !== 'object' || data === null) return shapeOfValue(data);
  let shape = dataShapes.get(data);
  if (!shape) dataShapes.set(data, (shape = shapeOfValue(data)));
  return shape;
}

/** The parsed tree of each non-empty filter compileFilter returned (for filterConstraints). */
const sourceTrees = new WeakMap<CompiledFilter, SourceTree>();
const constraintCache = new WeakMap<CompiledFilter, FilterConstraints>();
const NO_CONSTRAINTS: FilterConstraints = { types: undefined, data: [] };

/**
 * Necessary conditions of a compiled filter (see constraints.ts), computed once per filter. An empty filter,
 * or a CompiledFilter that compileFilter did not make, has none.
 */
export function filterConstraints(filter: CompiledFilter): FilterConstraints {
  let c = constraintCache.get(filter);
  if (!c) {
    const tree = sourceTrees.get(filter);
    c = tree ? extractConstraints(tree.root, familyOf(filter.eventTypeId).types, FAMILY_FIELD_TREES[filter.eventTypeId]) : NO_CONSTRAINTS;
    constraintCache.set(filter, c);
  }
  return c;
}

/** Result-style compileFilter for API validation. `message` includes the position (`1:17: ...`). */
export function validateFilter(expression: string, eventTypeId: EventTypeId): FilterValidation {
  try {
    compileFilter(expression, eventTypeId);
    return { ok: true };
  } catch (e) {
    if (e instanceof FilterCompileError) return { ok: false, message: e.message, line: e.line, column: e.column };
    throw e;
  }
}

function* compileProgram(
  source: string,
  eventTypeId: EventTypeId,
  maxEstimatedCost: number,
): Generator<void, { program: ReturnType<typeof plan>; tree: SourceTree; estimatedCost: number; fast: CompiledJs[] | undefined }, void> {
  if (source.length > FILTER_LIMITS.maxLength) {
    throw FilterCompileError.at(source, FILTER_LIMITS.maxLength, `expression is longer than ${FILTER_LIMITS.maxLength} characters`);
  }
  const parsed = parseOrThrow(source);
  yield;
  const tree = toSourceTree(parsed, source);
  if (tree.size > FILTER_LIMITS.maxNodes) {
    throw FilterCompileError.at(
      source,
      startOffset(tree.root),
      `expression is too complex: ${tree.size} nodes, at most ${FILTER_LIMITS.maxNodes} allowed`,
    );
  }
  checkFilterTree(tree.root, {
    source,
    eventTypeId,
    dataTree: FAMILY_FIELD_TREES[eventTypeId],
    maxComprehensionDepth: FILTER_LIMITS.maxComprehensionDepth,
    checkLiteral,
  });
  const typeLength = Math.max(...familyOf(eventTypeId).types.map((t) => t.length));
  const estimate = estimateCost(tree.root, shapeOfField(FAMILY_FIELD_TREES[eventTypeId]), typeLength, maxEstimatedCost);
  if (estimate.cost > maxEstimatedCost) {
    throw FilterCompileError.at(
      source,
      blameOffset(source, estimate.culprit ?? tree.root),
      `estimated cost ${formatCost(estimate.cost)} exceeds the limit of ${formatCost(maxEstimatedCost)} ` +
        '(worst case under the event size limits; iterate over fewer or shorter fields, or nest less)',
    );
  }
  yield;
  // After the cost check, so folding itself is cheap.
  foldLiterals(tree, parsed, source, env);
  const program = plan(env, parsed);
  yield;
  return { program, tree, estimatedCost: estimate.cost, fast: compileToJs(tree.root, familyOf(eventTypeId).types) };
}

/** Where to point at an expensive node: the name of a method or macro call, else where the node starts. */
function blameOffset(source: string, node: Node): number {
  return node.kind === 'call' && node.target !== undefined ? memberNameOffset(source, node.offset) : startOffset(node);
}

function formatCost(n: number): string {
  return n >= 1e15 ? 'over 10^15' : Math.round(n).toLocaleString('en-US');
}

function parseOrThrow(source: string): ReturnType<typeof parse> {
  const deep = findDeepNesting(source);
  if (deep) throw FilterCompileError.at(source, deep.offset, `syntax error: ${deep.reason}`);
  try {
    // The trailing newline works around @bufbuild/cel 0.6.1 rejecting a `//` comment at the very end.
    return parse(`${source}\n`);
  } catch (e) {
    const problem = findSyntaxProblem(source);
    if (problem) throw FilterCompileError.at(source, problem.offset, `syntax error: ${problem.reason}`);
    throw FilterCompileError.at(source, parserOffset(e), `syntax error: ${parserReason(e)}`);
  }
}

function parserOffset(e: unknown): number {
  const offset = (e as { location?: { start?: { offset?: unknown } } }).location?.start?.offset;
  return typeof offset === 'number' ? offset : 0;
}

function parserReason(e: unknown): string {
  if (e instanceof RangeError) return 'expression is nested too deeply';
  const raw = (e as { rawMessage?: unknown }).rawMessage;
  return typeof raw === 'string' ? raw : 'invalid expression';
}

/** Compile-time validation of literal regexes, timestamps and durations, using the same engine as evaluation. */
const literalPrograms: Readonly<Record<string, ReturnType<typeof plan>>> = {
  matches: plan(env, parse("''.matches(v)")),
  timestamp: plan(env, parse('timestamp(v)')),
  duration: plan(env, parse('duration(v)')),
};

function checkLiteral(fn: string, value: string): string | undefined {
  const program = literalPrograms[fn];
  const result = program?.({ v: value });
  if (!isCelError(result)) return undefined;
  if (fn === 'matches') return `invalid regular expression: ${result.message.replace(/^error parsing regexp: /, '')}`;
  return fn === 'timestamp'
    ? 'invalid timestamp (expected RFC 3339, e.g. 2030-01-01T00:00:00Z)'
    : 'invalid duration (e.g. 1h30m, 90s, 1.5s)';
}

function runtimeKind(value: unknown): string {
  switch (typeof value) {
    case 'bigint':
      return 'an int';
    case 'number':
      return 'a double';
    case 'string':
      return 'a string';
    default:
      if (value === null) return 'null';
      if (value instanceof Uint8Array) return 'bytes';
      return 'a non-bool value';
  }
}
