/**
 * The chain's weakest link, pure: which CAs the inventory shows outlived by certificates they signed, and when
 * one is reported (once per CA and notAfter, monitored certificates only).
 */
import { describe, expect, it } from 'vitest';
import { certIdOf, certKey, DAY_MS } from '../../src/expiry/decide.js';
import {
  chainCaKey,
  decideWeakLink,
  MAX_NAMED,
  WEAK_LINK_RULE_ID,
  weakLinkEvent,
  weakLinksOf,
  type WeakCa,
} from '../../src/expiry/weak-link.js';
import { validateEvent } from '../../src/events/schemas.js';
import { defaultMonitoringConfig } from '../../src/model/monitoring.js';
import type { WeakLinkRow } from '../../src/store/types.js';

const NOW = Date.parse('2026-03-01T00:00:00Z');
const ROOT_DN = 'CN=Internal Root CA, O=Example';
const INTER_DN = 'CN=Internal Issuing CA, O=Example';

function row(p: Partial<WeakLinkRow> & { secretName: string }): WeakLinkRow {
  return {
    clusterId: 'c1',
    clusterName: 'prod-eu',
    namespace: 'shop',
    certificateName: p.secretName.replace(/-tls$/, ''),
    serial: p.secretName.toUpperCase().replace(/[^0-9A-F]/g, '') || 'AA',
    issuer: ROOT_DN,
    subject: `CN=${p.secretName}`,
    commonName: null,
    notAfter: NOW + 90 * DAY_MS,
    chainNotAfter: null,
    applicationIds: [],
    ignored: false,
    runbookUrl: null,
    ...p,
  };
}

/** the Secret of a `ca` Issuer: a self-signed root */
const root = (days: number, p: Partial<WeakLinkRow> = {}): WeakLinkRow =>
  row({
    secretName: 'root-ca',
    namespace: 'cert-manager',
    serial: 'CA01',
    subject: ROOT_DN,
    issuer: ROOT_DN,
    notAfter: NOW + days * DAY_MS,
    ...p,
  });
const leaf = (name: string, days: number, p: Partial<WeakLinkRow> = {}): WeakLinkRow =>
  row({ secretName: `${name}-tls`, serial: `${name.length}${days}`.padStart(4, '0'), notAfter: NOW + days * DAY_MS, ...p });

const config = defaultMonitoringConfig('company');
const names = (ca: WeakCa): string[] => ca.outliving.map((c) => c.places[0]!.secretName);

describe('weakLinksOf: CAs outlived by certificates they signed', () => {
  const cases: { name: string; rows: WeakLinkRow[]; want: { source: WeakCa['source']; notAfterDays: number; leaves: string[] }[] }[] = [
    {
      name: 'a root (ca Issuer Secret) expiring before 3 of its 4 leaves: one CA naming the 3, latest first',
      rows: [root(30), leaf('a', 60), leaf('b', 365), leaf('c', 90), leaf('d', 20)],
      want: [{ source: 'secret', notAfterDays: 30, leaves: ['b-tls', 'c-tls', 'a-tls'] }],
    },
    {
      name: 'a root outliving every leaf: silent',
      rows: [root(400), leaf('a', 60), leaf('b', 365)],
      want: [],
    },
    {
      name: 'a leaf whose chain intermediate expires before it: reported as the chain CA',
      rows: [leaf('api', 90, { issuer: INTER_DN, chainNotAfter: NOW + 10 * DAY_MS })],
      want: [{ source: 'chain', notAfterDays: 10, leaves: ['api-tls'] }],
    },
    {
      name: 'a chain whose earliest is the leaf itself (chainNotAfter = notAfter): silent',
      rows: [leaf('api', 90, { issuer: INTER_DN, chainNotAfter: NOW + 90 * DAY_MS })],
      want: [],
    },
    {
      name: 'leaves of one intermediate and notAfter grouped as one CA; another intermediate is another CA',
      rows: [
        leaf('a', 90, { issuer: INTER_DN, chainNotAfter: NOW + 10 * DAY_MS }),
        leaf('b', 80, { issuer: INTER_DN, chainNotAfter: NOW + 10 * DAY_MS }),
        leaf('c', 80, { issuer: 'CN=Other CA', chainNotAfter: NOW + 5 * DAY_MS }),
      ],
      want: [
        { source: 'chain', notAfterDays: 5, leaves: ['c-tls'] },
        { source: 'chain', notAfterDays: 10, leaves: ['a-tls', 'b-tls'] },
      ],
    },
    {
      name: 'a chain carrying the root of the inventory: one report, the root’s',
      rows: [root(30), leaf('a', 60, { chainNotAfter: NOW + 30 * DAY_MS }), leaf('b', 70)],
      want: [{ source: 'secret', notAfterDays: 30, leaves: ['b-tls', 'a-tls'] }],
    },
    {
      name: 'a rotated root keeping its DN: the latest copy is the CA (the old copy elsewhere does not count)',
      rows: [root(30), root(800, { serial: 'CA02', clusterId: 'c2', clusterName: 'prod-us' }), leaf('a', 365)],
      want: [],
    },
    {
      name: 'expired and ignored leaves do not count',
      rows: [root(30), leaf('old', -1), leaf('muted', 90, { ignored: true })],
      want: [],
    },
    {
      name: 'a self-signed leaf is its own root, outliving nothing',
      rows: [leaf('self', 90, { subject: 'CN=self', issuer: 'CN=self' })],
      want: [],
    },
    {
      name: 'the same leaf in two places is one certificate',
      rows: [root(30), leaf('a', 60), leaf('a', 60, { clusterId: 'c2', clusterName: 'prod-us' })],
      want: [{ source: 'secret', notAfterDays: 30, leaves: ['a-tls'] }],
    },
  ];
  it.each(cases)('$name', ({ rows, want }) => {
    const got = weakLinksOf(rows, NOW);
    expect(got.map((c) => ({ source: c.source, notAfterDays: (c.notAfter - NOW) / DAY_MS, leaves: names(c) }))).toEqual(want);
  });

  it('keys: a root by its issuer and serial (the id of its own expiry events); a chain CA by DN and notAfter', () => {
    const [r] = weakLinksOf([root(30), leaf('a', 60)], NOW);
    expect(r!.key).toBe(certKey(ROOT_DN, 'CA01'));
    expect(r!.id).toBe(certIdOf(certKey(ROOT_DN, 'CA01')));
    const [c] = weakLinksOf([leaf('api', 90, { issuer: INTER_DN, chainNotAfter: NOW + DAY_MS })], NOW);
    expect(c!.key).toBe(chainCaKey(INTER_DN, NOW + DAY_MS));
  });
});

