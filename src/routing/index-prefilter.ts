/**
 * Prefilter index over the routers of one family: which routers can possibly match an event, found by
 * lookups instead of evaluating every filter.
 *
 * Each router's filter yields necessary conditions (src/cel/constraints.ts): the concrete types it can match
 * and equalities / list memberships / substrings, prefixes and suffixes on `data` fields. The index keeps one
 * sub-index per concrete type (a router is in the sub-index of each type it allows), and in it files each
 * router under at most one data constraint (see pickConstraint: an equality with the fewest values first,
 * then a list membership, then the most selective literals): per (path, kind, value type) bucket, a
 * Map<value, routers>, and for the string kinds a matcher over the bucket's literals (src/routing/literal-matcher.ts)
 * that finds every literal occurring in (starting, ending) the event's string in one pass. Routers without a
 * usable data constraint (including filters that do not compile, which must still report their error, and
 * filters that may exceed the evaluation budget, whose error does not depend on the constraint) are always
 * candidates.
 *
 * For an event: candidates = the type's always-candidates ∪ for each bucket the routers under the event's
 * value(s) (or the literals found in it) at the bucket's path. When the event's field is missing or not of
 * the bucket's shape, the whole bucket is a candidate, because then the filter could error rather than be false.
 * Constraints are decisive (a violated one means the filter is exactly false, not an error), so the full
 * filter evaluated on the candidates gives the same matches and the same errors as evaluating every router.
 *
 * Costs: building is linear in the routers and their literals (each cut to MAX_INDEXED_LITERAL code units);
 * an event costs one lookup per bucket, or one scan of the field's string (O(length + literals found); the
 * event schema bounds the length).
 */
import { literalSelectivity } from '../cel/constraints.js';
import { FILTER_LIMITS, filterConstraints, type ConstraintValue, type DataConstraint } from '../cel/index.js';
import type { EventType } from '../events/families.js';
import type { CompiledRouter } from './compiled-router.js';
import { AffixMatcher, SubstringMatcher } from './literal-matcher.js';
import type { TimeSlicer } from './slicer.js';

interface Bucket {
  path: readonly string[];
  kind: DataConstraint['kind'];
  valueType: DataConstraint['valueType'];
  /** Router ordinals (ascending) by value. */
  byValue: Map<ConstraintValue, number[]>;
  /** Every router ordinal in the bucket (ascending): the candidates when the event's value is not usable. */
  all: number[];
  /** String kinds: the literals (keys of byValue) found in a string, and their routers by literal index. */
  matcher?: { forEachIn(s: string, found: (literal: number) => void): void };
  byLiteral?: number[][];
}

interface TypeIndex {
  /** Ordinals (ascending) of routers that are candidates for every event of this type. */
  always: number[];
  buckets: Bucket[];
}

export interface PrefilterIndex {
  /** The family's routers; candidates are ordinals into this array. */
  readonly routers: readonly CompiledRouter[];
  /**
   * Ordinals (ascending, no repeats) of the routers whose filter has to be evaluated for the event. Every
   * included router not returned has a filter that evaluates to exactly false for it. Do not mutate.
   */
  candidates(event: { type: string; data: unknown }): readonly number[];
  /** Counts for tests, logs and the benchmark. */
  readonly stats: { routers: number; indexed: number; always: number; excluded: number };
}

/**
 * Builds the index over `routers` (one family, whose concrete types are `familyTypes`). Routers for which
 * `include` is false (e.g. disabled, or their integration is) are never candidates.
 */
export function buildPrefilterIndex(
  routers: readonly CompiledRouter[],
  familyTypes: readonly EventType[],
  include: (r: CompiledRouter) => boolean = () => true,
): PrefilterIndex {
  const steps = indexSteps(routers, familyTypes, include);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** buildPrefilterIndex in time slices: yields to the event loop between routers (snapshot builds). */
export async function buildPrefilterIndexSliced(
  routers: readonly CompiledRouter[],
  familyTypes: readonly EventType[],
  include: (r: CompiledRouter) => boolean,
  slicer: Pick<TimeSlicer, 'due' | 'yield'>,
): Promise<PrefilterIndex> {
  const steps = indexSteps(routers, familyTypes, include);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (slicer.due()) await slicer.yield();
  }
}

