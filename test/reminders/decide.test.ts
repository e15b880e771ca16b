import { describe, expect, it } from 'vitest';
import {
  CLOSED_KEEP_MS,
  admitOpens,
  decideDue,
  decideOnEvent,
  reminderDeliveryId,
  remindsFor,
  type AcceptedForReminder,
  type ReminderRouter,
  type ReminderState,
} from '../../src/reminders/decide.js';
import { compareOrder } from '../../src/delivery/order.js';
import { isUuid } from '../../src/service/validate.js';
import { randomUUID } from 'node:crypto';

const MIN = 60_000;
const ISSUER = 'certmgr-issuer-health-notification-config' as const;
const AGENT = 'certmgr-agent-health-notification-config' as const;
const EXPIRY = 'cert-expiry-ext-notification-config' as const;

const router = (over: Partial<ReminderRouter> = {}): ReminderRouter => ({
  enabled: true,
  eventTypeId: ISSUER,
  integrationId: 'int-1',
  groupBy: [],
  repeatIntervalMs: 5 * MIN,
  ...over,
});

const ev = (over: Partial<AcceptedForReminder> = {}): AcceptedForReminder => ({
  eventId: 'ev-2',
  state: 'unhealthy',
  family: ISSUER,
  sent: true,
  orderAt: 2_000,
  orderSeq: 2_000_000,
  ...over,
});

const state = (over: Partial<ReminderState> = {}): ReminderState => ({
  open: true,
  eventId: 'ev-1',
  integrationId: 'int-1',
  eventTypeId: ISSUER,
  orderAt: 1_000,
  orderSeq: 1_000_000,
  nextDueAt: 1_000 + 5 * MIN,
  count: 3,
  ...over,
});

const NOW = 10_000;

describe('remindsFor: which routers keep reminders', () => {
  it.each([
    ['repeat set, no groupBy, health family', router(), ISSUER, true],
    ['agent family (hub extension): a silent cluster is reminded of', router({ eventTypeId: AGENT }), AGENT, true],
    ['no repeatInterval', router({ repeatIntervalMs: null }), ISSUER, false],
    ['grouped router (the grouping part repeats groups)', router({ groupBy: ['data.issuerName'] }), ISSUER, false],
    ['expiration family (thresholds are the reminders)', router({ eventTypeId: EXPIRY }), EXPIRY, false],
    ['disabled router', router({ enabled: false }), ISSUER, false],
    ['event of another family than the router', router(), AGENT, false],
  ] as const)('%s → %s', (_name, r, family, want) => {
    expect(remindsFor(r, family)).toBe(want);
  });
});

describe('decideOnEvent: what an accepted event does to its (router, orderKey) reminder', () => {
  it.each([
    [
      '.notready, nothing stored → open, first reminder at accepted + repeat',
      ev(),
      null,
      'open',
      { open: true, nextDueAt: NOW + 5 * MIN, eventId: 'ev-2' },
    ],
    ['.notready, a closed marker older → open again', ev(), state({ open: false }), 'open', { open: true, eventId: 'ev-2' }],
    [
      'newer .notready while open → refresh: newest event, next due from it',
      ev(),
      state(),
      'refresh',
      { open: true, eventId: 'ev-2', nextDueAt: NOW + 5 * MIN },
    ],
    ["refresh takes the router's current integration", ev(), state({ integrationId: 'int-0' }), 'refresh', { integrationId: 'int-1' }],
    [
      '.active while open → close (marker kept a day)',
      ev({ state: 'restored' }),
      state(),
      'close',
      { open: false, eventId: 'ev-2', nextDueAt: NOW + CLOSED_KEEP_MS },
    ],
    [
      '.active with nothing stored → closed marker (an older .notready committed later cannot open)',
      ev({ state: 'restored' }),
      null,
      'close',
      { open: false },
    ],
    ['silenced .active still closes', ev({ state: 'restored', sent: false }), state(), 'close', { open: false }],
  ] as const)('%s', (_name, e, s, action, write) => {
    const d = decideOnEvent(router(), e, s, NOW);
    expect(d.action).toBe(action);
    expect(d.action !== 'none' && d.write).toMatchObject({ ...write, orderAt: e.orderAt, orderSeq: e.orderSeq });
  });

  it.each([
    ['silenced .notready opens nothing', router(), ev({ sent: false }), null, 'silenced'],
    ['silenced .notready refreshes nothing', router(), ev({ sent: false }), state(), 'silenced'],
    ['.notready older than the stored state (arrived late)', router(), ev({ orderAt: 500 }), state(), 'older'],
    [
      '.active older than the stored .notready (arrived late: its delivery is superseded too)',
      router(),
      ev({ state: 'restored', orderAt: 500 }),
      state(),
      'older',
    ],
    [
      '.notready older than a closed marker (a re-send after the recovery)',
      router(),
      ev({ orderAt: 500 }),
      state({ open: false }),
      'older',
    ],
    ['same position again (the same event)', router(), ev({ orderAt: 1_000, orderSeq: 1_000_000 }), state(), 'older'],
    ['same orderAt, older acceptance sequence', router(), ev({ orderAt: 1_000, orderSeq: 999_999 }), state(), 'older'],
    ['router without repeat', router({ repeatIntervalMs: null }), ev(), null, 'not reminded'],
    ['grouped router', router({ groupBy: ['data.issuerName'] }), ev(), null, 'not reminded'],
  ] as const)('nothing: %s', (_name, r, e, s, why) => {
    expect(decideOnEvent(r, e, s, NOW)).toEqual({ action: 'none', why });
  });

  it('same orderAt, newer acceptance sequence → newer', () => {
    expect(decideOnEvent(router(), ev({ orderAt: 1_000, orderSeq: 1_000_001 }), state(), NOW).action).toBe('refresh');
  });
});

