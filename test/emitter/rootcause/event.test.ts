/** A certificate `.notready` with its root cause: the documented fields, two lines in statusMessage, schema-valid. */
import { describe, expect, it } from 'vitest';
import { healthEvent } from '../../../src/emitter/health/events.js';
import { rootCauseOf } from '../../../src/emitter/rootcause/classify.js';
import { withRootCause } from '../../../src/emitter/rootcause/event.js';
import { validateEvent } from '../../../src/events/schemas.js';
import { CLUSTER, UID_A } from '../fixtures.js';

const SELF_CHECK = "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";
const rc = rootCauseOf({
  request: { namespace: 'api', name: 'api-tls-1', conditions: [{ type: 'Ready', status: 'False', reason: 'Pending' }] },
  order: { namespace: 'api', name: 'api-tls-1-2976254157', state: 'pending' },
  challenges: [
    {
      namespace: 'api',
      name: 'api-tls-1-2976254157-1825524577',
      type: 'HTTP-01',
      dnsName: 'api.example.com',
      state: 'pending',
      reason: SELF_CHECK,
    },
  ],
})!;
const id = { kind: 'Certificate' as const, namespace: 'api', name: 'api-tls', uid: UID_A, issuerName: 'letsencrypt-prod' };
const fields = {
  statusReason: 'DoesNotExist',
  statusMessage: 'Issuing certificate as Secret does not exist',
  statusTransition: '2026-12-01T10:00:00Z',
  unhealthyDuration: '0h10m0s',
};

describe('withRootCause', () => {
  it('adds the class, hint, deepest failure and object, and appends them to statusMessage', () => {
    const e = withRootCause(healthEvent('notready', id, CLUSTER, fields), rc);
    expect(validateEvent(e).ok).toBe(true);
    expect(e.data).toMatchObject({
      rootCause: 'http-self-check',
      rootCauseHint: rc.hint,
      rootCauseMessage: SELF_CHECK,
      rootCauseResource: 'Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)',
      statusMessage: `Issuing certificate as Secret does not exist\nRoot cause (http-self-check) in Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com): ${SELF_CHECK}\nNext step: ${rc.hint}`,
    });
  });

  it('leaves other events and a missing root cause alone', () => {
    const active = healthEvent('active', id, CLUSTER, fields);
    expect(withRootCause(active, rc)).toBe(active);
    const notready = healthEvent('notready', id, CLUSTER, fields);
    expect(withRootCause(notready, undefined)).toBe(notready);
  });

  it('the schema refuses a class that is not one of the documented ones', () => {
    const e = withRootCause(healthEvent('notready', id, CLUSTER, fields), rc);
    const r = validateEvent({ ...e, data: { ...e.data, rootCause: 'everything-is-fine' } });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.errors.map((x) => x.path)).toEqual(['data.rootCause']);
  });
});
