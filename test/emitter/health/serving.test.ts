/**
 * Served truth in the certificate health family, pure: observe() with endpoint verdicts, diffReady's episode
 * rules over them, the Secret-only observation, the stored state, and a router filter on the events.
 */
import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../../src/cel/index.js';
import { EVENT_SIZE_LIMITS, validateEvent } from '../../../src/events/schemas.js';
import { isoUtc } from '../../../src/events/wire-formats.js';
import { diffReady, decodeHealthState, type HealthOptions, type HealthState } from '../../../src/emitter/health/diff.js';
import { observe, observeSecret, type CertManagerObject, type Observation } from '../../../src/emitter/health/observe.js';
import { secretResourceId, subjectOfDn } from '../../../src/emitter/health/serving.js';
import type { TlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import type { EndpointVerdict, LeafIdentity } from '../../../src/emitter/serving/types.js';
import { storedHealthState, HEALTH_ENTRY_MAX_BYTES } from '../../../src/emitter/states.js';
import type { ServingStatus } from '../../../src/model/serving.js';
import { uuidProblem } from '../../../src/validation/formats.js';
import { CLUSTER, certificate, iso, ready } from '../fixtures.js';

const NOW = Date.parse('2026-03-01T10:00:00Z');
const S = 1000;
const MIN = 60 * S;
const DAY = 24 * 60 * MIN;
const OPTS: HealthOptions = { cluster: CLUSTER, gracePeriodMs: 5 * MIN, unknownGracePeriodMs: 10 * MIN, issuingGracePeriodMs: 15 * MIN };

const leaf = (serial: string, notAfter: number, o: Partial<LeafIdentity> = {}): LeafIdentity => ({
  serial,
  issuer: "C=US, O=Let's Encrypt, CN=R11",
  subject: 'CN=shop.example.com',
  dnsNames: ['shop.example.com', 'www.shop.example.com'],
  notBefore: notAfter - 90 * DAY,
  notAfter,
  ...o,
});
/** the Secret's certificate: renewed, 60 days left */
const EXPECTED = leaf('0B2C', NOW + 60 * DAY);
/** the one before the renewal, 5 days left */
const OLD = leaf('0A1B', NOW + 5 * DAY);
const SERVED: Record<ServingStatus, LeafIdentity | undefined> = {
  ok: EXPECTED,
  stale: OLD,
  mismatch: leaf('7F', NOW + 300 * DAY, { subject: 'CN=ingress.local', issuer: 'CN=Kubernetes Ingress Controller Fake Certificate' }),
  expired: leaf('0A0A', NOW - DAY),
  unreachable: undefined,
  pending: undefined,
  notProbed: undefined,
};

function verdict(status: ServingStatus, o: Partial<EndpointVerdict> = {}): EndpointVerdict {
  const served = SERVED[status];
  return {
    host: 'shop.example.com',
    address: '10.0.0.7:443',
    source: { kind: 'Ingress', namespace: 'shop', name: 'web' },
    status,
    since: NOW - 10 * MIN,
    checkedAt: NOW - MIN,
    expected: EXPECTED,
    ...(served ? { served } : {}),
    ...(status === 'unreachable' ? { reason: 'connect ECONNREFUSED 10.0.0.7:443' } : {}),
    consumers: ['Deployment/web'],
    ...o,
  };
}

/** Ready=True for a month, renewed, renewal 30 days ahead: healthy but for what is served. */
const healthy = (o: Parameters<typeof certificate>[0] = {}): CertManagerObject =>
  certificate({
    conditions: [ready('True', NOW - 30 * DAY, 'Ready', 'Certificate is up to date and has not expired')],
    status: { notAfter: iso(EXPECTED.notAfter), renewalTime: iso(NOW + 30 * DAY) },
    ...o,
  });

const observeServing = (verdicts: EndpointVerdict[], obj = healthy(), now = NOW): Observation =>
  observe('Certificate', obj, now, undefined, {}, verdicts);

const run = (prev: HealthState | undefined, verdicts: EndpointVerdict[], now = NOW, obj = healthy()) =>
  diffReady(prev, observeServing(verdicts, obj, now), now, OPTS);

describe('observe: a healthy Certificate with endpoint verdicts', () => {
  it.each([
    ['expired', 'ServingExpired', 'serves an expired certificate, serial 0A0A (notAfter 2026-02-28T10:00:00Z)'],
    ['stale', 'ServingStale', 'serves an older certificate with the same names, serial 0A1B (notAfter 2026-03-06T10:00:00Z)'],
    ['mismatch', 'ServingMismatch', 'serves another certificate, serial 7F (notAfter 2026-12-26T10:00:00Z) (subject CN=ingress.local'],
    ['unreachable', 'ServingUnreachable', 'is unreachable: connect ECONNREFUSED 10.0.0.7:443'],
  ] as const)('%s → %s, since the verdict’s start, naming host, address, served and expected', (status, reason, served) => {
    const o = observeServing([verdict(status)]);
    expect(o).toMatchObject({ status: 'False', reason, since: NOW - 10 * MIN, stale: false, issuing: false });
    expect(o.message).toContain(`shop.example.com (10.0.0.7:443, Ingress shop/web) ${served}`);
    expect(o.message).toContain('expected the certificate in Secret shop/web-tls, serial 0B2C (notAfter 2026-04-30T10:00:00Z)');
  });

  it.each(['ok', 'pending', 'notProbed'] as const)('%s is fine: healthy, with what is served for a later .active', (status) => {
    const o = observeServing([verdict(status)]);
    expect(o).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(o.servingOk).toBeDefined();
  });

  it('no verdicts given: as before (no serving message)', () => {
    expect(observe('Certificate', healthy(), NOW).servingOk).toBeUndefined();
    expect(observeServing([]).servingOk).toBe('No endpoint configured with Secret shop/web-tls has a serving problem any more');
  });

  it('the worst reason wins (expired > mismatch > stale > unreachable); the episode starts at the earliest problem', () => {
    const at = (host: string, status: ServingStatus, since: number) => verdict(status, { host, since });
    const all = [
      at('a.example.com', 'unreachable', NOW - 50 * MIN),
      at('b.example.com', 'stale', NOW - 40 * MIN),
      at('c.example.com', 'mismatch', NOW - 30 * MIN),
      at('d.example.com', 'expired', NOW - 20 * MIN),
      at('e.example.com', 'ok', NOW - 90 * MIN),
    ];
    const reasons: string[] = [];
    for (let n = all.length - 1; n >= 1; n--) {
      const o = observeServing(all.slice(0, n));
      reasons.push(o.reason);
      expect(o.since).toBe(NOW - 50 * MIN);
    }
    expect(reasons).toEqual(['ServingExpired', 'ServingMismatch', 'ServingStale', 'ServingUnreachable']);
    const o = observeServing(all);
    expect(o.message).toMatch(/^d\.example\.com \(/);
    expect(o.message).toContain('3 other endpoints of the Secret have a serving problem too.');
    expect(observeServing(all.slice(2, 4)).message).toContain('1 other endpoint of the Secret has a serving problem too.');
    // the same reason twice: the one that started first is named
    const twice = observeServing([at('late.example.com', 'stale', NOW - MIN), at('early.example.com', 'stale', NOW - 9 * MIN)]);
    expect(twice.message).toMatch(/^early\.example\.com/);
  });

  it('bigger trouble wins: Ready=False, an expired Certificate, a failing renewal; a stale condition is held', () => {
    const stale = [verdict('stale')];
    expect(observeServing(stale, certificate({ conditions: [ready('False', NOW - MIN, 'IssuerNotReady')] })).reason).toBe('IssuerNotReady');
    const expired = healthy({ status: { notAfter: iso(NOW - MIN) } });
    expect(observeServing(stale, expired).reason).toBe('Expired');
    const failing = healthy({
      conditions: [
        ready('True', NOW - 30 * DAY),
        { type: 'Issuing', status: 'False', reason: 'Failed', lastTransitionTime: iso(NOW - MIN) },
      ],
      status: { notAfter: iso(EXPECTED.notAfter), failedIssuanceAttempts: 1, lastFailureTime: iso(NOW - MIN) },
    });
    expect(observeServing(stale, failing).reason).toBe('Failed');
    const held = healthy({ generation: 2, conditions: [ready('True', NOW - DAY, 'Ready', '', 1)] });
    expect(observeServing(stale, held)).toMatchObject({ status: 'True', stale: true });
  });

  it('the hint: the workloads mounting the Secret need a reload; none found, not looked up; unreachable: the address', () => {
    const msg = (o: Partial<EndpointVerdict>, status: ServingStatus = 'stale') => observeServing([verdict(status, o)]).message;
    expect(msg({ consumers: ['Deployment/web', 'StatefulSet/cache'] })).toMatch(
      /The workloads that mount the Secret \(Deployment\/web, StatefulSet\/cache\) need a reload \(certmgr-notify never restarts anything\)\.$/,
    );
    expect(msg({ consumers: [] })).toContain('No pod in namespace shop mounts the Secret: whatever serves it');
    expect(msg({ consumers: undefined })).toMatch(
      /Whatever serves the Secret needs a reload \(certmgr-notify never restarts anything\)\.$/,
    );
    expect(msg({}, 'unreachable')).toContain('annotation notify.certmgr.io/probe-address');
    expect(msg({ expected: undefined })).toContain('Secret shop/web-tls holds no readable certificate to compare with');
    expect(msg({ address: null })).toContain('shop.example.com (no address, Ingress shop/web)');
  });

  it('bounded: long hosts, reasons and consumer lists are cut; the message stays far below the schema’s limit', () => {
    const consumers = Array.from({ length: 5000 }, (_, i) => `Deployment/${'w'.repeat(300)}-${i}`);
    const long = verdict('unreachable', { host: 'h'.repeat(10_000), address: 'a'.repeat(10_000), reason: 'r\n'.repeat(50_000), consumers });
    const o = observeServing([long, ...Array.from({ length: 1000 }, () => verdict('stale', { consumers }))]);
    expect(o.reason).toBe('ServingStale');
    expect(o.message).toContain('and 4990 more');
    expect(o.message.length).toBeLessThan(6000);
    const u = observeServing([long]).message;
    expect(u.length).toBeLessThan(2000);
    expect(u).not.toContain('\n');
    expect(u.length).toBeLessThan(EVENT_SIZE_LIMITS.statusMessage);
  });
});

describe('diffReady over serving verdicts', () => {
  it('a consumer that reloads within the grace period never alerts', () => {
    const d1 = run(undefined, [verdict('stale', { since: NOW - MIN })]);
    expect(d1.event).toBeUndefined();
    expect(d1.recheckAt).toBe(NOW - MIN + 5 * MIN);
    const d2 = run(d1.next, [verdict('ok', { since: NOW + MIN })], NOW + 2 * MIN);
    expect(d2.event).toBeUndefined();
    expect(d2.next).toBeUndefined();
  });

  it('past the grace: one .notready ServingStale; still stale (or Ready=False meanwhile) sends nothing; serving again: .active ServingOk', () => {
    const d1 = run(undefined, [verdict('stale')]);
    expect(d1.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(d1.event?.data).toMatchObject({
      certificateName: 'web-tls',
      issuerName: 'letsencrypt-prod',
      statusReason: 'ServingStale',
      statusTransition: isoUtc(NOW - 10 * MIN),
      unhealthyDuration: '0h10m0s',
    });
    expect(validateEvent(d1.event!)).toMatchObject({ ok: true });
    expect(d1.next).toMatchObject({ notified: true, serving: true });
    // once per episode: another problem, or a Ready=False, is the same episode
    const d2 = run(d1.next, [verdict('expired')], NOW + MIN);
    expect(d2.event).toBeUndefined();
    const d3 = diffReady(
      d2.next,
      observe('Certificate', certificate({ conditions: [ready('False', NOW + MIN)] }), NOW + 2 * MIN),
      NOW + 2 * MIN,
      OPTS,
    );
    expect(d3.event).toBeUndefined();
    // the endpoint serves the Secret's certificate again
    const d4 = run(d3.next, [verdict('ok'), verdict('ok', { host: 'www.shop.example.com' })], NOW + 20 * MIN);
    expect(d4.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    expect(d4.event?.data).toMatchObject({
      statusReason: 'ServingOk',
      statusMessage: '2 endpoints serve the certificate in Secret shop/web-tls again, serial 0B2C (notAfter 2026-04-30T10:00:00Z)',
      statusTransition: isoUtc(NOW + 20 * MIN),
      unhealthyDuration: '0h30m0s',
    });
    expect(validateEvent(d4.event!)).toMatchObject({ ok: true });
    expect(d4.next).toBeUndefined();
  });

  it('an episode opened by Ready=False ends with Ready’s reason even when serving was wrong meanwhile', () => {
    const failed = certificate({ conditions: [ready('False', NOW - 30 * MIN, 'IssuerNotReady')] });
    const d1 = diffReady(undefined, observe('Certificate', failed, NOW, undefined, {}, [verdict('stale')]), NOW, OPTS);
    expect(d1.event?.data['statusReason']).toBe('IssuerNotReady');
    expect(d1.next?.serving).toBeUndefined();
    const d2 = run(d1.next, [verdict('stale')], NOW + MIN);
    expect(d2.event).toBeUndefined();
    expect(run(d2.next, [verdict('ok')], NOW + 2 * MIN).event?.data['statusReason']).toBe('Ready');
  });

  it("routers filter them like any other reason: data.statusReason.startsWith('Serving') gets the .notready and its .active", () => {
    const filter = compileFilter("data.statusReason.startsWith('Serving')", 'certmgr-cert-resource-health-notification-config');
    const opened = run(undefined, [verdict('mismatch')]);
    const closed = run(opened.next, [verdict('ok')], NOW + MIN);
    const other = diffReady(
      undefined,
      observe('Certificate', certificate({ conditions: [ready('False', NOW - 30 * MIN)] }), NOW),
      NOW,
      OPTS,
    );
    expect([opened, closed, other].map((d) => filter.evaluate(d.event!).matched)).toEqual([true, true, false]);
  });
});

describe('a TLS Secret that no Certificate manages', () => {
  const secret = (annotations?: Record<string, string>, dnsNames = ['legacy.example.com']): TlsSecretFacts => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'legacy-tls', namespace: 'shop', ...(annotations ? { annotations } : {}) },
    chain: {
      serial: '0B2C',
      notBefore: iso(EXPECTED.notBefore),
      notAfter: iso(EXPECTED.notAfter),
      subject: 'C=DE, ST=Berlin, L=Berlin, O=Example Corp, OU=Web, OU=Shop, CN=legacy.example.com',
      commonName: 'legacy.example.com',
      dnsNames,
      issuer: 'CN=Example CA',
      chainNotAfter: iso(EXPECTED.notAfter),
    },
  });
  const stale = [verdict('stale', { host: 'legacy.example.com', expected: leaf('0B2C', EXPECTED.notAfter) })];

  it('is unhealthy in the certificate family: the Secret’s name, no issuer, the leaf’s subject and names, a stable UUID', () => {
    const o = observeSecret(secret(), stale);
    expect(o).toMatchObject({ status: 'False', reason: 'ServingStale', since: NOW - 10 * MIN });
    expect(o.message).toContain('expected the certificate in Secret shop/legacy-tls, serial 0B2C');
    const opened = diffReady(undefined, o, NOW, OPTS);
    expect(opened.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(opened.event?.data).toMatchObject({
      certificateName: 'legacy-tls',
      namespace: 'shop',
      issuerName: '',
      statusReason: 'ServingStale',
      SANs: { 'DNS Names': ['legacy.example.com'] },
      subject: {
        commonName: 'legacy.example.com',
        countries: ['DE'],
        provinces: ['Berlin'],
        localities: ['Berlin'],
        organizations: ['Example Corp'],
        organizationalUnits: ['Web', 'Shop'],
      },
    });
    expect(validateEvent(opened.event!)).toMatchObject({ ok: true });
    const closed = diffReady(opened.next, observeSecret(secret(), [verdict('ok')]), NOW + MIN, OPTS);
    expect(closed.event?.data).toMatchObject({ statusReason: 'ServingOk', resourceId: secretResourceId('shop', 'legacy-tls') });
    expect(validateEvent(closed.event!)).toMatchObject({ ok: true });
    expect(uuidProblem(secretResourceId('shop', 'legacy-tls'))).toBeUndefined();
    expect(secretResourceId('shop', 'legacy-tls')).not.toBe(secretResourceId('shop', 'other-tls'));
  });

  it('deleted while notified: .active Deleted; managed by a Certificate meanwhile: .active ServingOk saying so', () => {
    const opened = diffReady(undefined, observeSecret(secret(), stale), NOW, OPTS);
    expect(diffReady(opened.next, undefined, NOW + MIN, OPTS).event?.data).toMatchObject({
      statusReason: 'Deleted',
      statusMessage: 'Secret shop/legacy-tls was deleted while not ready',
      certificateName: 'legacy-tls',
    });
    const managed = observeSecret(secret({ 'cert-manager.io/certificate-name': 'legacy' }), stale);
    expect(managed).toMatchObject({ status: 'True', reason: 'ServingOk' });
    expect(diffReady(opened.next, managed, NOW + MIN, OPTS).event?.data['statusMessage']).toBe(
      'Secret shop/legacy-tls is managed by Certificate legacy: its serving problems are reported on the Certificate',
    );
  });

  it('its policy annotations count: ignored sends nothing, the runbook URL is carried', () => {
    expect(diffReady(undefined, observeSecret(secret(), stale, { ignore: true }), NOW, OPTS)).toEqual({ next: undefined });
    const rb = diffReady(undefined, observeSecret(secret(), stale, { ignore: false, runbookUrl: 'https://rb.example/serving' }), NOW, OPTS);
    expect(rb.event?.data['runbookUrl']).toBe('https://rb.example/serving');
  });

  it('its episode round-trips through the durable state, within the entry size, and keeps the serving mark', () => {
    const many = Array.from({ length: 1000 }, (_, i) => `n${i}.legacy.example.com`);
    const opened = diffReady(undefined, observeSecret(secret(undefined, many), stale), NOW, OPTS).next!;
    const stored = JSON.parse(JSON.stringify(storedHealthState(opened))) as unknown;
    expect(Buffer.byteLength(JSON.stringify(stored))).toBeLessThanOrEqual(HEALTH_ENTRY_MAX_BYTES);
    const back = decodeHealthState(stored);
    expect(back).toMatchObject({ notified: true, serving: true, id: { kind: 'Secret', namespace: 'shop', name: 'legacy-tls' } });
    expect(back?.id.SANs?.['DNS Names']?.length).toBeGreaterThan(0);
    // after a restart the deleted Secret is still resolved
    expect(diffReady(back, undefined, NOW + MIN, OPTS).event?.data['statusReason']).toBe('Deleted');
    expect(decodeHealthState({ ...opened, id: { ...opened.id, kind: 'ConfigMap' } })).toBeUndefined();
  });

  it('subjectOfDn: attribute lists from the one-line DN; unknown attributes are skipped', () => {
    expect(subjectOfDn('CN=a, O=Example, Inc., serialNumber=42, C=US', 'a')).toEqual({
      commonName: 'a',
      countries: ['US'],
      localities: [],
      organizationalUnits: [],
      organizations: ['Example, Inc.'],
      provinces: [],
    });
    expect(subjectOfDn('', undefined).commonName).toBe('');
  });
});
