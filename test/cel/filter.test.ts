import { describe, expect, it } from 'vitest';
import type { EventTypeId, InternalEvent } from '../../src/events/families.js';
import { FILTER_LIMITS, FilterCompileError, compileFilter, compileFilterSteps, validateFilter } from '../../src/cel/index.js';
import {
  CLUSTER_DEV,
  CLUSTER_PROD,
  CLUSTER_STAGING,
  certificateResourceActive,
  certificateResourceNotReady,
  expiringCertificate,
  issuerActive,
  issuerNotReady,
} from '../fixtures/events.js';

const ISSUER: EventTypeId = 'certmgr-issuer-health-notification-config';
const CERT: EventTypeId = 'certmgr-cert-resource-health-notification-config';
const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';

/** A corpus across all five concrete types, with variations the spec patterns distinguish. */
const CORPUS: Record<string, InternalEvent> = {
  'issuer.notready.prod': issuerNotReady(),
  'issuer.notready.staging': issuerNotReady({
    clusterId: CLUSTER_STAGING.id,
    clusterName: CLUSTER_STAGING.name,
    namespace: 'istio-system',
    issuerName: 'letsencrypt-staging',
  }),
  'issuer.notready.dev': issuerNotReady({ clusterId: CLUSTER_DEV.id, clusterName: CLUSTER_DEV.name, issuerName: 'selfsigned' }),
  'issuer.active.prod': issuerActive(),
  'issuer.active.staging': issuerActive({
    clusterId: CLUSTER_STAGING.id,
    clusterName: CLUSTER_STAGING.name,
    namespace: 'istio-system',
    issuerName: 'letsencrypt-staging',
  }),
  'cert.notready.staging': certificateResourceNotReady(),
  'cert.notready.prod': certificateResourceNotReady({ clusterId: CLUSTER_PROD.id, clusterName: CLUSTER_PROD.name }),
  'cert.active.staging': certificateResourceActive(),
  'cert.active.prod': certificateResourceActive({ clusterId: CLUSTER_PROD.id, clusterName: CLUSTER_PROD.name }),
  'expiry.payments': expiringCertificate(),
  'expiry.unassigned': expiringCertificate({ applicationIds: [], ruleId: 1, threshold: 30 }),
  'expiry.inventory': expiringCertificate({ applicationIds: ['inventory-app'], ruleId: 3, threshold: 7 }),
};
const names = (prefix: string) => Object.keys(CORPUS).filter((n) => n.startsWith(prefix));

function matchedNames(expression: string, id: EventTypeId): string[] {
  const filter = compileFilter(expression, id);
  return Object.entries(CORPUS)
    .filter(([, e]) => filter.evaluate(e).matched)
    .map(([n]) => n);
}

