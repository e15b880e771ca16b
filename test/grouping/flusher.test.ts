/**
 * Ingestion (addGroupMembers) and the flusher over a real SQLite store, with the clock passed in: the timing rules
 * end to end (groupWait, groupInterval, repeatInterval with its event copy, all recovered), the member and group
 * limits, and what the written delivery's snapshot says.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { orderOfEvent } from '../../src/delivery/order.js';
import type { InternalEvent } from '../../src/events/families.js';
import { GroupFlusher } from '../../src/grouping/flusher.js';
import { addGroupMembers } from '../../src/grouping/ingest.js';
import { parseSnapshot, type GroupSnapshot } from '../../src/grouping/snapshot.js';
import type { RouterRecord } from '../../src/model/records.js';
import { openStore } from '../../src/store/index.js';
import type { Store } from '../../src/store/types.js';
import { certificateResourceActive, certificateResourceNotReady, expiringCertificate } from '../fixtures/events.js';
import { router } from '../store/contract.js';

const T0 = 1_800_000_000_000;
const S = 1000;

describe('grouping over a store, clock passed in', () => {
  let store: Store;
  let now: number;
  let flusher: GroupFlusher;
  let r: RouterRecord;
  const C = 'company-g';

  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    await store.migrate();
    now = T0;
    flusher = new GroupFlusher({ store, log: pino({ level: 'silent' }), clock: () => now });
    r = router(C, 'i1', { groupBy: ['data.issuerName'], groupWaitMs: 30 * S, groupIntervalMs: 300 * S, repeatIntervalMs: 3600 * S });
  });
  afterEach(async () => {
    await store.close();
  });

  let seq = 0;
  async function accept(
    events: InternalEvent[],
    opts: { limits?: { membersPerGroup: number; groupsPerRouter: number }; rt?: RouterRecord } = {},
  ) {
    const recs = events.map((e) => ({ id: randomUUID(), companyId: C, type: e.type, data: e.data, receivedAt: now }));
    return store.transaction(async (tx) => {
      await tx.insertEvents(recs);
      const matches = events.map((event, i) => ({
        router: opts.rt ?? r,
        eventId: recs[i]!.id,
        event,
        order: orderOfEvent(event, now, seq++ % 1000),
      }));
      return addGroupMembers(tx, C, matches, now, randomUUID, opts.limits);
    });
  }
  const cert = (name: string, state: 'notready' | 'active', issuerName = 'le') =>
    (state === 'notready' ? certificateResourceNotReady : certificateResourceActive)({
      certificateName: name,
      issuerName,
      namespace: 'web',
      clusterId: '3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31',
      statusTransition: new Date(now).toISOString(),
    });
  const snapshots = async (): Promise<GroupSnapshot[]> =>
    (await store.listDeliveries(C, { limit: 1000 }))
      .filter((d) => d.groupSnapshot)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((d) => parseSnapshot(d.groupSnapshot!)!);

  it('collects for groupWait, then one notification; an update at most per groupInterval; repeats while firing; all recovered', async () => {
    await accept(['a', 'b', 'c'].map((n) => cert(n, 'notready')));
    now += 29 * S;
    expect(await flusher.flushDue()).toBe(0); // still in its wait
    await accept([cert('d', 'notready')]);
    now += 1 * S;
    expect(await flusher.flushDue()).toBe(1);
    let [first] = await snapshots();
    expect(first!.group).toMatchObject({ firingCount: 4, resolvedCount: 0, allResolved: false, labels: { 'data.issuerName': 'le' } });
    expect(first!.group.firing.map((m) => m.event.data['certificateName'])).toEqual(['d', 'c', 'b', 'a']);

    // a change: due at the last notification + groupInterval, not before
    now += 10 * S;
    await accept([cert('a', 'active')]);
    now += 100 * S;
    expect(await flusher.flushDue()).toBe(0);
    now += 190 * S; // = last + 300 s
    expect(await flusher.flushDue()).toBe(1);
    const second = (await snapshots())[1]!;
    expect(second.group).toMatchObject({ firingCount: 3, resolvedCount: 1, allResolved: false });
    expect(second.group.resolved.map((m) => m.event.data['certificateName'])).toEqual(['a']);

    // nothing changes: the repeat comes at repeatInterval, under a copy of the newest event
    now += 3600 * S;
    expect(await flusher.flushDue()).toBe(1);
    const third = (await snapshots())[2]!;
    expect(third).toMatchObject({ reminder: true, group: { firingCount: 3, resolvedCount: 0, resolved: [] } });
    now += 3600 * S;
    expect(await flusher.flushDue()).toBe(1); // and again (a second copy)
    expect(await store.countGroups()).toBe(1);

    // everything recovers: one "all recovered" that counts the whole episode (a, told earlier, and b, c, d), then
    // the group ends
    await accept(['b', 'c', 'd'].map((n) => cert(n, 'active')));
    now += 300 * S;
    expect(await flusher.flushDue()).toBe(1);
    const last = (await snapshots()).at(-1)!;
    expect(last.group).toMatchObject({ allResolved: true, firingCount: 0, resolvedCount: 4, firing: [] });
    expect(last.group.resolved.map((m) => m.event.data['certificateName'])).toEqual(['d', 'c', 'b']);
    expect(await store.countGroups()).toBe(0);
    now += 7200 * S;
    expect(await flusher.flushDue()).toBe(0);
    first = (await snapshots())[0];
    expect((await snapshots()).map((s) => s.group.key).every((k) => k === first!.group.key)).toBe(true);
    // every group delivery is ordered under the group's key
    const ds = await store.listDeliveries(C, { limit: 1000 });
    expect(ds.every((d) => d.orderKey === first!.group.key && d.groupKey === first!.group.key)).toBe(true);
    expect(ds).toHaveLength(5);
  });

  it('members that all recover within groupWait: nothing is sent', async () => {
    await accept([cert('a', 'notready'), cert('b', 'notready')]);
    now += 5 * S;
    await accept([cert('a', 'active'), cert('b', 'active')]);
    now += 30 * S;
    expect(await flusher.flushDue()).toBe(0);
    expect(await store.countGroups()).toBe(0);
    expect(await store.listDeliveries(C, {})).toEqual([]);
  });

  it('expiration members are told once; the group then ends (no resolve)', async () => {
    const rt = router(C, 'i1', { eventTypeId: 'cert-expiry-ext-notification-config', groupBy: ['type'], groupWaitMs: 0 });
    const uuid = (n: number) => `7e3f9b1c-2a4d-4e6f-8a0b-c1d2e3f4a5b${n}`;
    await accept(
      [1, 2].map((n) => expiringCertificate({ message: `Certificate x (id ${uuid(n)}) expires in 14 days` })),
      { rt },
    );
    expect(await flusher.flushDue()).toBe(1);
    expect((await snapshots())[0]!.group).toMatchObject({ firingCount: 2, allResolved: false });
    expect(await store.countGroups()).toBe(0);
  });

  it('limits: members past the per-group limit are counted without rows; groups past the per-router limit share "(other)"', async () => {
    const limits = { membersPerGroup: 3, groupsPerRouter: 3 };
    expect(
      await accept(
        ['a', 'b', 'c', 'd', 'e'].map((n) => cert(n, 'notready')),
        { limits },
      ),
    ).toBe(2);
    await accept(
      ['x', 'y', 'z', 'w'].map((n) => cert(n, 'notready', `issuer-${n}`)),
      { limits },
    );
    // 3 groups: 'le', issuer-x, and the overflow group (one place is kept for it) holding y, z, w
    expect(await store.countRouterGroups(C, r.id)).toBe(3);
    now += 30 * S;
    expect(await flusher.flushDue()).toBe(3);
    const byLabel = new Map((await snapshots()).map((s) => [s.group.labels['data.issuerName'], s.group]));
    expect(byLabel.get('le')).toMatchObject({ firingCount: 5 });
    expect(byLabel.get('le')!.firing).toHaveLength(3);
    expect(byLabel.get('issuer-x')).toMatchObject({ firingCount: 1 });
    expect(byLabel.get('(other)')).toMatchObject({ firingCount: 3 });
  });
});
