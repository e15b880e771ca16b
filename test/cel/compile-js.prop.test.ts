/**
 * Differential property: filters compiled to JavaScript closures (src/cel/compile-js.ts) against @bufbuild/cel's
 * planned program, the reference. Thousands of random allowed expressions (a typed grammar over each family's
 * field tree and the function allowlist: every one compiles, and compiles to closures) over random events of
 * every family, well-formed and malformed. Two properties per (expression, event):
 *  - the closure alone: true/false exactly where the reference gives that bool, its error value exactly where
 *    the reference errs, anything else where the reference yields a non-bool; "not sure" (it throws, the product
 *    then asks the interpreter) in a small share of evaluations only;
 *  - the product path: compileFilter(...).evaluate gives the same FilterResult (matched and error text) as the
 *    interpreter-only filter.
 */
import { celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toSourceTree } from '../../src/cel/ast.js';
import { ERR, compileToJs, isEventData } from '../../src/cel/compile-js.js';
import { FilterCompileError, compileFilter } from '../../src/cel/index.js';
import { familyOf, type EventType, type EventTypeId, type InternalEvent } from '../../src/events/families.js';
import { randomEvent, rng } from '../routing/generators.js';

type Family = EventTypeId;
const FAMILIES: Family[] = [
  'certmgr-issuer-health-notification-config',
  'certmgr-cert-resource-health-notification-config',
  'cert-expiry-ext-notification-config',
  'certmgr-agent-health-notification-config',
];

const COMMON_STRINGS = ['data.clusterName', 'data.statusMessage', 'data.statusReason', 'data.unhealthyDuration', 'data.clusterId'];
const STRINGS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': [...COMMON_STRINGS, 'data.issuerName', 'data.namespace', 'data.resourceId'],
  'certmgr-cert-resource-health-notification-config': [
    ...COMMON_STRINGS,
    'data.namespace',
    'data.subject.commonName',
    'data.resourceId',
    "data['issuerName']",
  ],
  'cert-expiry-ext-notification-config': ['data.name', 'data.message', 'data.notificationDate', 'data.namespace', 'data.notAfter'],
  'certmgr-agent-health-notification-config': [...COMMON_STRINGS.slice(0, 3), 'data.agentVersion', 'data.lastSeenAt'],
};
const LISTS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': [],
  'certmgr-cert-resource-health-notification-config': ["data.SANs['DNS Names']", 'data.subject.organizations', 'data.subject.countries'],
  'cert-expiry-ext-notification-config': ['data.applicationIds', 'data.dnsNames'],
  'certmgr-agent-health-notification-config': [],
};
const NUMBERS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': [],
  'certmgr-cert-resource-health-notification-config': [],
  'cert-expiry-ext-notification-config': ['data.ruleId', 'data.threshold', 'data.daysUntilExpiry'],
  'certmgr-agent-health-notification-config': [],
};
/** Objects (maps at run time): equality, `in`, size, iteration over keys. */
const OBJECTS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': ['data'],
  'certmgr-cert-resource-health-notification-config': ['data', 'data.subject', 'data.SANs'],
  'cert-expiry-ext-notification-config': ['data'],
  'certmgr-agent-health-notification-config': ['data'],
};
const HAS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': ['has(data.resourceId)', 'has(data.unhealthyDuration)', 'has(data.runbookUrl)'],
  'certmgr-cert-resource-health-notification-config': ['has(data.subject.commonName)', 'has(data.SANs)', 'has(data.resourceId)'],
  'cert-expiry-ext-notification-config': ['has(data.ruleId)', 'has(data.applicationIds)', 'has(data.threshold)'],
  'certmgr-agent-health-notification-config': ['has(data.unhealthyDuration)', 'has(data.clusterId)'],
};

const pick = <T>(xs: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);
const strLit = pick(["''", "'a'", "'.notready'", "'.active'", "'prod'", "'example.com'", "'1'", "'-7'", "'true'", "'2.5'", "'é'", "'😀'"]);
const intLit = pick(['0', '1', '-1', '2', '7', '30', '9223372036854775807', '-9223372036854775807']);
const dblLit = pick(['0.0', '1.0', '-1.5', '2.0', '30.0', '1e300', '0.1']);
const regex = pick(["'^p'", "'(a|b)+'", "'example\\\\.com$'", "'[0-9]+'", "'^$'"]);
const VARS = ['x', 'y'];

interface Ctx {
  f: Family;
  depth: number;
  vars: string[];
}
type Gen = (c: Ctx, n: number) => fc.Arbitrary<string>;

const grow = (leaf: fc.Arbitrary<string>, n: number, more: () => fc.Arbitrary<string>[]): fc.Arbitrary<string> =>
  n <= 0 ? leaf : fc.oneof({ weight: 3, arbitrary: leaf }, ...more());
