/**
 * Renewal truth, pure: a Certificate + now → healthy, or unhealthy with reason and message (observe(), with
 * renewalHealth() inside), on cert-manager's sample objects (test/emitter/health/samples, copied from the
 * reference samples with their sources); then diffReady over a failing renewal the way cert-manager's
 * controllers write it: one `.notready` per episode, not one per retry, `.active` on the next issuance.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { validateEvent } from '../../../src/events/schemas.js';
import { diffReady, type HealthOptions, type HealthState } from '../../../src/emitter/health/diff.js';
import { observe, type CertManagerCondition, type CertManagerObject } from '../../../src/emitter/health/observe.js';
import {
  DEFAULT_RENEWAL_OVERDUE_GRACE_MS,
  RENEWAL_FAILING_REASON,
  RENEWAL_OVERDUE_REASON,
  renewalHealth,
  type RenewalStatus,
} from '../../../src/emitter/health/renewal.js';
import { CLUSTER } from '../fixtures.js';

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const t = (s: string): number => Date.parse(s);

const sample = (file: string): CertManagerObject =>
  parseYaml(readFileSync(join(import.meta.dirname, 'samples', file), 'utf8')) as CertManagerObject;
const S01 = sample('01-certificate-ready.yaml');
const S03 = sample('03-certificate-issuance-failed.yaml');
const S05 = sample('05-certificate-expired-but-ready-true-stale.yaml');
const S11 = sample('11-certificate-renewal-failing-ready-true.yaml');

const S11_MESSAGE =
  'The certificate request has failed to complete and will be retried: Failed to wait for order resource "shop-tls-2-3339274843" to become ready: order is in "invalid" state: 429 urn:ietf:params:acme:error:rateLimited: too many certificates already issued for exact set of domains';
const S05_RENEWING = 'Renewing certificate as renewal was scheduled at 2025-07-03 13:50:04 +0000 UTC';

describe('a Certificate + now → its health (observe, the renewal rules inside), on cert-manager’s samples', () => {
  const G = DEFAULT_RENEWAL_OVERDUE_GRACE_MS;
  it.each([
    // 01: Ready, renewalTime 2026-08-15T10:00:02Z, notAfter 2026-08-30T10:00:02Z
    { name: '01 long before renewal', obj: S01, now: t('2026-07-01T00:00:00Z'), want: { status: 'True', reason: 'Ready' } },
    { name: '01 renewal due, inside the grace', obj: S01, now: t('2026-08-15T10:00:02Z') + G - 1, want: { status: 'True' } },
    {
      name: '01 renewal due for the grace, no new certificate: overdue',
      obj: S01,
      now: t('2026-08-15T10:00:02Z') + G,
      want: {
        status: 'False',
        reason: RENEWAL_OVERDUE_REASON,
        message:
          'Renewal was due at Sat, 15 Aug 2026 10:00:02 UTC and no new certificate has been issued (the current certificate expires on Sun, 30 Aug 2026 10:00:02 UTC); no issuance is in progress: is cert-manager running?',
        since: t('2026-08-15T10:00:02Z'),
      },
    },
    {
      name: '01 past notAfter: Expired wins',
      obj: S01,
      now: t('2026-08-31T00:00:00Z'),
      want: { status: 'False', reason: 'Expired', since: t('2026-08-30T10:00:02Z') },
    },
    // 03: Ready=False with a failed issuance: the Ready rules decide, as before
    {
      name: '03 Ready=False (issuance failed): Ready’s reason',
      obj: S03,
      now: t('2023-10-26T22:00:00Z'),
      want: {
        status: 'False',
        reason: 'DoesNotExist',
        message: 'Issuing certificate as Secret does not exist',
        since: t('2023-10-26T20:46:37Z'),
      },
    },
    // 05: Ready=True, Issuing=True (Renewing) since renewalTime 2025-07-03T13:50:04Z, notAfter 2025-08-02T13:50:04Z
    { name: '05 renewing, inside the grace', obj: S05, now: t('2025-07-03T14:00:00Z'), want: { status: 'True' } },
    {
      name: '05 renewing for weeks: overdue, with the issuance in progress',
      obj: S05,
      now: t('2025-07-20T00:00:00Z'),
      want: {
        status: 'False',
        reason: RENEWAL_OVERDUE_REASON,
        message: `Renewal was due at Thu, 03 Jul 2025 13:50:04 UTC and no new certificate has been issued (the current certificate expires on Sat, 02 Aug 2025 13:50:04 UTC); an issuance has been in progress since Thu, 03 Jul 2025 13:50:04 UTC without completing: ${S05_RENEWING}`,
        since: t('2025-07-03T13:50:04Z'),
      },
    },
    { name: '05 past notAfter: Expired', obj: S05, now: t('2025-08-03T00:00:00Z'), want: { status: 'False', reason: 'Expired' } },
    // 11: Ready=True, Issuing=False Failed, 3 failed attempts
    {
      name: '11 renewal failing while Ready: the CA’s words, from lastFailureTime',
      obj: S11,
      now: t('2026-11-20T09:00:00Z'),
      want: { status: 'False', reason: 'Failed', message: S11_MESSAGE, since: t('2026-11-20T08:03:11Z'), issuing: false },
    },
    { name: '11 past notAfter: Expired wins', obj: S11, now: t('2026-12-10T00:00:00Z'), want: { status: 'False', reason: 'Expired' } },
  ])('$name', ({ obj, now, want }) => {
    expect(observe('Certificate', obj, now)).toMatchObject({ stale: false, ...want });
  });

  it('the grace is the option’s: 01 with a 1-day grace is not overdue 2 h after renewalTime', () => {
    const now = t('2026-08-15T12:00:02Z');
    expect(observe('Certificate', S01, now, undefined, { renewalOverdueGraceMs: DAY })).toMatchObject({
      status: 'True',
      renewalOverdueAt: t('2026-08-16T10:00:02Z'),
    });
    expect(observe('Certificate', S01, now)).toMatchObject({ status: 'False', reason: RENEWAL_OVERDUE_REASON });
  });

  it('a stale Ready=True (observedGeneration < generation) is held, failing renewal or not', () => {
    const stale = { ...S11, metadata: { ...S11.metadata, generation: 2 } };
    expect(observe('Certificate', stale, t('2026-11-20T09:00:00Z'))).toMatchObject({ status: 'True', stale: true });
  });
});

describe('renewalHealth: the renewal rules alone', () => {
  const NOW = t('2026-11-20T12:00:00Z');
  const failed = (at: number, reason = 'Failed', message = 'The certificate request has failed to complete and will be retried: boom') =>
    ({ type: 'Issuing', status: 'False', reason, message, lastTransitionTime: new Date(at).toISOString() }) as CertManagerCondition;
  const renewing = (at: number) =>
    ({
      type: 'Issuing',
      status: 'True',
      reason: 'Renewing',
      message: 'Renewing certificate',
      lastTransitionTime: new Date(at).toISOString(),
    }) as CertManagerCondition;
  it.each<{ name: string; s: RenewalStatus; want: Record<string, unknown> }>([
    { name: 'nothing known: healthy', s: {}, want: { healthy: true } },
    {
      name: 'renewal ahead: healthy, overdue at renewalTime + grace',
      s: { renewalTime: NOW + HOUR },
      want: { healthy: true, overdueAt: NOW + 2 * HOUR },
    },
    {
      name: 'Issuing=False Failed: failing with its reason and message, since lastFailureTime',
      s: { issuing: failed(NOW - 2 * HOUR), failedIssuanceAttempts: 1, lastFailureTime: NOW - 2 * HOUR },
      want: { healthy: false, kind: 'failing', reason: 'Failed', since: NOW - 2 * HOUR },
    },
    {
      name: 'Issuing=False with another reason (a denied request): failing with that reason',
      s: { issuing: failed(NOW - HOUR, 'Denied', 'The certificate request has failed to complete and will be retried: denied by policy') },
      want: {
        healthy: false,
        reason: 'Denied',
        message: 'The certificate request has failed to complete and will be retried: denied by policy',
        since: NOW - HOUR,
      },
    },
    {
      name: 'Issuing=False Issued (server-side apply’s success), renewal ahead: healthy',
      s: { issuing: { ...failed(NOW - HOUR, 'Issued', 'The certificate has been successfully issued') }, renewalTime: NOW + DAY },
      want: { healthy: true },
    },
    {
      name: 'retrying after 2 failures (Issuing=True again): failing, RenewalFailing, counted',
      s: { issuing: renewing(NOW - MIN), failedIssuanceAttempts: 2, lastFailureTime: NOW - HOUR },
      want: {
        healthy: false,
        kind: 'failing',
        reason: RENEWAL_FAILING_REASON,
        message: '2 issuance attempts failed, the last at Fri, 20 Nov 2026 11:00:00 UTC; cert-manager is retrying: Renewing certificate',
        since: NOW - HOUR,
      },
    },
    {
      name: 'lastFailureTime alone: failing',
      s: { lastFailureTime: NOW - HOUR },
      want: {
        healthy: false,
        reason: RENEWAL_FAILING_REASON,
        message: 'An issuance attempt failed, the last at Fri, 20 Nov 2026 11:00:00 UTC',
      },
    },
    {
      name: 'failing and overdue: the failure wins (it has the cause)',
      s: { issuing: failed(NOW - HOUR), failedIssuanceAttempts: 5, lastFailureTime: NOW - HOUR, renewalTime: NOW - 10 * DAY },
      want: { healthy: false, kind: 'failing', reason: 'Failed' },
    },
    {
      name: 'overdue exactly at renewalTime + grace',
      s: { renewalTime: NOW - HOUR },
      want: { healthy: false, kind: 'overdue', reason: RENEWAL_OVERDUE_REASON, since: NOW - HOUR },
    },
    { name: 'one ms before: healthy', s: { renewalTime: NOW - HOUR + 1 }, want: { healthy: true, overdueAt: NOW + 1 } },
  ])('$name', ({ s, want }) => {
    expect(renewalHealth(s, NOW, HOUR)).toMatchObject(want);
  });
});

describe('diffReady over a failing renewal (sample 11) and an overdue one (sample 01)', () => {
  const OPTS: HealthOptions = { cluster: CLUSTER, gracePeriodMs: 5 * MIN, unknownGracePeriodMs: 10 * MIN, issuingGracePeriodMs: 15 * MIN };
  const UID = '7d0f3a52-6a3e-4b8e-9c1d-2f4b6e8a0c13';
  const withStatus = (o: CertManagerObject, status: Record<string, unknown>): CertManagerObject => ({
    ...o,
    metadata: { ...o.metadata, uid: UID },
    status: status as NonNullable<CertManagerObject['status']>,
  });
  const step = (prev: HealthState | undefined, obj: CertManagerObject, now: number) =>
    diffReady(prev, observe('Certificate', obj, now), now, OPTS);

  it('one .notready per failure episode (not per retry), .active on the next issuance with the episode’s unhealthyDuration', () => {
    const s11 = withStatus(S11, S11.status!);
    const readyCond = S11.status!.conditions![0]!;
    const firstFailure = t('2026-11-20T08:03:11Z');

    // inside the grace period: nothing yet, come back when it ends
    let d = step(undefined, s11, firstFailure + MIN);
    expect(d.event).toBeUndefined();
    expect(d.recheckAt).toBe(firstFailure + 5 * MIN);

    // the grace period over: one .notready with the CA's words
    d = step(d.next, s11, firstFailure + 5 * MIN);
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
    expect(d.event?.data).toMatchObject({
      certificateName: 'shop-tls',
      namespace: 'shop',
      issuerName: 'letsencrypt-prod',
      statusReason: 'Failed',
      statusMessage: S11_MESSAGE,
      statusTransition: '2026-11-20T08:03:11Z',
      unhealthyDuration: '0h5m0s',
    });
    expect(validateEvent(d.event)).toMatchObject({ ok: true });
    let prev = d.next;

    // the trigger controller retries after its back-off (Issuing=True), the attempt fails again: nothing new
    const retryAt = firstFailure + HOUR;
    const retrying = withStatus(S11, {
      ...S11.status,
      conditions: [
        readyCond,
        {
          type: 'Issuing',
          status: 'True',
          reason: 'Renewing',
          message: 'Renewing certificate as renewal was scheduled at 2026-11-09 07:00:00 +0000 UTC',
          lastTransitionTime: new Date(retryAt).toISOString(),
          observedGeneration: 1,
        },
      ],
    });
    d = step(prev, retrying, retryAt + S);
    expect(d.event).toBeUndefined();
    prev = d.next;
    const secondFailure = retryAt + 30 * S;
    const failedAgain = withStatus(S11, {
      ...S11.status,
      conditions: [
        readyCond,
        {
          type: 'Issuing',
          status: 'False',
          reason: 'Failed',
          message: S11_MESSAGE,
          lastTransitionTime: new Date(secondFailure).toISOString(),
          observedGeneration: 1,
        },
      ],
      failedIssuanceAttempts: 4,
      lastFailureTime: new Date(secondFailure).toISOString(),
    });
    d = step(prev, failedAgain, secondFailure + 10 * MIN);
    expect(d.event).toBeUndefined();
    expect(d.next).toMatchObject({ notified: true, unhealthySince: firstFailure });
    prev = d.next;

    // success, as the issuing controller writes it: Issuing removed, revision 2, failures cleared; the
    // readiness controller has not yet moved renewalTime (overdue for a moment): still the same episode
    const issuedAt = t('2026-11-21T08:00:00Z');
    const issued = withStatus(S11, {
      conditions: [readyCond],
      notBefore: S11.status!['notBefore'],
      notAfter: S11.status!['notAfter'],
      renewalTime: S11.status!['renewalTime'],
      revision: 2,
    });
    d = step(prev, issued, issuedAt);
    expect(d.event).toBeUndefined();
    prev = d.next;
    // the readiness controller writes the new certificate's times: .active, Ready's own words
    const renewed = withStatus(S11, {
      ...issued.status,
      notBefore: '2026-11-21T07:00:00Z',
      notAfter: '2027-02-19T07:00:00Z',
      renewalTime: '2027-01-20T07:00:00Z',
    });
    d = step(prev, renewed, issuedAt + S);
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    expect(d.event?.data).toMatchObject({
      statusReason: 'Ready',
      statusMessage: 'Certificate is up to date and has not expired',
      statusTransition: '2026-11-21T08:00:01Z', // Ready never left True: the recovery is when it was seen
      unhealthyDuration: '23h56m50s', // first failure → recovery
      resourceId: UID,
    });
    expect(validateEvent(d.event)).toMatchObject({ ok: true });
    expect(d.next).toBeUndefined();
    // healthy again, looked at again when the next renewal would become overdue
    expect(d.recheckAt).toBe(t('2027-01-20T07:00:00Z') + DEFAULT_RENEWAL_OVERDUE_GRACE_MS);
  });

  it('overdue: the clock alone turns it unhealthy (recheckAt), .notready RenewalOverdue from renewalTime, .active once renewed', () => {
    const s01 = withStatus(S01, S01.status!);
    const due = t('2026-08-15T10:00:02Z');
    let d = step(undefined, s01, due + 10 * MIN);
    expect(d).toEqual({ next: undefined, recheckAt: due + HOUR });
    d = step(undefined, s01, due + HOUR);
    expect(d.event?.data).toMatchObject({
      statusReason: RENEWAL_OVERDUE_REASON,
      statusTransition: '2026-08-15T10:00:02Z',
      unhealthyDuration: '1h0m0s',
    });
    expect(validateEvent(d.event)).toMatchObject({ ok: true });
    // still overdue: nothing more
    const prev = d.next;
    expect(step(prev, s01, due + 5 * HOUR).event).toBeUndefined();
    const renewed = withStatus(S01, {
      ...S01.status,
      notBefore: '2026-08-15T15:00:00Z',
      notAfter: '2026-11-13T15:00:00Z',
      renewalTime: '2026-10-29T15:00:00Z',
      revision: 2,
    });
    d = step(prev, renewed, due + 5 * HOUR);
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.active');
    expect(d.event?.data).toMatchObject({ unhealthyDuration: '5h0m0s' });
  });

  it('a healthy certificate stays silent: sample 01 before its renewal and after a renewal that completed in time', () => {
    const s01 = withStatus(S01, S01.status!);
    for (const now of [t('2026-06-02T00:00:00Z'), t('2026-08-15T10:00:02Z'), t('2026-08-15T10:30:00Z')])
      expect(step(undefined, s01, now).event).toBeUndefined();
  });
});
