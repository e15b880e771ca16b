/**
 * foldHealth (src/ingest/health.ts): one write per resource from a request's health events, in the deliveries'
 * order, whatever order they arrived in. Table tests.
 */
import { describe, expect, it } from 'vitest';
import { foldHealth, type HealthEventIn } from '../../src/ingest/health.js';

const N = 'evt.healthstatus.certmgr-issuer.notready';
const A = 'evt.healthstatus.certmgr-issuer.active';
const EXP = 'evt.policy.expiringcertificates.failed';

/** An event of `key` at order position `at` (orderAt; orderSeq = at), received at 1000 + at. */
const ev = (id: string, type: string, at: number, key = 'k1'): HealthEventIn => ({
  eventId: id,
  type,
  order: { orderKey: key, orderAt: at, orderSeq: at },
  receivedAt: 1000 + at,
});
const since = (at: number) => ({ at: 1000 + at, orderAt: at, orderSeq: at });

describe('foldHealth', () => {
  it.each<[string, HealthEventIn[], ReturnType<typeof foldHealth>]>([
    ['no events', [], []],
    ['expiration events are no resource health', [ev('x', EXP, 1)], []],
    [
      'one .notready: continues a stored streak, or starts one',
      [ev('n1', N, 1)],
      [{ companyId: 'c', resourceKey: 'k1', eventId: 'n1', orderAt: 1, orderSeq: 1, since: since(1), fresh: false }],
    ],
    [
      'one .active: healthy, replaces the stored streak',
      [ev('a1', A, 1)],
      [{ companyId: 'c', resourceKey: 'k1', eventId: 'a1', orderAt: 1, orderSeq: 1, since: null, fresh: true }],
    ],
    [
      'a flap ending unhealthy: the streak after the last .active, fresh',
      [ev('n1', N, 1), ev('a1', A, 2), ev('n2', N, 3), ev('n3', N, 4)],
      [{ companyId: 'c', resourceKey: 'k1', eventId: 'n3', orderAt: 4, orderSeq: 4, since: since(3), fresh: true }],
    ],
    [
      'out of order in the request: sorted by order position first',
      [ev('n3', N, 4), ev('a1', A, 2), ev('n2', N, 3)],
      [{ companyId: 'c', resourceKey: 'k1', eventId: 'n3', orderAt: 4, orderSeq: 4, since: since(3), fresh: true }],
    ],
    [
      'two .notready: the first is since, not fresh',
      [ev('n2', N, 2), ev('n1', N, 1)],
      [{ companyId: 'c', resourceKey: 'k1', eventId: 'n2', orderAt: 2, orderSeq: 2, since: since(1), fresh: false }],
    ],
    [
      'several resources: one write each',
      [ev('n1', N, 1, 'k1'), ev('a2', A, 2, 'k2')],
      [
        { companyId: 'c', resourceKey: 'k1', eventId: 'n1', orderAt: 1, orderSeq: 1, since: since(1), fresh: false },
        { companyId: 'c', resourceKey: 'k2', eventId: 'a2', orderAt: 2, orderSeq: 2, since: null, fresh: true },
      ],
    ],
  ])('%s', (_name, events, want) => {
    expect(foldHealth('c', events)).toEqual(want);
  });
});