/** The index build, one step per router and per string matcher (a step is where a sliced build may yield). */
function* indexSteps(
  routers: readonly CompiledRouter[],
  familyTypes: readonly EventType[],
  include: (r: CompiledRouter) => boolean,
): Generator<void, PrefilterIndex> {
  const byType = new Map<string, TypeIndex>(familyTypes.map((t) => [t, { always: [], buckets: [] }]));
  const bucketsByType = new Map<string, Map<string, Bucket>>(familyTypes.map((t) => [t, new Map()]));
  const stats = { routers: routers.length, indexed: 0, always: 0, excluded: 0 };

  for (const [ordinal, r] of routers.entries()) {
    yield;
    if (!include(r)) {
      stats.excluded++;
      continue;
    }
    // Over the per-event budget in the worst case: it may fail on a large event whatever its constraints say.
    const priced = (r.filter?.estimatedCost ?? 0) > FILTER_LIMITS.maxEvaluationCost;
    const constraints = r.filter && !priced ? filterConstraints(r.filter) : undefined;
    const chosen = constraints && pickConstraint(constraints.data);
    if (chosen) stats.indexed++;
    else stats.always++;
    const key = chosen && `${chosen.kind}|${chosen.valueType}|${JSON.stringify(chosen.path)}`;
    for (const type of familyTypes) {
      if (constraints?.types && !constraints.types.has(type)) continue;
      const ti = byType.get(type);
      const buckets = bucketsByType.get(type);
      if (!ti || !buckets) continue;
      if (!chosen || key === undefined) {
        ti.always.push(ordinal);
        continue;
      }
      let b = buckets.get(key);
      if (!b) {
        b = { path: chosen.path, kind: chosen.kind, valueType: chosen.valueType, byValue: new Map(), all: [] };
        buckets.set(key, b);
        ti.buckets.push(b);
      }
      b.all.push(ordinal);
      for (const value of chosen.values) {
        const v = indexedLiteral(chosen.kind, value);
        const list = b.byValue.get(v);
        if (!list) b.byValue.set(v, [ordinal]);
        else if (list[list.length - 1] !== ordinal) list.push(ordinal);
      }
    }
  }

  for (const buckets of bucketsByType.values()) {
    for (const b of buckets.values()) {
      if (b.kind === 'equals' || b.kind === 'contains') continue;
      yield;
      const literals = [...b.byValue.keys()] as string[];
      b.matcher = b.kind === 'substring' ? new SubstringMatcher(literals) : new AffixMatcher(literals, b.kind);
      b.byLiteral = [...b.byValue.values()];
    }
  }

  let everyIncluded: number[] | undefined;
  return {
    routers,
    stats,
    candidates(event) {
      const ti = byType.get(event.type);
      // Not a type of this family (callers route by family, so this does not happen): no shortcuts.
      if (!ti) return (everyIncluded ??= routers.flatMap((r, i) => (include(r) ? [i] : [])));
      let extra: number[] | undefined;
      const add = (ordinals: readonly number[]): void => {
        if (!extra) extra = [];
        for (const o of ordinals) extra.push(o);
      };
      for (const b of ti.buckets) {
        const value = valueAt(event.data, b.path);
        if (b.kind === 'equals') {
          if (typeof value !== b.valueType) add(b.all);
          else {
            const hit = b.byValue.get(value as ConstraintValue);
            if (hit) add(hit);
          }
        } else if (b.matcher) {
          if (typeof value !== 'string') add(b.all);
          else {
            const byLiteral = b.byLiteral as number[][];
            b.matcher.forEachIn(value, (lit) => add(byLiteral[lit] as number[]));
          }
        } else if (!Array.isArray(value) || !value.every((e) => typeof e === b.valueType)) {
          add(b.all);
        } else {
          for (const e of value as ConstraintValue[]) {
            const hit = b.byValue.get(e);
            if (hit) add(hit);
          }
        }
      }
      if (!extra) return ti.always;
      if (extra.length > 1) extra = sortedUnique(extra);
      return ti.always.length === 0 ? extra : mergeSorted(ti.always, extra);
    },
  };
}

/**
 * The most selective constraint: an equality with the fewest values, else a list membership with the fewest,
 * else a substring/prefix/suffix constraint with the fewest literals, the longest shortest one, and a prefix
 * or suffix before a substring at a tie (it has one place to be).
 */
function pickConstraint(data: readonly DataConstraint[]): DataConstraint | undefined {
  let best: DataConstraint | undefined;
  let bestRank = Infinity;
  for (const c of data) {
    const r = rank(c);
    if (r < bestRank) [best, bestRank] = [c, r];
  }
  return best;
}

function rank(c: DataConstraint): number {
  if (c.kind === 'equals') return c.values.size;
  if (c.kind === 'contains') return 1e9 + c.values.size;
  return 2e15 - 2 * literalSelectivity(c) + (c.kind === 'substring' ? 1 : 0);
}

/**
 * Code units of a literal kept in the index: a string containing (starting with) a literal contains (starts
 * with) its first ones, and one ending with it ends with its last ones, so a shortened literal is still a
 * decisive condition, and the matchers' size stays linear in the literals' count, not their length.
 */
const MAX_INDEXED_LITERAL = 64;

function indexedLiteral(kind: DataConstraint['kind'], v: ConstraintValue): ConstraintValue {
  if (typeof v !== 'string' || v.length <= MAX_INDEXED_LITERAL || kind === 'equals' || kind === 'contains') return v;
  return kind === 'suffix' ? v.slice(-MAX_INDEXED_LITERAL) : v.slice(0, MAX_INDEXED_LITERAL);
}

/** The value at `data.<path>` (own properties of plain objects only), or undefined. */
function valueAt(data: unknown, path: readonly string[]): unknown {
  let cur = data;
  for (const name of path) {
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur) || !Object.hasOwn(cur, name)) return undefined;
    cur = (cur as Record<string, unknown>)[name];
  }
  return cur;
}

function sortedUnique(xs: number[]): number[] {
  xs.sort((a, b) => a - b);
  let n = 0;
  for (let i = 0; i < xs.length; i++) if (i === 0 || xs[i] !== xs[n - 1]) xs[n++] = xs[i] as number;
  xs.length = n;
  return xs;
}

/** Merges two ascending arrays with no common element. */
function mergeSorted(a: readonly number[], b: readonly number[]): number[] {
  const out = new Array<number>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = (a[i] as number) < (b[j] as number) ? (a[i++] as number) : (b[j++] as number);
  while (i < a.length) out[k++] = a[i++] as number;
  while (j < b.length) out[k++] = b[j++] as number;
  return out;
}
