/** Silences: the pure decisions (state at a time, which silence applies, the recovery exception), as tables. */
import { describe, expect, it } from 'vitest';
import { FilterCompileError } from '../../src/cel/index.js';
import type { SilenceRecord } from '../../src/model/records.js';
import {
  compileMatcher,
  compileSilence,
  effectiveEnd,
  isSentRecovery,
  mergeSilenceMatches,
  newestEarlierStatus,
  silenceFor,
  silenceState,
  silenceVerdict,
} from '../../src/silences/decide.js';
import { certificateResourceNotReady, expiringCertificate, issuerActive, issuerNotReady } from '../fixtures/events.js';

const H = 3_600_000;

function silence(over: Partial<SilenceRecord> = {}): SilenceRecord {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    companyId: 'c',
    matcher: 'data.clusterName == "prod-eu-west-1"',
    eventTypeId: null,
    eventTypeIds: [],
    startsAt: 10 * H,
    endsAt: 12 * H,
    comment: 'maintenance',
    createdBy: 'ops',
    managedBy: null,
    createdAt: 0,
    updatedAt: 0,
    expiredAt: null,
    ...over,
  };
}

describe('silenceState', () => {
  it.each([
    ['before the start', {}, 9 * H, 'PENDING'],
    ['at the start', {}, 10 * H, 'ACTIVE'],
    ['inside', {}, 11 * H, 'ACTIVE'],
    ['at the end (exclusive)', {}, 12 * H, 'EXPIRED'],
    ['after the end', {}, 13 * H, 'EXPIRED'],
    ['expired early, before', { expiredAt: 11 * H }, 10.5 * H, 'ACTIVE'],
    ['expired early, after', { expiredAt: 11 * H }, 11 * H, 'EXPIRED'],
    ['pending, then expired', { expiredAt: 5 * H }, 6 * H, 'EXPIRED'],
    ['expiredAt after endsAt does not extend it', { expiredAt: 20 * H }, 12 * H, 'EXPIRED'],
  ] as const)('%s', (_name, over, t, want) => {
    expect(silenceState(silence(over), t)).toBe(want);
  });

  it('effectiveEnd is the earlier of endsAt and expiredAt', () => {
    expect(effectiveEnd(silence())).toBe(12 * H);
    expect(effectiveEnd(silence({ expiredAt: 11 * H }))).toBe(11 * H);
  });
});

