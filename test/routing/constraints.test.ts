/**
 * Unit tests of the constraint extraction that feeds the routing prefilter index (src/cel/constraints.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileFilter, filterConstraints, type CompiledFilter, type FilterConstraints } from '../../src/cel/index.js';
import type { EventTypeId } from '../../src/events/families.js';
import { regexLiteralPrefix } from '../../src/cel/constraints.js';

const ISSUER: EventTypeId = 'certmgr-issuer-health-notification-config';
const CERT: EventTypeId = 'certmgr-cert-resource-health-notification-config';
const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';

const I_NR = 'evt.healthstatus.certmgr-issuer.notready';
const I_A = 'evt.healthstatus.certmgr-issuer.active';
const C_NR = 'evt.healthstatus.certmgr-certificate-resource.notready';
const C_A = 'evt.healthstatus.certmgr-certificate-resource.active';

/** A readable form: `types` sorted (or null), data constraints as `kind path [values]`. */
function summary(c: FilterConstraints): { types: string[] | null; data: string[] } {
  return {
    types: c.types ? [...c.types].sort() : null,
    data: c.data.map((d) => `${d.kind}:${d.valueType} ${d.path.join('/')} ${JSON.stringify([...d.values].sort())}`).sort(),
  };
}

const of = (expr: string, id: EventTypeId) => summary(filterConstraints(compileFilter(expr, id)));

describe('filterConstraints: spec patterns', () => {
  it.each<[string, string, EventTypeId, ReturnType<typeof summary>]>([
    ['only unhealthy', "type.endsWith('.notready')", ISSUER, { types: [I_NR], data: [] }],
    ['only restored', "type.endsWith('.active')", CERT, { types: [C_A], data: [] }],
    [
      'unhealthy issuers in given clusters',
      "type.endsWith('.notready') && (data.clusterId == 'id1' || data.clusterId == 'id2')",
      ISSUER,
      { types: [I_NR], data: ['equals:string clusterId ["id1","id2"]'] },
    ],
    [
      'unhealthy issuers in a namespace',
      "type.endsWith('.notready') && (data.namespace == 'ns')",
      ISSUER,
      { types: [I_NR], data: ['equals:string namespace ["ns"]'] },
    ],
    [
      'restored, one issuer',
      "type.endsWith('.active') && data.issuerName == 'letsencrypt'",
      ISSUER,
      { types: [I_A], data: ['equals:string issuerName ["letsencrypt"]'] },
    ],
    [
      'unhealthy certificates in a cluster',
      "type.endsWith('.notready') && data.clusterName == 'prod'",
      CERT,
      { types: [C_NR], data: ['equals:string clusterName ["prod"]'] },
    ],
    [
      'restored certificates in a cluster',
      "type.endsWith('.active') && data.clusterName == 'prod'",
      CERT,
      { types: [C_A], data: ['equals:string clusterName ["prod"]'] },
    ],
    [
      'expiration, one application',
      "'payments-app' in data.applicationIds",
      EXPIRY,
      { types: null, data: ['contains:string applicationIds ["payments-app"]'] },
    ],
    ['expiration, one rule', 'data.ruleId == 3', EXPIRY, { types: null, data: ['equals:number ruleId [3]'] }],
  ])('%s', (_n, expr, id, expected) => {
    expect(of(expr, id)).toEqual(expected);
  });
});

