/** AdmissionReview → response, as a table (no server). */
import { describe, expect, it } from 'vitest';
import { API_VERSION } from '../../src/api/index.js';
import { BadAdmissionReviewError, reviewAdmission, type AdmissionResponse } from '../../src/admission/index.js';

const ISSUER = 'certmgr-issuer-health-notification-config';
const CERT = 'certmgr-cert-resource-health-notification-config';
const EXPIRY = 'cert-expiry-ext-notification-config';

type Kind = 'NotificationRouter' | 'NotificationProvider' | 'MonitoringConfig' | 'NotificationSilence';

function review(
  kind: Kind | { group: string; version: string; kind: string },
  operation: string,
  spec: unknown,
  extra: { oldSpec?: unknown; name?: string; apiVersion?: string; deleting?: boolean } = {},
): Record<string, unknown> {
  const k = typeof kind === 'string' ? { group: 'notify.certmgr.io', version: 'v1alpha1', kind } : kind;
  const name = extra.name ?? 'r1';
  const object = {
    apiVersion: API_VERSION,
    kind: k.kind,
    metadata: { name, namespace: 'ns', ...(extra.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    spec,
  };
  return {
    apiVersion: extra.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'uid-1',
      kind: k,
      resource: { group: k.group, version: k.version, resource: 'x' },
      operation,
      name,
      namespace: 'ns',
      object: operation === 'DELETE' ? null : object,
      oldObject: 'oldSpec' in extra ? { ...object, spec: extra.oldSpec } : null,
    },
  };
}

const router = (filter: string | undefined, eventTypeId = ISSUER): Record<string, unknown> => ({
  eventTypeId,
  providerRef: { name: 'p' },
  ...(filter === undefined ? {} : { filter }),
});
const ref = { name: 's', key: 'k' };

interface Row {
  name: string;
  review: Record<string, unknown>;
  allowed: boolean;
  message?: string | RegExp;
  warnings?: (string | RegExp)[];
}

const silence = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  matcher: 'data.clusterName == "prod"',
  endsAt: '2030-01-01T02:00:00Z',
  comment: 'upgrade',
  ...over,
});

