/**
 * CEL filter expressions generated from a typed grammar of what filters may use (src/cel/functions.ts): the
 * operators, size/startsWith/endsWith/contains/matches, conversions, has(), and the comprehension macros
 * all/exists/exists_one/filter/map nested up to one level past the limit, over the fields of each event family.
 * Mostly well-typed (so evaluation, not only the checker, is exercised), with some literal-only expressions that
 * can never evaluate.
 */
import fc from 'fast-check';

export type Family =
  | 'certmgr-issuer-health-notification-config'
  | 'certmgr-cert-resource-health-notification-config'
  | 'cert-expiry-ext-notification-config'
  | 'certmgr-agent-health-notification-config';
export const FAMILIES: Family[] = [
  'certmgr-issuer-health-notification-config',
  'certmgr-cert-resource-health-notification-config',
  'cert-expiry-ext-notification-config',
  'certmgr-agent-health-notification-config',
];

const STRING_FIELDS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': [
    'data.clusterName',
    'data.issuerName',
    'data.namespace',
    'data.statusMessage',
    'data.statusReason',
    'data.clusterId',
  ],
  'certmgr-cert-resource-health-notification-config': [
    'data.clusterName',
    'data.certificateName',
    'data.statusMessage',
    'data.subject.commonName',
    'data.namespace',
    'data.unhealthyDuration',
  ],
  'cert-expiry-ext-notification-config': ['data.name', 'data.message', 'data.notificationDate'],
  'certmgr-agent-health-notification-config': [
    'data.clusterName',
    'data.statusReason',
    'data.agentVersion',
    'data.lastSeenAt',
    'data.clusterId',
  ],
};
const LIST_FIELDS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': [],
  'certmgr-cert-resource-health-notification-config': ["data.SANs['DNS Names']", 'data.subject.organizations', 'data.subject.countries'],
  'cert-expiry-ext-notification-config': ['data.applicationIds'],
  'certmgr-agent-health-notification-config': [],
};
const NUMBER_FIELDS: Record<Family, string[]> = {
  'certmgr-issuer-health-notification-config': [],
  'certmgr-cert-resource-health-notification-config': [],
  'cert-expiry-ext-notification-config': ['data.ruleId', 'data.threshold'],
  'certmgr-agent-health-notification-config': [],
};

const strLit = fc
  .oneof(
    fc.constantFrom('', 'a', '.notready', '.active', 'prod', 'example.com', "o\\'brien", '\\u202e', 'n1-'),
    fc.stringMatching(/^[a-z.-]{0,6}$/),
  )
  .map((s) => `'${s}'`);
const intLit = fc.oneof(
  fc.constantFrom('0', '1', '-1', '3', '1000', '9223372036854775807', '-9223372036854775808'),
  fc.integer({ min: -50, max: 50 }).map(String),
);
const regexLit = fc.constantFrom("'^n1'", "'(a|b)*c'", "'.*\\\\.example\\\\.com$'", "'(x+x+)+y'", "'[a-z]{1,64}'");
const VARS = ['x', 'y', 'z'];

interface Ctx {
  family: Family;
  /** Comprehension depth so far; the service allows 2, the generator goes to 3 (must be rejected). */
  depth: number;
  /** String-typed comprehension variables in scope. */
  vars: string[];
}

type Gen = (c: Ctx, size: number) => fc.Arbitrary<string>;

const pick = <T>(xs: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);
/** `more` is a thunk: the grammar is recursive, so sub-arbitraries are built only while size remains. */
const orLeaf = (leaf: fc.Arbitrary<string>, size: number, more: () => fc.Arbitrary<string>[]) =>
  size <= 0 ? leaf : fc.oneof({ weight: 2, arbitrary: leaf }, ...more());

const str: Gen = (c, n) => {
  const leaves = [
    strLit,
    fc.constant('type'),
    ...(STRING_FIELDS[c.family].length ? [pick(STRING_FIELDS[c.family])] : []),
    ...(c.vars.length ? [pick(c.vars)] : []),
  ];
  return orLeaf(fc.oneof(...leaves), n, () => [
    fc.tuple(str(c, n - 1), str(c, n - 1)).map(([a, b]) => `${a} + ${b}`),
    int(c, n - 1).map((i) => `string(${i})`),
    fc.tuple(bool(c, n - 1), str(c, n - 1), str(c, n - 1)).map(([p, a, b]) => `(${p} ? ${a} : ${b})`),
    ...(LIST_FIELDS[c.family].length ? [fc.tuple(pick(LIST_FIELDS[c.family]), int(c, 0)).map(([l, i]) => `${l}[${i}]`)] : []),
  ]);
};

const int: Gen = (c, n) =>
  orLeaf(intLit, n, () => [
    str(c, n - 1).map((s) => `size(${s})`),
    list(c, n - 1).map((l) => `${l}.size()`),
    fc.tuple(int(c, n - 1), pick(['+', '-', '*', '/', '%']), int(c, n - 1)).map(([a, o, b]) => `(${a} ${o} ${b})`),
    str(c, n - 1).map((s) => `int(${s})`),
    ...(NUMBER_FIELDS[c.family].length ? [pick(NUMBER_FIELDS[c.family]).map((f) => `int(${f})`)] : []),
  ]);