describe('filterConstraints: forms', () => {
  it.each<[string, string, EventTypeId, ReturnType<typeof summary>]>([
    ['literal on the left', "'prod' == data.clusterName", ISSUER, { types: null, data: ['equals:string clusterName ["prod"]'] }],
    ['index syntax', "data['clusterName'] == 'prod'", ISSUER, { types: null, data: ['equals:string clusterName ["prod"]'] }],
    [
      'nested path',
      "data.subject.commonName == 'a.example.com'",
      CERT,
      { types: null, data: ['equals:string subject/commonName ["a.example.com"]'] },
    ],
    [
      "key that isn't an identifier",
      "'x.example.com' in data.SANs['DNS Names']",
      CERT,
      { types: null, data: ['contains:string SANs/DNS Names ["x.example.com"]'] },
    ],
    ['in a literal list', "data.namespace in ['a', 'b']", ISSUER, { types: null, data: ['equals:string namespace ["a","b"]'] }],
    ['number list', 'data.ruleId in [1, 2]', EXPIRY, { types: null, data: ['equals:number ruleId [1,2]'] }],
    ['double literal', 'data.ruleId == 2.0', EXPIRY, { types: null, data: ['equals:number ruleId [2]'] }],
    ['uint literal', 'data.ruleId == 2u', EXPIRY, { types: null, data: ['equals:number ruleId [2]'] }],
    [
      'number in a list field',
      "'a' in data.applicationIds && data.ruleId == 2",
      EXPIRY,
      {
        types: null,
        data: ['contains:string applicationIds ["a"]', 'equals:number ruleId [2]'],
      },
    ],
    [
      'nested disjunction',
      "(data.clusterId == 'a' || (data.clusterId == 'b' || data.clusterId == 'c'))",
      ISSUER,
      {
        types: null,
        data: ['equals:string clusterId ["a","b","c"]'],
      },
    ],
    [
      'disjunction mixing `in` and ==',
      "data.clusterId == 'a' || data.clusterId in ['b', 'c']",
      ISSUER,
      {
        types: null,
        data: ['equals:string clusterId ["a","b","c"]'],
      },
    ],
    [
      'conjunction of equalities intersects',
      "data.namespace in ['a', 'b'] && data.namespace == 'b'",
      ISSUER,
      {
        types: null,
        data: ['equals:string namespace ["b"]'],
      },
    ],
    [
      'contradiction: empty set',
      "data.namespace == 'a' && data.namespace == 'b'",
      ISSUER,
      { types: null, data: ['equals:string namespace []'] },
    ],
    [
      'two memberships keep one (both must hold, not one of their intersection)',
      "'a' in data.applicationIds && 'b' in data.applicationIds",
      EXPIRY,
      {
        types: null,
        data: ['contains:string applicationIds ["a"]'],
      },
    ],
    [
      'deep conjunction',
      "type.endsWith('.notready') && data.namespace == 'ns' && data.clusterName == 'c' && data.statusReason.contains('x')",
      ISSUER,
      {
        types: [I_NR],
        data: ['equals:string clusterName ["c"]', 'equals:string namespace ["ns"]', 'substring:string statusReason ["x"]'],
      },
    ],
    ['type ==', `type == '${I_A}'`, ISSUER, { types: [I_A], data: [] }],
    ['type != ', `type != '${I_A}'`, ISSUER, { types: [I_NR], data: [] }],
    ['type in', `type in ['${C_A}', 'nonsense']`, CERT, { types: [C_A], data: [] }],
    ['type of another family', `type == '${C_A}'`, ISSUER, { types: [], data: [] }],
    ['type startsWith', "type.startsWith('evt.healthstatus')", ISSUER, { types: [I_A, I_NR], data: [] }],
    ['type contains', "type.contains('ready')", CERT, { types: [C_NR], data: [] }],
    ['negated type', "!type.endsWith('.notready')", CERT, { types: [C_A], data: [] }],
    ['type disjunction', "type.endsWith('.notready') || type.endsWith('.active')", CERT, { types: [C_A, C_NR], data: [] }],
    ['false', 'false', ISSUER, { types: [], data: [] }],
    ['true', 'true', ISSUER, { types: [I_A, I_NR], data: [] }],
    [
      'disjunction of guarded branches',
      "(type.endsWith('.active') && data.clusterName == 'a') || (type.endsWith('.notready') && data.clusterName == 'b')",
      CERT,
      {
        types: [C_A, C_NR],
        data: ['equals:string clusterName ["a","b"]'],
      },
    ],
  ])('%s', (_n, expr, id, expected) => {
    expect(of(expr, id)).toEqual(expected);
  });
});

