/** Health decisions under the per-resource policy (docs/annotations.md): ignore and runbook URL, tables. */
import { describe, expect, it } from 'vitest';
import { validateEvent } from '../../../src/events/schemas.js';
import { IGNORED_REASON, diffReady, type HealthOptions, type HealthState } from '../../../src/emitter/health/diff.js';
import { observe, type CertManagerObject, type HealthKind, type ObservedPolicy } from '../../../src/emitter/health/observe.js';
import { CLUSTER, certificate, issuer, ready } from '../fixtures.js';

const NOW = Date.parse('2026-03-01T10:00:00Z');
const MIN = 60_000;
const OPTS: HealthOptions = { cluster: CLUSTER, gracePeriodMs: 1 * MIN, unknownGracePeriodMs: 2 * MIN, issuingGracePeriodMs: 5 * MIN };
const RUNBOOK = 'https://wiki.example.com/runbooks/tls';

const failing = (kind: HealthKind): CertManagerObject => {
  const conditions = [ready('False', NOW - 10 * MIN, 'Failed', 'ACME order failed')];
  return kind === 'Certificate' ? certificate({ conditions }) : issuer(kind, { conditions });
};
const healthy = (kind: HealthKind): CertManagerObject => {
  const conditions = [ready('True', NOW - MIN)];
  return kind === 'Certificate' ? certificate({ conditions }) : issuer(kind, { conditions });
};

const step = (kind: HealthKind, prev: HealthState | undefined, obj: CertManagerObject | undefined, policy?: ObservedPolicy, now = NOW) =>
  diffReady(prev, obj ? observe(kind, obj, now, policy) : undefined, now, OPTS);

const KINDS: HealthKind[] = ['Certificate', 'Issuer', 'ClusterIssuer'];

describe('notify.certmgr.io/ignore', () => {
  it.each(KINDS)('%s ignored while failing: no event, nothing remembered', (kind) => {
    expect(step(kind, undefined, failing(kind), { ignore: true })).toEqual({ next: undefined });
  });

  it.each(KINDS)('%s ignored during the grace period: nothing sent, the episode forgotten', (kind) => {
    const grace = step(kind, undefined, failing(kind), undefined, NOW - 10 * MIN + 30_000);
    expect(grace.event).toBeUndefined();
    expect(grace.next?.notified).toBe(false);
    expect(step(kind, grace.next, failing(kind), { ignore: true })).toEqual({ next: undefined });
  });

  it.each(KINDS)('%s ignored after its .notready: one final .active (reason Ignored), then nothing', (kind) => {
    const first = step(kind, undefined, failing(kind), { ignore: false, runbookUrl: RUNBOOK });
    expect(first.event?.type).toMatch(/\.notready$/);
    const closed = step(kind, first.next, failing(kind), { ignore: true, runbookUrl: RUNBOOK }, NOW + 5 * MIN);
    expect(closed.next).toBeUndefined();
    expect(closed.event?.type).toMatch(/\.active$/);
    expect(closed.event?.data).toMatchObject({ statusReason: IGNORED_REASON, unhealthyDuration: '0h15m0s', runbookUrl: RUNBOOK });
    expect(String(closed.event?.data['statusMessage'])).toMatch(/is now ignored/);
    expect(validateEvent(closed.event).ok).toBe(true);
    expect(step(kind, closed.next, failing(kind), { ignore: true }, NOW + 6 * MIN)).toEqual({ next: undefined });
  });

  it('un-ignored while still failing: a new episode, .notready since Ready’s transition (grace passed)', () => {
    const d = step('Certificate', undefined, failing('Certificate'), { ignore: false });
    expect(d.event?.type).toBe('evt.healthstatus.certmgr-certificate-resource.notready');
  });

  it('ignored and healthy: nothing, and no recheck at notAfter', () => {
    const c = certificate({ conditions: [ready('True', NOW - MIN)], status: { notAfter: new Date(NOW + 5 * MIN).toISOString() } });
    expect(step('Certificate', undefined, c, { ignore: true })).toEqual({ next: undefined });
    expect(step('Certificate', undefined, c).recheckAt).toBe(NOW + 5 * MIN);
  });
});

describe('notify.certmgr.io/runbook-url', () => {
  it.each(KINDS)('%s: data.runbookUrl on .notready, .active and the Deleted .active; valid events', (kind) => {
    const p = { ignore: false, runbookUrl: RUNBOOK };
    const down = step(kind, undefined, failing(kind), p);
    const up = step(kind, down.next, healthy(kind), p, NOW + MIN);
    const gone = step(kind, down.next, undefined, undefined, NOW + MIN); // the remembered identity carries it
    for (const e of [down.event, up.event, gone.event]) {
      expect(e?.data['runbookUrl']).toBe(RUNBOOK);
      expect(validateEvent(e)).toEqual({ ok: true, event: e });
    }
    expect(gone.event?.data['statusReason']).toBe('Deleted');
  });

  it('absent without the annotation (the spec’s exact fields)', () => {
    const e = step('Certificate', undefined, failing('Certificate')).event;
    expect(e?.data).not.toHaveProperty('runbookUrl');
  });

  it('a changed URL is the one sent next', () => {
    const down = step('Issuer', undefined, failing('Issuer'), { ignore: false, runbookUrl: RUNBOOK });
    const up = step('Issuer', down.next, healthy('Issuer'), { ignore: false, runbookUrl: 'https://new.example/rb' }, NOW + MIN);
    expect(up.event?.data['runbookUrl']).toBe('https://new.example/rb');
  });
});
