/**
 * The prefilter index is only a prefilter: for every generated router set and event, matchRouters (which
 * evaluates the index's candidates) returns exactly what evaluating every router returns (decideRouters), and
 * every router the index skips has a filter that evaluates to exactly false (no hidden evaluation error).
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, familyOfType, type EventType, type EventTypeId, type InternalEvent } from '../../src/events/families.js';
import { decideRouters, matchRouters, routingIndex, type RouterDecision, type RoutingSnapshot } from '../../src/routing/match.js';
import type { RouterRecord } from '../../src/store/types.js';
import { sampleEvents } from '../fixtures/events.js';
import { pick, randomEvent, randomMonitoring, randomRouters, rng, router, snapshotOf } from './generators.js';

type Outcome = { matched: string[]; errors: [string, string | undefined][] };

const outcome = (m: { matched: RouterRecord[]; errors: RouterDecision[] }): Outcome => ({
  matched: m.matched.map((r) => r.id),
  errors: m.errors.map((d) => [d.router.id, d.error]),
});

/** Brute force: every router of the family, through decideRouters. */
function bruteForce(ds: RouterDecision[]): Outcome {
  return outcome({
    matched: ds.filter((d) => d.verdict === 'MATCHED').map((d) => d.router),
    errors: ds.filter((d) => d.verdict === 'FILTER_ERROR'),
  });
}

interface Tally {
  events: number;
  /** Router evaluations brute force does (enabled routers with a usable integration, monitored events). */
  eligible: number;
  /** ... and how many of them the index keeps. */
  candidates: number;
  matched: number;
  errors: number;
}

const show = (e: InternalEvent): string => JSON.stringify(e, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

/** Checks one event against one snapshot; returns the counts for the non-vacuity checks. */
// The generated tests call check() for about 10,000 events and 300,000 skipped routers: each expect() costs
// vitest's bookkeeping plus the eager show(event) message, which was most of this file's run time. So each
// assertion runs through expect() only when a strict deep-equality pre-check fails: a strictly equal value
// passes toEqual anyway, anything else gets the same expect() with the same message (same property, same strength).
const same = (actual: unknown, expected: unknown): boolean => isDeepStrictEqual(actual, expected);

function check(event: InternalEvent, snap: RoutingSnapshot, tally: Tally): void {
  const decisions = decideRouters(event, snap);
  const expected = bruteForce(decisions);
  const actual = outcome(matchRouters(event, snap));
  if (!same(actual, expected)) expect(actual, show(event)).toEqual(expected);

  const family = familyOfType(event.type).eventTypeId;
  const index = routingIndex(snap, family);
  const candidates = new Set(index.candidates(event));
  tally.events++;
  tally.matched += expected.matched.length;
  tally.errors += expected.errors.length;
  decisions.forEach((d, i) => {
    if (d.verdict !== 'MATCHED' && d.verdict !== 'FILTER_FALSE' && d.verdict !== 'FILTER_ERROR') return;
    tally.eligible++;
    if (candidates.has(i)) {
      tally.candidates++;
      return;
    }
    // Skipped by the index: the filter must be exactly false for this event.
    const filter = index.routers[i]?.filter;
    const result = filter?.evaluate(event);
    if (filter && same(result, { matched: false })) return;
    expect(filter, d.router.filter).toBeTruthy();
    expect(result, `${d.router.filter} on ${show(event)}`).toEqual({ matched: false });
  });
}

const newTally = (): Tally => ({ events: 0, eligible: 0, candidates: 0, matched: 0, errors: 0 });

describe('prefilter index ≡ brute force (generated)', () => {
  const SEEDS = 150;
  it(`${SEEDS} router sets × 60 events of all five types`, async () => {
    const tally = newTally();
    const perType = new Map<EventType, number>();
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = rng(seed);
      const n = pick(r, [1, 3, 10, 40, 120]);
      const snap = await snapshotOf(randomRouters(r, n, pick(r, [0.5, 0.75, 0.9, 1])), randomMonitoring(r));
      for (let k = 0; k < 60; k++) {
        const event = randomEvent(r);
        perType.set(event.type, (perType.get(event.type) ?? 0) + 1);
        check(event, snap, tally);
      }
    }
    // Not vacuous: all types seen, matches and errors happen, and the index does skip most evaluations.
    expect([...perType.keys()].sort()).toEqual([...EVENT_TYPES].sort());
    expect(tally.matched).toBeGreaterThan(1000);
    expect(tally.errors).toBeGreaterThan(1000);
    expect(tally.candidates / tally.eligible).toBeLessThan(0.6);
  });

  it('only spec patterns: the index evaluates a small share of the routers', async () => {
    const tally = newTally();
    for (let seed = 1000; seed < 1015; seed++) {
      const r = rng(seed);
      const snap = await snapshotOf(randomRouters(r, 150, 1));
      for (let k = 0; k < 40; k++) check(randomEvent(r), snap, tally);
    }
    expect(tally.matched).toBeGreaterThan(0);
    expect(tally.candidates / tally.eligible).toBeLessThan(0.45);
  });

  it('every sample event against every generated router set, also when not monitored', async () => {
    const tally = newTally();
    for (let seed = 2000; seed < 2040; seed++) {
      const r = rng(seed);
      const routers = randomRouters(r, 30);
      for (const monitoring of [
        { enabled: true, applicationIds: [], includeUnassignedCertificates: true },
        { enabled: true, applicationIds: ['inventory-app'], includeUnassignedCertificates: false },
        { enabled: false, applicationIds: [], includeUnassignedCertificates: true },
      ]) {
        const snap = await snapshotOf(routers, monitoring);
        for (const e of Object.values(sampleEvents())) check(e, snap, tally);
      }
    }
    expect(tally.events).toBe(40 * 3 * EVENT_TYPES.length);
  });
});

