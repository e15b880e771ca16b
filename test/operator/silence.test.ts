/** NotificationSilence reconciler: the pure mapping and update plan, as tables. */
import { describe, expect, it } from 'vitest';
import type { SilenceView } from '../../src/client/silences.js';
import { desiredSilence, nextTransitionIn, planSilenceUpdate } from '../../src/operator/reconcilers/silence.js';

const o = { kind: 'NotificationSilence', namespace: 'ops', name: 'upgrade' };
const spec = { matcher: ' data.clusterName == "prod" ', endsAt: '2030-01-01T02:00:00Z', comment: ' ingress upgrade ' };

describe('desiredSilence', () => {
  it('trims, defaults the author to the object, owns it by managedBy, leaves startsAt to the service', () => {
    expect(desiredSilence(o, spec)).toEqual({
      matcher: 'data.clusterName == "prod"',
      eventTypeId: null,
      startsAt: null,
      endsAt: '2030-01-01T02:00:00Z',
      comment: 'ingress upgrade',
      createdBy: 'k8s:ops/upgrade',
      managedBy: 'k8s:NotificationSilence/ops/upgrade',
    });
    expect(
      desiredSilence(o, { ...spec, createdBy: 'alice', eventTypeId: 'certmgr-issuer-health-notification-config' }, 'eu'),
    ).toMatchObject({
      createdBy: 'alice',
      eventTypeId: 'certmgr-issuer-health-notification-config',
      managedBy: 'k8s:NotificationSilence/ops/upgrade@eu',
    });
  });
});

describe('planSilenceUpdate', () => {
  const desired = desiredSilence(o, { ...spec, startsAt: '2030-01-01T00:00:00Z' });
  const actual: SilenceView = {
    id: 'x',
    matcher: desired.matcher,
    eventTypeId: null,
    startsAt: '2030-01-01T00:00:00.000Z',
    endsAt: '2030-01-01T02:00:00.000Z',
    comment: desired.comment,
    createdBy: desired.createdBy,
    managedBy: desired.managedBy,
    state: 'PENDING',
  };
  it.each<[string, Partial<SilenceView>, Record<string, unknown> | undefined]>([
    ['in sync (times compared as instants)', {}, undefined],
    ['matcher changed', { matcher: 'true' }, { matcher: desired.matcher }],
    [
      'family changed: the matcher goes with it',
      { eventTypeId: 'cert-expiry-ext-notification-config' },
      { eventTypeId: null, matcher: desired.matcher },
    ],
    ['end moved', { endsAt: '2030-01-01T03:00:00Z' }, { endsAt: desired.endsAt }],
    ['start moved', { startsAt: '2030-01-01T01:00:00+01:00' }, undefined],
    ['start moved for real', { startsAt: '2029-12-31T23:00:00Z' }, { startsAt: desired.startsAt }],
    [
      'comment and author drifted through the API',
      { comment: 'x', createdBy: 'y' },
      { comment: desired.comment, createdBy: desired.createdBy },
    ],
    ['managedBy taken away', { managedBy: null }, { managedBy: desired.managedBy }],
  ])('%s', (_n, drift, want) => {
    expect(planSilenceUpdate(desired, { ...actual, ...drift })).toEqual(want);
  });

  it('startsAt omitted in the spec: the stored start is kept', () => {
    expect(planSilenceUpdate(desiredSilence(o, spec), { ...actual, startsAt: '2029-01-01T00:00:00Z' })).toBeUndefined();
  });
});

describe('nextTransitionIn', () => {
  const t = Date.parse('2030-01-01T00:00:00Z');
  it.each([
    ['pending: at its start', '2030-01-01T00:10:00Z', '2030-01-01T00:20:00Z', 600_000 + 1_000],
    ['active: at its end', '2029-12-31T00:00:00Z', '2030-01-01T00:20:00Z', 1_200_000 + 1_000],
    ['far away: within the hour', '2029-12-31T00:00:00Z', '2030-02-01T00:00:00Z', 3_600_000],
    ['ended: none', '2029-12-31T00:00:00Z', '2029-12-31T01:00:00Z', undefined],
  ])('%s', (_n, startsAt, endsAt, want) => {
    expect(nextTransitionIn({ startsAt, endsAt }, t)).toBe(want);
  });
});