const list: Gen = (c, n) => {
  const fields = LIST_FIELDS[c.family];
  const leaf = fields.length
    ? fc.oneof(
        pick(fields),
        fc.array(strLit, { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
      )
    : fc.array(strLit, { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`);
  return orLeaf(leaf, n, () => [
    fc.tuple(list(c, n - 1), list(c, n - 1)).map(([a, b]) => `(${a} + ${b})`),
    comprehension(c, n, 'map'),
    comprehension(c, n, 'filter'),
  ]);
};

/** `l.macro(v, body)`: the body sees v as a string (lists here are lists of strings; map's result is too). */
function comprehension(c: Ctx, n: number, macro: 'all' | 'exists' | 'exists_one' | 'filter' | 'map'): fc.Arbitrary<string> {
  if (c.depth >= 3) return list({ ...c, depth: 3 }, 0);
  const v = VARS[c.depth]!;
  const inner: Ctx = { ...c, depth: c.depth + 1, vars: [...c.vars, v] };
  const body = macro === 'map' ? str(inner, n - 1) : bool(inner, n - 1);
  return fc.tuple(list(c, n - 1), body).map(([l, b]) => `${l}.${macro}(${v}, ${b})`);
}

const bool: Gen = (c, n) =>
  orLeaf(
    fc.oneof(
      fc.constantFrom('true', 'false'),
      fc.tuple(str(c, 0), pick(['==', '!=', '<', '>=']), str(c, 0)).map(([a, o, b]) => `${a} ${o} ${b}`),
      fc.tuple(str(c, 0), pick(['startsWith', 'endsWith', 'contains']), str(c, 0)).map(([a, f, b]) => `${a}.${f}(${b})`),
    ),
    n,
    () => [
      fc.tuple(bool(c, n - 1), pick(['&&', '||']), bool(c, n - 1)).map(([a, o, b]) => `(${a} ${o} ${b})`),
      bool(c, n - 1).map((b) => `!(${b})`),
      fc.tuple(int(c, n - 1), pick(['==', '<', '>', '<=']), int(c, n - 1)).map(([a, o, b]) => `${a} ${o} ${b}`),
      fc.tuple(str(c, n - 1), regexLit).map(([s, r]) => `${s}.matches(${r})`),
      fc.tuple(str(c, n - 1), list(c, n - 1)).map(([s, l]) => `${s} in ${l}`),
      comprehension(c, n, 'exists'),
      comprehension(c, n, 'all'),
      comprehension(c, n, 'exists_one'),
      list(c, n - 1).map((l) => `size(${l}) > 0`),
      fc.constantFrom('has(data.SANs)', 'has(data.resourceId)', 'has(data.ruleId)', 'type(data) == map'),
    ],
  );

/** A filter for `family`: grammar-generated, or a known-heavy shape. */
export const celFilter = (family: Family): fc.Arbitrary<string> =>
  fc.oneof({ weight: 6, arbitrary: bool({ family, depth: 0, vars: [] }, 3) }, { weight: 1, arbitrary: heavyFilter(family) });

/** The worst shapes: quadratic comprehensions, long-string scans inside a comprehension. */
export const heavyFilter = (family: Family): fc.Arbitrary<string> => {
  const heavy =
    family === 'certmgr-cert-resource-health-notification-config'
      ? [
          // quadratic map over the event's names
          "data.SANs['DNS Names'].map(x, data.SANs['DNS Names'].map(y, x + y)).size() > 0",
          // two-level exists
          "data.SANs['DNS Names'].exists(x, data.SANs['DNS Names'].exists(y, x + y == 'never'))",
          "data.SANs['DNS Names'].exists(x, size(data.statusMessage) == 0)",
          "data.SANs['DNS Names'].all(x, data.statusMessage.contains(x))",
        ]
      : family === 'cert-expiry-ext-notification-config'
        ? ['data.applicationIds.exists(x, data.applicationIds.exists(y, x + y == data.message))']
        : ["data.statusMessage.matches('(x+x+)+y')"];
  return fc.constantFrom(...heavy);
};

/** No `type`, no `data`: its value is fixed at compile time, so it must either compile to a value or be rejected. */
export const literalOnlyFilter: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '1 / 0 == 0',
    "int('x') == 0",
    'uint(-1) == 0u',
    '[1][1] == 1',
    '[[1]][0][1] == 1',
    "'a' == 'a'",
    '1 + 1 == 2',
    '9223372036854775807 + 1 > 0',
    "timestamp('2025-01-01T00:00:00Z') < timestamp('2026-01-01T00:00:00Z')",
  ),
  bool({ family: 'certmgr-issuer-health-notification-config', depth: 0, vars: [] }, 2).filter((e) => !/\b(type|data)\b/.test(e)),
);
