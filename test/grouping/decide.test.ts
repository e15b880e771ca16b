import { describe, expect, it } from 'vitest';
import {
  applyMembers,
  fieldValue,
  groupOf,
  memberStateOf,
  needsEventCopy,
  overflowGroupOf,
  planFlush,
  type GroupRow,
  type MemberRow,
} from '../../src/grouping/decide.js';
import { certificateResourceActive, certificateResourceNotReady, expiringCertificate, issuerNotReady } from '../fixtures/events.js';

const T0 = 1_700_000_000_000;
const WAIT = 30_000;
const INTERVAL = 300_000;

function group(over: Partial<GroupRow> = {}): GroupRow {
  return {
    id: 'g1',
    companyId: 'c1',
    routerId: 'r1',
    key: 'certmgr:group:abc',
    labels: { 'data.issuerName': 'le' },
    routerName: 'certs',
    integrationId: 'i1',
    groupWaitMs: WAIT,
    groupIntervalMs: INTERVAL,
    repeatIntervalMs: null,
    createdAt: T0,
    nextFlushAt: T0 + WAIT,
    lastFlushAt: null,
    changed: false,
    sentFiring: false,
    memberCount: 0,
    overflowFiring: 0,
    overflowTransient: 0,
    resolvedTold: 0,
    lastEventId: 'e0',
    lastFlushEventId: null,
    ...over,
  };
}

let seq = 0;
function member(key: string, state: 'firing' | 'resolved', over: Partial<MemberRow> = {}): MemberRow {
  seq++;
  return { memberKey: key, eventId: `e-${key}-${seq}`, state, transient: false, orderAt: T0 + seq, orderSeq: seq, acceptedAt: T0, ...over };
}

describe('group identity', () => {
  it('reads scalar fields by path; absent or non-scalar values are empty', () => {
    const e = certificateResourceNotReady({ issuerName: 'le-prod' });
    expect(fieldValue(e, 'data.issuerName')).toBe('le-prod');
    expect(fieldValue(e, 'type')).toBe(e.type);
    expect(fieldValue(e, 'data.nope')).toBe('');
    expect(fieldValue(e, 'data.subject')).toBe(''); // an object
    expect(fieldValue(e, 'issuerName')).toBe(''); // not under data
  });

  it('the key hashes router and values (never the raw values); labels keep them, cut to 256 characters', () => {
    const by = ['data.clusterId', 'data.issuerName'];
    const a = groupOf('r1', by, certificateResourceNotReady({ issuerName: 'secret-issuer-name', certificateName: 'a' }));
    const b = groupOf('r1', by, certificateResourceNotReady({ issuerName: 'secret-issuer-name', certificateName: 'b' }));
    expect(a.key).toBe(b.key);
    expect(a.key).toMatch(/^certmgr:group:[0-9a-f]{64}$/);
    expect(a.key).not.toContain('secret-issuer-name');
    expect(a.labels['data.issuerName']).toBe('secret-issuer-name');
    expect(groupOf('r2', by, certificateResourceNotReady({ issuerName: 'secret-issuer-name' })).key).not.toBe(a.key);
    expect(groupOf('r1', by, certificateResourceNotReady({ issuerName: 'other' })).key).not.toBe(a.key);
    expect(groupOf('r1', ['data.issuerName'], certificateResourceNotReady({ issuerName: 'secret-issuer-name' })).key).not.toBe(a.key);
    const long = groupOf('r1', ['data.issuerName'], certificateResourceNotReady({ issuerName: 'x'.repeat(300) }));
    expect(Array.from(long.labels['data.issuerName']!)).toHaveLength(256);
    expect(groupOf('r1', ['data.issuerName'], certificateResourceNotReady({ issuerName: 'x'.repeat(301) })).key).not.toBe(long.key);
  });

  it('the overflow group is its own, labelled "(other)", never equal to an empty value', () => {
    const o = overflowGroupOf('r1', ['data.issuerName']);
    expect(o.labels).toEqual({ 'data.issuerName': '(other)' });
    expect(groupOf('r1', ['data.issuerName'], certificateResourceNotReady({ issuerName: '' })).key).not.toBe(o.key);
  });

  it.each([
    ['health notready', certificateResourceNotReady(), { state: 'firing', transient: false }],
    ['health active', certificateResourceActive(), { state: 'resolved', transient: false }],
    ['issuer notready', issuerNotReady(), { state: 'firing', transient: false }],
    ['expiration', expiringCertificate(), { state: 'firing', transient: true }],
  ] as const)('member state of %s', (_n, e, want) => {
    expect(memberStateOf(e)).toEqual(want);
  });
});

