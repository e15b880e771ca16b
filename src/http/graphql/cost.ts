/**
 * GraphQL request cost, computed BEFORE validation and execution from the document and the variables.
 *
 * Hand-written on graphql's own AST rather than graphql-query-complexity / graphql-depth-limit: neither is
 * installed (no new dependencies in this change), graphql-depth-limit is unmaintained, and we need one pass
 * that measures depth, aliases, expanded field count, `first:` values (literal or variable) and a total cost
 * together, tolerant of invalid documents (validation runs after us and reports those properly).
 *
 * Cost model (like graphql-query-complexity's simple estimator): each selected field costs 1; the children of
 * a list-returning field are multiplied by its page size: `first` (argument, variable or schema default) when
 * the field takes one, else `assumedListSize`. Introspection lists (`__schema`, `__type`) are bounded by the
 * schema itself, so they multiply by 1. A list whose filter no store index serves adds `scanCost` (SCANNING_LISTS).
 * Fragments are costed once and reused (memoised), so fragment "bombs" are measured in linear time; spread
 * cycles count as 0 (validation rejects them anyway).
 */
import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isListType,
  isObjectType,
  isInterfaceType,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
  parse,
} from 'graphql';
import { STREAK_DELIVERIES } from '../../service/console.js';
import { inventoryFilterIndexed } from '../../store/inventory-repo.js';
import { deliveryFilterIndexed } from '../../store/outbox-repo.js';

export interface GraphqlLimits {
  /** graphql parse() stops after this many tokens: bounds parse time and AST size. */
  maxTokens: number;
  /** Nesting of selection sets (`{ a { b } }` is 2). */
  maxDepth: number;
  /** Aliased fields, fragments expanded. */
  maxAliases: number;
  /** Selected fields, fragments expanded (each spread counts its fragment's fields again). */
  maxFields: number;
  /** Largest `first:` on any field. */
  maxFirst: number;
  /** Estimated fields resolved, list sizes multiplied in. */
  maxCost: number;
  /** Page size assumed for lists without `first` (record lists; their real size is bounded by tenant quotas). */
  assumedListSize: number;
  /** Nesting of input literals in the document (`{a: {b: [..]}}`). */
  maxValueDepth: number;
  /**
   * Added for a list field whose filter no store index serves (SCANNING_LISTS): it may read every row of the
   * company (inventory, delivery history) for one page, so a request holds at most one.
   */
  scanCost: number;
}

export const GRAPHQL_LIMITS: GraphqlLimits = {
  maxTokens: 5_000,
  maxDepth: 12,
  maxAliases: 30,
  maxFields: 500,
  maxFirst: 500,
  maxCost: 20_000,
  assumedListSize: 100,
  maxValueDepth: 32,
  scanCost: 10_000,
};

/** Lists without `first` whose size the resolver caps below assumedListSize: costed at that cap (`Type.field`). */
const CAPPED_LISTS: ReadonlyMap<string, number> = new Map([['UnhealthyResource.deliveries', STREAK_DELIVERIES]]);

/** A filter argument's given fields (null ones left out), from a literal object or a variable. */
type FilterKeys = ReadonlySet<string>;

/**
 * List fields whose store query reads one index range only for some filters (src/store: inventoryFilterIndexed,
 * deliveryFilterIndexed): `Type.field` → whether the given filter fields make it scan. Every other list filter
 * of the API has an index (events by type) or reads a quota-bounded table (silences by state).
 */
const SCANNING_LISTS: ReadonlyMap<string, (keys: FilterKeys) => boolean> = new Map([
  [
    'Query.certificates',
    (k: FilterKeys) =>
      !inventoryFilterIndexed({
        clusterId: k.has('clusterId') ? '' : undefined,
        namespace: k.has('namespace') ? '' : undefined,
        applicationId: k.has('applicationId') ? '' : undefined,
        health: k.has('health') ? 'READY' : undefined,
        notAfterAtMost: k.has('expiringWithinDays') ? 0 : undefined,
        servingStatus: k.has('servingStatus') ? 'ok' : undefined,
        servingProblem: k.has('servingProblem') ? true : undefined,
      }),
  ],
  [
    'Query.deliveries',
    (k: FilterKeys) =>
      !deliveryFilterIndexed({
        integrationId: k.has('integrationId') ? '' : undefined,
        status: k.has('status') ? 'DEAD' : undefined,
        eventId: k.has('eventId') ? '' : undefined,
      }),
  ],
]);

export type CostLimit = 'tokens' | 'depth' | 'aliases' | 'fields' | 'first' | 'cost' | 'valueDepth';

export interface CostViolation {
  limit: CostLimit;
  max: number;
  /** The measured value (at least max + 1; for `first` the offending value). */
  actual: number;
  message: string;
}