describe('prefilter index: tables', () => {
  const ISSUER: EventTypeId = 'certmgr-issuer-health-notification-config';
  const EXPIRY: EventTypeId = 'cert-expiry-ext-notification-config';
  const samples = sampleEvents();

  it('keeps router order, router/integration checks, compile errors and evaluation errors', async () => {
    const routers = [
      router('a', ISSUER, "data.clusterName == 'prod-eu-west-1'"),
      router('b', ISSUER, ''),
      router('c', ISSUER, "data.clusterName == 'prod-eu-west-1'", { enabled: false }),
      router('d', ISSUER, "type.endsWith('.notready') && data.namespace == 'cert-manager'", { integrationId: 'i-disabled' }),
      router('e', ISSUER, "data.clusterName == 'prod-eu-west-1'", { integrationId: 'i-other-company' }),
      router('f', ISSUER, 'data.nope == 1'),
      router('g', ISSUER, "data.unhealthyDuration == '1h'"),
      router('h', ISSUER, "type.endsWith('.active') && data.clusterName == 'prod-eu-west-1'"),
      router('i', ISSUER, "data.clusterName == 'staging-us-east-2'"),
      router(
        'j',
        ISSUER,
        "type.endsWith('.notready') && (data.clusterId == 'x' || data.clusterId == '3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31')",
      ),
    ];
    const snap = await snapshotOf(routers);
    const notReady = outcome(matchRouters(samples['evt.healthstatus.certmgr-issuer.notready'], snap));
    expect(notReady.matched).toEqual(['a', 'b', 'j']);
    expect(notReady.errors.map(([id]) => id)).toEqual(['f', 'g']);
    expect(notReady.errors[0]?.[1]).toMatch(/has no field 'nope'/);
    expect(notReady.errors[1]?.[1]).toMatch(/unhealthyDuration/);
    const active = outcome(matchRouters(samples['evt.healthstatus.certmgr-issuer.active'], snap));
    expect(active).toEqual({ matched: ['a', 'b', 'h'], errors: [['f', expect.stringMatching(/has no field 'nope'/)]] });
    expect(routingIndex(snap, ISSUER).stats).toEqual({ routers: 10, indexed: 5, always: 2, excluded: 3 });
    // i is indexed under another cluster name and h only for `.active`: neither is evaluated for the notready sample.
    expect(routingIndex(snap, ISSUER).candidates(samples['evt.healthstatus.certmgr-issuer.notready'])).toEqual([0, 1, 5, 6, 9]);
  });

  it('expiration: list membership, rule ids, monitoring', async () => {
    const routers = [
      router('pay', EXPIRY, "'payments-app' in data.applicationIds"),
      router('inv', EXPIRY, "'inventory-app' in data.applicationIds"),
      router('rule2', EXPIRY, 'data.ruleId == 2'),
      router('rule3', EXPIRY, 'data.ruleId == 3'),
      router('both', EXPIRY, "'checkout-app' in data.applicationIds && data.ruleId == 2"),
    ];
    const e = samples['evt.policy.expiringcertificates.failed']; // payments-app, checkout-app, rule 2
    expect(outcome(matchRouters(e, await snapshotOf(routers))).matched).toEqual(['pay', 'rule2', 'both']);
    expect(routingIndex(await snapshotOf(routers), EXPIRY).candidates(e)).toEqual([0, 2, 4]);
    const onlyInventory = await snapshotOf(routers, {
      enabled: true,
      applicationIds: ['inventory-app'],
      includeUnassignedCertificates: true,
    });
    expect(outcome(matchRouters(e, onlyInventory))).toEqual({ matched: [], errors: [] });
  });

  it('falls back to evaluating a bucket when the event value is missing or of another shape', async () => {
    const routers = [router('pay', EXPIRY, "'payments-app' in data.applicationIds"), router('rule2', EXPIRY, 'data.ruleId == 2')];
    const snap = await snapshotOf(routers);
    const index = routingIndex(snap, EXPIRY);
    const base = samples['evt.policy.expiringcertificates.failed'];
    const withData = (data: Record<string, unknown>): InternalEvent => ({ type: base.type, data: { ...base.data, ...data } });
    expect(index.candidates(withData({ applicationIds: ['other'], ruleId: 5 }))).toEqual([]);
    expect(index.candidates(withData({ applicationIds: { 'payments-app': true }, ruleId: 5 }))).toEqual([0]);
    expect(index.candidates(withData({ applicationIds: ['other', 1], ruleId: 5 }))).toEqual([0]);
    expect(index.candidates(withData({ applicationIds: ['payments-app', 'payments-app'], ruleId: 2n }))).toEqual([0, 1]);
    // A map with the key: CEL `in` tests map keys, so this matches; the index must not have skipped it.
    expect(outcome(matchRouters(withData({ applicationIds: { 'payments-app': 1 }, ruleId: 2n }), snap)).matched).toEqual(['pay', 'rule2']);
  });

  it('substring, prefix, suffix and regex-prefix routers: candidates from one scan of the string', async () => {
    const routers = [
      router('acme', ISSUER, "data.statusMessage.contains('ACME')"),
      router('cme', ISSUER, "data.statusMessage.contains('CME') || data.statusMessage.contains('zz')"),
      router('empty', ISSUER, "data.statusMessage.contains('')"),
      router('pre', ISSUER, "data.statusMessage.startsWith('Failed')"),
      router('suf', ISSUER, "type.endsWith('.notready') && data.statusMessage.endsWith('invalidEmail')"),
      router('re', ISSUER, "data.statusReason.matches('^ErrU?pdate')"),
      router('long', ISSUER, `data.statusMessage.contains('${'x'.repeat(1900)}')`),
      router('eq', ISSUER, "data.namespace == 'shop' && data.statusMessage.contains('ACME')"),
      router('uni', ISSUER, "data.statusMessage.contains('é')"),
      router('err', ISSUER, "int(data.namespace) == 1 && data.statusMessage.contains('ACME')"),
      router('dur', ISSUER, "data.unhealthyDuration.startsWith('1h')"),
    ];
    const snap = await snapshotOf(routers);
    const index = routingIndex(snap, ISSUER);
    expect(index.stats).toEqual({ routers: 11, indexed: 11, always: 0, excluded: 0 });
    const base = samples['evt.healthstatus.certmgr-issuer.notready'];
    const ev = (data: Record<string, unknown>, type: EventType = base.type): InternalEvent => ({ type, data: { ...base.data, ...data } });
    const ids = (ordinals: readonly number[]) => ordinals.map((o) => routers[o]?.id);

    const failed = ev({ statusMessage: 'Failed to register ACME account: invalidEmail', statusReason: 'ErrUpdate' });
    expect(ids(index.candidates(failed))).toEqual(['acme', 'cme', 'empty', 'pre', 'suf', 're', 'err', 'dur']);
    expect(outcome(matchRouters(failed, snap))).toEqual({
      matched: ['acme', 'cme', 'empty', 'pre', 'suf', 're'],
      errors: [
        ['err', expect.any(String)],
        ['dur', expect.stringMatching(/unhealthyDuration/)],
      ],
    });
    // `^ErrU?pdate` needs only "Err" in front; "é" as e + combining accent is not "é"; on `.active` `suf` is no candidate.
    const odd = ev({ statusMessage: 'Faild to cafe\u0301 zz', statusReason: 'Errpdate' });
    expect(ids(index.candidates(odd))).toEqual(['cme', 'empty', 're', 'dur']);
    expect(outcome(matchRouters(odd, snap)).matched).toEqual(['cme', 'empty', 're']);
    expect(
      ids(index.candidates(ev({ statusMessage: 'café invalidEmail', statusReason: 'Ready' }, 'evt.healthstatus.certmgr-issuer.active'))),
    ).toEqual(['empty', 'uni', 'dur']);
    expect(ids(index.candidates(ev({ statusMessage: '', namespace: 'shop', statusReason: 'Ready' })))).toEqual(['empty', 'eq', 'dur']);
    // A field that is not a string, or missing: every router of the bucket (they error, not false).
    for (const statusMessage of [42, null, ['ACME'], undefined]) {
      const e = ev({ statusMessage, statusReason: 'Ready' });
      if (statusMessage === undefined) delete e.data.statusMessage;
      expect(ids(index.candidates(e))).toEqual(['acme', 'cme', 'empty', 'pre', 'suf', 'long', 'uni', 'err', 'dur']);
      expect(outcome(matchRouters(e, snap)).errors).toHaveLength(9);
    }
  });

  it('prefers an equality, then the most selective literals; costly filters are always candidates', async () => {
    const routers = [
      router('eq', ISSUER, "data.statusMessage.contains('ACME') && data.namespace == 'shop'"),
      router('longer', ISSUER, "data.statusMessage.contains('A') && data.statusMessage.startsWith('The ACME')"),
      router(
        'fewer',
        ISSUER,
        "data.statusMessage.endsWith('server') && (data.statusMessage.contains('A') || data.statusMessage.contains('B'))",
      ),
      router('costly', ISSUER, "data.namespace == 'shop' && data.statusMessage.matches('A.*C.*E')"),
    ];
    const snap = await snapshotOf(routers);
    const index = routingIndex(snap, ISSUER);
    expect(index.stats).toEqual({ routers: 4, indexed: 3, always: 1, excluded: 0 });
    const active = samples['evt.healthstatus.certmgr-issuer.active']; // cert-manager; "The ACME account was registered with the ACME server"
    expect(index.candidates(active)).toEqual([1, 2, 3]);
    expect(index.candidates({ type: active.type, data: { ...active.data, statusMessage: 'A' } })).toEqual([3]);
    const long = { type: active.type, data: { ...active.data, statusMessage: 'ACME '.repeat(6000) } };
    expect(outcome(matchRouters(long, snap)).errors).toEqual([['costly', expect.stringMatching(/exceeds the budget/)]]);
  });

  it('long literals are indexed by their first (last, for endsWith) 64 code units', async () => {
    const long = 'ACME account '.repeat(10); // 130 code units
    const routers = [
      router('c', ISSUER, `data.statusMessage.contains('${long}')`),
      router('s', ISSUER, `data.statusMessage.endsWith('${long}')`),
    ];
    const snap = await snapshotOf(routers);
    const index = routingIndex(snap, ISSUER);
    const ev = (statusMessage: string): InternalEvent => ({
      type: 'evt.healthstatus.certmgr-issuer.notready',
      data: { ...samples['evt.healthstatus.certmgr-issuer.notready'].data, statusMessage },
    });
    expect(index.candidates(ev(`x ${long} y`))).toEqual([0]);
    expect(index.candidates(ev(`x ${long}`))).toEqual([0, 1]);
    expect(outcome(matchRouters(ev(`x ${long}`), snap)).matched).toEqual(['c', 's']);
    // The kept part only: candidates, evaluated to false.
    expect(index.candidates(ev(`${long.slice(0, 64)} ${long.slice(-64)}`))).toEqual([0, 1]);
    expect(outcome(matchRouters(ev(`${long.slice(0, 64)} ${long.slice(-64)}`), snap))).toEqual({ matched: [], errors: [] });
    expect(index.candidates(ev(`${long.slice(0, 63)} ${long.slice(-63)}`))).toEqual([]);
  });

  it('an event of another family gets every included router as a candidate (no shortcut)', async () => {
    const snap = await snapshotOf([
      router('a', ISSUER, "data.namespace == 'a'"),
      router('b', ISSUER, "data.namespace == 'b'", { enabled: false }),
      router('c', ISSUER, 'false'),
    ]);
    expect(routingIndex(snap, ISSUER).candidates(samples['evt.policy.expiringcertificates.failed'])).toEqual([0, 2]);
    expect(routingIndex(snap, ISSUER).candidates(samples['evt.healthstatus.certmgr-issuer.active'])).toEqual([]);
  });

  it('a new snapshot (configuration change) gets a new index; unchanged filters are not recompiled', async () => {
    const a = await snapshotOf([router('x', ISSUER, "data.namespace == 'a'")]);
    const b = await snapshotOf([router('x', ISSUER, "data.namespace == 'b'")]);
    const ev = (ns: string): InternalEvent => ({
      type: 'evt.healthstatus.certmgr-issuer.notready',
      data: { ...samples['evt.healthstatus.certmgr-issuer.notready'].data, namespace: ns },
    });
    expect(routingIndex(a, ISSUER)).not.toBe(routingIndex(b, ISSUER));
    expect(outcome(matchRouters(ev('a'), a)).matched).toEqual(['x']);
    expect(outcome(matchRouters(ev('a'), b)).matched).toEqual([]);
    expect(outcome(matchRouters(ev('b'), b)).matched).toEqual(['x']);
  });

  it('scales with matching routers: 10,000 routers with distinct values, a handful of candidates', async () => {
    const routers: RouterRecord[] = [];
    for (let i = 0; i < 10_000; i++) {
      routers.push(router(`r${i}`, ISSUER, `type.endsWith('.notready') && (data.clusterId == 'c${i}' || data.clusterId == 'c${i + 1}')`));
    }
    const snap = await snapshotOf(routers);
    const e: InternalEvent = {
      type: 'evt.healthstatus.certmgr-issuer.notready',
      data: { ...samples['evt.healthstatus.certmgr-issuer.notready'].data, clusterId: 'c500' },
    };
    expect(routingIndex(snap, ISSUER).candidates(e)).toEqual([499, 500]);
    expect(outcome(matchRouters(e, snap)).matched).toEqual(['r499', 'r500']);
    expect(routingIndex(snap, ISSUER).candidates({ ...e, type: 'evt.healthstatus.certmgr-issuer.active' })).toEqual([]);
  });

  it.each(Object.values(samples).map((e) => [e.type, e] as const))(
    'all sample events route identically with random routers (%s)',
    async (_t, e) => {
      const r = rng(7);
      const snap = await snapshotOf(randomRouters(r, 300));
      check(e, snap, newTally());
    },
  );
});
