import { describe, expect, it } from 'vitest';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';
import { applyRouterPolicy } from '../../src/service/router-policy.js';

const ISSUER = 'certmgr-issuer-health-notification-config';
const CERT = 'certmgr-cert-resource-health-notification-config';
const EXPIRY = 'cert-expiry-ext-notification-config';

describe('applyRouterPolicy', () => {
  it('keeps the defaults (no grouping, no reminders) when nothing is given', () => {
    expect(applyRouterPolicy(ROUTER_POLICY_DEFAULTS, {}, ISSUER, 'p')).toEqual(ROUTER_POLICY_DEFAULTS);
  });

  it('takes valid fields', () => {
    expect(
      applyRouterPolicy(
        ROUTER_POLICY_DEFAULTS,
        { groupBy: ['data.clusterId', 'data.issuerName'], groupWait: '10s', groupInterval: '1m', repeatInterval: '4h' },
        ISSUER,
        'p',
      ),
    ).toEqual({
      groupBy: ['data.clusterId', 'data.issuerName'],
      groupWaitMs: 10_000,
      groupIntervalMs: 60_000,
      repeatIntervalMs: 14_400_000,
      holdUnderIssuer: false,
    });
  });

  it('holds under the issuer only for certificate health routers, and only when asked with a boolean', () => {
    expect(applyRouterPolicy(ROUTER_POLICY_DEFAULTS, { holdUnderIssuer: true }, CERT, 'p').holdUnderIssuer).toBe(true);
    const on = { ...ROUTER_POLICY_DEFAULTS, holdUnderIssuer: true };
    expect(applyRouterPolicy(on, {}, CERT, 'p').holdUnderIssuer).toBe(true);
    expect(applyRouterPolicy(on, { holdUnderIssuer: false }, CERT, 'p').holdUnderIssuer).toBe(false);
    expect(() => applyRouterPolicy(ROUTER_POLICY_DEFAULTS, { holdUnderIssuer: 'yes' }, CERT, 'p')).toThrow(
      /p.holdUnderIssuer must be a boolean; got "yes"/,
    );
    expect(() => applyRouterPolicy(ROUTER_POLICY_DEFAULTS, { holdUnderIssuer: true }, ISSUER, 'p')).toThrow(
      /p.holdUnderIssuer: only certmgr-cert-resource-health-notification-config routers/,
    );
    // the event type changed under a kept option
    expect(() => applyRouterPolicy(on, {}, EXPIRY, 'u')).toThrow(/u.holdUnderIssuer/);
  });

  it('turns reminders off with null or an empty string', () => {
    const on = { ...ROUTER_POLICY_DEFAULTS, repeatIntervalMs: 60_000 };
    expect(applyRouterPolicy(on, { repeatInterval: null }, ISSUER, 'p').repeatIntervalMs).toBeNull();
    expect(applyRouterPolicy(on, { repeatInterval: '' }, ISSUER, 'p').repeatIntervalMs).toBeNull();
    expect(applyRouterPolicy(on, {}, ISSUER, 'p').repeatIntervalMs).toBe(60_000);
  });

  it.each([
    [{ groupBy: 'data.issuerName' }, 'p.groupBy', /must be a list/],
    [{ groupBy: ['data.nope'] }, 'p.groupBy[0]', /not a field of certmgr-issuer-health-notification-config/],
    [{ groupBy: ['issuerName'] }, 'p.groupBy[0]', /use "type" or "data.<field>"/],
    [{ groupBy: ['type', 'type'] }, 'p.groupBy[1]', /listed twice/],
    [{ groupBy: Array.from({ length: 9 }, () => 'type') }, 'p.groupBy', /at most 8/],
    [{ groupWait: '2h' }, 'p.groupWait', /between 0s and 1h/],
    [{ groupWait: 5 }, 'p.groupWait', /must be an interval/],
    [{ groupInterval: '0s' }, 'p.groupInterval', /between 1s and 1d/],
    [{ repeatInterval: '30s' }, 'p.repeatInterval', /between 1m and 90d/],
    [{ repeatInterval: 'soon' }, 'p.repeatInterval', /must be an interval/],
  ])('refuses %j naming %s', (input, field, message) => {
    let err: unknown;
    try {
      applyRouterPolicy(ROUTER_POLICY_DEFAULTS, input, ISSUER, 'p');
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect((err as Error).message).toMatch(message);
  });

  it('refuses a group field that is a list (DNS names)', () => {
    expect(() => applyRouterPolicy(ROUTER_POLICY_DEFAULTS, { groupBy: ['data.SANs'] }, CERT, '')).toThrow(/an object/);
  });

  it('refuses reminders for expiration routers', () => {
    expect(() => applyRouterPolicy(ROUTER_POLICY_DEFAULTS, { repeatInterval: '1h' }, EXPIRY, '')).toThrow(
      /expiration events have no reminders/,
    );
  });

  it('re-checks a kept groupBy when the event type changes', () => {
    const grouped = { ...ROUTER_POLICY_DEFAULTS, groupBy: ['data.issuerName'] };
    expect(() => applyRouterPolicy(grouped, {}, EXPIRY, 'u')).toThrow(/u.groupBy\[0\]/);
  });
});
