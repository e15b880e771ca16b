/** Order per key: the pure rules, table-tested. The store must agree (test/store/order.int.test.ts). */
import { describe, expect, it } from 'vitest';
import {
  compareOrder,
  orderModeOf,
  orderOfEvent,
  orderVerdict,
  type KeyDelivery,
  type OrderMode,
  type OrderVerdict,
} from '../../src/delivery/order.js';
import { correlationKeyOf } from '../../src/model/correlation.js';
import { viewOf } from '../../src/model/event-view.js';
import { INTEGRATION_TYPES } from '../../src/model/integration-types.js';
import { EVENTS } from '../integrations/helpers.js';

const at = (orderAt: number, orderSeq = 0, id = 'm') => ({ orderAt, orderSeq, id });
const k = (status: KeyDelivery['status'], orderAt: number, orderSeq = 0, id = 'x'): KeyDelivery => ({ status, orderAt, orderSeq, id });

describe('compareOrder', () => {
  it.each([
    [at(1), at(2), -1],
    [at(2, 0), at(1, 9), 1],
    [at(1, 1), at(1, 2), -1],
    [at(1, 1, 'a'), at(1, 1, 'b'), -1],
    [at(1, 1, 'b'), at(1, 1, 'b'), 0],
  ])('%o vs %o', (a, b, sign) => {
    expect(Math.sign(compareOrder(a, b))).toBe(sign);
  });
});

describe('orderModeOf', () => {
  it('only the incident and alert types (incident management, Opsgenie, Alertmanager) are state-carrying', () => {
    expect(INTEGRATION_TYPES.filter((t) => orderModeOf(t) === 'supersede')).toEqual(['INCIDENT_MGMT', 'OPSGENIE', 'ALERTMANAGER']);
  });
  it('a type this version does not know is in-order (never dropped)', () => {
    expect(orderModeOf('PAGER' as (typeof INTEGRATION_TYPES)[number])).toBe('in-order');
  });
});

describe('orderVerdict', () => {
  const self = at(10, 5, 'm');
  const cases: Array<[string, OrderMode, KeyDelivery[], OrderVerdict]> = [
    ['alone', 'supersede', [], 'send'],
    ['alone', 'in-order', [], 'send'],
    ['older pending: wait (in order)', 'in-order', [k('PENDING', 9)], 'wait'],
    ['older in flight: wait', 'in-order', [k('IN_FLIGHT', 10, 4)], 'wait'],
    ['older in flight: wait (supersede mode too: at most one in flight per key)', 'supersede', [k('IN_FLIGHT', 9)], 'wait'],
    ['older dead: proceeds', 'in-order', [k('DEAD', 9)], 'send'],
    ['older delivered or superseded: proceeds', 'in-order', [k('DELIVERED', 9), k('SUPERSEDED', 8)], 'send'],
    ['newer pending, incident: superseded', 'supersede', [k('PENDING', 11)], 'superseded'],
    ['newer dead, incident: superseded (its state is newer all the same)', 'supersede', [k('DEAD', 10, 6)], 'superseded'],
    ['newer pending, webhook: sent first', 'in-order', [k('PENDING', 11)], 'send'],
    ['newer delivered, webhook: late, superseded', 'in-order', [k('DELIVERED', 11)], 'superseded'],
    ['newer in flight, webhook: late, superseded', 'in-order', [k('IN_FLIGHT', 10, 6)], 'superseded'],
    ['newer dead, webhook: sent', 'in-order', [k('DEAD', 12)], 'send'],
    ['older silenced: proceeds (terminal, never sent)', 'in-order', [k('SILENCED', 9)], 'send'],
    ['older silenced, incident: proceeds', 'supersede', [k('SILENCED', 9)], 'send'],
    ['newer silenced, incident: sent (a silenced notification carries no state)', 'supersede', [k('SILENCED', 11)], 'send'],
    ['newer silenced, webhook: sent', 'in-order', [k('SILENCED', 11)], 'send'],
    ['same time and sequence: the id decides', 'supersede', [k('PENDING', 10, 5, 'z')], 'superseded'],
    ['same time and sequence, smaller id is older: wait', 'supersede', [k('PENDING', 10, 5, 'a')], 'wait'],
  ];
  it.each(cases)('%s (%s)', (_what, mode, others, want) => {
    expect(orderVerdict(mode, self, others)).toBe(want);
  });
});

describe('orderOfEvent', () => {
  const accepted = Date.parse('2026-03-02T00:00:00Z');
  const notready = EVENTS['evt.healthstatus.certmgr-issuer.notready'];
  const active = EVENTS['evt.healthstatus.certmgr-issuer.active'];

  it('the key is the incident dedup_key, shared by the trigger and the resolve of one resource', () => {
    const a = orderOfEvent(notready, accepted, 0);
    expect(a.orderKey).toBe(correlationKeyOf(viewOf(notready)));
    expect(orderOfEvent(active, accepted, 0).orderKey).toBe(a.orderKey);
    const other = { ...notready, data: { ...notready.data, issuerName: 'other' } };
    expect(orderOfEvent(other, accepted, 0).orderKey).not.toBe(a.orderKey);
  });

  it.each([
    ['statusTransition', notready, Date.parse('2026-03-01T10:00:00Z')],
    [
      'statusTransition in the future: the acceptance time',
      { ...notready, data: { ...notready.data, statusTransition: '2099-01-01T00:00:00Z' } },
      accepted,
    ],
    ['no statusTransition: the acceptance time', { ...notready, data: { ...notready.data, statusTransition: undefined } }, accepted],
    [
      'unparsable statusTransition: the acceptance time',
      { ...notready, data: { ...notready.data, statusTransition: 'yesterday-ish' } },
      accepted,
    ],
    [
      'expiration: notificationDate',
      EVENTS['evt.policy.expiringcertificates.failed'],
      Date.parse(String(EVENTS['evt.policy.expiringcertificates.failed'].data['notificationDate'])),
    ],
  ])('orderAt: %s', (_what, ev, want) => {
    expect(orderOfEvent(ev, accepted, 0).orderAt).toBe(want);
  });

  it('the acceptance sequence keeps a request in order and puts a later request after it', () => {
    const s = [0, 1, 999].map((i) => orderOfEvent(notready, accepted, i).orderSeq);
    expect(s).toEqual([...s].sort((a, b) => a - b));
    expect(orderOfEvent(notready, accepted + 1, 0).orderSeq).toBeGreaterThan(s[2]!);
    expect(Number.isSafeInteger(orderOfEvent(notready, Date.parse('2200-01-01T00:00:00Z'), 999).orderSeq)).toBe(true);
  });
});