function compileError(expression: string, id: EventTypeId): FilterCompileError {
  try {
    compileFilter(expression, id);
  } catch (e) {
    if (e instanceof FilterCompileError) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(expression)} to be rejected`);
}

describe('spec patterns route exactly the events they should, across all five event types', () => {
  it.each<[string, EventTypeId, string, string[]]>([
    ['all events of the issuer family', ISSUER, '', names('issuer.')],
    ['all events of the certificate resource family', CERT, '', names('cert.')],
    ['only unhealthy (issuer)', ISSUER, "type.endsWith('.notready')", names('issuer.notready.')],
    ['only unhealthy (certificate resource)', CERT, "type.endsWith('.notready')", names('cert.notready.')],
    ['only restored (issuer)', ISSUER, "type.endsWith('.active')", names('issuer.active.')],
    ['only restored (certificate resource)', CERT, "type.endsWith('.active')", names('cert.active.')],
    [
      'unhealthy in given clusters (issuer)',
      ISSUER,
      `type.endsWith('.notready') && (data.clusterId == '${CLUSTER_PROD.id}' || data.clusterId == '${CLUSTER_STAGING.id}')`,
      ['issuer.notready.prod', 'issuer.notready.staging'],
    ],
    [
      'unhealthy in a namespace (issuer)',
      ISSUER,
      "type.endsWith('.notready') && (data.namespace == 'cert-manager')",
      ['issuer.notready.prod', 'issuer.notready.dev'],
    ],
    ['restored for one issuer', ISSUER, "type.endsWith('.active') && data.issuerName == 'letsencrypt-prod'", ['issuer.active.prod']],
    [
      'unhealthy certificate resources in a cluster',
      CERT,
      `type.endsWith('.notready') && data.clusterName == '${CLUSTER_STAGING.name}'`,
      ['cert.notready.staging'],
    ],
    [
      'restored certificate resources in a cluster',
      CERT,
      `type.endsWith('.active') && data.clusterName == '${CLUSTER_PROD.name}'`,
      ['cert.active.prod'],
    ],
    ['all expiration notifications', EXPIRY, '', names('expiry.')],
    ['expiration for one application', EXPIRY, "'payments-app' in data.applicationIds", ['expiry.payments']],
    ['expiration for one rule', EXPIRY, 'data.ruleId == 3', ['expiry.inventory']],
  ])('%s', (_purpose, id, expression, expected) => {
    expect(validateFilter(expression, id)).toEqual({ ok: true });
    expect(matchedNames(expression, id)).toEqual(expected);
  });

  it('in-family events evaluate without errors; events of other families never match', () => {
    const filter = compileFilter("type.endsWith('.notready') && data.namespace == 'cert-manager'", ISSUER);
    for (const [name, e] of Object.entries(CORPUS)) {
      const r = filter.evaluate(e);
      if (name.startsWith('issuer.')) expect(r.error).toBeUndefined();
      else expect(r).toEqual({ matched: false, error: expect.stringContaining(`is not in ${ISSUER}`) });
    }
  });
});

describe('the empty filter', () => {
  it.each(['', '   ', '\t\n '])('%j matches every event of the family and nothing else', (expression) => {
    const filter = compileFilter(expression, CERT);
    expect(filter.matchesAll).toBe(true);
    expect(matchedNames(expression, CERT)).toEqual(names('cert.'));
    expect(filter.evaluate(CORPUS['expiry.payments']!).matched).toBe(false);
  });
});

describe('rejected expressions carry code INVALID_FILTER_EXPRESSION and a position', () => {
  it.each<[string, string, EventTypeId, number, number, RegExp]>([
    // syntax
    ['syntax: unclosed call', 'type.endsWith(', ISSUER, 1, 15, /syntax error.*expected '\)' to close '\(' at 1:14/],
    ['syntax: dangling &&', "type.endsWith('.notready') &&", ISSUER, 1, 30, /syntax error: unexpected end of expression/],
    [
      'syntax: unclosed paren',
      "type.endsWith('.notready') && (data.namespace == 'x'",
      ISSUER,
      1,
      53,
      /expected '\)' to close '\(' at 1:31/,
    ],
    ['syntax: unmatched paren', "type == 'a')", ISSUER, 1, 12, /unmatched '\)'/],
    ['syntax: single =', "data.namespace = 'x'", ISSUER, 1, 16, /use '==' to compare/],
    ['syntax: unterminated string', "data.namespace == 'x", ISSUER, 1, 19, /unterminated string/],
    ['syntax: two operators', 'data.ruleId == * 3', EXPIRY, 1, 16, /unexpected '\*'/],
    ['syntax: second line', "type.endsWith('.active')\n  && data.issuerName ==", ISSUER, 2, 24, /unexpected end of expression/],
    ['syntax: two literals in a row', "data.namespace == 'x' 'y'", ISSUER, 1, 23, /unexpected ''y''/],
    ['syntax: member name missing', "data. == 'x'", ISSUER, 1, 7, /expected a field or method name/],
    ['syntax: unclosed list', 'data.ruleId in [1, 2', EXPIRY, 1, 21, /expected '\]' to close '\[' at 1:16/],
    // identifiers
    ['unknown identifier', "cluster == 'prod'", ISSUER, 1, 1, /unknown identifier 'cluster'/],
    ['comprehension variable out of scope', "data.applicationIds.exists(a, a == 'x') && a == 'y'", EXPIRY, 1, 44, /unknown identifier 'a'/],
    ['unknown identifier inside a comprehension', 'data.applicationIds.exists(a, a == b)', EXPIRY, 1, 36, /unknown identifier 'b'/],
    // data paths
    [
      'unknown data field',
      "type == 'x' && data.nope",
      ISSUER,
      1,
      21,
      /event data of certmgr-issuer-health-notification-config has no field 'nope'/,
    ],
    ['field of another family', 'data.ruleId == 3', ISSUER, 1, 6, /has no field 'ruleId'/],
    ['expiry has no issuerName', "data.issuerName == 'x'", EXPIRY, 1, 6, /cert-expiry-ext-notification-config has no field 'issuerName'/],
    ['unknown subject field', "data.subject.emailAddress == 'x'", CERT, 1, 14, /has no field 'subject.emailAddress'/],
    ['unknown SANs key', "data.SANs['IP Addresses'].size() > 0", CERT, 1, 11, /has no field 'SANs\['IP Addresses'\]'/],
    ['SANs key by select', 'data.SANs.DNS.size() > 0', CERT, 1, 11, /has no field 'SANs.DNS'/],
    ['dynamic key into an event object', 'data.SANs[type].size() > 0', CERT, 1, 11, /must be named by a string literal/],
    ['field of a string', "data.subject.commonName.value == 'x'", CERT, 1, 25, /cannot select field 'value' of a string/],
    ['field of a list element', "data.applicationIds.exists(a, a.id == 'x')", EXPIRY, 1, 33, /cannot select field 'id' of a string/],
    ['prototype property', 'data.constructor == null', ISSUER, 1, 6, /has no field 'constructor'/],
    ['prototype key', "data['__proto__'] == null", ISSUER, 1, 6, /has no field '__proto__'/],
    ['has() of an unknown field', 'has(data.resourceID)', CERT, 1, 10, /has no field 'resourceID'/],
    ['string index into a list', "data.applicationIds['x'] == 'y'", EXPIRY, 1, 21, /list index must be a number/],
    // functions and macros
    ['strings extension replace', "data.clusterName.replace('a', 'b') == 'x'", ISSUER, 1, 18, /function 'replace' is not allowed/],
    ['strings extension lowerAscii', "data.clusterName.lowerAscii() == 'x'", ISSUER, 1, 18, /function 'lowerAscii' is not allowed/],
    ['unknown global function', "now() > timestamp('2030-01-01T00:00:00Z')", ISSUER, 1, 1, /function 'now' is not allowed/],
    [
      'message construction',
      'google.protobuf.Duration{seconds: 1} == duration(data.unhealthyDuration)',
      ISSUER,
      1,
      1,
      /message construction/,
    ],
    ['method form of a global', 'data.clusterName.timestamp() == 1', ISSUER, 1, 18, /'timestamp' cannot be called as a method/],
    ['global form of a method', "startsWith(type, 'evt')", ISSUER, 1, 1, /must be called as a method/],
    ['wrong arity', "type.endsWith('a', 'b')", ISSUER, 1, 6, /'endsWith' takes 1 argument/],
    ['global matches (not in the standard library)', "matches(type, '^evt')", ISSUER, 1, 1, /'matches' must be called as a method/],
    ['string method on a number', "data.ruleId.startsWith('1')", EXPIRY, 1, 1, /receiver of 'startsWith' must be string, not double/],
    ['in on a string', "'prod' in data.clusterName", ISSUER, 1, 11, /operand of 'in' must be list or map or object/],
    ['int + double arithmetic', 'data.ruleId + 1 == 4', EXPIRY, 1, 13, /same numeric type, got double and int/],
    ['% on double', 'data.threshold % 7 == 0', EXPIRY, 1, 16, /same numeric type|not defined for double/],
    ['invalid regex literal', "data.clusterName.matches('(prod')", ISSUER, 1, 26, /invalid regular expression/],
    ['RE2-unsupported backreference', "data.clusterName.matches('(a)\\\\1')", ISSUER, 1, 26, /invalid regular expression/],
    ['invalid timestamp literal', "timestamp(data.statusTransition) > timestamp('2025-13-01')", ISSUER, 1, 46, /invalid timestamp/],
    ['invalid duration literal', "duration(data.unhealthyDuration) > duration('1 hour')", ISSUER, 1, 45, /invalid duration/],
    ['macro misuse', "data.applicationIds.exists('a', true)", EXPIRY, 1, 21, /invalid use of the 'exists' macro/],
    // results and operands that cannot be bool
    ['arithmetic result', '1 + 1', ISSUER, 1, 1, /must evaluate to a bool.*yields int/],
    ['string result', "'a'", ISSUER, 1, 1, /yields string/],
    ['string field result', 'data.clusterName', ISSUER, 1, 1, /yields string/],
    ['type variable result', 'type', ISSUER, 1, 1, /yields string/],
    ['list result', 'data.applicationIds', EXPIRY, 1, 1, /yields list of string/],
    ['map result', "{'a': true}", EXPIRY, 1, 1, /yields map/],
    ['null result', '  null', EXPIRY, 1, 3, /yields null/],
    ['size result', 'size(data.applicationIds)', EXPIRY, 1, 1, /yields int/],
    ['timestamp result', 'timestamp(data.notificationDate)', EXPIRY, 1, 1, /yields timestamp/],
    ['filter result', "data.applicationIds.filter(a, a == 'x')", EXPIRY, 1, 1, /yields list of string/],
    ['non-bool operand of &&', "type.endsWith('.active') && data.issuerName", ISSUER, 1, 29, /operand of '&&' must be bool, not string/],
    ['non-bool operand of !', '!data.clusterName', ISSUER, 1, 2, /operand of '!' must be bool, not string/],
    [
      'non-bool comprehension condition',
      'data.applicationIds.exists(a, a)',
      EXPIRY,
      1,
      31,
      /condition of 'exists' must be a bool, not string/,
    ],
    // limits
    ['comprehension nesting 3', 'data.applicationIds.exists(a, [1].all(x, [2].exists(y, true)))', EXPIRY, 1, 46, /nested at most 2 deep/],
  ])('%s', (_name, expression, id, line, column, reason) => {
    const err = compileError(expression, id);
    expect(err).toBeInstanceOf(FilterCompileError);
    expect(err.code).toBe('INVALID_FILTER_EXPRESSION');
    expect(err.message).toMatch(reason);
    expect([err.line, err.column]).toEqual([line, column]);
    expect(err.message.startsWith(`${line}:${column}: `)).toBe(true);
    expect(validateFilter(expression, id)).toEqual({ ok: false, message: err.message, line, column });
  });

  it('matches the message format the API shows', () => {
    expect(compileError("type == 'x' && data.nope", ISSUER).message).toBe(
      "1:21: event data of certmgr-issuer-health-notification-config has no field 'nope'",
    );
  });

  it(`rejects expressions longer than ${FILTER_LIMITS.maxLength} characters and accepts exactly the limit`, () => {
    const build = (length: number) => {
      const head = "data.clusterName == '";
      return `${head}${'a'.repeat(length - head.length - 1)}'`;
    };
    expect(build(FILTER_LIMITS.maxLength)).toHaveLength(FILTER_LIMITS.maxLength);
    expect(validateFilter(build(FILTER_LIMITS.maxLength), ISSUER)).toEqual({ ok: true });
    const err = compileError(build(FILTER_LIMITS.maxLength + 1), ISSUER);
    expect(err.reason).toMatch(/longer than 2000 characters/);
    expect([err.line, err.column]).toEqual([1, FILTER_LIMITS.maxLength + 1]);
  });

  it(`rejects more than ${FILTER_LIMITS.maxNodes} AST nodes`, () => {
    // Each `data.namespace == 'nN'` term is 4 nodes (ident, select, literal, ==) plus one || node.
    const chain = (terms: number) => Array.from({ length: terms }, (_, i) => `data.namespace == 'n${i}'`).join(' || ');
    expect(validateFilter(chain(60), ISSUER)).toEqual({ ok: true }); // 299 nodes
    const err = compileError(chain(61), ISSUER); // 304 nodes
    expect(err.reason).toMatch(/too complex: 304 nodes, at most 300/);
  });

  it('counts comprehension nesting through bodies only, not through ranges', () => {
    expect(validateFilter("data.subject.countries.map(a, a + '-x').exists(b, b == 'DE-x')", CERT)).toEqual({ ok: true });
    expect(validateFilter('data.subject.countries.exists(a, data.subject.localities.exists(b, a != b))', CERT)).toEqual({ ok: true });
  });

  it('rejects deeply nested parentheses without crashing', () => {
    const expression = `${'('.repeat(900)}true${')'.repeat(900)}`;
    const r = validateFilter(expression, ISSUER);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/nested too deeply/);
  });

  it('bounds bracket nesting at 200 whatever the stack size (the unit tier runs in worker threads)', () => {
    const nested = (n: number, open: string, close: string): string => `${open.repeat(n)}true${close.repeat(n)}`;
    expect(validateFilter(nested(200, '(', ')'), ISSUER)).toEqual({ ok: true });
    for (const [open, close] of [
      ['(', ')'],
      ['[', ']'],
      ['{1: ', '}'],
    ] as const) {
      const r = validateFilter(nested(201, open, close), ISSUER);
      expect(r.ok, open).toBe(false);
      if (!r.ok) expect(r.message).toMatch(/nested too deeply/);
    }
  });

  it('throws RangeError for an unknown event type identifier', () => {
    expect(() => compileFilter('true', 'nope' as EventTypeId)).toThrow(RangeError);
  });
});

