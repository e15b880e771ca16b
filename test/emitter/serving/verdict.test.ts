/** servingVerdict: the endpoint's verdict from the Secret's leaf, the last probe, the previous verdict and the time. */
import { describe, expect, it } from 'vitest';
import { classify, servingVerdict, type ProbeResult, type VerdictInput } from '../../../src/emitter/serving/verdict.js';
import type { EndpointVerdict, LeafIdentity } from '../../../src/emitter/serving/types.js';

const MIN = 60_000;
const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T12:00:00Z');
const GRACE = 10 * MIN;
const RELOAD = 5 * MIN;

const leaf = (o: Partial<LeafIdentity> = {}): LeafIdentity => ({
  serial: 'B2',
  issuer: 'CN=Example CA',
  subject: 'O=Example, CN=web.example.com',
  dnsNames: ['web.example.com', 'www.example.com'],
  notBefore: NOW - 30 * DAY,
  notAfter: NOW + 60 * DAY,
  ...o,
});
const secret = leaf();
/** the certificate before the renewal: same names, earlier notAfter */
const old = leaf({ serial: 'A1', notBefore: NOW - 80 * DAY, notAfter: NOW + 10 * DAY });
const oldExpired = leaf({ serial: 'A0', notBefore: NOW - 90 * DAY, notAfter: NOW - DAY });
const foreign = leaf({
  serial: 'F1',
  issuer: 'CN=Kubernetes Ingress Controller Fake Certificate',
  subject: 'CN=ingress.local',
  dnsNames: ['ingress.local'],
});

const source = { kind: 'Ingress', namespace: 'shop', name: 'web' } as const;
const endpoint = { host: 'web.example.com', address: '10.0.0.1:443', source };
const served = (l: LeafIdentity, at = NOW): ProbeResult => ({ kind: 'served', leaf: l, at });
const failed = (error = 'connection refused', at = NOW): ProbeResult => ({ kind: 'failed', error, at });
const prev = (status: EndpointVerdict['status'], o: Partial<EndpointVerdict> = {}): EndpointVerdict => ({
  ...endpoint,
  status,
  since: NOW - 60 * MIN,
  checkedAt: NOW - 5 * MIN,
  ...o,
});

const verdict = (o: Partial<VerdictInput>): EndpointVerdict =>
  servingVerdict({
    endpoint,
    expected: secret,
    probe: undefined,
    previous: undefined,
    now: NOW,
    unreachableGraceMs: GRACE,
    reloadGraceMs: RELOAD,
    ...o,
  });

describe('classify: a served leaf against the Secret’s', () => {
  it.each<[string, LeafIdentity, LeafIdentity | undefined, string | undefined]>([
    ['the same certificate', secret, secret, 'ok'],
    ['the same serial and issuer, another object', { ...secret, dnsNames: [...secret.dnsNames] }, secret, 'ok'],
    ['the previous certificate (same subject and names, expires earlier)', old, secret, 'stale'],
    ['names in another order and case', { ...old, dnsNames: ['WWW.example.com', 'web.example.com', 'web.example.com'] }, secret, 'stale'],
    ['one name fewer', { ...old, dnsNames: ['web.example.com'] }, secret, 'mismatch'],
    ['another subject', { ...old, subject: 'CN=web.example.com' }, secret, 'mismatch'],
    ['same names, expiring later than the Secret’s', leaf({ serial: 'C3', notAfter: NOW + 90 * DAY }), secret, 'mismatch'],
    ['same names, expiring at the same time', leaf({ serial: 'C3' }), secret, 'mismatch'],
    ['the same serial from another issuer', leaf({ issuer: 'CN=Other CA', notAfter: NOW + DAY }), secret, 'stale'],
    ['the same serial from another issuer and subject', leaf({ issuer: 'CN=Other CA', subject: 'CN=x' }), secret, 'mismatch'],
    ['a foreign certificate', foreign, secret, 'mismatch'],
    ['an expired previous certificate: expired wins', oldExpired, secret, 'expired'],
    ['the Secret’s own certificate, expired: expired wins', leaf({ notAfter: NOW - 1 }), leaf({ notAfter: NOW - 1 }), 'expired'],
    ['expiring at this very millisecond: not yet', leaf({ serial: 'A1', notAfter: NOW }), secret, 'stale'],
    ['no Secret leaf: an expired one is still expired', oldExpired, undefined, 'expired'],
    ['no Secret leaf: nothing else can be said', old, undefined, undefined],
  ])('%s', (_, s, e, want) => expect(classify(s, e, NOW)).toBe(want));
});