describe('filterConstraints: substring, prefix and suffix predicates', () => {
  it.each<[string, string, EventTypeId, ReturnType<typeof summary>]>([
    ['contains', "data.statusMessage.contains('ACME')", ISSUER, { types: null, data: ['substring:string statusMessage ["ACME"]'] }],
    ['startsWith', "data.clusterName.startsWith('prod')", CERT, { types: null, data: ['prefix:string clusterName ["prod"]'] }],
    [
      'endsWith',
      "data.subject.commonName.endsWith('.example.com')",
      CERT,
      {
        types: null,
        data: ['suffix:string subject/commonName [".example.com"]'],
      },
    ],
    ['index syntax', "data['message'].contains('x')", EXPIRY, { types: null, data: ['substring:string message ["x"]'] }],
    [
      'empty literal (true for every string, still a string test)',
      "data.message.contains('')",
      EXPIRY,
      {
        types: null,
        data: ['substring:string message [""]'],
      },
    ],
    ['unicode literal', "data.message.endsWith('für 😀')", EXPIRY, { types: null, data: ['suffix:string message ["für 😀"]'] }],
    [
      'regex literal prefix',
      "data.statusReason.matches('^ErrUpdate.*Account$')",
      ISSUER,
      {
        types: null,
        data: ['prefix:string statusReason ["ErrUpdat"]'],
      },
    ],
    [
      'regex: escaped punctuation, quantified last character dropped',
      "data.clusterName.matches('^prod\\.eu-1+')",
      ISSUER,
      {
        types: null,
        data: ['prefix:string clusterName ["prod.eu-"]'],
      },
    ],
    [
      'regex: alternation inside a group',
      "data.clusterName.matches('^prod-(eu|us)')",
      ISSUER,
      {
        types: null,
        data: ['prefix:string clusterName ["prod"]'],
      },
    ],
    [
      'conjunct of a larger &&',
      "type.endsWith('.notready') && data.statusMessage.contains('w7x') && size(data.namespace) > 2",
      ISSUER,
      {
        types: [I_NR],
        data: ['substring:string statusMessage ["w7x"]'],
      },
    ],
    [
      'equality beside it: both kept (the index prefers the equality)',
      "data.namespace == 'ns' && data.statusMessage.contains('x')",
      ISSUER,
      {
        types: null,
        data: ['equals:string namespace ["ns"]', 'substring:string statusMessage ["x"]'],
      },
    ],
    [
      'disjunction: one of the literals',
      "data.statusMessage.contains('a') || data.statusMessage.contains('bc')",
      ISSUER,
      {
        types: null,
        data: ['substring:string statusMessage ["a","bc"]'],
      },
    ],
    [
      'guarded disjunction',
      "(type.endsWith('.active') && data.message.startsWith('a')) || data.message.startsWith('b')",
      EXPIRY,
      {
        types: null,
        data: ['prefix:string message ["a","b"]'],
      },
    ],
    [
      'two on one path: the longer literal',
      "data.statusMessage.contains('a') && data.statusMessage.contains('bcd')",
      ISSUER,
      {
        types: null,
        data: ['substring:string statusMessage ["bcd"]'],
      },
    ],
    [
      'two on one path: one literal before two',
      "(data.statusMessage.contains('a') || data.statusMessage.contains('b')) && data.statusMessage.contains('c')",
      ISSUER,
      {
        types: null,
        data: ['substring:string statusMessage ["c"]'],
      },
    ],
    [
      'disjunction of different string predicates: contains one of the literals',
      "data.statusMessage.contains('x') || data.statusMessage.startsWith('yz')",
      ISSUER,
      {
        types: null,
        data: ['substring:string statusMessage ["x","yz"]'],
      },
    ],
    [
      'disjunction with an equality',
      "data.namespace == 'a' || data.namespace.endsWith('b')",
      ISSUER,
      {
        types: null,
        data: ['substring:string namespace ["a","b"]'],
      },
    ],
    [
      'disjunction: same kinds unite as they are',
      "(data.namespace.startsWith('a') && data.namespace.endsWith('c')) || data.namespace.startsWith('b')",
      ISSUER,
      {
        types: null,
        data: ['prefix:string namespace ["a","b"]'],
      },
    ],
    [
      'disjunction: the most selective of each side',
      "(data.namespace.startsWith('a') && data.namespace.endsWith('cd')) || data.namespace.contains('b')",
      ISSUER,
      {
        types: null,
        data: ['substring:string namespace ["b","cd"]'],
      },
    ],
    [
      'prefix and suffix on one path: both',
      "data.message.startsWith('a') && data.message.endsWith('b')",
      EXPIRY,
      {
        types: null,
        data: ['prefix:string message ["a"]', 'suffix:string message ["b"]'],
      },
    ],
  ])('%s', (_n, expr, id, expected) => {
    expect(of(expr, id)).toEqual(expected);
  });
});