describe('comments', () => {
  it.each(["type.endsWith('.notready') // only unhealthy", "// unhealthy only\ntype.endsWith('.notready')"])(
    '%j is accepted',
    (expression) => {
      expect(compileFilter(expression, ISSUER).evaluate(CORPUS['issuer.notready.prod']!)).toEqual({ matched: true });
    },
  );
});

describe('the type variable and type()', () => {
  const e = CORPUS['issuer.notready.prod']!;
  it.each<[string, boolean]>([
    ["type == 'evt.healthstatus.certmgr-issuer.notready'", true],
    ["type.startsWith('evt.healthstatus.certmgr-issuer')", true],
    ["type.contains('.active')", false],
    ["type.matches('^evt[.]healthstatus[.].*[.]notready$')", true],
    ['type(type) == string', true],
    ['type(data.clusterName) == string', true],
    ['type(data.clusterName) == int', false],
    ['[1, 2].exists(type, type == 2)', true],
  ])('%s → %s', (expression, expected) => {
    expect(compileFilter(expression, ISSUER).evaluate(e)).toEqual({ matched: expected });
  });
});

describe('JSON numbers are CEL doubles and compare with int literals', () => {
  const e = expiringCertificate({ ruleId: 3, threshold: 15 });
  it.each<[string, boolean]>([
    ['data.ruleId == 3', true],
    ['data.ruleId == 3.0', true],
    ['data.ruleId != 3', false],
    ['data.ruleId in [1, 3]', true],
    ['data.ruleId in [1, 2]', false],
    ['data.threshold > 10', true],
    ['data.threshold <= 14', false],
    ['int(data.ruleId) + 1 == 4', true],
    ['data.ruleId + 1.0 == 4.0', true],
    ['type(data.ruleId) == double', true],
  ])('%s → %s', (expression, expected) => {
    expect(compileFilter(expression, EXPIRY).evaluate(e)).toEqual({ matched: expected });
  });
});

