import { describe, expect, it } from 'vitest';
import {
  ago,
  endAfter,
  formatDuration,
  formatTime,
  localInputToIso,
  managedNote,
  resourceLabel,
  SILENCE_PRESETS,
} from '../../src/console/format.js';
import { caretMarker } from '../../src/console/caret.js';
import { pageOf } from '../../src/console/routes.js';

describe('console text helpers', () => {
  it.each([
    ['2026-03-14T09:26:53.120Z', '2026-03-14 09:26 UTC'],
    ['2026-03-14T11:26:53+02:00', '2026-03-14 09:26 UTC'],
    [null, '—'],
    ['not a time', 'not a time'],
  ])('formatTime(%j) = %j', (iso, out) => expect(formatTime(iso)).toBe(out));

  it.each([
    [0, '0s'],
    [-5_000, '0s'],
    [42_000, '42s'],
    [61_000, '1m 1s'],
    [3 * 86_400_000 + 4 * 3_600_000 + 59_000, '3d 4h'],
    [86_400_000 + 30_000, '1d'],
    [5 * 3_600_000 + 12 * 60_000, '5h 12m'],
  ])('formatDuration(%d) = %j', (ms, out) => expect(formatDuration(ms)).toBe(out));

  it('ago counts from the given now', () => {
    expect(ago('2026-01-01T00:00:00Z', Date.parse('2026-01-02T01:00:00Z'))).toBe('1d 1h ago');
    expect(ago(undefined, 0)).toBe('—');
  });

  const NOW = Date.parse('2026-05-01T12:30:45Z');
  it.each([
    ['', '1h', '2026-05-01T13:30'],
    ['', '4h', '2026-05-01T16:30'],
    ['', '1d', '2026-05-02T12:30'],
    ['', '1w', '2026-05-08T12:30'],
    ['2026-06-30T22:00', '4h', '2026-07-01T02:00'], // from the start given, not from now
    ['not a time', '1h', '2026-05-01T13:30'],
  ])('silence preset: starts %j, lasts %s → ends %j', (starts, label, out) => {
    const ms = SILENCE_PRESETS.find(([l]) => l === label)![1];
    expect(endAfter(starts, NOW, ms)).toBe(out);
  });
  it('silence presets are 1h, 4h, 1d, 1w', () => expect(SILENCE_PRESETS.map(([l]) => l)).toEqual(['1h', '4h', '1d', '1w']));

  it.each([
    [{ kind: 'Issuer', namespace: 'cert-manager', name: 'letsencrypt-prod' }, 'Issuer cert-manager/letsencrypt-prod'],
    [{ kind: 'ClusterIssuer', namespace: null, name: 'ca' }, 'ClusterIssuer ca'],
    [{ kind: 'Certificate', namespace: null, name: '' }, ''],
  ])('resourceLabel(%j) = %j', (r, out) => expect(resourceLabel(r)).toBe(out));

  it('managedNote warns that the operator re-creates a managed record', () => {
    expect(managedNote(null)).toBeUndefined();
    expect(managedNote('k8s:NotificationRouter/ops/r@prod')).toBe(
      'It is managed by k8s:NotificationRouter/ops/r@prod: delete its resource there, or the operator re-creates it.',
    );
  });

  it('datetime-local values are taken as UTC', () => {
    expect(localInputToIso('2026-05-01T12:30')).toBe('2026-05-01T12:30:00.000Z');
    expect(localInputToIso('')).toBeUndefined();
    expect(localInputToIso('garbage')).toBeUndefined();
  });
});

describe('caretMarker', () => {
  it('puts the caret under the column of the line', () => {
    expect(caretMarker('data.namespace == "prod" &&\n  data.x ==', 2, 11)).toEqual({ line: 2, text: '  data.x ==', marker: '          ^' });
  });
  it('keeps tabs so the caret lines up', () => {
    expect(caretMarker('\ta.b +', 1, 3)?.marker).toBe('\t ^');
  });
  it('a column past the end points just after the last character', () => {
    expect(caretMarker('a ==', 1, 99)?.marker).toBe('    ^');
  });
  it.each([
    [null, 1],
    [1, null],
    [0, 1],
    [3, 1],
  ])('no marker for line %j column %j', (line, column) => expect(caretMarker('a\nb', line, column)).toBeNull());
});

describe('pageOf', () => {
  it.each([
    ['#/health', 'health'],
    ['#/routers?x=1', 'routers'],
    ['#/deliveries/abc', 'deliveries'],
    ['', 'certificates'],
    ['#/nope', 'certificates'],
  ])('%j → %s', (hash, page) => expect(pageOf(hash)).toBe(page));
});
