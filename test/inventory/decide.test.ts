import { describe, expect, it } from 'vitest';
import { decideReport, type ClusterPosition, type ReportDecision } from '../../src/inventory/decide.js';
import { decideReporting, decideSilence, silenceCheckInterval } from '../../src/inventory/silence.js';

const E1 = '00000000-0000-4000-8000-0000000000e1';
const E2 = '00000000-0000-4000-8000-0000000000e2';
const at = (epoch: string, lastSeq: number, snapshotComplete: boolean): ClusterPosition => ({ epoch, lastSeq, snapshotComplete });
type R = { epoch: string; seq: number; kind: 'snapshot' | 'delta'; final?: boolean };
const snap = (epoch: string, seq: number, final?: boolean): R => ({
  epoch,
  seq,
  kind: 'snapshot',
  ...(final !== undefined ? { final } : {}),
});
const delta = (epoch: string, seq: number): R => ({ epoch, seq, kind: 'delta' });
const apply = (newEpoch: boolean, snapshotComplete: boolean, removeStale: boolean): ReportDecision => ({
  action: 'apply',
  newEpoch,
  snapshotComplete,
  removeStale,
});

describe('decideReport', () => {
  const table: [string, ClusterPosition | null, R, ReportDecision['action'], ReportDecision?][] = [
    // a cluster the hub does not know
    ['unknown cluster, first snapshot report', null, snap(E1, 1), 'apply', apply(true, false, false)],
    ['unknown cluster, a one-report snapshot', null, snap(E1, 1, true), 'apply', apply(true, true, true)],
    ['unknown cluster, snapshot seq 2', null, snap(E1, 2), 'resync'],
    ['unknown cluster, a delta', null, delta(E1, 1), 'resync'],
    // the snapshot in chunks
    ['second chunk', at(E1, 1, false), snap(E1, 2), 'apply', apply(false, false, false)],
    ['final chunk', at(E1, 2, false), snap(E1, 3, true), 'apply', apply(false, true, true)],
    ['final: false is not final', at(E1, 2, false), snap(E1, 3, false), 'apply', apply(false, false, false)],
    ['a delta before the final chunk', at(E1, 2, false), delta(E1, 3), 'resync'],
    // deltas
    ['next delta', at(E1, 3, true), delta(E1, 4), 'apply', apply(false, true, false)],
    ['a snapshot report after the final one, same epoch', at(E1, 3, true), snap(E1, 4), 'resync'],
    // duplicates: same epoch, seq already applied
    ['replay of the last report', at(E1, 4, true), delta(E1, 4), 'duplicate'],
    ['replay of an older report', at(E1, 4, true), delta(E1, 2), 'duplicate'],
    ['replay of the first snapshot report', at(E1, 4, true), snap(E1, 1), 'duplicate'],
    ['replay during the snapshot', at(E1, 2, false), snap(E1, 2), 'duplicate'],
    // gaps
    ['a gap of one', at(E1, 4, true), delta(E1, 6), 'resync'],
    ['a gap in the snapshot', at(E1, 1, false), snap(E1, 3, true), 'resync'],
    // a new epoch
    ['new epoch, snapshot seq 1', at(E1, 9, true), snap(E2, 1), 'apply', apply(true, false, false)],
    ['new epoch, whole snapshot in one report', at(E1, 9, true), snap(E2, 1, true), 'apply', apply(true, true, true)],
    ['new epoch while the old snapshot was incomplete', at(E1, 2, false), snap(E2, 1), 'apply', apply(true, false, false)],
    ['new epoch, snapshot seq 2 (its start was lost)', at(E1, 9, true), snap(E2, 2), 'resync'],
    ['new epoch, a delta', at(E1, 9, true), delta(E2, 10), 'resync'],
  ];
  it.each(table)('%s', (_name, state, report, action, exact) => {
    const d = decideReport(state, report);
    expect(d.action).toBe(action);
    if (exact) expect(d).toEqual(exact);
    if (d.action === 'resync') expect(d.reason.length).toBeGreaterThan(10);
  });

  it('names the gap in the resync reason', () => {
    expect(decideReport(at(E1, 4, true), delta(E1, 7))).toEqual({
      action: 'resync',
      reason: 'seq 7 does not follow the last applied seq 4 of this epoch (reports are missing)',
    });
  });
});

describe('silent clusters (pure parts)', () => {
  const S = 1000;
  it.each<[string, { lastSeenAt: number; silentSince: number | null }, number, ReturnType<typeof decideSilence>]>([
    ['reported just now', { lastSeenAt: 5000, silentSince: null }, 5000, { action: 'reporting' }],
    ['exactly the silence period: not silent yet', { lastSeenAt: 5000, silentSince: null }, 6000, { action: 'reporting' }],
    [
      'one ms past it: notify, silent since the crossing',
      { lastSeenAt: 5000, silentSince: null },
      6001,
      { action: 'notify', silentSince: 6000 },
    ],
    [
      'noticed late (downtime): still the crossing time',
      { lastSeenAt: 5000, silentSince: null },
      90_000,
      { action: 'notify', silentSince: 6000 },
    ],
    ['silent and notified: nothing more', { lastSeenAt: 5000, silentSince: 6000 }, 90_000, { action: 'notified' }],
    ['a clock behind the report: reporting', { lastSeenAt: 5000, silentSince: null }, 4000, { action: 'reporting' }],
  ])('decideSilence: %s', (_n, c, now, want) => {
    expect(decideSilence(c, now, S)).toEqual(want);
  });
  it.each<[string, { silentSince: number | null } | null, number, ReturnType<typeof decideReporting>]>([
    ['a new cluster', null, 10_000, { resolve: false }],
    ['a reporting cluster', { silentSince: null }, 10_000, { resolve: false }],
    ['a notified cluster: resolve, silent since the crossing', { silentSince: 6000 }, 10_000, { resolve: true, silentForMs: 4000 }],
    ['a replica clock behind the leader’s: never negative', { silentSince: 6000 }, 5000, { resolve: true, silentForMs: 0 }],
  ])('decideReporting: %s', (_n, state, now, want) => {
    expect(decideReporting(state, now)).toEqual(want);
  });
  it('checks a few times per silence period, within 1 s .. 1 min', () => {
    expect(silenceCheckInterval(1)).toBe(1000);
    expect(silenceCheckInterval(900_000)).toBe(60_000);
    expect(silenceCheckInterval(20_000)).toBe(5_000);
  });
});