describe('applyMembers (ingestion)', () => {
  const cases: Array<{
    name: string;
    g: Partial<GroupRow>;
    existing: MemberRow[];
    incoming: MemberRow[];
    now: number;
    cap?: number;
    want: Partial<GroupRow>;
    upserts: number;
    capped: number;
  }> = [
    {
      name: 'a new group: the first flush stays at first member + groupWait',
      g: {},
      existing: [],
      incoming: [member('a', 'firing'), member('b', 'firing')],
      now: T0 + 10_000,
      want: { changed: true, memberCount: 2, nextFlushAt: T0 + WAIT },
      upserts: 2,
      capped: 0,
    },
    {
      name: 'after a flush, a change is due at lastFlush + groupInterval',
      g: { lastFlushAt: T0 + WAIT, nextFlushAt: null, memberCount: 1, sentFiring: true },
      existing: [member('a', 'firing')],
      incoming: [member('a', 'resolved')],
      now: T0 + 60_000,
      want: { changed: true, memberCount: 1, nextFlushAt: T0 + WAIT + INTERVAL },
      upserts: 1,
      capped: 0,
    },
    {
      name: 'after a flush, a change past the interval is due now',
      g: { lastFlushAt: T0, nextFlushAt: null, memberCount: 1, sentFiring: true },
      existing: [member('a', 'firing')],
      incoming: [member('b', 'firing')],
      now: T0 + INTERVAL * 3,
      want: { changed: true, memberCount: 2, nextFlushAt: T0 + INTERVAL * 3 },
      upserts: 1,
      capped: 0,
    },
    {
      name: 'an earlier due time (a repeat) is kept',
      g: { lastFlushAt: T0, nextFlushAt: T0 + 60_000, memberCount: 1, repeatIntervalMs: 60_000 },
      existing: [member('a', 'firing')],
      incoming: [member('b', 'firing')],
      now: T0 + 1000,
      want: { nextFlushAt: T0 + 60_000 },
      upserts: 1,
      capped: 0,
    },
    {
      name: 'the same state again (a re-sent notready) updates the member but changes nothing',
      g: { lastFlushAt: T0, nextFlushAt: null, memberCount: 1 },
      existing: [member('a', 'firing')],
      incoming: [member('a', 'firing')],
      now: T0 + 1000,
      want: { changed: false, nextFlushAt: null },
      upserts: 1,
      capped: 0,
    },
    {
      name: 'an older event arriving late is ignored',
      g: { lastFlushAt: T0, nextFlushAt: null, memberCount: 1 },
      existing: [member('a', 'firing', { orderAt: T0 + 1_000_000 })],
      incoming: [member('a', 'resolved', { orderAt: T0 })],
      now: T0 + 1000,
      want: { changed: false, nextFlushAt: null },
      upserts: 0,
      capped: 0,
    },
    {
      name: 'past the member limit: counts grow, no row; a recovery of an uncounted member changes nothing',
      g: { memberCount: 2 },
      existing: [],
      incoming: [member('c', 'firing'), member('d', 'firing'), member('c', 'resolved'), member('x', 'resolved'), member('y', 'resolved')],
      now: T0,
      cap: 2,
      want: { memberCount: 2, overflowFiring: 0, changed: true },
      upserts: 0,
      capped: 5,
    },
    {
      name: 'past the member limit: expiration events count as transient',
      g: { memberCount: 1 },
      existing: [],
      incoming: [member('e', 'firing', { transient: true })],
      now: T0,
      cap: 1,
      want: { overflowTransient: 1, changed: true },
      upserts: 0,
      capped: 1,
    },
  ];
  it.each(cases)('$name', (c) => {
    const r = applyMembers(group(c.g), new Map(c.existing.map((m) => [m.memberKey, m])), c.incoming, c.now, c.cap);
    expect(r.group).toMatchObject(c.want);
    expect(r.upserts).toHaveLength(c.upserts);
    expect(r.capped).toBe(c.capped);
    expect(r.group.lastEventId).toBe(c.incoming[c.incoming.length - 1]!.eventId);
  });
});