describe('compileMatcher', () => {
  it('with eventTypeId: that family only, or its compile error with the position', () => {
    expect([...compileMatcher('data.issuerName == "x"', 'certmgr-issuer-health-notification-config').keys()]).toEqual([
      'certmgr-issuer-health-notification-config',
    ]);
    const err = (() => {
      try {
        compileMatcher('data.nope == "x"', 'certmgr-issuer-health-notification-config');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(FilterCompileError);
    expect((err as FilterCompileError).line).toBe(1);
    expect((err as FilterCompileError).column).toBe(6);
  });

  it('without eventTypeId: every family it compiles for; none is an error', () => {
    const issuerOnly = compileMatcher('data.issuerName == "x"', null);
    expect([...issuerOnly.keys()]).toContain('certmgr-issuer-health-notification-config');
    expect([...issuerOnly.keys()]).not.toContain('certmgr-agent-health-notification-config');
    const common = compileMatcher('data.clusterName == "x"', null);
    expect(common.size).toBeGreaterThan(2);
    expect(() => compileMatcher('data.nope == 1', null)).toThrow(FilterCompileError);
  });

  it('a stored silence is compiled for the families found when it was stored only', () => {
    const c = compileSilence(silence({ eventTypeIds: ['certmgr-issuer-health-notification-config'] }));
    expect([...c.matchers.keys()]).toEqual(['certmgr-issuer-health-notification-config']);
    // none recorded (a row from before): every family it compiles for
    expect(compileSilence(silence()).matchers.size).toBeGreaterThan(1);
  });

  it('a stored matcher that no longer compiles applies to nothing', () => {
    const c = compileSilence(silence({ matcher: 'data.nope == 1' }));
    expect(c.matchers.size).toBe(0);
    expect(c.compileError).toMatch(/^1:\d+: /);
  });
});

describe('silenceFor', () => {
  const now = 11 * H;
  const prod = issuerNotReady();
  const staging = issuerNotReady({ clusterName: 'staging-us-east-2' });

  it.each([
    ['an active silence that matches', [silence()], prod, '1'],
    ['not matching', [silence()], staging, null],
    ['pending', [silence({ startsAt: 12 * H, endsAt: 13 * H })], prod, null],
    ['expired', [silence({ expiredAt: 10.5 * H })], prod, null],
    ['another family', [silence({ matcher: 'true', eventTypeId: 'cert-expiry-ext-notification-config' })], prod, null],
  ] as const)('%s', (_name, list, event, want) => {
    const r = silenceFor(
      event,
      list.map((s) => compileSilence(s)),
      now,
    );
    expect(r.silence ? r.silence.id.slice(-1) : null).toBe(want);
  });

  it('of several, the one that ends last, then the smallest id (list order does not matter)', () => {
    const a = silence({ id: '00000000-0000-4000-8000-00000000000a', endsAt: 14 * H });
    const b = silence({ id: '00000000-0000-4000-8000-00000000000b', endsAt: 14 * H });
    const c = silence({ id: '00000000-0000-4000-8000-00000000000c', endsAt: 13 * H });
    for (const order of [
      [a, b, c],
      [c, b, a],
      [b, c, a],
    ])
      expect(
        silenceFor(
          prod,
          order.map((s) => compileSilence(s)),
          now,
        ).silence?.id,
      ).toBe(a.id);
  });

  it('silenceFor of a list is the merge of silenceFor of its parts, wherever the list is cut', () => {
    const list = [
      silence({ id: '00000000-0000-4000-8000-00000000000c', endsAt: 13 * H }),
      silence({
        id: '00000000-0000-4000-8000-00000000000e',
        matcher: 'int(data.statusMessage) == 1',
        eventTypeId: 'certmgr-issuer-health-notification-config',
      }),
      silence({ id: '00000000-0000-4000-8000-00000000000a', endsAt: 14 * H }),
      silence({ id: '00000000-0000-4000-8000-00000000000b', endsAt: 14 * H }),
      silence({ id: '00000000-0000-4000-8000-00000000000d', matcher: 'false' }),
    ].map((s) => compileSilence(s));
    const whole = silenceFor(prod, list, now);
    expect(whole.silence?.id).toBe('00000000-0000-4000-8000-00000000000a');
    expect(whole.errors).toHaveLength(1);
    for (let cut = 0; cut <= list.length; cut++) {
      const merged = mergeSilenceMatches(silenceFor(prod, list.slice(0, cut), now), silenceFor(prod, list.slice(cut), now));
      expect(merged).toEqual(whole);
    }
  });

  it('a matcher that errors does not silence and is reported', () => {
    const s = silence({ matcher: 'int(data.statusMessage) == 1', eventTypeId: 'certmgr-issuer-health-notification-config' });
    const r = silenceFor(prod, [compileSilence(s)], now);
    expect(r.silence).toBeNull();
    expect(r.errors).toEqual([{ silence: s, error: expect.stringMatching(/conversion/) as unknown }]);
  });

  it('applies across families when the matcher compiles for them', () => {
    // issuerName: issuer and certificate health events have it, expiration events do not
    const s = compileSilence(silence({ matcher: 'data.issuerName == "le-prod"' }));
    expect(s.matchers.has('cert-expiry-ext-notification-config')).toBe(false);
    expect(silenceFor(certificateResourceNotReady({ issuerName: 'le-prod' }), [s], now).silence).not.toBeNull();
    expect(silenceFor(expiringCertificate(), [s], now).silence).toBeNull();
  });
});

describe('the recovery exception', () => {
  const active = issuerActive().type;
  const notready = issuerNotReady().type;
  it.each([
    ['.active, trigger delivered', active, 'DELIVERED', true],
    ['.active, trigger pending (will be sent)', active, 'PENDING', true],
    ['.active, trigger dead', active, 'DEAD', true],
    ['.active, trigger silenced', active, 'SILENCED', false],
    ['.active, no earlier delivery', active, null, false],
    ['.notready, trigger delivered', notready, 'DELIVERED', false],
  ] as const)('%s', (_name, type, previous, want) => {
    expect(isSentRecovery(type, previous)).toBe(want);
    const s = silence();
    expect(silenceVerdict(type, s, previous)).toBe(want ? null : s);
    expect(silenceVerdict(type, null, previous)).toBeNull();
  });
});

describe('newestEarlierStatus (the stored one and those planned in the same request)', () => {
  const self = { orderAt: 10, orderSeq: 5, id: 'm' };
  const k = (status: string, orderAt: number, orderSeq = 0, id = 'x') => ({ status, orderAt, orderSeq, id });
  it.each([
    ['none', [], null],
    ['the stored one', [k('DELIVERED', 5)], 'DELIVERED'],
    ['no stored one, a planned older', [null, k('SILENCED', 9)], 'SILENCED'],
    ['a planned one newer than the stored one wins', [k('DELIVERED', 5), k('SILENCED', 9)], 'SILENCED'],
    ['a planned one later in key order is ignored (events of a request in any order)', [k('DELIVERED', 5), k('SILENCED', 11)], 'DELIVERED'],
    ['same time: the sequence, then the id decide', [k('SILENCED', 10, 4), k('PENDING', 10, 5, 'a'), k('DEAD', 10, 5, 'z')], 'PENDING'],
  ] as const)('%s', (_n, candidates, want) => {
    expect(newestEarlierStatus(self, candidates)).toBe(want);
  });
});
