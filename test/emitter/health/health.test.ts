/** Pure health decisions: observe() and diffReady() tables, event shapes, durations. */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../../src/events/schemas.js';
import { diffReady, type HealthOptions, type HealthState } from '../../../src/emitter/health/diff.js';
import { unhealthyDurationOf, isoUtc } from '../../../src/events/wire-formats.js';
import { NO_CONDITION_REASON, observe, type CertManagerObject, type HealthKind } from '../../../src/emitter/health/observe.js';
import { CLUSTER, UID_A, UID_B, certificate, iso, issuer, issuing, ready } from '../fixtures.js';

const NOW = Date.parse('2026-03-01T10:00:00Z');
const S = 1000;
const MIN = 60 * S;
const OPTS: HealthOptions = { cluster: CLUSTER, gracePeriodMs: 1 * MIN, unknownGracePeriodMs: 2 * MIN, issuingGracePeriodMs: 5 * MIN };

const run = (kind: HealthKind, prev: HealthState | undefined, obj: CertManagerObject | undefined, now = NOW) =>
  diffReady(prev, obj ? observe(kind, obj, now) : undefined, now, OPTS);

/** A state as diffReady leaves it after emitting `.notready` for `obj`. */
function notifiedState(kind: HealthKind, obj: CertManagerObject, since: number): HealthState {
  const d = diffReady(undefined, observe(kind, obj, since + 10 * MIN), since + 10 * MIN, OPTS);
  expect(d.next?.notified).toBe(true);
  return d.next!;
}

describe('unhealthyDurationOf', () => {
  it.each([
    [0, '0h0m0s'],
    [250, '0h0m0.25s'],
    [1500, '0h0m1.5s'],
    [61_001, '0h1m1.001s'],
    [5 * MIN + 3_250, '0h5m3.25s'],
    [26 * 3600 * S, '26h0m0s'],
    [3723_456, '1h2m3.456s'],
    [-5, '0h0m0s'],
  ])('%d ms → %s', (ms, want) => {
    expect(unhealthyDurationOf(ms)).toBe(want);
    expect(want).toMatch(/^[0-9]+h[0-9]+m[0-9]+(\.[0-9]+)?s$/);
  });
});

describe('observe', () => {
  it('Ready=False: reason, message, lastTransitionTime; Date or string timestamps', () => {
    const c = certificate({
      conditions: [
        {
          ...ready('False', NOW - MIN, 'DoesNotExist', 'Issuing certificate as Secret does not exist'),
          lastTransitionTime: new Date(NOW - MIN),
        },
      ],
    });
    expect(observe('Certificate', c, NOW)).toMatchObject({
      status: 'False',
      reason: 'DoesNotExist',
      since: NOW - MIN,
      stale: false,
      issuing: false,
    });
  });

  it('no Ready condition is Unknown since creation', () => {
    expect(observe('Issuer', issuer('Issuer', { created: NOW - 3 * MIN }), NOW)).toMatchObject({
      status: 'Unknown',
      reason: NO_CONDITION_REASON,
      since: NOW - 3 * MIN,
    });
  });

  it('observedGeneration below generation is stale', () => {
    expect(
      observe('Certificate', certificate({ generation: 2, conditions: [ready('False', NOW - MIN, 'DoesNotExist', '', 1)] }), NOW).stale,
    ).toBe(true);
    expect(
      observe('Certificate', certificate({ generation: 2, conditions: [ready('False', NOW - MIN, 'DoesNotExist', '', 2)] }), NOW).stale,
    ).toBe(false);
  });

  it('Ready=True after notAfter is Expired (stale Ready), with cert-manager’s message format', () => {
    const notAfter = Date.parse('2025-08-02T13:50:04Z');
    const c = certificate({
      conditions: [ready('True', Date.parse('2025-05-04T14:48:37Z'), 'Ready', 'Certificate is up to date and has not expired', 5)],
      generation: 5,
      status: { notAfter: iso(notAfter) },
    });
    expect(observe('Certificate', c, NOW)).toMatchObject({
      status: 'False',
      reason: 'Expired',
      message: 'Certificate expired on Sat, 02 Aug 2025 13:50:04 UTC',
      since: notAfter,
    });
  });

  it('subject and SANs from the spec; a ClusterIssuer has namespace ""', () => {
    const o = observe('Certificate', certificate({ conditions: [ready('True', NOW)] }), NOW);
    expect(o.id).toEqual({
      kind: 'Certificate',
      namespace: 'shop',
      name: 'web-tls',
      uid: UID_A,
      issuerName: 'letsencrypt-prod',
      subject: {
        commonName: 'shop.example.com',
        countries: ['DE'],
        localities: [],
        organizationalUnits: [],
        organizations: ['Example Corp'],
        provinces: [],
      },
      SANs: { 'DNS Names': ['shop.example.com', 'www.shop.example.com'] },
    });
    const noNames = observe('Certificate', certificate({ spec: { dnsNames: [], commonName: undefined, subject: undefined } }), NOW);
    expect(noNames.id.SANs).toEqual({});
    expect(noNames.id.subject?.commonName).toBe('');
    expect(observe('ClusterIssuer', issuer('ClusterIssuer', { conditions: [ready('True', NOW)] }), NOW).id.namespace).toBe('');
  });
});