describe("'app' in data.applicationIds", () => {
  const filter = compileFilter("'app' in data.applicationIds", EXPIRY);
  it.each<[string[], boolean]>([
    [['app'], true],
    [['other', 'app'], true],
    [['application', 'app-1'], false],
    [[], false],
  ])('%j → %s', (applicationIds, expected) => {
    expect(filter.evaluate(expiringCertificate({ applicationIds }))).toEqual({ matched: expected });
  });
});

describe("data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))", () => {
  const filter = compileFilter("data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))", CERT);
  it.each<[string, InternalEvent, boolean]>([
    ['a matching name (notready)', certificateResourceNotReady({ SANs: { 'DNS Names': ['www.example.com'] } }), true],
    [
      'a matching name among others (active)',
      certificateResourceActive({ SANs: { 'DNS Names': ['a.example.org', 'b.example.com'] } }),
      true,
    ],
    ['no matching name', certificateResourceActive({ SANs: { 'DNS Names': ['example.com.evil.org', 'example.org'] } }), false],
    ['an empty list', certificateResourceNotReady({ SANs: { 'DNS Names': [] } }), false],
  ])('%s', (_name, e, expected) => {
    expect(filter.evaluate(e)).toEqual({ matched: expected });
  });

  it('an empty SANs object gives no match and an error naming the missing key', () => {
    const r = filter.evaluate(certificateResourceNotReady({ SANs: {} }));
    expect(r).toEqual({ matched: false, error: "evaluation error at 1:11: event data has no 'DNS Names'" });
  });

  it("guarding with 'DNS Names' in data.SANs avoids the error", () => {
    const guarded = compileFilter("'DNS Names' in data.SANs && data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))", CERT);
    expect(guarded.evaluate(certificateResourceNotReady({ SANs: {} }))).toEqual({ matched: false });
    expect(guarded.evaluate(certificateResourceNotReady())).toEqual({ matched: true });
  });

  it('subject fields and has() work too', () => {
    const e = certificateResourceNotReady();
    expect(compileFilter("data.subject.commonName == 'shop.example.com' && 'DE' in data.subject.countries", CERT).evaluate(e)).toEqual({
      matched: true,
    });
    expect(compileFilter('size(data.subject.organizations) > 0', CERT).evaluate(e)).toEqual({ matched: true });
    expect(compileFilter('has(data.resourceId)', CERT).evaluate(e)).toEqual({ matched: false });
    expect(compileFilter('has(data.resourceId)', CERT).evaluate(certificateResourceActive())).toEqual({ matched: true });
  });
});