describe('regexLiteralPrefix', () => {
  it.each<[string, string | undefined]>([
    ['^abc', 'abc'],
    ['^abc$', 'abc'],
    ['^ab c:d/e_f-g', 'ab c:d/e_f-g'],
    ['^abc*', 'ab'],
    ['^abc+', 'ab'],
    ['^abc?', 'ab'],
    ['^abc{2}', 'ab'],
    ['^a\\.b', 'a.b'],
    ['^a\\.+', 'a'],
    ['^a\\d', undefined],
    ['^ab\\d', 'a'],
    ['^a\\Qb', undefined],
    ['^ab\\Q\\E*', 'a'],
    ['^ab[c|d]', 'a'],
    ['^ab(c|d)e', 'a'],
    ['^ab[[:alpha:]|]', 'a'],
    ['^ab[]|]', 'a'],
    ['^abé', 'a'],
    ['^ab|c', undefined],
    ['^ab(c)|d', undefined],
    ['^ab\\|c', 'ab|c'],
    ['^ab)|(c', undefined],
    ['^ab(c', undefined],
    ['^ab[c', undefined],
    ['abc', undefined],
    ['^', undefined],
    ['^*', undefined],
    ['^.abc', undefined],
    ['^(?i)abc', undefined],
    ['^ab(?i)?', 'a'],
    ['^ab(?i:c)', 'a'],
    ['\\Aabc', undefined],
  ])('%j → %j', (pattern, want) => {
    expect(regexLiteralPrefix(pattern)).toBe(want);
  });
});

describe('regexLiteralPrefix against the RE2 engine CEL runs', () => {
  it('every string a generated pattern matches starts with its literal prefix', () => {
    const token = fc.constantFrom(
      'a',
      'b',
      'ab',
      '.',
      '*',
      '+',
      '?',
      '{2}',
      '|',
      '(',
      ')',
      '[ab]',
      '[]a]',
      '\\.',
      '\\d',
      '(?i)',
      '$',
      '^',
      '\\Q\\E',
      '()',
      '\\b',
      '(?i:a)',
    );
    const subject = fc.array(fc.constantFrom('a', 'b', 'A', '.', '|', ']', '1'), { maxLength: 8 }).map((xs) => xs.join(''));
    let checked = 0;
    fc.assert(
      fc.property(fc.array(token, { maxLength: 6 }), fc.array(subject, { minLength: 1, maxLength: 8 }), (tokens, subjects) => {
        const pattern = '^' + tokens.join('');
        const prefix = regexLiteralPrefix(pattern);
        if (prefix === undefined) return;
        let f: CompiledFilter;
        try {
          f = compileFilter(`data.message.matches(${JSON.stringify(pattern)})`, EXPIRY);
        } catch {
          return; // not a valid RE2 pattern: rejected when the router is saved
        }
        for (const message of [...subjects, ...subjects.map((x) => prefix + x)]) {
          const r = f.evaluate({ type: 'evt.policy.expiringcertificates.failed', data: { message } });
          if (r.matched) {
            checked++;
            expect(message.startsWith(prefix), `${pattern} matched ${message}`).toBe(true);
          }
        }
      }),
      { numRuns: 1500 },
    );
    expect(checked).toBeGreaterThan(100);
  });
});