describe('servingVerdict', () => {
  it('no address: notProbed with discovery’s reason; pending until the first probe', () => {
    expect(
      verdict({ endpoint: { ...endpoint, address: null, reason: 'no probe-address annotation and no load balancer address' } }),
    ).toEqual({
      ...endpoint,
      address: null,
      status: 'notProbed',
      since: NOW,
      reason: 'no probe-address annotation and no load balancer address',
    });
    expect(verdict({ endpoint: { ...endpoint, address: null } }).reason).toBe('no address to probe');
    expect(verdict({})).toEqual({ ...endpoint, status: 'pending', since: NOW, reason: 'not probed yet', expected: secret });
    expect(verdict({ previous: prev('pending') }).since).toBe(NOW - 60 * MIN);
  });

  it('served the Secret’s certificate: ok, holding the Secret’s leaf object for both', () => {
    const v = verdict({ probe: served({ ...secret }) });
    expect(v).toEqual({ ...endpoint, status: 'ok', since: NOW, checkedAt: NOW, served: secret, expected: secret });
    expect(v.served).toBe(secret);
    expect(verdict({ probe: served(secret), previous: prev('ok') }).since).toBe(NOW - 60 * MIN);
  });

  it.each<[string, LeafIdentity, EndpointVerdict['status']]>([
    ['the old certificate', old, 'stale'],
    ['a foreign certificate', foreign, 'mismatch'],
    ['an expired certificate', oldExpired, 'expired'],
  ])('served %s: %s, since this probe, with what was served and expected', (_, l, status) => {
    expect(verdict({ probe: served(l), previous: prev('ok') })).toEqual({
      ...endpoint,
      status,
      since: NOW,
      checkedAt: NOW,
      served: l,
      expected: secret,
    });
  });

  it('one problem after another is one episode: since and the workloads looked up stay', () => {
    const p = prev('stale', { since: NOW - 30 * MIN, served: old, expected: secret, consumers: ['Deployment/web'] });
    expect(verdict({ probe: served(foreign), previous: p })).toMatchObject({
      status: 'mismatch',
      since: NOW - 30 * MIN,
      consumers: ['Deployment/web'],
    });
    expect(verdict({ probe: served(old), previous: p })).toMatchObject({
      status: 'stale',
      since: NOW - 30 * MIN,
      consumers: ['Deployment/web'],
    });
    const fixed = verdict({ probe: served(secret), previous: p });
    expect(fixed).toMatchObject({ status: 'ok', since: NOW });
    expect(fixed.consumers).toBeUndefined();
  });

  it('no Secret leaf to compare with: pending, saying so; an expired leaf is still expired', () => {
    expect(verdict({ expected: undefined, probe: served(old) })).toEqual({
      ...endpoint,
      status: 'pending',
      since: NOW,
      reason: 'no certificate to compare with: the Secret is missing or its tls.crt is unparsable',
      checkedAt: NOW,
      served: old,
    });
    expect(verdict({ expected: undefined, probe: served(oldExpired) })).toMatchObject({ status: 'expired', served: oldExpired });
  });

  describe('the reload grace after the Secret’s certificate changed', () => {
    it('another certificate within it: pending, saying until when; stale after it', () => {
      const renewed = NOW - 2 * MIN;
      expect(verdict({ probe: served(old), expectedSince: renewed, previous: prev('ok') })).toEqual({
        ...endpoint,
        status: 'pending',
        since: NOW,
        reason:
          "the Secret's certificate changed at 2026-06-01T11:58:00.000Z; its consumers have until 2026-06-01T12:03:00.000Z to serve it",
        checkedAt: NOW,
        served: old,
        expected: secret,
      });
      expect(verdict({ probe: served(foreign), expectedSince: renewed }).status).toBe('pending');
      expect(verdict({ probe: served(old), expectedSince: NOW - RELOAD }).status).toBe('stale');
      expect(verdict({ probe: served(old), expectedSince: NOW - RELOAD, reloadGraceMs: 0 }).status).toBe('stale');
    });
    it('a leaf issued within it counts as changed then (the agent started after the renewal)', () => {
      const fresh = leaf({ notBefore: NOW - MIN });
      expect(verdict({ expected: fresh, probe: served(old) }).status).toBe('pending');
      // the later of the two: a backdated notBefore does not shorten the grace
      expect(verdict({ expected: leaf({ notBefore: NOW - 60 * MIN }), expectedSince: NOW - MIN, probe: served(old) }).status).toBe(
        'pending',
      );
    });
    it('the Secret’s certificate served within it: ok at once; an expired one: expired at once', () => {
      expect(verdict({ probe: served(secret), expectedSince: NOW - MIN }).status).toBe('ok');
      expect(verdict({ probe: served(oldExpired), expectedSince: NOW - MIN }).status).toBe('expired');
    });
    it('an open problem stays open through it (a renewal does not resolve a consumer that never reloads)', () => {
      const p = prev('stale', { since: NOW - 3 * DAY, consumers: ['Pod/web-0'] });
      expect(verdict({ probe: served(old), expectedSince: NOW - MIN, previous: p })).toMatchObject({
        status: 'stale',
        since: NOW - 3 * DAY,
        consumers: ['Pod/web-0'],
      });
    });
  });

  describe('failed handshakes', () => {
    it('the first failure without a previous verdict: pending with the error', () => {
      expect(verdict({ probe: failed() })).toEqual({
        ...endpoint,
        status: 'pending',
        since: NOW,
        reason: 'connection refused',
        checkedAt: NOW,
        failingSince: NOW,
        expected: secret,
      });
    });

    it('within the grace the previous verdict stands (a consumer restarting); its served leaf is the last one read', () => {
      const p = prev('ok', { served: secret, expected: secret });
      expect(verdict({ probe: failed(), previous: p })).toEqual({ ...p, checkedAt: NOW, failingSince: NOW, expected: secret });
      const s = prev('stale', { served: old, expected: secret, consumers: ['Deployment/web'] });
      expect(verdict({ probe: failed(), previous: { ...s, failingSince: NOW - 9 * MIN } })).toEqual({
        ...s,
        checkedAt: NOW,
        failingSince: NOW - 9 * MIN,
        expected: secret,
      });
    });

    it('after the grace: unreachable since the first failure, with the last error', () => {
      const p = prev('ok', { served: secret, failingSince: NOW - GRACE });
      expect(verdict({ probe: failed('timed out after 5s'), previous: p })).toEqual({
        ...endpoint,
        status: 'unreachable',
        since: NOW - GRACE,
        reason: 'timed out after 5s',
        checkedAt: NOW,
        failingSince: NOW - GRACE,
        served: secret,
        expected: secret,
      });
      // pending since the start (never reached)
      expect(verdict({ probe: failed(), previous: prev('pending', { failingSince: NOW - 11 * MIN }) })).toMatchObject({
        status: 'unreachable',
        since: NOW - 11 * MIN,
      });
    });

    it('a problem that turns unreachable is the same episode', () => {
      const p = prev('stale', { since: NOW - DAY, failingSince: NOW - GRACE, consumers: ['Deployment/web'] });
      expect(verdict({ probe: failed(), previous: p })).toMatchObject({
        status: 'unreachable',
        since: NOW - DAY,
        consumers: ['Deployment/web'],
      });
      expect(verdict({ probe: failed(), previous: { ...p, status: 'unreachable' } })).toMatchObject({
        status: 'unreachable',
        since: NOW - DAY,
      });
    });

    it('a previous verdict on another address is not kept', () => {
      expect(verdict({ probe: failed(), previous: prev('ok', { address: '10.0.0.2:443' }) })).toMatchObject({
        status: 'pending',
        since: NOW,
      });
    });

    it('a handshake that succeeds ends the failures: ok since then', () => {
      const v = verdict({ probe: served(secret), previous: prev('unreachable', { failingSince: NOW - 20 * MIN }) });
      expect(v).toMatchObject({ status: 'ok', since: NOW });
      expect(v.failingSince).toBeUndefined();
      expect(verdict({ probe: failed(), previous: v }).failingSince).toBe(NOW);
    });
  });
});