const rows: Row[] = [
  // silences
  { name: 'silence', review: review('NotificationSilence', 'CREATE', silence()), allowed: true },
  {
    name: 'silence with a matcher that does not parse',
    review: review('NotificationSilence', 'CREATE', silence({ matcher: 'data.clusterName ==' })),
    allowed: false,
    message: /^spec\.matcher: line 1, column \d+: /,
  },
  {
    name: 'silence with a field no family has',
    review: review('NotificationSilence', 'CREATE', silence({ matcher: 'data.nope == 1' })),
    allowed: false,
    message: /^spec\.matcher: line 1, column 6: .*set spec\.eventTypeId/,
  },
  {
    name: 'silence with a field its family lacks',
    review: review('NotificationSilence', 'CREATE', silence({ matcher: 'data.daysUntilExpiry < 3', eventTypeId: ISSUER })),
    allowed: false,
    message: /^spec\.matcher: line 1, column 6: /,
  },
  {
    name: 'silence ending before it starts',
    review: review('NotificationSilence', 'CREATE', silence({ startsAt: '2030-01-01T03:00:00Z' })),
    allowed: false,
    message: 'spec.endsAt: must be after spec.startsAt',
  },
  {
    name: 'silence without a comment',
    review: review('NotificationSilence', 'CREATE', silence({ comment: undefined })),
    allowed: false,
    message: /comment/,
  },
  {
    name: 'silence with a bad time',
    review: review('NotificationSilence', 'CREATE', silence({ endsAt: 'tomorrow' })),
    allowed: false,
    message: /spec\.endsAt/,
  },
  {
    name: 'silence update leaving a stored bad spec unchanged',
    review: review('NotificationSilence', 'UPDATE', silence({ matcher: 'data.nope == 1' }), {
      oldSpec: silence({ matcher: 'data.nope == 1' }),
    }),
    allowed: true,
  },
  // routers
  { name: 'router without filter', review: review('NotificationRouter', 'CREATE', router(undefined)), allowed: true },
  { name: 'router with empty filter', review: review('NotificationRouter', 'CREATE', router('  ')), allowed: true },
  {
    name: 'router with a good filter',
    review: review('NotificationRouter', 'CREATE', router("type.endsWith('.notready')")),
    allowed: true,
  },
  {
    name: 'router with a syntax error',
    review: review('NotificationRouter', 'CREATE', router('type.endsWith(')),
    allowed: false,
    message: "spec.filter: line 1, column 15: syntax error: unexpected end of expression, expected ')' to close '(' at 1:14",
  },
  {
    name: 'router with an unknown field of the family (checked per eventTypeId)',
    review: review('NotificationRouter', 'CREATE', router('data.nope == 1')),
    allowed: false,
    message: `spec.filter: line 1, column 6: event data of ${ISSUER} has no field 'nope'`,
  },
  {
    name: 'router: multi-line filter reports line 2',
    review: review('NotificationRouter', 'CREATE', router("type.startsWith('x')\n  && foo", CERT)),
    allowed: false,
    message: /^spec\.filter: line 2, column 6: unknown identifier 'foo'/,
  },
  {
    name: 'router: update to a bad filter',
    review: review('NotificationRouter', 'UPDATE', router('1 + '), { oldSpec: router('true') }),
    allowed: false,
    message: 'spec.filter: line 1, column 5: syntax error: unexpected end of expression, expected an operand',
  },
  {
    name: 'router: update to a good filter',
    review: review('NotificationRouter', 'UPDATE', router('data.ruleId == 1', EXPIRY), { oldSpec: router('1 +', EXPIRY) }),
    allowed: true,
  },
  {
    name: 'router: metadata-only update of a stored bad filter (finalizer removal) is allowed',
    review: review('NotificationRouter', 'UPDATE', router('1 +'), { oldSpec: router('1 +') }),
    allowed: true,
  },
  {
    name: 'router: update while deleting is allowed',
    review: review('NotificationRouter', 'UPDATE', router('1 + +'), { oldSpec: router('1 +'), deleting: true }),
    allowed: true,
  },
  {
    name: 'router: schema errors (enum, required) come first',
    review: review('NotificationRouter', 'CREATE', { eventTypeId: 'nope', filter: '1 +' }),
    allowed: false,
    message: /^spec: must have required property 'providerRef'; spec\.eventTypeId: must be one of certmgr-/,
  },
  {
    name: 'router: filter longer than 2000 characters',
    review: review('NotificationRouter', 'CREATE', router('true || '.repeat(300) + 'true')),
    allowed: false,
    message: 'spec.filter: must NOT have more than 2000 characters',
  },
  {
    name: 'router: missing spec',
    review: review('NotificationRouter', 'CREATE', undefined),
    allowed: false,
    message: /must have required property 'eventTypeId'/,
  },
  { name: 'router: DELETE is allowed', review: review('NotificationRouter', 'DELETE', undefined), allowed: true },
  {
    name: 'router: admission.k8s.io/v1beta1 review',
    review: review('NotificationRouter', 'CREATE', router('type =='), { apiVersion: 'admission.k8s.io/v1beta1' }),
    allowed: false,
    message: /^spec\.filter: line 1, column 8: /,
  },

  // providers
  {
    name: 'provider: Slack with its block',
    review: review('NotificationProvider', 'CREATE', { type: 'Slack', slack: { webhookUrlSecretRef: ref } }),
    allowed: true,
  },
  {
    name: 'provider: type without its block gets one clear message',
    review: review('NotificationProvider', 'CREATE', { type: 'Slack', teams: { webhookUrlSecretRef: ref } }),
    allowed: false,
    message: 'spec.slack: required when spec.type is Slack',
    warnings: ['spec.teams is ignored: spec.type is Slack'],
  },
  {
    name: 'provider: blocks of other types only warn',
    review: review('NotificationProvider', 'CREATE', { type: 'Email', email: { to: ['a@example.com'] }, webhook: { urlSecretRef: ref } }),
    allowed: true,
    warnings: ['spec.webhook is ignored: spec.type is Email'],
  },
  {
    name: 'provider: unknown type',
    review: review('NotificationProvider', 'CREATE', { type: 'Pager' }),
    allowed: false,
    message: /spec\.type: must be one of IncidentManagement, Webhook, Email, Slack, Teams/,
  },
  {
    name: 'provider: errors inside the block',
    review: review('NotificationProvider', 'CREATE', { type: 'Email', email: { to: [] } }),
    allowed: false,
    message: 'spec.email.to: must NOT have fewer than 1 items',
  },

  // monitoring configs
  { name: 'monitoring: defaults', review: review('MonitoringConfig', 'CREATE', {}, { name: 'default' }), allowed: true },
  {
    name: 'monitoring: duplicate thresholds',
    review: review('MonitoringConfig', 'CREATE', { thresholds: [7, 7] }, { name: 'default' }),
    allowed: false,
    message: 'spec.thresholds: must not contain duplicate items (list-type set)',
  },
  {
    name: 'monitoring: more than 3 thresholds',
    review: review('MonitoringConfig', 'UPDATE', { thresholds: [30, 14, 7, 1] }, { name: 'default', oldSpec: {} }),
    allowed: false,
    message: 'spec.thresholds: must NOT have more than 3 items',
  },
  {
    name: 'monitoring: another name is allowed with a warning',
    review: review('MonitoringConfig', 'CREATE', { thresholds: [10] }, { name: 'other' }),
    allowed: true,
    warnings: ['MonitoringConfig "other" is ignored: only the one named "default" is applied'],
  },

  // anything else
  { name: 'other group', review: review({ group: 'apps', version: 'v1', kind: 'Deployment' }, 'CREATE', { x: 1 }), allowed: true },
  {
    name: 'other version of our group',
    review: review({ group: 'notify.certmgr.io', version: 'v1beta9', kind: 'NotificationRouter' }, 'CREATE', {}),
    allowed: true,
  },
];

