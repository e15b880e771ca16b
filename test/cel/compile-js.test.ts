/**
 * Table tests of the compiled closures' CEL semantics (src/cel/compile-js.ts), each checked against the
 * interpreter-only filter too: heterogeneous equality, int overflow, division by zero, error absorption by
 * && / || and the comprehensions, missing keys, has() on null, and what falls back to the interpreter.
 */
import { parse } from '@bufbuild/cel';
import { describe, expect, it } from 'vitest';
import { toSourceTree } from '../../src/cel/ast.js';
import { compileToJs, leafOf } from '../../src/cel/compile-js.js';
import { compileFilter, interpretedFilterCount } from '../../src/cel/index.js';
import { familyOf, type EventTypeId, type InternalEvent } from '../../src/events/families.js';
import { expiringCertificate, issuerActive, issuerNotReady } from '../fixtures/events.js';

const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';
const event: InternalEvent = expiringCertificate({ applicationIds: ['payments-app', 'billing-app'], ruleId: 3, threshold: 14 });
const withNull: InternalEvent = { ...event, data: { ...event.data, message: null } };
const { message: _message, ...noMessage } = event.data as Record<string, unknown>;
/** `data.message` is in the schema, not in this event: a missing key at run time. */
const missing: InternalEvent = { ...event, data: noMessage };

const both = (expr: string, e: InternalEvent = event) => {
  const fast = compileFilter(expr, EXPIRY);
  const slow = compileFilter(expr, EXPIRY, { interpreterOnly: true });
  return { fast, got: fast.evaluate(e), want: slow.evaluate(e) };
};