describe('admitOpens: the caps of open reminders', () => {
  const limits = { perRouter: 2, perCompany: 3 };
  it('admits in order up to the router cap and the company cap, counting what is open already', () => {
    const opens = ['a', 'a', 'a', 'b', 'b'].map((routerId, i) => ({ routerId, i }));
    const r = admitOpens(opens, { company: 0, byRouter: new Map() }, limits);
    expect(r.admitted.map((o) => o.i)).toEqual([0, 1, 3]);
    expect(r.refused.map((o) => o.i)).toEqual([2, 4]);
  });
  it('counts the open rows before the batch', () => {
    const r = admitOpens([{ routerId: 'a' }, { routerId: 'b' }], { company: 2, byRouter: new Map([['a', 2]]) }, limits);
    expect(r.admitted).toEqual([{ routerId: 'b' }]);
  });
  it('refuses everything at the company cap', () => {
    expect(admitOpens([{ routerId: 'c' }], { company: 3, byRouter: new Map() }, limits).admitted).toEqual([]);
  });
});

describe('decideDue: a due row against the router and integration as they are now', () => {
  const named = (over: Partial<ReminderRouter> = {}) => ({ ...router(over), name: 'issuers' });
  const on = { enabled: true };
  it.each([
    [
      'still reminded → send, next = now + repeat',
      state(),
      named(),
      on,
      { action: 'send', nextDueAt: NOW + 5 * MIN, routerName: 'issuers' },
    ],
    [
      'repeat changed → next from the new interval',
      state(),
      named({ repeatIntervalMs: 2 * MIN }),
      on,
      { action: 'send', nextDueAt: NOW + 2 * MIN },
    ],
    [
      'integration disabled → skip (no dead letter), try again later',
      state(),
      named(),
      { enabled: false },
      { action: 'skip', nextDueAt: NOW + 5 * MIN },
    ],
    ['closed marker due → expire', state({ open: false }), named(), on, { action: 'expire' }],
    ['router deleted', state(), null, null, { action: 'close', why: 'router deleted' }],
    ['router disabled', state(), named({ enabled: false }), on, { action: 'close', why: 'router disabled' }],
    ['repeat turned off', state(), named({ repeatIntervalMs: null }), on, { action: 'close', why: 'repeat off' }],
    ['router now groups', state(), named({ groupBy: ['data.issuerName'] }), on, { action: 'close', why: 'grouped' }],
    ['router now on another family', state(), named({ eventTypeId: AGENT }), on, { action: 'close', why: 'event type changed' }],
    [
      'router now sends to another integration',
      state(),
      named({ integrationId: 'int-9' }),
      on,
      { action: 'close', why: 'integration changed' },
    ],
    ['integration deleted', state(), named(), null, { action: 'close', why: 'integration deleted' }],
  ] as const)('%s', (_name, row, r, integration, want) => {
    expect(decideDue(row, r, integration, NOW)).toMatchObject(want);
  });
});

describe('reminderDeliveryId', () => {
  it('is a UUID that sorts after any random v4 id and after earlier reminder ids', () => {
    let prev = '';
    for (let i = 0; i < 200; i++) {
      const t = 1_780_000_000_000 + i * 997;
      const id = reminderDeliveryId(t, Math.random);
      expect(isUuid(id)).toBe(true);
      expect(id > prev).toBe(true);
      for (let j = 0; j < 20; j++) expect(id > randomUUID()).toBe(true);
      expect(id > 'ffffffff-ffff-4fff-bfff-ffffffffffff').toBe(true);
      prev = id;
    }
  });
  it("orders after the event's own delivery at the same position (delivery/order.ts compareOrder)", () => {
    const pos = { orderAt: 5, orderSeq: 5_000 };
    const own = { ...pos, id: 'fffffffe-ffff-4fff-bfff-ffffffffffff' };
    const reminder = { ...pos, id: reminderDeliveryId(1_780_000_000_000, () => 0) };
    expect(compareOrder(own, reminder)).toBeLessThan(0);
    // and before any later event of the key, whatever its id
    expect(compareOrder(reminder, { orderAt: 5, orderSeq: 5_001, id: '00000000-0000-4000-8000-000000000000' })).toBeLessThan(0);
  });
  it('takes its random bits from rand', () => {
    expect(reminderDeliveryId(0x123456789ab, () => 0)).toBe('ffffffff-ffff-8123-8456-789ab0000000');
    expect(reminderDeliveryId(0x123456789ab, () => 0.5)).toBe('ffffffff-ffff-8123-8456-789ab8000000');
  });
});