const fields = (xs: string[]): fc.Arbitrary<string>[] => (xs.length > 0 ? [pick(xs)] : []);

const str: Gen = (c, n) =>
  grow(fc.oneof(strLit, fc.constant('type'), ...fields(STRINGS[c.f]), ...fields(c.vars)), n, () => [
    fc.tuple(str(c, n - 1), str(c, n - 1)).map(([a, b]) => `(${a} + ${b})`),
    int(c, n - 1).map((i) => `string(${i})`),
    dbl(c, n - 1).map((d) => `string(${d})`),
    fc.tuple(bool(c, n - 1), str(c, n - 1), str(c, n - 1)).map(([p, a, b]) => `(${p} ? ${a} : ${b})`),
    fc.tuple(list(c, n - 1), int(c, 0)).map(([l, i]) => `${l}[${i}]`),
  ]);

const int: Gen = (c, n) =>
  grow(intLit, n, () => [
    str(c, n - 1).map((s) => `size(${s})`),
    list(c, n - 1).map((l) => `${l}.size()`),
    fc.tuple(int(c, n - 1), pick(['+', '-', '*', '/', '%']), int(c, n - 1)).map(([a, o, b]) => `(${a} ${o} ${b})`),
    int(c, n - 1).map((i) => `-(${i})`),
    str(c, n - 1).map((s) => `int(${s})`),
    dbl(c, n - 1).map((d) => `int(${d})`),
  ]);

const dbl: Gen = (c, n) =>
  grow(fc.oneof(dblLit, ...fields(NUMBERS[c.f])), n, () => [
    fc.tuple(dbl(c, n - 1), pick(['+', '-', '*', '/']), dbl(c, n - 1)).map(([a, o, b]) => `(${a} ${o} ${b})`),
    int(c, n - 1).map((i) => `double(${i})`),
    str(c, n - 1).map((s) => `double(${s})`),
  ]);