describe('timestamps and durations', () => {
  it.each<[string, EventTypeId, InternalEvent, boolean]>([
    ["duration(data.unhealthyDuration) > duration('1h')", ISSUER, issuerActive({ unhealthyDuration: '1h2m3.5s' }), true],
    ["duration(data.unhealthyDuration) > duration('1h')", ISSUER, issuerActive({ unhealthyDuration: '0h0m12.25s' }), false],
    ["timestamp(data.statusTransition) < timestamp('2030-01-01T00:00:00Z')", ISSUER, issuerNotReady(), true],
    ["timestamp(data.notificationDate) > timestamp('2025-03-18T06:59:00Z')", EXPIRY, expiringCertificate(), true],
    ['timestamp(data.statusTransition).getHours() >= 9', ISSUER, issuerNotReady(), true],
  ])('%s', (expression, id, e, expected) => {
    expect(compileFilter(expression, id).evaluate(e)).toEqual({ matched: expected });
  });
});

describe('matches() uses an RE2-style engine (no catastrophic backtracking)', () => {
  it('a ReDoS pattern against a hostile value finishes quickly', () => {
    const filter = compileFilter("data.clusterName.matches('^(a+)+$')", ISSUER);
    // a backtracking engine would need ~2^5000 steps here: the test's own timeout is the bound
    expect(filter.evaluate(issuerNotReady({ clusterName: `${'a'.repeat(5000)}!` }))).toEqual({ matched: false });
    expect(filter.evaluate(issuerNotReady({ clusterName: 'a'.repeat(5000) }))).toEqual({ matched: true });
  });

  it.each<[string, boolean]>([
    ["data.clusterName.matches('^prod-')", true],
    ["data.clusterName.matches('^staging-')", false],
    ["data.issuerName.matches('letsencrypt-(prod|staging)')", true],
  ])('%s → %s', (expression, expected) => {
    expect(compileFilter(expression, ISSUER).evaluate(issuerNotReady())).toEqual({ matched: expected });
  });
});