describe('reviewAdmission', () => {
  it.each(rows)('$name', (row) => {
    const out = reviewAdmission(row.review);
    const apiVersion = row.review['apiVersion'];
    expect(out.apiVersion).toBe(apiVersion);
    expect(out.kind).toBe('AdmissionReview');
    const r: AdmissionResponse = out.response;
    expect(r.uid).toBe('uid-1');
    expect(r.allowed, JSON.stringify(r)).toBe(row.allowed);
    if (row.allowed) expect(r.status).toBeUndefined();
    else {
      expect(r.status?.code).toBe(400);
      expect(r.status?.reason).toBe('BadRequest');
      if (row.message instanceof RegExp) expect(r.status?.message).toMatch(row.message);
      else if (row.message !== undefined) expect(r.status?.message).toBe(row.message);
    }
    if (row.warnings) {
      expect(r.warnings).toHaveLength(row.warnings.length);
      row.warnings.forEach((w, i) => (w instanceof RegExp ? expect(r.warnings?.[i]).toMatch(w) : expect(r.warnings?.[i]).toBe(w)));
    } else expect(r.warnings).toBeUndefined();
  });

  it.each([
    ['not an object', 'x'],
    ['wrong apiVersion', { apiVersion: 'admission.k8s.io/v2', kind: 'AdmissionReview', request: { uid: 'u' } }],
    ['wrong kind', { apiVersion: 'admission.k8s.io/v1', kind: 'Review', request: { uid: 'u' } }],
    ['no request', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }],
    ['no uid', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { kind: { kind: 'X' }, operation: 'CREATE' } }],
    ['no kind', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u', operation: 'CREATE' } }],
  ])('rejects a malformed review: %s', (_name, body) => {
    expect(() => reviewAdmission(body)).toThrow(BadAdmissionReviewError);
  });

  it('caps a very long message', () => {
    const spec = { thresholds: Array.from({ length: 2000 }, () => 0) };
    const r = reviewAdmission(review('MonitoringConfig', 'CREATE', spec, { name: 'default' })).response;
    expect(r.allowed).toBe(false);
    expect(r.status!.message.length).toBeLessThanOrEqual(4000);
  });
});