export interface CostReport {
  depth: number;
  aliases: number;
  fields: number;
  cost: number;
}

interface Measure {
  depth: number;
  aliases: number;
  fields: number;
  cost: number;
}

const ZERO: Measure = { depth: 0, aliases: 0, fields: 0, cost: 0 };

/** Parses with the token cap; a cap hit becomes a violation, any other syntax error is left to the caller. */
export function parseLimited(
  query: string,
  limits: GraphqlLimits = GRAPHQL_LIMITS,
): { doc: DocumentNode } | { violation: CostViolation } | { syntaxError: GraphQLError } {
  try {
    return { doc: parse(query, { maxTokens: limits.maxTokens, noLocation: false }) };
  } catch (e) {
    if (e instanceof GraphQLError && /more tha[nt] \d+ tokens/.test(e.message))
      return {
        violation: {
          limit: 'tokens',
          max: limits.maxTokens,
          actual: limits.maxTokens + 1,
          message: `query document has more than ${limits.maxTokens} tokens`,
        },
      };
    if (e instanceof GraphQLError) return { syntaxError: e };
    throw e;
  }
}

class Violation extends Error {
  constructor(readonly v: CostViolation) {
    super(v.message);
  }
}

/**
 * Measures the operation that would run (by `operationName`, else the only one). Returns the first violation
 * or the report. Never throws on invalid documents: unknown fields cost 1 and have no children's type.
 */