describe('planFlush (the flusher)', () => {
  const cases: Array<{
    name: string;
    g: Partial<GroupRow>;
    counts: { firing: number; transient: number; resolved: number };
    now: number;
    send: null | { kind: string; allResolved: boolean; reminder: boolean; firingCount: number; resolvedCount: number };
    deleteGroup: boolean;
    next?: Partial<GroupRow>;
  }> = [
    {
      name: 'first flush with members firing: one notification',
      g: { changed: true, memberCount: 200 },
      counts: { firing: 198, transient: 0, resolved: 2 },
      now: T0 + WAIT,
      send: { kind: 'notify', allResolved: false, reminder: false, firingCount: 198, resolvedCount: 2 },
      deleteGroup: false,
      next: { lastFlushAt: T0 + WAIT, changed: false, sentFiring: true, nextFlushAt: null, memberCount: 198 },
    },
    {
      name: 'every member recovered before the first flush: nothing is sent, the group ends',
      g: { changed: true, memberCount: 3 },
      counts: { firing: 0, transient: 0, resolved: 3 },
      now: T0 + WAIT,
      send: null,
      deleteGroup: true,
    },
    {
      name: 'a change after a flush: an update',
      g: { changed: true, lastFlushAt: T0, sentFiring: true, memberCount: 3 },
      counts: { firing: 2, transient: 0, resolved: 1 },
      now: T0 + INTERVAL,
      send: { kind: 'notify', allResolved: false, reminder: false, firingCount: 2, resolvedCount: 1 },
      deleteGroup: false,
    },
    {
      name: 'nothing firing after a firing notification: all resolved, the group ends',
      g: { changed: true, lastFlushAt: T0, sentFiring: true, memberCount: 200 },
      counts: { firing: 0, transient: 0, resolved: 200 },
      now: T0 + INTERVAL,
      send: { kind: 'resolved', allResolved: true, reminder: false, firingCount: 0, resolvedCount: 200 },
      deleteGroup: true,
    },
    {
      name: 'a partial recovery is told as it happens, and counted for the end',
      g: { changed: true, lastFlushAt: T0, sentFiring: true, memberCount: 200 },
      counts: { firing: 116, transient: 0, resolved: 84 },
      now: T0 + INTERVAL,
      send: { kind: 'notify', allResolved: false, reminder: false, firingCount: 116, resolvedCount: 84 },
      deleteGroup: false,
      next: { resolvedTold: 84, memberCount: 116 },
    },
    {
      name: 'all recovered after a partial recovery: "all N" counts every member of the episode',
      g: { changed: true, lastFlushAt: T0, sentFiring: true, memberCount: 116, resolvedTold: 84 },
      counts: { firing: 0, transient: 0, resolved: 116 },
      now: T0 + 2 * INTERVAL,
      send: { kind: 'resolved', allResolved: true, reminder: false, firingCount: 0, resolvedCount: 200 },
      deleteGroup: true,
    },
    {
      name: 'members past the limit still firing: not resolved',
      g: { changed: true, lastFlushAt: T0, sentFiring: true, memberCount: 1, overflowFiring: 4 },
      counts: { firing: 0, transient: 0, resolved: 1 },
      now: T0 + INTERVAL,
      send: { kind: 'notify', allResolved: false, reminder: false, firingCount: 4, resolvedCount: 1 },
      deleteGroup: false,
    },
    {
      name: 'unchanged and firing, repeatInterval due: a repeat (reminder)',
      g: { lastFlushAt: T0, sentFiring: true, repeatIntervalMs: 3_600_000, memberCount: 5 },
      counts: { firing: 5, transient: 0, resolved: 0 },
      now: T0 + 3_600_000,
      send: { kind: 'repeat', allResolved: false, reminder: true, firingCount: 5, resolvedCount: 0 },
      deleteGroup: false,
      next: { nextFlushAt: T0 + 7_200_000, lastFlushAt: T0 + 3_600_000 },
    },
    {
      name: 'unchanged, no repeatInterval: nothing, idle until a change',
      g: { lastFlushAt: T0, sentFiring: true, memberCount: 5 },
      counts: { firing: 5, transient: 0, resolved: 0 },
      now: T0 + 10,
      send: null,
      deleteGroup: false,
      next: { nextFlushAt: null, lastFlushAt: T0 },
    },
    {
      name: 'expiration members are told once, then the group ends (expiration never resolves)',
      g: { changed: true, memberCount: 3 },
      counts: { firing: 0, transient: 3, resolved: 0 },
      now: T0 + WAIT,
      send: { kind: 'notify', allResolved: false, reminder: false, firingCount: 3, resolvedCount: 0 },
      deleteGroup: true,
    },
  ];
  it.each(cases)('$name', (c) => {
    const p = planFlush(group(c.g), c.counts, c.now, 'e-new');
    expect(p.send).toEqual(c.send);
    expect(p.deleteGroup).toBe(c.deleteGroup);
    expect(p.dropSettled).toBe(c.send !== null);
    if (c.next) expect(p.group).toMatchObject(c.next);
    if (c.send) expect(p.group).toMatchObject({ lastFlushEventId: 'e-new', lastEventId: 'e-new' });
  });

  it('a repeat (no newer event since the last notification) needs a copy of the event; an update does not', () => {
    expect(needsEventCopy(group({ lastEventId: 'e1', lastFlushEventId: 'e1' }))).toBe(true);
    expect(needsEventCopy(group({ lastEventId: 'e2', lastFlushEventId: 'e1' }))).toBe(false);
    expect(needsEventCopy(group({ lastEventId: 'e1', lastFlushEventId: null }))).toBe(false);
  });
});