describe('filterConstraints: conservative (no constraint)', () => {
  it.each<[string, EventTypeId]>([
    ['', ISSUER],
    ['   ', EXPIRY],
    ["data.namespace != 'x'", ISSUER],
    ["!(data.namespace == 'x')", ISSUER],
    ["data.clusterId == 'a' || data.namespace == 'b'", ISSUER],
    ["data.clusterId == 'a' || type.endsWith('.active')", ISSUER],
    ["!data.clusterName.startsWith('prod')", CERT],
    ["data.statusMessage.contains('x') || data.namespace == 'a'", ISSUER],
    ['data.statusMessage.contains(data.namespace)', ISSUER],
    ["data.statusMessage.contains('x') == false", ISSUER],
    ["data.statusMessage.matches('abc')", ISSUER], // not anchored
    ["data.statusMessage.matches('^a*bc')", ISSUER], // the first character may be absent
    ["data.statusMessage.matches('^abc|^x')", ISSUER], // top-level alternation
    ["data.statusMessage.matches('^(?i)abc')", ISSUER], // flags
    ["data.statusMessage.matches('^.bc')", ISSUER],
    ["data.statusMessage.matches('^')", ISSUER],
    ["data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))", CERT],
    ["['a'].exists(data, data.contains('x'))", ISSUER],
    ['data.namespace == data.clusterName', CERT],
    ["data.SANs['DNS Names'].exists(n, n == 'a.example.com')", CERT],
    ["data.applicationIds.exists(a, a == 'x')", EXPIRY],
    ['has(data.resourceId)', CERT],
    ["data.namespace == 'a' ? true : false", CERT],
    ["'a' in data.subject", CERT], // map key membership, not a list
    ['data.ruleId > 2', EXPIRY],
    ['data.ruleId == 9007199254740993', EXPIRY],
    ["data.namespace in ['a', 1]", ISSUER],
    ['data.namespace in []', ISSUER],
    ["type.matches('notready$')", ISSUER],
    ['type.endsWith(data.namespace)', ISSUER],
    ['[1].exists(data, data == 1) && true', ISSUER],
    ["data.namespace == 'a' || data.clusterName.contains('b')", ISSUER],
    ["data.namespace.startsWith('a') || data.clusterName.endsWith('b')", ISSUER],
    ["data.message.startsWith('a') || 'a' in data.applicationIds", EXPIRY],
  ])('%j', (expr, id) => {
    const s = of(expr, id);
    expect(s.data).toEqual([]);
    if (!['true', '[1].exists(data, data == 1) && true'].includes(expr)) expect(s.types).toBeNull();
  });

  it('a comprehension variable named like a global is not read as the global', () => {
    // Top-level conjuncts only: `data` inside the macro is the loop variable, and the macro contributes nothing.
    expect(of("data.applicationIds.exists(data, data == 'x')", EXPIRY)).toEqual({ types: null, data: [] });
  });

  it('filters not made by compileFilter have no constraints', () => {
    const fake: CompiledFilter = {
      expression: "data.namespace == 'x'",
      eventTypeId: ISSUER,
      matchesAll: false,
      estimatedCost: 0,
      evaluate: () => ({ matched: false }),
    };
    expect(filterConstraints(fake)).toEqual({ types: undefined, data: [] });
  });

  it('is computed once per compiled filter', () => {
    const f = compileFilter("data.namespace == 'x'", ISSUER);
    expect(filterConstraints(f)).toBe(filterConstraints(f));
  });
});