export function measureRequest(
  schema: GraphQLSchema,
  doc: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  limits: GraphqlLimits = GRAPHQL_LIMITS,
): { violation: CostViolation } | { report: CostReport } {
  const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const op = operationName ? ops.find((o) => o.name?.value === operationName) : ops.length === 1 ? ops[0] : undefined;
  if (!op) return { report: { ...ZERO } }; // graphql-http / execution report the missing operation
  const vars = variables ?? {};
  // memo per (fragment, parent type): the same fragment may apply to several types through interfaces
  const memo = new Map<string, Measure>();
  const inProgress = new Set<string>();

  const check = (m: Measure): Measure => {
    if (m.depth > limits.maxDepth)
      throw new Violation({
        limit: 'depth',
        max: limits.maxDepth,
        actual: m.depth,
        message: `query is nested ${m.depth} levels deep; the limit is ${limits.maxDepth}`,
      });
    if (m.aliases > limits.maxAliases)
      throw new Violation({
        limit: 'aliases',
        max: limits.maxAliases,
        actual: m.aliases,
        message: `query uses more than ${limits.maxAliases} aliases`,
      });
    if (m.fields > limits.maxFields)
      throw new Violation({
        limit: 'fields',
        max: limits.maxFields,
        actual: m.fields,
        message: `query selects more than ${limits.maxFields} fields (fragments expanded)`,
      });
    if (m.cost > limits.maxCost)
      throw new Violation({
        limit: 'cost',
        max: limits.maxCost,
        actual: m.cost,
        message: `query cost ${m.cost} exceeds the limit ${limits.maxCost} (each field counts 1, times the page size of enclosing lists; a list filter no index serves adds ${limits.scanCost}: lower first:, select fewer fields or filter by one field)`,
      });
    return m;
  };

  const add = (a: Measure, b: Measure): Measure =>
    check({ depth: Math.max(a.depth, b.depth), aliases: a.aliases + b.aliases, fields: a.fields + b.fields, cost: a.cost + b.cost });

  const valueDepth = (v: ValueNode, depth: number, path: string): void => {
    if (depth > limits.maxValueDepth)
      throw new Violation({
        limit: 'valueDepth',
        max: limits.maxValueDepth,
        actual: depth,
        message: `input value at ${path} is nested more than ${limits.maxValueDepth} levels deep`,
      });
    if (v.kind === Kind.LIST) for (const x of v.values) valueDepth(x, depth + 1, path);
    else if (v.kind === Kind.OBJECT) for (const f of v.fields) valueDepth(f.value, depth + 1, path);
  };

  const firstOf = (node: FieldNode, def: GraphQLField<unknown, unknown> | undefined): number | undefined => {
    const argDef = def?.args.find((a) => a.name === 'first');
    if (!argDef) return undefined;
    const arg = node.arguments?.find((a) => a.name.value === 'first');
    let n: unknown = argDef.defaultValue;
    if (arg?.value.kind === Kind.INT) n = Number(arg.value.value);
    else if (arg?.value.kind === Kind.VARIABLE) n = vars[arg.value.name.value] ?? n;
    else if (arg?.value.kind === Kind.NULL) n = argDef.defaultValue;
    if (typeof n !== 'number' || !Number.isFinite(n)) return limits.maxFirst; // invalid: validation/coercion rejects it; cost it at the cap
    if (n > limits.maxFirst)
      throw new Violation({
        limit: 'first',
        max: limits.maxFirst,
        actual: n,
        message: `first: ${n} on ${node.name.value} exceeds the limit ${limits.maxFirst}`,
      });
    return Math.max(0, Math.floor(n));
  };

  const given = (v: ValueNode | undefined): boolean =>
    v !== undefined && v.kind !== Kind.NULL && (v.kind !== Kind.VARIABLE || vars[v.name.value] != null);
  // the filter's given fields; a filter that is not an object is left to validation (costed as no filter)
  const filterKeys = (node: FieldNode): FilterKeys => {
    const arg = node.arguments?.find((a) => a.name.value === 'filter')?.value;
    if (arg?.kind === Kind.OBJECT) return new Set(arg.fields.filter((f) => given(f.value)).map((f) => f.name.value));
    const v = arg?.kind === Kind.VARIABLE ? vars[arg.name.value] : undefined;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return new Set();
    return new Set(Object.entries(v as Record<string, unknown>).flatMap(([k, x]) => (x != null ? [k] : [])));
  };
  const scanOf = (node: FieldNode, parent: GraphQLNamedType | undefined): number =>
    parent && SCANNING_LISTS.get(`${parent.name}.${node.name.value}`)?.(filterKeys(node)) ? limits.scanCost : 0;

  const fieldsOf = (t: GraphQLNamedType | undefined) => (t && (isObjectType(t) || isInterfaceType(t)) ? t.getFields() : undefined);

  // `listSize`: how many items the next list below stands for; a connection field's `first` applies to its `nodes`
  const selection = (set: SelectionSetNode, parent: GraphQLNamedType | undefined, introspection: boolean, listSize: number): Measure => {
    let acc: Measure = ZERO;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        const def = fieldsOf(parent)?.[sel.name.value];
        for (const a of sel.arguments ?? []) valueDepth(a.value, 1, `${sel.name.value}(${a.name.value}:)`);
        let m: Measure = { depth: 0, aliases: sel.alias ? 1 : 0, fields: 1, cost: 1 };
        if (sel.selectionSet) {
          const type: GraphQLOutputType | undefined = def?.type;
          const intro = introspection || sel.name.value.startsWith('__');
          const first = firstOf(sel, def);
          const list = type !== undefined && isListType(getNullableType(type));
          // a list multiplies its children by its page size; a paginated non-list (a connection) hands the
          // page size down to the list inside it
          const capped = parent ? CAPPED_LISTS.get(`${parent.name}.${sel.name.value}`) : undefined;
          const factor = intro || !list ? 1 : (first ?? capped ?? listSize);
          const childList = !list && first !== undefined ? first : limits.assumedListSize;
          const child = selection(sel.selectionSet, type ? getNamedType(type) : undefined, intro, childList);
          m = {
            depth: child.depth + 1,
            aliases: m.aliases + child.aliases,
            fields: m.fields + child.fields,
            cost: 1 + scanOf(sel, parent) + factor * child.cost,
          };
        } else {
          firstOf(sel, def); // a `first:` on a leaf is still capped
          m = { ...m, depth: 1 };
        }
        acc = add(acc, m);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const t = sel.typeCondition ? (schema.getType(sel.typeCondition.name.value) ?? undefined) : parent;
        acc = add(acc, selection(sel.selectionSet, t, introspection, listSize));
      } else {
        const frag = fragments.get(sel.name.value);
        if (!frag) continue;
        const key = `${frag.name.value}\u0000${introspection ? 1 : 0}\u0000${listSize}`;
        let m = memo.get(key);
        if (!m) {
          if (inProgress.has(key)) continue; // a cycle; validation rejects it
          inProgress.add(key);
          m = selection(frag.selectionSet, schema.getType(frag.typeCondition.name.value) ?? undefined, introspection, listSize);
          inProgress.delete(key);
          memo.set(key, m);
        }
        acc = add(acc, m);
      }
    }
    return acc;
  };

  try {
    for (const v of op.variableDefinitions ?? []) if (v.defaultValue) valueDepth(v.defaultValue, 1, `$${v.variable.name.value}`);
    const root =
      op.operation === 'mutation'
        ? schema.getMutationType()
        : op.operation === 'subscription'
          ? schema.getSubscriptionType()
          : schema.getQueryType();
    const m = selection(op.selectionSet, root ?? undefined, false, limits.assumedListSize);
    return { report: m };
  } catch (e) {
    if (e instanceof Violation) return { violation: e.v };
    throw e;
  }
}
