/** Per-resource policy annotations, parsed (docs/annotations.md): table tests. */
import { describe, expect, it } from 'vitest';
import {
  EXPIRY_THRESHOLDS_ANNOTATION as TH,
  IGNORE_ANNOTATION as IG,
  RUNBOOK_URL_ANNOTATION as RB,
  parseExpiryThresholds,
  parseIgnore,
  parseRunbookUrl,
  resourcePolicyOf,
} from '../../src/emitter/policy.js';

describe('notify.certmgr.io/ignore', () => {
  it.each<[string, boolean, boolean]>([
    ['true', true, false],
    ['True', true, false],
    [' TRUE ', true, false],
    ['false', false, false],
    ['', false, false],
    ['yes', false, true],
    ['1', false, true],
  ])('%j → ignore %s (problem: %s)', (v, ignore, problem) => {
    const r = parseIgnore(v);
    expect(r.ignore).toBe(ignore);
    expect(r.problem !== undefined).toBe(problem);
  });
});

describe('notify.certmgr.io/expiry-thresholds', () => {
  it.each<[string, number[] | RegExp]>([
    ['7,3,1', [7, 3, 1]],
    ['1,3,7', [7, 3, 1]],
    [' 14 , 2 ', [14, 2]],
    ['7 3', [7, 3]],
    ['30', [30]],
    ['7,7,3', /has 7 twice/],
    ['3650,1', [3650, 1]],
    ['', /names no threshold/],
    [',', /names no threshold/],
    ['0', /1 to 3650 days/],
    ['3651', /1 to 3650 days/],
    ['99999', /not a whole number of days/],
    ['-1', /not a whole number of days/],
    ['1.5', /not a whole number of days/],
    ['7d', /not a whole number of days/],
    ['30,14,7,1', /at most 3/],
    ['1e3', /not a whole number of days/],
    ['7,'.repeat(40), /too long/],
  ])('%j → %s', (v, want) => {
    const r = parseExpiryThresholds(v);
    if (Array.isArray(want)) expect(r).toEqual({ thresholds: want });
    else {
      expect(r.thresholds).toBeUndefined();
      expect(r.problem).toMatch(want);
      expect(r.problem).toMatch(/the monitoring configuration's thresholds apply$/);
    }
  });
});

describe('notify.certmgr.io/expiry-thresholds: shares of the lifetime, strict and bounded', () => {
  it.each<[string, (number | string)[] | RegExp]>([
    ['33%', ['33%']],
    ['33%,10%', ['33%', '10%']],
    ['10% 33%', ['33%', '10%']], // sorted: the rule ids do not depend on the order written
    ['1%', ['1%']],
    ['99%', ['99%']],
    ['033%', ['33%']], // like "07" for days
    ['14,33%', [14, '33%']],
    ['10%,3,33%', [3, '33%', '10%']], // days first, then shares, each from the largest down
    ['0%', /has "0%": a share of the lifetime is 1% to 99%/],
    ['100%', /has "100%": a share of the lifetime is 1% to 99%/],
    ['150%', /has "150%": a share of the lifetime is 1% to 99%/],
    ['33.3%', /has "33.3%", which is not a whole percent;/],
    ['.5%', /has ".5%", which is not a whole percent/],
    ['-5%', /has "-5%", which is not a whole percent of the lifetime/],
    ['%', /has "%", which is not a whole percent of the lifetime/],
    ['33%%', /has "33%%", which is not a whole percent of the lifetime/],
    ['33 %', /has "%", which is not a whole percent of the lifetime/],
    ['１０%', /has "１０%", which is not a whole percent of the lifetime/],
    ['99999%', /has "99999%", which is not a whole percent of the lifetime/],
    ['33%,33%', /has "33%" twice/],
    ['33%,033%', /has "33%" twice/],
    ['7,07', /has 7 twice/],
    ['33%,10%,5%,1%', /has 4 thresholds: at most 3 are allowed/],
    ['14,33%,10%,1', /has 4 thresholds: at most 3 are allowed/],
    [Array.from({ length: 1000 }, (_, i) => `${(i % 99) + 1}%`).join(','), /is too long/],
    ['1%,'.repeat(1000), /is too long/],
  ])('%j → %s', (v, want) => {
    const r = parseExpiryThresholds(v);
    if (Array.isArray(want)) expect(r).toEqual({ thresholds: want });
    else {
      expect(r.thresholds).toBeUndefined();
      expect(r.problem).toMatch(want);
      // the annotation is named, and what then applies
      expect(r.problem).toMatch(/^notify\.certmgr\.io\/expiry-thresholds: /);
      expect(r.problem).toMatch(/the monitoring configuration's thresholds apply$/);
      expect(r.problem!.length).toBeLessThan(300); // a hostile value is cut in the message
    }
  });

  it('the policy of a Certificate carries shares to the inventory; a bad one is a problem and no thresholds', () => {
    const c = (v: string) => ({ metadata: { annotations: { [TH]: v } } });
    expect(resourcePolicyOf(c('33%,10%'))).toEqual({ ignore: false, expiryThresholds: ['33%', '10%'], problems: [] });
    const bad = resourcePolicyOf(c('150%'));
    expect(bad.expiryThresholds).toBeUndefined();
    expect(bad.problems).toEqual([
      `notify.certmgr.io/expiry-thresholds: "150%" has "150%": a share of the lifetime is 1% to 99%; the monitoring configuration's thresholds apply`,
    ]);
  });
});

describe('notify.certmgr.io/runbook-url', () => {
  it.each<[string, string | RegExp]>([
    ['https://wiki.example.com/runbooks/tls', 'https://wiki.example.com/runbooks/tls'],
    ['  http://runbooks.internal:8080/tls?x=1#a  ', 'http://runbooks.internal:8080/tls?x=1#a'],
    ['https://wiki.example.com/ü', 'https://wiki.example.com/ü'],
    [`https://a.example/${'x'.repeat(2048 - 18)}`, `https://a.example/${'x'.repeat(2048 - 18)}`],
    [`https://a.example/${'x'.repeat(2048 - 17)}`, /at most 2048 characters/],
    ['ftp://files.example/x', /http or https/],
    ['javascript:alert(1)', /http or https/],
    ['wiki/runbooks', /absolute http or https URL/],
    ['https://user:secret@wiki.example/', /user name or password/],
    ['https://wiki.example/a b', /whitespace/],
    ['https://wiki.example/\u202Eevil', /bidi|invisible|control/],
    ['https://wiki.example/\u0000', /control/],
  ])('%j → %s', (v, want) => {
    const r = parseRunbookUrl(v);
    if (typeof want === 'string') expect(r).toEqual({ runbookUrl: want });
    else {
      expect(r.runbookUrl).toBeUndefined();
      expect(r.problem).toMatch(want);
      expect(r.problem).not.toContain('secret'); // the value is never repeated: it may carry a token
    }
  });
});

describe('resourcePolicyOf: the Secret wins, then the Certificate, then its secretTemplate, per annotation', () => {
  const cert = (annotations?: Record<string, string>, template?: Record<string, string>) => ({
    metadata: annotations ? { annotations } : {},
    spec: template ? { secretTemplate: { annotations: template } } : {},
  });
  it.each<[string, ReturnType<typeof cert> | undefined, Record<string, string> | undefined, object]>([
    ['nothing', cert(), undefined, { ignore: false, problems: [] }],
    [
      'the Certificate',
      cert({ [IG]: 'true', [TH]: '7,3', [RB]: 'https://a.example/' }),
      undefined,
      { ignore: true, expiryThresholds: [7, 3], runbookUrl: 'https://a.example/', problems: [] },
    ],
    ['the secretTemplate', cert(undefined, { [TH]: '2' }), undefined, { ignore: false, expiryThresholds: [2], problems: [] }],
    [
      'the Secret over the Certificate',
      cert({ [IG]: 'true', [TH]: '7' }),
      { [IG]: 'false', [TH]: '1' },
      { ignore: false, expiryThresholds: [1], problems: [] },
    ],
    [
      'per annotation: the Secret’s runbook, the Certificate’s ignore',
      cert({ [IG]: 'true' }),
      { [RB]: 'https://s.example/' },
      { ignore: true, runbookUrl: 'https://s.example/', problems: [] },
    ],
    ['no Certificate, the Secret alone', undefined, { [IG]: 'TRUE' }, { ignore: true, problems: [] }],
  ])('%s', (_name, resource, secret, want) => {
    expect(resourcePolicyOf(resource, secret)).toEqual(want);
  });

  it('a bad value is dropped with its problem; the others still apply', () => {
    const p = resourcePolicyOf(cert({ [IG]: 'maybe', [TH]: '7,0', [RB]: 'https://ok.example/' }));
    expect(p.ignore).toBe(false);
    expect(p.expiryThresholds).toBeUndefined();
    expect(p.runbookUrl).toBe('https://ok.example/');
    expect(p.problems).toHaveLength(2);
    expect(p.problems[0]).toMatch(/^notify\.certmgr\.io\/ignore: "maybe"/);
    expect(p.problems[1]).toMatch(/^notify\.certmgr\.io\/expiry-thresholds: "7,0"/);
  });

  it('Issuers: ignore and runbook URL; expiry thresholds mean nothing there and are not read', () => {
    const issuer = { metadata: { annotations: { [IG]: 'true', [TH]: 'nonsense', [RB]: 'https://ca.example/runbook' } } };
    expect(resourcePolicyOf(issuer, undefined, 'ClusterIssuer')).toEqual({
      ignore: true,
      runbookUrl: 'https://ca.example/runbook',
      problems: [],
    });
  });

  it('a long bad value is shown cut', () => {
    const p = resourcePolicyOf(cert({ [IG]: 'x'.repeat(10_000) }));
    expect(p.problems[0]!.length).toBeLessThan(200);
  });
});