describe('evaluation errors: no match, short message, no event data', () => {
  const SECRET = 'hunter2-SECRET-VALUE';
  const e = issuerNotReady({ clusterName: SECRET, statusMessage: `(${SECRET}`, statusReason: `(${SECRET}` });
  it.each<[string, RegExp]>([
    ['int(data.clusterName) == 1', /^evaluation error at 1:1: type conversion failed$/],
    ["{'a': true}[data.clusterName]", /^evaluation error at \d+:\d+: no such field or key$/],
    ["timestamp(data.clusterName) > timestamp('2030-01-01T00:00:00Z')", /^evaluation error at 1:1: invalid timestamp$/],
    ["duration(data.clusterName) > duration('1h')", /^evaluation error at 1:1: invalid duration$/],
    ['data.clusterName.matches(data.statusReason)', /invalid regular expression$/],
    [
      'data.clusterName.startsWith(dyn(1))',
      /^evaluation error at 1:17: no matching overload for 'startsWith' applied to 'string.\(int\)'$/,
    ],
    ["type.endsWith('.notready') ? dyn(data.clusterName) : true", /^filter result is a string, not bool$/],
  ])('%s', (expression, message) => {
    const r = compileFilter(expression, ISSUER).evaluate(e);
    expect(r.matched).toBe(false);
    expect(r.error).toMatch(message);
    expect(r.error).not.toContain(SECRET);
    expect(r.error!.length).toBeLessThan(120);
  });
});

