import { describe, expect, it } from 'vitest';
import type { GroupRow } from '../../src/grouping/decide.js';
import {
  HOLD_GRACE_MS,
  holdIdentity,
  holdVerdict,
  issuerCandidatesOf,
  onIssuerHealth,
  pickIssuer,
  planHoldFlush,
  scheduleHold,
  type HoldInput,
  type Streak,
} from '../../src/grouping/hold.js';
import { certificateResourceNotReady, issuerNotReady } from '../fixtures/events.js';

const T0 = 1_700_000_000_000;
const WAIT = 30_000;
const at = (orderAt: number, orderSeq = 0): Streak => ({ orderAt, orderSeq });

function hold(over: Partial<GroupRow> = {}): GroupRow {
  return {
    id: 'h1',
    companyId: 'c1',
    routerId: 'r1',
    key: 'certmgr:hold:abc',
    labels: { 'data.issuerName': 'le', 'data.clusterName': 'prod' },
    routerName: 'certs',
    integrationId: 'i1',
    groupWaitMs: WAIT,
    groupIntervalMs: 300_000,
    repeatIntervalMs: null,
    createdAt: T0,
    nextFlushAt: T0 + WAIT,
    lastFlushAt: null,
    changed: true,
    sentFiring: false,
    memberCount: 0,
    overflowFiring: 0,
    overflowTransient: 0,
    resolvedTold: 0,
    lastEventId: 'e1',
    lastFlushEventId: null,
    holdIssuer: 'certmgr:issuer:c:ns:le',
    issuerReadyAt: null,
    holdReleased: false,
    ...over,
  };
}

describe('holdVerdict: where a certificate event of a holding router goes', () => {
  const rows: [string, HoldInput, 'hold' | 'pass'][] = [
    [
      'issuer not ready, the certificate failed after it: held',
      { state: 'firing', member: false, issuer: at(10), certificate: at(20) },
      'hold',
    ],
    [
      'issuer not ready, failed in the same instant, later in the batch: held',
      { state: 'firing', member: false, issuer: at(10, 1), certificate: at(10, 2) },
      'hold',
    ],
    [
      'issuer not ready, the certificate was failing before it: its own incident',
      { state: 'firing', member: false, issuer: at(20), certificate: at(10) },
      'pass',
    ],
    ['issuer ready: its own notification', { state: 'firing', member: false, issuer: null, certificate: at(10) }, 'pass'],
    [
      'a recovery of a certificate not held: its own notification',
      { state: 'resolved', member: false, issuer: at(10), certificate: null },
      'pass',
    ],
    [
      'a late failure (the certificate is healthy by now): its own notification',
      { state: 'firing', member: false, issuer: at(10), certificate: null },
      'pass',
    ],
    ['a member recovering: stays with the hold', { state: 'resolved', member: true, issuer: null, certificate: null }, 'hold'],
    [
      'a member failing again after the issuer recovered: stays with the hold',
      { state: 'firing', member: true, issuer: null, certificate: at(30) },
      'hold',
    ],
  ];
  it.each(rows)('%s', (_name, input, want) => {
    expect(holdVerdict(input)).toBe(want);
  });
});

describe('the issuer a certificate names', () => {
  const cert = certificateResourceNotReady({ clusterId: 'c', clusterName: 'prod', namespace: 'shop', issuerName: 'le' });
  const [namespaced, cluster] = issuerCandidatesOf(cert)!;
  it('is the Issuer of its namespace or the ClusterIssuer, keyed as their own events are', () => {
    expect(namespaced.key).toBe('certmgr:issuer:c:shop:le');
    expect(cluster.key).toBe('certmgr:issuer:c::le');
    expect(issuerCandidatesOf(issuerNotReady())).toBeNull();
    expect(issuerCandidatesOf(certificateResourceNotReady({ issuerName: '' }))).toBeNull();
  });
  it.each([
    ['both known: the namespaced Issuer', [namespaced.key, cluster.key], 'Issuer'],
    ['only the ClusterIssuer known', [cluster.key], 'ClusterIssuer'],
    ['only the Issuer known', [namespaced.key], 'Issuer'],
    ['neither known', [], null],
  ] as const)('%s', (_name, known, want) => {
    const health = new Map<string, Streak>(known.map((k) => [k, at(1)]));
    const got = pickIssuer([namespaced, cluster], health);
    expect(got === null ? null : got.namespace ? 'Issuer' : 'ClusterIssuer').toBe(want);
  });
  it('gives one hold per router and issuer, labelled with the issuer', () => {
    const a = holdIdentity('r1', namespaced);
    expect(a.key).toMatch(/^certmgr:hold:[0-9a-f]{64}$/);
    expect(a.key).not.toBe(holdIdentity('r2', namespaced).key);
    expect(a.key).not.toBe(holdIdentity('r1', cluster).key);
    expect(a.labels).toEqual({ 'data.issuerName': 'le', 'data.namespace': 'shop', 'data.clusterName': 'prod' });
    expect(holdIdentity('r1', cluster).labels).toEqual({ 'data.issuerName': 'le', 'data.clusterName': 'prod' });
  });
});