describe('decideWeakLink: once per CA and notAfter', () => {
  const [ca] = weakLinksOf([root(30), leaf('a', 60, { applicationIds: ['shop'] }), leaf('b', 90)], NOW);
  const cases: {
    name: string;
    ca?: WeakCa;
    cfg?: Partial<typeof config>;
    state?: { notAfter: number };
    now?: number;
    want: string;
  }[] = [
    { name: 'first seen: reported', want: 'emitted' },
    { name: 'marked at this notAfter: silent', state: { notAfter: ca!.notAfter }, want: 'reported' },
    {
      name: 'marked at an older notAfter (the CA was renewed, still outlived): reported again',
      state: { notAfter: ca!.notAfter - DAY_MS },
      want: 'emitted',
    },
    { name: 'configuration disabled', cfg: { enabled: false }, want: 'disabled' },
    {
      name: 'only unassigned leaves monitored when configured',
      cfg: { applicationIds: ['other'], includeUnassignedCertificates: false },
      want: 'unmonitored',
    },
    { name: 'every place of the CA ignored', ca: { ...ca!, ignored: true }, want: 'ignored' },
    { name: 'CA expired more than 30 days ago', now: ca!.notAfter + 31 * DAY_MS, want: 'stale' },
  ];
  it.each(cases)('$name', ({ ca: c, cfg, state, now, want }) => {
    const d = decideWeakLink(c ?? ca!, { ...config, ...cfg }, state, now ?? NOW);
    expect(d.skipped ?? 'emitted').toBe(want);
    if (want === 'emitted') expect(d.next).toEqual({ notAfter: ca!.notAfter, leafCount: 2 });
    else expect(d.next).toBeUndefined();
  });

  it('counts only the monitored leaves', () => {
    const d = decideWeakLink(ca!, { ...config, applicationIds: ['shop'], includeUnassignedCertificates: false }, undefined, NOW);
    expect(d.due?.outliving.map((c) => c.places[0]!.secretName)).toEqual(['a-tls']);
  });
});

describe('weakLinkEvent', () => {
  it('one expiration event for the CA: rule 900, its leaves counted and the first named, valid against the schema', () => {
    const leaves = Array.from({ length: 12 }, (_, i) => leaf(`l${i}`, 100 + i, { applicationIds: i === 0 ? ['shop'] : [] }));
    const [ca] = weakLinksOf([root(30, { commonName: 'Internal Root CA' }), ...leaves], NOW);
    const d = decideWeakLink(ca!, config, undefined, NOW);
    const e = weakLinkEvent(d.due!, NOW);
    expect(e.type).toBe('evt.policy.expiringcertificates.failed');
    expect(validateEvent(e)).toMatchObject({ ok: true });
    const data = e.data as Record<string, unknown>;
    expect(data).toMatchObject({
      name: 'CA certificate expires before 12 certificates it signed',
      applicationIds: ['shop'],
      threshold: 0,
      ruleId: WEAK_LINK_RULE_ID,
      certificateName: 'root-ca',
      namespace: 'cert-manager',
      clusterName: 'prod-eu',
      notAfter: new Date(NOW + 30 * DAY_MS).toISOString(),
      daysUntilExpiry: 30,
      outlivingCount: 12,
    });
    expect(data['outlivingCertificates']).toHaveLength(MAX_NAMED);
    expect((data['outlivingCertificates'] as string[])[0]).toBe('prod-eu/shop/l11');
    const message = data['message'] as string;
    expect(message).toContain(`(id ${ca!.id}, CN=Internal Root CA), serial number CA01`);
    expect(message).toContain('before 12 certificates it signed');
    expect(message).toContain('Certificate shop/l11, cluster prod-eu, valid until');
    expect(message).toContain('; and 2 more.');
  });

  it('a chain CA: named by the leaves’ issuer, no place of its own', () => {
    const [ca] = weakLinksOf([leaf('api', 90, { issuer: INTER_DN, chainNotAfter: NOW + 10 * DAY_MS })], NOW);
    const e = weakLinkEvent(decideWeakLink(ca!, config, undefined, NOW).due!, NOW);
    const data = e.data as Record<string, unknown>;
    expect(validateEvent(e)).toMatchObject({ ok: true });
    expect(data['message']).toContain(`A CA certificate in the tls.crt chain of certificates issued by ${INTER_DN} (id ${ca!.id})`);
    expect(data['name']).toBe('CA certificate expires before 1 certificate that carries it');
    expect(data['certificateName']).toBeUndefined();
    expect(data['outlivingCertificates']).toEqual(['prod-eu/shop/api']);
  });
});