describe('diffReady', () => {
  it('healthy with nothing emitted: no event, no state', () => {
    expect(run('Issuer', undefined, issuer('Issuer', { conditions: [ready('True', NOW - MIN, 'ACMEAccountRegistered')] }))).toEqual({
      next: undefined,
    });
  });

  it('Ready=False inside the grace period: nothing yet, come back when it ends', () => {
    const d = run('Issuer', undefined, issuer('Issuer', { conditions: [ready('False', NOW - 10 * S, 'ErrUpdateACMEAccount')] }));
    expect(d.event).toBeUndefined();
    expect(d.next).toMatchObject({ notified: false, unhealthySince: NOW - 10 * S, uid: UID_B });
    expect(d.recheckAt).toBe(NOW - 10 * S + MIN);
  });

  it('Ready=False past the grace period: one .notready with the condition’s fields', () => {
    const msg = 'Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact';
    const d = run('Issuer', undefined, issuer('Issuer', { conditions: [ready('False', NOW - 2 * MIN, 'ErrUpdateACMEAccount', msg)] }));
    expect(d.event).toEqual({
      type: 'evt.healthstatus.certmgr-issuer.notready',
      data: {
        clusterId: CLUSTER.id,
        clusterName: 'prod',
        issuerName: 'letsencrypt-staging',
        namespace: 'cert-manager',
        resourceId: UID_B,
        statusMessage: msg,
        statusReason: 'ErrUpdateACMEAccount',
        statusTransition: isoUtc(NOW - 2 * MIN),
      },
    });
    expect(d.event!.data['statusTransition']).toBe('2026-03-01T09:58:00Z');
    expect(d.next).toMatchObject({ notified: true, unhealthySince: NOW - 2 * MIN });
  });

  it('only once per episode: still unhealthy (even with another reason) sends nothing', () => {
    const prev = notifiedState(
      'Issuer',
      issuer('Issuer', { conditions: [ready('False', NOW - 20 * MIN, 'ErrUpdateACMEAccount')] }),
      NOW - 20 * MIN,
    );
    const d = run('Issuer', prev, issuer('Issuer', { conditions: [ready('False', NOW - 20 * MIN, 'ErrRegisterACMEAccount')] }));
    expect(d.event).toBeUndefined();
    expect(d.next).toMatchObject({ notified: true, unhealthySince: NOW - 20 * MIN });
    // Unknown is still the same episode
    expect(run('Issuer', prev, issuer('Issuer', { conditions: [ready('Unknown', NOW - MIN, 'Pending')] })).event).toBeUndefined();
  });

  it('Ready=True after .notready: .active with unhealthyDuration up to Ready’s lastTransitionTime', () => {
    const start = NOW - (3600 + 62) * S - 500;
    const prev = notifiedState('ClusterIssuer', issuer('ClusterIssuer', { conditions: [ready('False', start, 'ErrGetKeyPair')] }), start);
    const d = run(
      'ClusterIssuer',
      prev,
      issuer('ClusterIssuer', { conditions: [ready('True', NOW - 10 * S, 'KeyPairVerified', 'Signing CA verified')] }),
    );
    expect(d.event).toEqual({
      type: 'evt.healthstatus.certmgr-issuer.active',
      data: {
        clusterId: CLUSTER.id,
        clusterName: 'prod',
        issuerName: 'ca-issuer',
        namespace: '',
        resourceId: UID_B,
        statusMessage: 'Signing CA verified',
        statusReason: 'KeyPairVerified',
        statusTransition: isoUtc(NOW - 10 * S),
        unhealthyDuration: '1h0m52.5s',
      },
    });
    expect(d.next).toBeUndefined();
  });

  it('a blip inside the grace period sends nothing at all', () => {
    const t0 = NOW;
    const d1 = run('Certificate', undefined, certificate({ conditions: [ready('False', t0, 'IncorrectIssuer')] }), t0 + 5 * S);
    expect(d1.event).toBeUndefined();
    const d2 = run('Certificate', d1.next, certificate({ conditions: [ready('True', t0 + 20 * S)] }), t0 + 20 * S);
    expect(d2).toEqual({ next: undefined });
  });

  it('flapping: each return to False starts a new grace period; one .notready once it lasts', () => {
    const t0 = NOW;
    let prev: HealthState | undefined;
    const seq: [number, 'True' | 'False', number][] = [
      // [observed at, status, lastTransitionTime]
      [t0, 'False', t0],
      [t0 + 30 * S, 'True', t0 + 30 * S],
      [t0 + 40 * S, 'False', t0 + 40 * S],
      [t0 + 70 * S, 'True', t0 + 70 * S],
      [t0 + 80 * S, 'False', t0 + 80 * S],
      [t0 + 130 * S, 'False', t0 + 80 * S], // 50 s into the episode
      [t0 + 141 * S, 'False', t0 + 80 * S], // 61 s: due
      [t0 + 200 * S, 'False', t0 + 80 * S],
    ];
    const events: string[] = [];
    for (const [at, st, ltt] of seq) {
      const d = run('Certificate', prev, certificate({ conditions: [ready(st, ltt, st === 'True' ? 'Ready' : 'InvalidKeyPair')] }), at);
      if (d.event) events.push(`${(at - t0) / S}:${d.event.type.split('.').pop()}`);
      prev = d.next;
    }
    expect(events).toEqual(['141:notready']);
  });

  it('after .active, a new failure is a new episode with a new grace period', () => {
    const prev = notifiedState(
      'Issuer',
      issuer('Issuer', { conditions: [ready('False', NOW - 30 * MIN, 'ErrUpdateACMEAccount')] }),
      NOW - 30 * MIN,
    );
    const healed = run(
      'Issuer',
      prev,
      issuer('Issuer', { conditions: [ready('True', NOW - 2 * MIN, 'ACMEAccountRegistered')] }),
      NOW - MIN,
    );
    expect(healed.event?.type).toBe('evt.healthstatus.certmgr-issuer.active');
    const again = run('Issuer', healed.next, issuer('Issuer', { conditions: [ready('False', NOW - 30 * S, 'ErrUpdateACMEAccount')] }));
    expect(again.event).toBeUndefined();
    expect(again.recheckAt).toBe(NOW + 30 * S);
  });

  it('stale conditions (observedGeneration < generation) are held: no alert, no recovery', () => {
    const staleFalse = certificate({ generation: 2, conditions: [ready('False', NOW - 30 * MIN, 'RequestChanged', '', 1)] });
    expect(run('Certificate', undefined, staleFalse)).toEqual({ next: undefined });
    const prev = notifiedState('Certificate', certificate({ conditions: [ready('False', NOW - 30 * MIN)] }), NOW - 30 * MIN);
    const staleTrue = certificate({ generation: 2, conditions: [ready('True', NOW - MIN, 'Ready', '', 1)] });
    const d = run('Certificate', prev, staleTrue);
    expect(d.event).toBeUndefined();
    expect(d.next?.notified).toBe(true);
    // once cert-manager has looked at generation 2, the recovery goes out
    expect(
      run('Certificate', d.next, certificate({ generation: 2, conditions: [ready('True', NOW - MIN, 'Ready', '', 2)] })).event?.type,
    ).toBe('evt.healthstatus.certmgr-certificate-resource.active');
  });

  it('expired but Ready=True (stale): .notready Expired after the grace period, from notAfter', () => {
    const notAfter = NOW - 2 * MIN;
    const c = certificate({
      conditions: [ready('True', NOW - 60 * 86_400_000, 'Ready', 'Certificate is up to date and has not expired')],
      status: { notAfter: iso(notAfter) },
    });
    const d = run('Certificate', undefined, c);
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(d.event?.data).toMatchObject({ statusReason: 'Expired', statusTransition: isoUtc(notAfter), unhealthyDuration: '0h2m0s' });
    // just expired: wait for the grace period
    const fresh = run('Certificate', undefined, c, notAfter + 10 * S);
    expect(fresh.event).toBeUndefined();
    expect(fresh.recheckAt).toBe(notAfter + MIN);
  });

  it('Ready=True with notAfter ahead: look again at notAfter', () => {
    const notAfter = NOW + 3 * 86_400_000;
    expect(
      run('Certificate', undefined, certificate({ conditions: [ready('True', NOW - MIN)], status: { notAfter: iso(notAfter) } })),
    ).toEqual({ next: undefined, recheckAt: notAfter });
  });

  it('renewed after expiry: .active once the new notAfter is ahead', () => {
    const prev = notifiedState(
      'Certificate',
      certificate({ conditions: [ready('True', NOW - 99 * MIN)], status: { notAfter: iso(NOW - 60 * MIN) } }),
      NOW - 60 * MIN,
    );
    const d = run(
      'Certificate',
      prev,
      certificate({ conditions: [ready('True', NOW - 99 * MIN)], status: { notAfter: iso(NOW + 60 * 86_400_000) } }),
    );
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    // Ready's lastTransitionTime predates the episode: the duration runs to now
    expect(d.event?.data['unhealthyDuration']).toBe('1h0m0s');
  });

  it('no Ready condition: unhealthy only after the (longer) unknown grace period', () => {
    expect(run('Issuer', undefined, issuer('Issuer', { created: NOW - 90 * S })).event).toBeUndefined();
    const d = run('Issuer', undefined, issuer('Issuer', { created: NOW - 3 * MIN }));
    expect(d.event?.data).toMatchObject({ statusReason: NO_CONDITION_REASON, statusTransition: isoUtc(NOW - 3 * MIN) });
  });

  it('routine issuance (Issuing=True, no failure) gets the issuing grace period; a failed attempt does not', () => {
    const conds = [
      ready('False', NOW - 2 * MIN, 'DoesNotExist', 'Issuing certificate as Secret does not exist'),
      issuing('True', NOW - 2 * MIN),
    ];
    const inProgress = run('Certificate', undefined, certificate({ conditions: conds }));
    expect(inProgress.event).toBeUndefined();
    expect(inProgress.recheckAt).toBe(NOW - 2 * MIN + 5 * MIN);
    const failed = run(
      'Certificate',
      undefined,
      certificate({ conditions: [conds[0]!, issuing('False', NOW - MIN, 'Failed')], status: { failedIssuanceAttempts: 1 } }),
    );
    expect(failed.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
  });

  it('deleted while .notready was emitted: .active with reason Deleted; deleted otherwise: forgotten', () => {
    const prev = notifiedState('Certificate', certificate({ conditions: [ready('False', NOW - 30 * MIN)] }), NOW - 30 * MIN);
    const d = run('Certificate', prev, undefined);
    expect(d.next).toBeUndefined();
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    expect(d.event?.data).toMatchObject({
      statusReason: 'Deleted',
      statusMessage: 'Certificate shop/web-tls was deleted while not ready',
      resourceId: UID_A,
      certificateName: 'web-tls',
      unhealthyDuration: '0h30m0s',
    });
    expect(run('Certificate', { uid: UID_A, notified: false, unhealthySince: NOW - S, id: prev.id }, undefined)).toEqual({
      next: undefined,
    });
  });

  it('replaced by a new object of the same name: resolve the old one, then start over', () => {
    const prev = notifiedState('Issuer', issuer('Issuer', { conditions: [ready('False', NOW - 30 * MIN)] }), NOW - 30 * MIN);
    const d = run('Issuer', prev, issuer('Issuer', { uid: UID_A, conditions: [ready('True', NOW)] }));
    expect(d.event?.data).toMatchObject({ statusReason: 'Deleted', resourceId: UID_B });
    expect(d.next).toBeUndefined();
    expect(d.recheckAt).toBe(NOW);
  });

  it('every event validates and has exactly the spec’s fields', () => {
    const keys = (kind: HealthKind, obj: CertManagerObject) => {
      const prev = notifiedState(kind, obj, NOW - 30 * MIN);
      const notready = diffReady(undefined, observe(kind, obj, NOW), NOW, OPTS).event!;
      const healthy = structuredClone(obj);
      healthy.status!.conditions = [ready('True', NOW)];
      const active = run(kind, prev, healthy).event!;
      for (const e of [notready, active]) expect(validateEvent(e)).toMatchObject({ ok: true });
      return [Object.keys(notready.data).sort(), Object.keys(active.data).sort()];
    };
    const [certNotReady, certActive] = keys('Certificate', certificate({ conditions: [ready('False', NOW - 30 * MIN)] }));
    expect(certNotReady).toEqual([
      'SANs',
      'certificateName',
      'clusterId',
      'clusterName',
      'issuerName',
      'namespace',
      'statusMessage',
      'statusReason',
      'statusTransition',
      'subject',
      'unhealthyDuration',
    ]);
    expect(certActive).toEqual([...certNotReady!, 'resourceId'].sort());
    const [issNotReady, issActive] = keys('Issuer', issuer('Issuer', { conditions: [ready('False', NOW - 30 * MIN)] }));
    expect(issNotReady).toEqual([
      'clusterId',
      'clusterName',
      'issuerName',
      'namespace',
      'resourceId',
      'statusMessage',
      'statusReason',
      'statusTransition',
    ]);
    expect(issActive).toEqual([...issNotReady!, 'unhealthyDuration'].sort());
    const [, cissActive] = keys('ClusterIssuer', issuer('ClusterIssuer', { conditions: [ready('False', NOW - 30 * MIN)] }));
    expect(cissActive).toEqual(issActive);
  });
});