describe('a hold through an issuer outage (ingestion schedule, issuer changes, flusher)', () => {
  const counts = (firing: number, resolved = 0) => ({ firing, transient: 0, resolved });
  type Row = [
    string,
    GroupRow,
    ReturnType<typeof counts>,
    number,
    { kind: string | null; firing?: number; resolved?: number; allResolved?: boolean; del: boolean; next?: number | null; label: string },
  ];
  const opened = { lastFlushAt: T0 + WAIT, sentFiring: true, lastFlushEventId: 'e1', memberCount: 200 };
  const up = T0 + 3_600_000;
  const rows: Row[] = [
    [
      'issuer not ready: the opening, once, counting the certificates held',
      hold(),
      counts(200),
      T0 + WAIT,
      { kind: 'held', firing: 200, resolved: 0, del: false, next: null, label: 'not ready' },
    ],
    [
      'issuer still not ready, opening sent: nothing (more certificates held are counts, not pages)',
      hold({ ...opened, changed: true }),
      counts(250),
      T0 + 60_000,
      { kind: null, del: false, next: null, label: 'not ready' },
    ],
    [
      'issuer not ready, everything recovered before the opening: nothing yet',
      hold(),
      counts(0, 3),
      T0 + WAIT,
      { kind: null, del: false, next: null, label: 'not ready' },
    ],
    [
      'issuer active, every certificate recovered: ONE summary, all recovered',
      hold({ ...opened, issuerReadyAt: up }),
      counts(0, 200),
      up + 1000,
      { kind: 'released', firing: 0, resolved: 200, allResolved: true, del: true, label: 'ready again' },
    ],
    [
      'issuer active, some still broken within the grace: wait for the grace',
      hold({ ...opened, issuerReadyAt: up }),
      counts(20, 180),
      up + 1000,
      { kind: null, del: false, next: up + HOLD_GRACE_MS, label: 'ready again' },
    ],
    [
      'still broken a grace after the issuer recovered: ONE summary naming them',
      hold({ ...opened, issuerReadyAt: up }),
      counts(20, 180),
      up + HOLD_GRACE_MS,
      { kind: 'released', firing: 20, resolved: 180, allResolved: false, del: false, next: null, label: 'ready again' },
    ],
    [
      'after the summary, some recover: nothing',
      hold({ ...opened, issuerReadyAt: up, holdReleased: true, resolvedTold: 180 }),
      counts(10, 10),
      up + HOLD_GRACE_MS + 1,
      { kind: null, del: false, next: null, label: 'ready again' },
    ],
    [
      'after the summary, the last recover: all recovered, counting the episode',
      hold({ ...opened, issuerReadyAt: up, holdReleased: true, resolvedTold: 180 }),
      counts(0, 20),
      up + HOLD_GRACE_MS + 2,
      { kind: 'resolved', firing: 0, resolved: 200, allResolved: true, del: true, label: 'ready again' },
    ],
    [
      'a blip: the issuer recovered before the opening and so did the certificates: nothing at all',
      hold({ issuerReadyAt: T0 + 5000 }),
      counts(0, 5),
      T0 + WAIT,
      { kind: null, del: true, label: 'ready again' },
    ],
    [
      'the issuer recovered before the opening, certificates stay broken past the grace: the summary is the page',
      hold({ issuerReadyAt: T0 + 5000 }),
      counts(5),
      T0 + 5000 + HOLD_GRACE_MS,
      { kind: 'released', firing: 5, resolved: 0, allResolved: false, del: false, next: null, label: 'ready again' },
    ],
  ];
  it.each(rows)('%s', (_name, g, c, now, want) => {
    const plan = planHoldFlush(g, c, now, 'e-now');
    expect(plan.send?.kind ?? null).toBe(want.kind);
    if (plan.send) {
      expect(plan.send).toMatchObject({ firingCount: want.firing, resolvedCount: want.resolved, reminder: false });
      if (want.allResolved !== undefined) expect(plan.send.allResolved).toBe(want.allResolved);
      expect(plan.group.lastFlushEventId).toBe('e-now');
    }
    expect(plan.deleteGroup).toBe(want.del);
    if (want.next !== undefined && !plan.deleteGroup) expect(plan.group.nextFlushAt).toBe(want.next);
    expect(plan.labels).toEqual({ ...g.labels, issuer: want.label });
  });

  it('an issuer that recovers makes its holds look at once; one that fails again puts them back to waiting', () => {
    const h = hold({ ...opened, nextFlushAt: null, changed: false });
    const rec = onIssuerHealth(h, 'ready', up);
    expect(rec).toMatchObject({ issuerReadyAt: up, nextFlushAt: up });
    expect(onIssuerHealth(rec, 'ready', up + 5)).toBe(rec); // a repeated .active changes nothing
    expect(onIssuerHealth(rec, 'notready', up + 10)).toMatchObject({ issuerReadyAt: null, nextFlushAt: null });
    // not yet opened: back to its opening time
    expect(onIssuerHealth(hold({ issuerReadyAt: up }), 'notready', up + 10).nextFlushAt).toBe(T0 + WAIT);
  });

  it('ingestion schedules only the opening while the issuer is down, and a look at once after it recovered', () => {
    expect(scheduleHold(hold(), T0 + 1).nextFlushAt).toBe(T0 + WAIT);
    expect(scheduleHold(hold({ ...opened }), T0 + WAIT + 5).nextFlushAt).toBeNull();
    expect(scheduleHold(hold({ ...opened, issuerReadyAt: up, changed: true }), up + 7).nextFlushAt).toBe(up + 7);
  });
});