const list: Gen = (c, n) =>
  grow(
    fc.oneof(
      ...fields(LISTS[c.f]),
      fc.array(strLit, { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
    ),
    n,
    () => [
      fc.tuple(list(c, n - 1), list(c, n - 1)).map(([a, b]) => `(${a} + ${b})`),
      ...(c.depth < 2
        ? [
            comprehension(c, n, 'map'),
            comprehension(c, n, 'filter'),
            fc
              .tuple(list(c, n - 1), bool(inner(c), n - 1), str(inner(c), n - 1))
              .map(([l, p, s]) => `${l}.map(${VARS[c.depth]}, ${p}, ${s})`),
          ]
        : []),
    ],
  );

const inner = (c: Ctx): Ctx => ({ ...c, depth: c.depth + 1, vars: [...c.vars, VARS[c.depth] ?? 'z'] });

function comprehension(c: Ctx, n: number, macro: 'all' | 'exists' | 'exists_one' | 'filter' | 'map'): fc.Arbitrary<string> {
  const v = VARS[c.depth] ?? 'z';
  const body = macro === 'map' ? str(inner(c), n - 1) : bool(inner(c), n - 1);
  const range = fc.oneof({ weight: 3, arbitrary: list(c, n - 1) }, pick(OBJECTS[c.f]));
  return fc.tuple(range, body).map(([l, b]) => `${l}.${macro}(${v}, ${b})`);
}

/** Any value, including objects, lists and values of other types than the schema says (malformed events). */
const anyValue: Gen = (c, n) => fc.oneof(str(c, n), int(c, n), dbl(c, n), list(c, n), pick([...OBJECTS[c.f], 'null', 'true', 'dyn(data)']));

const bool: Gen = (c, n) =>
  grow(
    fc.oneof(
      pick(['true', 'false', ...HAS[c.f]]),
      fc.tuple(str(c, 0), pick(['==', '!=', '<', '>=']), str(c, 0)).map(([a, o, b]) => `${a} ${o} ${b}`),
      fc.tuple(str(c, 0), pick(['startsWith', 'endsWith', 'contains']), str(c, 0)).map(([a, f, b]) => `${a}.${f}(${b})`),
    ),
    n,
    () => [
      fc.tuple(bool(c, n - 1), pick(['&&', '||']), bool(c, n - 1)).map(([a, o, b]) => `(${a} ${o} ${b})`),
      bool(c, n - 1).map((b) => `!(${b})`),
      fc.tuple(bool(c, n - 1), bool(c, n - 1), bool(c, n - 1)).map(([p, a, b]) => `(${p} ? ${a} : ${b})`),
      fc.tuple(int(c, n - 1), pick(['==', '!=', '<', '>', '<=', '>=']), int(c, n - 1)).map(([a, o, b]) => `${a} ${o} ${b}`),
      fc.tuple(dbl(c, n - 1), pick(['==', '!=', '<', '>', '<=', '>=']), dbl(c, n - 1)).map(([a, o, b]) => `${a} ${o} ${b}`),
      // heterogeneous: int against double (JSON numbers are doubles)
      fc.tuple(dbl(c, n - 1), pick(['==', '!=', '<', '>=']), int(c, n - 1)).map(([a, o, b]) => `${a} ${o} ${b}`),
      fc.tuple(anyValue(c, n - 1), pick(['==', '!=']), anyValue(c, n - 1)).map(([a, o, b]) => `${a} ${o} ${b}`),
      fc.tuple(str(c, n - 1), regex).map(([s, r]) => `${s}.matches(${r})`),
      fc.tuple(str(c, n - 1), str(c, 0)).map(([s, r]) => `${s}.matches(${r})`),
      fc.tuple(str(c, n - 1), list(c, n - 1)).map(([s, l]) => `${s} in ${l}`),
      fc.tuple(anyValue(c, n - 1), pick(OBJECTS[c.f])).map(([s, o]) => `${s} in ${o}`),
      fc.tuple(anyValue(c, n - 1), list(c, n - 1)).map(([s, l]) => `${s} in ${l}`),
      anyValue(c, n - 1).map((v) => `size(dyn(${v})) > 0`),
      str(c, n - 1).map((s) => `bool(${s})`),
      ...(c.depth < 2 ? [comprehension(c, n, 'exists'), comprehension(c, n, 'all'), comprehension(c, n, 'exists_one')] : []),
    ],
  );

const expression = (f: Family): fc.Arbitrary<string> => bool({ f, depth: 0, vars: [] }, 2);

const env = celEnv();
const reference = (expr: string) => plan(env, parse(`${expr}\n`));

/** Field values events may carry when malformed: other types, containers, nulls, numbers at the edges. */
const ODD_VALUES: unknown[] = [
  null,
  0,
  -1.5,
  2,
  7,
  1e300,
  2 ** 53 + 2,
  2n,
  '',
  '1',
  'true',
  'prod',
  '9223372036854775808',
  [],
  ['a', 1, null],
  ['prod', 'prod'],
  {},
  { 'DNS Names': ['example.com'], commonName: 'a', 1: 'one' },
  true,
];
const ODD_FIELDS = [
  'clusterName',
  'statusMessage',
  'resourceId',
  'subject',
  'SANs',
  'applicationIds',
  'ruleId',
  'threshold',
  'name',
  'namespace',
];

const eventOf = (f: Family) =>
  fc.tuple(fc.integer(), fc.nat(), fc.option(fc.tuple(pick(ODD_FIELDS), pick(ODD_VALUES)), { freq: 3 })).map(([seed, t, odd]) => {
    const types = familyOf(f).types;
    const e: InternalEvent = randomEvent(rng(seed), types[t % types.length] as EventType);
    if (odd) (e.data as Record<string, unknown>)[odd[0]] = odd[1];
    return e;
  });

const ALLOWED_COMPILE_FAILURES = /uses only literals and fails for every event|estimated cost|too complex/;

describe('compiled CEL closures vs @bufbuild/cel (differential)', () => {
  it('give the reference result for random allowed expressions over random events of every family', () => {
    let evaluations = 0;
    let unsure = 0;
    let compiled = 0;
    const property = fc.property(
      pick(FAMILIES).chain((f) => fc.tuple(fc.constant(f), expression(f), fc.array(eventOf(f), { minLength: 3, maxLength: 3 }))),
      ([family, expr, events]) => {
        let fast;
        let ref;
        try {
          fast = compileFilter(expr, family);
        } catch (e) {
          // the grammar only writes allowed expressions: the only refusals are literal-only failures and size
          if (e instanceof FilterCompileError && ALLOWED_COMPILE_FAILURES.test(e.reason)) return;
          throw e;
        }
        expect(fast.engine, expr).toBe('compiled');
        compiled++;
        const slow = compileFilter(expr, family, { interpreterOnly: true });
        const types = familyOf(family).types;
        const closures = compileToJs(toSourceTree(parse(`${expr}\n`), expr).root, types);
        const program = reference(expr);
        if (!closures) throw new Error(`not compiled: ${expr}`);
        // the product's call: the closure of the event's type, on data that passed isEventData
        const closure = (type: string, data: unknown): unknown => {
          const f = closures[types.indexOf(type as EventType)];
          if (!f || !isEventData(data)) throw new Error('not taken');
          return f(data);
        };
        for (const event of events) {
          evaluations++;
          ref = program({ type: event.type, data: event.data as never });
          let got: unknown;
          try {
            got = closure(event.type, event.data);
          } catch {
            unsure++;
            got = undefined;
          }
          const what = `${expr} over ${JSON.stringify(event, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`;
          if (got !== undefined) {
            if (isCelError(ref)) expect(got, what).toBe(ERR);
            else if (typeof ref === 'boolean') expect(got, what).toBe(ref);
            else expect(typeof got === 'boolean' || got === ERR, what).toBe(false);
          }
          expect(fast.evaluate(event), what).toEqual(slow.evaluate(event));
        }
      },
    );
    fc.assert(property, {
      numRuns: Number(process.env.CEL_PROP_RUNS ?? 2000),
      seed: Number(process.env.CEL_PROP_SEED ?? 20261126),
      endOnFailure: true,
    });
    expect(compiled).toBeGreaterThan(Number(process.env.CEL_PROP_RUNS ?? 2000) * 0.8);
    // "not sure" only for values the interpreter refuses to convert (and then it answers): rare
    expect(unsure / evaluations).toBeLessThan(0.02);
  });

  // filter.ts answers these shapes without calling the closure (compile-js.ts Leaf): the field's value of every
  // kind, missing, and the leaf beside a `type` test that settles the other type of the family
  it('give the reference result for the fused leaves (data.f == literal, in, contains, ...) over odd values', () => {
    let compiled = 0;
    const property = fc.property(
      pick(FAMILIES).chain((f) => fc.tuple(fc.constant(f), leafExpression(f), eventOf(f), fc.option(pick(LEAF_VALUES), { freq: 2 }))),
      ([family, [expr, field], event, odd]) => {
        let fast;
        try {
          fast = compileFilter(expr, family);
        } catch (e) {
          if (e instanceof FilterCompileError) return;
          throw e;
        }
        compiled++;
        const slow = compileFilter(expr, family, { interpreterOnly: true });
        const data = event.data as Record<string, unknown>;
        if (odd) {
          if (odd.missing) delete data[field];
          else data[field] = odd.value;
        }
        const what = `${expr} over ${JSON.stringify(event, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`;
        expect(fast.evaluate(event), what).toEqual(slow.evaluate(event));
      },
    );
    const runs = Number(process.env.CEL_PROP_RUNS ?? 2000);
    fc.assert(property, { numRuns: runs, seed: Number(process.env.CEL_PROP_SEED ?? 20261126), endOnFailure: true });
    expect(compiled).toBeGreaterThan(runs * 0.5);
  });
});

/** Values for the fused leaves' field: every kind, numbers at the edges (-0, NaN, ±Infinity, beyond 2^53), missing. */
const LEAF_VALUES: { value?: unknown; missing?: true }[] = [
  ...[null, 3, 3.5, -0, 0, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 53 + 2, 3n, 2n ** 60n, '3', 'a', '', 'prod', 'é', true, false],
  ...[[], ['a'], ['.active', 'a'], [1, 'a'], ['prod', null], [['a']], {}, { a: 'a' }, Object.create(null) as object],
].map((value) => ({ value }));
LEAF_VALUES.push({ missing: true });

const leafLit = pick([
  ...["''", "'a'", "'prod'", "'3'", "'é'", "'.active'"],
  ...['3', '0', '-0', '-3', '2', '9007199254740992', '9007199254740993', '9223372036854775807'],
  ...['3.0', '3.5', '-0.0', '0.0', '1e308', '-1e308', '9007199254740992.0'],
  ...['true', 'null'],
]);

/** A fused leaf over a field of the family (its name returned for the event's odd value), alone or beside a type test. */
function leafExpression(f: Family): fc.Arbitrary<[string, string]> {
  const names = [...STRINGS[f], ...NUMBERS[f], ...LISTS[f]].filter((x) => /^data\.[A-Za-z]+$/.test(x)).map((x) => x.slice('data.'.length));
  const field = pick(names);
  const leaf = fc.oneof(
    fc.tuple(field, pick(['==', '!=']), leafLit).map(([n, o, l]) => [`data.${n} ${o} ${l}`, n] as [string, string]),
    fc
      .tuple(field, fc.array(pick(["'a'", "'prod'", "''", "'3'"]), { minLength: 1, maxLength: 3 }))
      .map(([n, xs]) => [`data.${n} in [${xs.join(', ')}]`, n] as [string, string]),
    fc
      .tuple(field, pick(['contains', 'startsWith', 'endsWith']), pick(["''", "'a'", "'pr'", "'od'"]))
      .map(([n, m, l]) => [`data.${n}.${m}(${l})`, n] as [string, string]),
    fc.tuple(pick(["'a'", "'prod'", "''"]), field).map(([l, n]) => [`${l} in data.${n}`, n] as [string, string]),
  );
  return fc
    .tuple(leaf, pick(['', "type.endsWith('.active') && ", "type.endsWith('.notready') || ", "type.startsWith('evt.') && "]))
    .map(([[e, n], prefix]) => [`${prefix}${e}`, n]);
}
