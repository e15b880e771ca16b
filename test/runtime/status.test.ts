import { describe, expect, it } from 'vitest';
import { deepEqual, isStalledAt, nextStatus, readyTransition, setCondition, type BaseStatus } from '../../src/runtime/status.js';

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:05:00Z';
const types = (s: BaseStatus) => s.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('nextStatus (kstatus)', () => {
  it.each<[string, BaseStatus | undefined, Parameters<typeof nextStatus>[2], string[], number | undefined]>([
    ['first success', undefined, { kind: 'ready', message: 'ok' }, ['Ready=True/Reconciled'], 3],
    [
      'terminal failure',
      undefined,
      { kind: 'stalled', reason: 'InvalidFilter', message: 'bad' },
      ['Ready=False/InvalidFilter', 'Stalled=True/InvalidFilter'],
      3,
    ],
    [
      'waiting keeps observedGeneration',
      { observedGeneration: 2 },
      { kind: 'waiting', reason: 'ProviderNotFound', message: 'x' },
      ['Ready=False/ProviderNotFound', 'Reconciling=True/ProviderNotFound'],
      2,
    ],
    [
      'waiting with no history has none',
      undefined,
      { kind: 'waiting', reason: 'ServiceUnavailable', message: 'x' },
      ['Ready=False/ServiceUnavailable', 'Reconciling=True/ServiceUnavailable'],
      undefined,
    ],
  ])('%s', (_n, prev, outcome, want, gen) => {
    const s = nextStatus(prev, 3, outcome, T0);
    expect(types(s)).toEqual(want);
    expect(s.observedGeneration).toBe(gen);
    for (const c of s.conditions ?? []) expect(c.observedGeneration).toBe(3);
  });

  it('success after a stall drops Stalled and Reconciling', () => {
    const stalled = nextStatus(undefined, 1, { kind: 'stalled', reason: 'InvalidFilter', message: 'bad' }, T0);
    const waiting = nextStatus(stalled, 2, { kind: 'waiting', reason: 'ServiceUnavailable', message: 'x' }, T0);
    expect(types(waiting)).toEqual(['Ready=False/ServiceUnavailable', 'Reconciling=True/ServiceUnavailable']);
    const ok = nextStatus(waiting, 2, { kind: 'ready', message: 'ok' }, T1);
    expect(types(ok)).toEqual(['Ready=True/Reconciled']);
  });

  it('lastTransitionTime moves only when the status flips', () => {
    const a = nextStatus(undefined, 1, { kind: 'waiting', reason: 'SecretNotFound', message: 'm1' }, T0);
    const b = nextStatus(a, 1, { kind: 'waiting', reason: 'ProviderNotReady', message: 'm2' }, T1);
    expect(b.conditions?.[0]).toMatchObject({ reason: 'ProviderNotReady', message: 'm2', lastTransitionTime: T0 });
    const c = nextStatus(b, 1, { kind: 'ready', message: 'ok' }, T1);
    expect(c.conditions?.[0]?.lastTransitionTime).toBe(T1);
  });

  it('merges kind fields; undefined removes one', () => {
    const a = nextStatus(undefined, 1, { kind: 'ready', message: 'ok', fields: { routerId: 'r1', integrationId: 'i1' } }, T0);
    expect(a).toMatchObject({ routerId: 'r1', integrationId: 'i1' });
    const b = nextStatus(a, 1, { kind: 'waiting', reason: 'ProviderNotReady', message: 'x' }, T0);
    expect(b).toMatchObject({ routerId: 'r1', integrationId: 'i1' });
    const c = nextStatus(
      b,
      1,
      { kind: 'waiting', reason: 'ProviderNotFound', message: 'x', fields: { routerId: undefined, integrationId: undefined } },
      T0,
    );
    expect('routerId' in c).toBe(false);
    expect('integrationId' in c).toBe(false);
  });

  it('never writes empty strings (SSA on v1.20 turns them into null): empty message → reason, empty field → removed', () => {
    const s = nextStatus(undefined, 1, { kind: 'waiting', reason: 'ReconcileError', message: '', fields: { routerId: '' } }, T0);
    expect(s.conditions?.map((c) => c.message)).toEqual(['ReconcileError', 'ReconcileError']);
    expect('routerId' in s).toBe(false);
  });

  it('is idempotent: the same outcome again is deep-equal (no status write)', () => {
    const a = nextStatus(undefined, 4, { kind: 'ready', message: 'ok', fields: { x: 1 } }, T0);
    const b = nextStatus(a, 4, { kind: 'ready', message: 'ok', fields: { x: 1 } }, T1);
    expect(deepEqual(a, b)).toBe(true);
  });
});

describe('setCondition / readyTransition / isStalledAt / deepEqual', () => {
  it('setCondition replaces by type', () => {
    const c = setCondition(
      [{ type: 'Ready', status: 'False', reason: 'A', message: '', lastTransitionTime: T0 }],
      { type: 'Ready', status: 'True', reason: 'B', message: '' },
      T1,
    );
    expect(c).toEqual([{ type: 'Ready', status: 'True', reason: 'B', message: '', lastTransitionTime: T1 }]);
  });
  it.each<[string, BaseStatus | undefined, BaseStatus, string | undefined]>([
    ['first Ready=True → Normal', undefined, nextStatus(undefined, 1, { kind: 'ready', message: 'ok' }, T0), 'Normal/Reconciled'],
    [
      'same status and reason → none',
      nextStatus(undefined, 1, { kind: 'ready', message: 'a' }, T0),
      nextStatus(undefined, 1, { kind: 'ready', message: 'b' }, T0),
      undefined,
    ],
    [
      'reason change → Warning',
      nextStatus(undefined, 1, { kind: 'waiting', reason: 'SecretNotFound', message: '' }, T0),
      nextStatus(undefined, 1, { kind: 'waiting', reason: 'ServiceUnavailable', message: '' }, T0),
      'Warning/ServiceUnavailable',
    ],
    [
      'stall → Warning',
      nextStatus(undefined, 1, { kind: 'ready', message: '' }, T0),
      nextStatus(undefined, 2, { kind: 'stalled', reason: 'InvalidFilter', message: '' }, T0),
      'Warning/InvalidFilter',
    ],
  ])('readyTransition: %s', (_n, prev, next, want) => {
    const t = readyTransition(prev, next);
    expect(t ? `${t.type}/${t.reason}` : undefined).toBe(want);
  });
  it('isStalledAt is per generation', () => {
    const s = nextStatus(undefined, 2, { kind: 'stalled', reason: 'InvalidFilter', message: '' }, T0);
    expect(isStalledAt(s, 2)).toBe(true);
    expect(isStalledAt(s, 3)).toBe(false);
    expect(isStalledAt(undefined, 1)).toBe(false);
  });
  it('deepEqual ignores key order and undefined members', () => {
    expect(deepEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(deepEqual({ a: 1, x: undefined }, { a: 1 })).toBe(true);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual({ a: null }, { a: 0 })).toBe(false);
  });
});