describe('compiled CEL filters', () => {
  it.each([
    ['data.ruleId == 3', true],
    ['data.ruleId == 3.0', true],
    ['data.ruleId != 3', false],
    // int literals compared as doubles when exact, loosely beyond 2^53
    ['data.ruleId == 4', false],
    ['data.ruleId != 4', true],
    ['data.ruleId == -3', false],
    ['data.ruleId == 9007199254740995', false],
    ['int(data.ruleId) == 3', true],
    ['int(data.ruleId) != 3', false],
    ['double(data.ruleId) + 0.5 == 3', false],
    ['data.ruleId < 4', true],
    ['data.threshold > 13.5', true],
    ["data.ruleId == '3'", false],
    ["'payments-app' in data.applicationIds", true],
    ["'x' in data.applicationIds", false],
    ["data.applicationIds == ['payments-app', 'billing-app']", true],
    ["data.applicationIds.exists(a, a.startsWith('bill'))", true],
    ["data.applicationIds.all(a, a.endsWith('-app'))", true],
    ["data.applicationIds.exists_one(a, a.contains('app'))", false],
    ["data.applicationIds.filter(a, a.startsWith('p')).size() == 1", true],
    ['[data.name].map(a, size(a) > 0) == [true]', true],
    ["'ruleId' in data && has(data.threshold) && !has(data.message)", true],
    ["data.name.matches('^Cert')", true],
    // error absorption: false && error, true || error
    ["data.message == 'x' || true", true],
    ["false && data.message == 'x'", false],
    ["data.message == 'x' && false", false],
    ['int(data.ruleId) + 9223372036854775807 > 0 || true', true],
    ["data.applicationIds.exists(a, int(a) == 1 || a == 'billing-app')", true],
  ])('%s is %s, like the interpreter', (expr, matched) => {
    const { fast, got, want } = both(expr, missing);
    expect(fast.engine).toBe('compiled');
    expect(got).toEqual({ matched });
    expect(want).toEqual(got);
  });

  it.each([
    ["data.message == 'x'", "has no 'message'"],
    ['int(data.ruleId) / (int(data.ruleId) - 3) == 1', 'division by zero'],
    ['int(data.ruleId) + 9223372036854775807 > 0', 'overflow'],
    ['dyn(data.ruleId) + 1 == 4.0', 'no matching overload'],
    ['data.applicationIds.exists_one(a, int(a) == 1)', 'conversion'],
    ["data.applicationIds[5] == 'x'", 'out of bounds'],
  ])("%s errs with the interpreter's message", (expr, phrase) => {
    const { got, want } = both(expr, missing);
    expect(got.matched).toBe(false);
    expect(got.error).toContain('evaluation error');
    expect(got).toEqual(want);
    expect(got.error).toContain(phrase);
  });

  it('has() is false for a null value, and the value compares to null', () => {
    for (const expr of ['has(data.message)', 'data.message == null', "data.message.contains('x')"]) {
      const { got, want } = both(expr, withNull);
      expect(got).toEqual(want);
    }
    expect(both('has(data.message)', withNull).got).toEqual({ matched: false });
  });

  it('falls back to the interpreter, and counts it, for what the compiler does not cover', () => {
    const before = interpretedFilterCount();
    for (const expr of [
      "timestamp(data.notAfter) > timestamp('2020-01-01T00:00:00Z')",
      'uint(data.ruleId) == 3u',
      'type(data.ruleId) == double',
      "{'a': 1}['a'] == data.ruleId",
    ]) {
      const { fast, got, want } = both(expr);
      expect(fast.engine).toBe('interpreted');
      expect(got).toEqual(want);
    }
    // each expression compiled twice by `both`
    expect(interpretedFilterCount() - before).toBe(8);
  });

  describe('specialised per event type and fused field reads', () => {
    const ISSUER: EventTypeId = 'certmgr-issuer-health-notification-config';
    const bothIssuer = (expr: string, e: { type: string; data: unknown }) => ({
      got: compileFilter(expr, ISSUER).evaluate(e),
      want: compileFilter(expr, ISSUER, { interpreterOnly: true }).evaluate(e),
    });
    const notReady = issuerNotReady({ namespace: 'ns-3' });
    const active = issuerActive({ namespace: 'ns-3' });
    const { namespace: _ns, ...noNamespace } = notReady.data;

    it.each([
      "type.endsWith('.notready') && data.namespace == 'ns-3'",
      "type.endsWith('.notready') || data.namespace == 'ns-3'",
      "data.namespace == 'ns-3' && type.endsWith('.active')",
      "type == 'evt.healthstatus.certmgr-issuer.active' ? data.namespace == 'x' : data.namespace != 'x'",
      "type.startsWith('evt.') && data.namespace.contains('s-') && !data.issuerName.startsWith('x')",
      "type.endsWith('.notready') && data.namespace in ['ns-1', 'ns-3']",
      // a filter settled by its type for one of the two types, and an error for it
      "type.endsWith('.notready') && int(type) == 1",
    ])('%s: both types, the field missing, and odd data, like the interpreter', (expr) => {
      for (const e of [
        notReady,
        active,
        { ...notReady, data: noNamespace },
        { ...notReady, data: { ...notReady.data, namespace: 3 } },
        { ...notReady, data: { ...notReady.data, namespace: ['ns-3'] } },
        { ...notReady, data: { ...notReady.data, namespace: null } },
      ]) {
        const { got, want } = bothIssuer(expr, e);
        expect(got, `${expr} over ${JSON.stringify(e.data)}`).toEqual(want);
      }
    });

    it('leaves data that is not a plain object to the interpreter (an own __proto__ key, no prototype, a class, a list)', () => {
      class Data {
        namespace = 'ns-3';
      }
      const odd: unknown[] = [
        JSON.parse('{"__proto__": {"namespace": "ns-3"}, "namespace": "ns-3"}'),
        Object.assign(Object.create(null) as object, { namespace: 'ns-3' }),
        Object.assign(Object.create({ namespace: 'ns-3' }) as object, {}),
        new Data(),
        ['ns-3'],
        null,
      ];
      for (const expr of [
        "data.namespace == 'ns-3'",
        "data.namespace.startsWith('ns')",
        "type.endsWith('.active') && data.namespace == 'ns-3'",
        'true',
      ]) {
        for (const data of odd) {
          for (const type of [notReady.type, active.type]) {
            let want: unknown;
            try {
              want = bothIssuer(expr, { type, data }).want;
            } catch (e) {
              want = e;
            }
            let got: unknown;
            try {
              got = bothIssuer(expr, { type, data }).got;
            } catch (e) {
              got = e;
            }
            expect(got, `${expr} over odd data ${odd.indexOf(data)}`).toEqual(want);
          }
        }
      }
    });

    it("does not see Object.prototype's names as keys of the data", () => {
      const { got, want } = bothIssuer("'constructor' in data || 'toString' in data || data.exists(k, k == '__proto__')", notReady);
      expect(got).toEqual(want);
      expect(got).toEqual({ matched: false });
    });
  });

  describe('fused leaves (answered in evaluate without calling the closure)', () => {
    const leafKind = (expr: string): string | undefined => {
      const fns = compileToJs(toSourceTree(parse(`${expr}\n`), expr).root, familyOf(EXPIRY).types);
      return fns?.[0] && leafOf(fns[0])?.kind;
    };
    const MISSING = Symbol('missing');
    const values: unknown[] = [
      ...[3, 3.5, -3, -0, 0, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 53 + 2, 3n, 0n, 2n ** 60n, '3', '', null, true, MISSING],
      ...['__proto__', 'constructor', 'toString', 'payments-app', ['constructor'], ['__proto__', 'x'], [1, 'constructor'], [null], {}],
    ];
    const over = (field: string, value: unknown): InternalEvent => {
      const data: Record<string, unknown> = { ...event.data };
      if (value === MISSING) delete data[field];
      else data[field] = value;
      return { ...event, data };
    };

    it.each([
      ['data.ruleId == 3', 'num', 'ruleId'],
      ['data.ruleId != 3', 'num', 'ruleId'],
      ['data.ruleId == 3.0', 'num', 'ruleId'],
      ['data.ruleId == -3', 'num', 'ruleId'],
      ['data.ruleId == 0', 'num', 'ruleId'],
      ['data.ruleId == -0.0', 'num', 'ruleId'],
      ['data.ruleId != -0.0', 'num', 'ruleId'],
      ['data.ruleId == 9007199254740992', 'num', 'ruleId'],
      // beyond 2^53 an int literal is no exact double: the closure compares it, not the fused test
      ['data.ruleId == 9007199254740994', undefined, 'ruleId'],
      ['data.threshold == 3.5', 'num', 'threshold'],
      ["data.name == 'constructor'", 'str', 'name'],
      ["data.name != '__proto__'", 'str', 'name'],
      ["data.name in ['__proto__', 'constructor']", 'strIn', 'name'],
      ["data.name.contains('proto')", 'contains', 'name'],
      ["data.name.startsWith('__')", 'startsWith', 'name'],
      ["data.name.endsWith('tor')", 'endsWith', 'name'],
      ["'constructor' in data.applicationIds", 'litIn', 'applicationIds'],
      ["'__proto__' in data.applicationIds", 'litIn', 'applicationIds'],
    ])('%s (%s): every kind of value, missing, like the interpreter', (expr, kind, field) => {
      expect(leafKind(expr)).toBe(kind);
      for (const value of values) {
        const { got, want } = both(expr, over(field, value));
        expect(got, `${expr} with ${field} = ${String(value)}`).toEqual(want);
      }
    });

    it.each([
      // int literal against double data: numeric equality
      ['data.ruleId == 3', 3, true],
      ['data.ruleId == 3', 3.5, false],
      ['data.ruleId != 3', 3.5, true],
      ['data.ruleId == 3.0', 3, true],
      // bigint data (an int): equal to the int and to the double literal
      ['data.ruleId == 3', 3n, true],
      ['data.ruleId == 3.0', 3n, true],
      ['data.ruleId != 3', 2n ** 60n, true],
      // NaN equals nothing; -0 equals 0
      ['data.ruleId == 3', NaN, false],
      ['data.ruleId != 3', NaN, true],
      ['data.ruleId == 0', -0, true],
      ['data.ruleId == -0.0', 0, true],
      ['data.ruleId != -0.0', -0, false],
      // other kinds are not equal to a number (no error)
      ['data.ruleId == 3', '3', false],
      ['data.ruleId != 3', '3', true],
      ['data.ruleId == 3', null, false],
      ["data.name == 'constructor'", 'constructor', true],
      ["data.name in ['__proto__', 'constructor']", '__proto__', true],
      ["data.name in ['__proto__', 'constructor']", 'toString', false],
      ["'constructor' in data.applicationIds", ['constructor'], true],
      ["'constructor' in data.applicationIds", [1, 'constructor'], true],
      ["'constructor' in data.applicationIds", [], false],
    ])('%s with %s is %s', (expr, value, matched) => {
      const field = expr.includes('ruleId') ? 'ruleId' : expr.includes('applicationIds') ? 'applicationIds' : 'name';
      const { got, want } = both(expr, over(field, value));
      expect(got).toEqual({ matched });
      expect(want).toEqual(got);
    });

    it('errs like the interpreter when the field is missing or is not a string for a string method', () => {
      for (const [expr, field, value] of [
        ['data.ruleId == 3', 'ruleId', MISSING],
        ["data.name == 'x'", 'name', MISSING],
        ["data.name.contains('x')", 'name', 3],
        ["'x' in data.applicationIds", 'applicationIds', 'x'],
      ] as const) {
        const { got, want } = both(expr, over(field, value));
        expect(got.matched).toBe(false);
        expect(got.error).toContain('evaluation error');
        expect(got).toEqual(want);
      }
    });
  });
});