describe('evaluation is compiled once and reused', () => {
  it('one compiled filter evaluates many events consistently', () => {
    const filter = compileFilter(`data.clusterId == '${CLUSTER_STAGING.id}'`, CERT);
    const results = Array.from(
      { length: 1000 },
      (_, i) => filter.evaluate(i % 2 === 0 ? CORPUS['cert.notready.staging']! : CORPUS['cert.active.prod']!).matched,
    );
    expect(results.filter(Boolean)).toHaveLength(500);
  });
});

describe('compileFilterSteps (compiling in time slices)', () => {
  const drain = (expression: string, eventTypeId: EventTypeId): { steps: number; result: ReturnType<typeof compileFilter> } => {
    const gen = compileFilterSteps(expression, eventTypeId);
    let steps = 0;
    for (;;) {
      const s = gen.next();
      if (s.done) return { steps, result: s.value };
      steps++;
    }
  };

  it('pauses between parse, check, plan and closures, and ends with what compileFilter makes', () => {
    const expression = "type.endsWith('.notready') && (data.clusterName == 'prod' || data.issuerName.startsWith('letsencrypt'))";
    const { steps, result } = drain(expression, ISSUER);
    expect(steps).toBe(3);
    const whole = compileFilter(expression, ISSUER);
    expect({ ...result, evaluate: undefined }).toEqual({ ...whole, evaluate: undefined });
    for (const event of Object.values(CORPUS)) expect(result.evaluate(event)).toEqual(whole.evaluate(event));
  });

  it.each([
    ['syntax', 'data.issuerName =='],
    ['check', 'data.nope == 1'],
    ['cost', `data.statusMessage.matches('${'(a|b)*'.repeat(40)}')`],
  ])('throws the same %s error as compileFilter', (_, expression) => {
    const error = (f: () => unknown): FilterCompileError => {
      try {
        f();
      } catch (e) {
        if (e instanceof FilterCompileError) return e;
      }
      throw new Error('no FilterCompileError');
    };
    const whole = error(() => compileFilter(expression, ISSUER));
    const stepped = error(() => drain(expression, ISSUER));
    expect([stepped.message, stepped.line, stepped.column]).toEqual([whole.message, whole.line, whole.column]);
  });
});
