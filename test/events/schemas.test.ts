import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type EventType, type InternalEvent } from '../../src/events/families.js';
import { fieldPaths } from '../../src/events/field-tree.js';
import { EVENT_TYPE_FIELD_TREES, FAMILY_FIELD_TREES, validateEvent } from '../../src/events/schemas.js';
import { ROOT_CAUSE_FIELDS } from '../../src/events/root-cause.js';
import {
  certificateResourceActive,
  certificateResourceNotReady,
  expiringCertificate,
  issuerActive,
  issuerNotReady,
  sampleEvents,
  withoutField,
} from '../fixtures/events.js';

/** Optional hub extensions (docs/annotations.md, docs/expiry.md "Event fields"): allowed, never required. */
const EXPIRY_EXTRAS = [
  'runbookUrl',
  'certificateName',
  'namespace',
  'clusterName',
  'notAfter',
  'daysUntilExpiry',
  'dnsNames',
  'thresholdPercent',
  'outlivingCount',
  'outlivingCertificates',
];
const EXTENSION_FIELDS: Record<EventType, string[]> = {
  'evt.healthstatus.certmgr-issuer.notready': ['runbookUrl'],
  'evt.healthstatus.certmgr-issuer.active': ['runbookUrl'],
  'evt.healthstatus.certmgr-certificate-resource.notready': ['runbookUrl', ...ROOT_CAUSE_FIELDS],
  'evt.healthstatus.certmgr-certificate-resource.active': ['runbookUrl', ...ROOT_CAUSE_FIELDS],
  'evt.policy.expiringcertificates.failed': EXPIRY_EXTRAS,
  'evt.healthstatus.certmgr-agent.notready': [],
  'evt.healthstatus.certmgr-agent.active': [],
};

/** The spec's field tables, written out independently of the schemas. */
const SPEC_FIELDS: Record<EventType, string[]> = {
  'evt.healthstatus.certmgr-issuer.notready': [
    'clusterId',
    'clusterName',
    'issuerName',
    'namespace',
    'resourceId',
    'statusMessage',
    'statusReason',
    'statusTransition',
  ],
  'evt.healthstatus.certmgr-issuer.active': [
    'clusterId',
    'clusterName',
    'issuerName',
    'namespace',
    'resourceId',
    'statusMessage',
    'statusReason',
    'statusTransition',
    'unhealthyDuration',
  ],
  'evt.healthstatus.certmgr-certificate-resource.notready': [
    'clusterName',
    'clusterId',
    'certificateName',
    'namespace',
    'issuerName',
    'statusMessage',
    'unhealthyDuration',
    'statusReason',
    'statusTransition',
    'subject',
    'SANs',
  ],
  'evt.healthstatus.certmgr-certificate-resource.active': [
    'SANs',
    'certificateName',
    'clusterId',
    'clusterName',
    'issuerName',
    'namespace',
    'resourceId',
    'statusMessage',
    'statusReason',
    'statusTransition',
    'subject',
    'unhealthyDuration',
  ],
  'evt.policy.expiringcertificates.failed': ['name', 'applicationIds', 'message', 'notificationDate', 'threshold', 'ruleId'],
  // hub extension (docs/inventory.md "Silent clusters as events")
  'evt.healthstatus.certmgr-agent.notready': [
    'clusterId',
    'clusterName',
    'lastSeenAt',
    'statusTransition',
    'statusMessage',
    'statusReason',
    'agentVersion',
  ],
  'evt.healthstatus.certmgr-agent.active': [
    'clusterId',
    'clusterName',
    'lastSeenAt',
    'statusTransition',
    'statusMessage',
    'statusReason',
    'agentVersion',
    'unhealthyDuration',
  ],
};

function errorsOf(e: unknown) {
  const r = validateEvent(e);
  if (r.ok) throw new Error('expected the event to be rejected');
  return r.errors;
}

describe('validateEvent: valid events', () => {
  it.each(EVENT_TYPES)('accepts the sample %s and returns it', (type) => {
    const sample = sampleEvents()[type];
    const r = validateEvent(sample);
    expect(r).toEqual({ ok: true, event: sample });
  });

  it.each<[string, InternalEvent]>([
    ['empty SANs object', certificateResourceNotReady({ SANs: {} })],
    ['empty DNS Names list', certificateResourceActive({ SANs: { 'DNS Names': [] } })],
    ['fractional seconds 0h0m12.25s', issuerActive({ unhealthyDuration: '0h0m12.25s' })],
    ['1h2m3.5s', certificateResourceNotReady({ unhealthyDuration: '1h2m3.5s' })],
    ['large hours 120h0m0s', certificateResourceActive({ unhealthyDuration: '120h0m0s' })],
    ['negative offset with fraction', expiringCertificate({ notificationDate: '2025-03-18T08:00:00.123456-05:00' })],
    ['UTC notificationDate', expiringCertificate({ notificationDate: '2025-03-18T08:00:00Z' })],
    ['unassigned certificate (no applications)', expiringCertificate({ applicationIds: [] })],
    ['ruleId 1 and threshold 0', expiringCertificate({ ruleId: 1, threshold: 0 })],
    [
      'integral JSON number 30.0',
      {
        type: 'evt.policy.expiringcertificates.failed',
        data: JSON.parse(
          '{"name":"n","applicationIds":[],"message":"m","notificationDate":"2025-03-18T08:00:00Z","threshold":30.0,"ruleId":3}',
        ),
      },
    ],
    ['upper-case UUID', issuerNotReady({ clusterId: '3F6C2A9E-8B1D-4C7A-9E52-1D0B7F4A6C31' })],
  ])('accepts %s', (_name, e) => {
    expect(validateEvent(e).ok).toBe(true);
  });
});

describe('validateEvent: every spec field is required', () => {
  const cases = EVENT_TYPES.flatMap((type) => SPEC_FIELDS[type].map((field) => [type, field] as const));
  it.each(cases)('%s without %s → data.%s is required', (type, field) => {
    expect(errorsOf(withoutField(sampleEvents()[type], field))).toEqual([{ path: `data.${field}`, message: 'is required' }]);
  });

  it.each(EVENT_TYPES)('%s allows exactly the spec fields (and the hub extensions) at the top of data', (type) => {
    expect(Object.keys(sampleEvents()[type].data).sort()).toEqual([...SPEC_FIELDS[type]].sort());
    expect([...EVENT_TYPE_FIELD_TREES[type].fields.keys()].sort()).toEqual([...SPEC_FIELDS[type], ...EXTENSION_FIELDS[type]].sort());
  });
});

describe('validateEvent: bad fields are rejected with their path', () => {
  it.each<[string, unknown, string, RegExp]>([
    [
      'typo in a field name',
      { ...issuerNotReady(), data: { ...issuerNotReady().data, clusterID: 'x' } },
      'data.clusterID',
      /not an allowed field/,
    ],
    [
      'resourceId on unhealthy certificate resource',
      {
        ...certificateResourceNotReady(),
        data: { ...certificateResourceNotReady().data, resourceId: '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a' },
      },
      'data.resourceId',
      /not an allowed field/,
    ],
    [
      'unhealthyDuration on unhealthy issuer',
      { ...issuerNotReady(), data: { ...issuerNotReady().data, unhealthyDuration: '1h0m0s' } },
      'data.unhealthyDuration',
      /not an allowed field/,
    ],
    ['clusterId not a UUID', issuerNotReady({ clusterId: 'prod-eu-west-1' }), 'data.clusterId', /UUID/],
    ['resourceId not a UUID', certificateResourceActive({ resourceId: '1234' }), 'data.resourceId', /UUID/],
    [
      'statusTransition without time zone',
      issuerNotReady({ statusTransition: '2025-03-14T09:26:53' }),
      'data.statusTransition',
      /RFC 3339 timestamp/,
    ],
    [
      'statusTransition not a timestamp',
      certificateResourceNotReady({ statusTransition: 'yesterday' }),
      'data.statusTransition',
      /RFC 3339 timestamp/,
    ],
    ['notificationDate date only', expiringCertificate({ notificationDate: '2025-03-18' }), 'data.notificationDate', /RFC 3339 timestamp/],
    ['unhealthyDuration seconds only', issuerActive({ unhealthyDuration: '90s' }), 'data.unhealthyDuration', /<h>h<m>m<s>s/],
    ['unhealthyDuration hours only', certificateResourceNotReady({ unhealthyDuration: '1h' }), 'data.unhealthyDuration', /<h>h<m>m<s>s/],
    ['unhealthyDuration ISO 8601', certificateResourceActive({ unhealthyDuration: 'PT1H2M3S' }), 'data.unhealthyDuration', /<h>h<m>m<s>s/],
    ['unhealthyDuration dangling dot', issuerActive({ unhealthyDuration: '1h2m3.s' }), 'data.unhealthyDuration', /<h>h<m>m<s>s/],
    ['unhealthyDuration negative', issuerActive({ unhealthyDuration: '-1h0m0s' }), 'data.unhealthyDuration', /<h>h<m>m<s>s/],
    ['threshold fractional', expiringCertificate({ threshold: 14.5 }), 'data.threshold', /integer/],
    [
      'threshold as string',
      { ...expiringCertificate(), data: { ...expiringCertificate().data, threshold: '14' } },
      'data.threshold',
      /integer/,
    ],
    ['ruleId 0', expiringCertificate({ ruleId: 0 }), 'data.ruleId', />= 1/],
    ['ruleId fractional', expiringCertificate({ ruleId: 2.5 }), 'data.ruleId', /integer/],
    [
      'applicationIds a string',
      { ...expiringCertificate(), data: { ...expiringCertificate().data, applicationIds: 'payments-app' } },
      'data.applicationIds',
      /array/,
    ],
    [
      'applicationIds with a number',
      { ...expiringCertificate(), data: { ...expiringCertificate().data, applicationIds: ['a', 7] } },
      'data.applicationIds[1]',
      /string/,
    ],
    [
      'statusMessage a number',
      { ...issuerNotReady(), data: { ...issuerNotReady().data, statusMessage: 42 } },
      'data.statusMessage',
      /string/,
    ],
    [
      'subject without commonName',
      {
        ...certificateResourceNotReady(),
        data: {
          ...certificateResourceNotReady().data,
          subject: { countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
        },
      },
      'data.subject.commonName',
      /required/,
    ],
    [
      'subject with an unknown field',
      {
        ...certificateResourceActive(),
        data: { ...certificateResourceActive().data, subject: { ...certificateResourceActive().data.subject, emailAddresses: [] } },
      },
      'data.subject.emailAddresses',
      /not an allowed field/,
    ],
    [
      'subject.countries a string',
      {
        ...certificateResourceActive(),
        data: { ...certificateResourceActive().data, subject: { ...certificateResourceActive().data.subject, countries: 'DE' } },
      },
      'data.subject.countries',
      /array/,
    ],
    [
      'SANs with another key',
      { ...certificateResourceNotReady(), data: { ...certificateResourceNotReady().data, SANs: { 'IP Addresses': ['10.0.0.1'] } } },
      "data.SANs['IP Addresses']",
      /not an allowed field/,
    ],
    [
      'DNS Names a string',
      { ...certificateResourceNotReady(), data: { ...certificateResourceNotReady().data, SANs: { 'DNS Names': 'shop.example.com' } } },
      "data.SANs['DNS Names']",
      /array/,
    ],
    [
      'DNS Names with a number',
      { ...certificateResourceNotReady(), data: { ...certificateResourceNotReady().data, SANs: { 'DNS Names': ['a.example.com', 1] } } },
      "data.SANs['DNS Names'][1]",
      /string/,
    ],
    ['SANs null', { ...certificateResourceActive(), data: { ...certificateResourceActive().data, SANs: null } }, 'data.SANs', /object/],
    ['unknown type', { type: 'evt.healthstatus.certmgr-issuer.degraded', data: issuerNotReady().data }, 'type', /must be one of/],
    ['missing type', { data: issuerNotReady().data }, 'type', /required/],
    ['missing data', { type: 'evt.healthstatus.certmgr-issuer.notready' }, 'data', /required/],
    ['data an array', { type: 'evt.healthstatus.certmgr-issuer.notready', data: [] }, 'data', /object/],
    ['extra envelope key', { ...issuerNotReady(), id: 'x' }, 'id', /not an allowed field/],
    ['not an object', 'evt.healthstatus.certmgr-issuer.notready', '', /object/],
  ])('%s', (_name, e, path, message) => {
    const errors = errorsOf(e);
    expect(errors).toContainEqual({ path, message: expect.stringMatching(message) });
  });

  it('data of the wrong type for its event type is rejected (issuer data on a certificate-resource event)', () => {
    const errors = errorsOf({ type: 'evt.healthstatus.certmgr-certificate-resource.active', data: issuerActive().data });
    expect(errors.map((e) => e.path)).toEqual(expect.arrayContaining(['data.certificateName', 'data.subject', 'data.SANs']));
  });

  it('reports every problem, not just the first', () => {
    const errors = errorsOf(issuerNotReady({ clusterId: 'nope', resourceId: 'nope', statusTransition: 'nope' }));
    expect(errors.map((e) => e.path).sort()).toEqual(['data.clusterId', 'data.resourceId', 'data.statusTransition']);
  });
});

describe('field trees derived from the schemas', () => {
  it.each<[keyof typeof FAMILY_FIELD_TREES, string[]]>([
    ['certmgr-issuer-health-notification-config', [...SPEC_FIELDS['evt.healthstatus.certmgr-issuer.active'], 'runbookUrl']],
    [
      'certmgr-cert-resource-health-notification-config',
      [
        ...SPEC_FIELDS['evt.healthstatus.certmgr-certificate-resource.active'].filter((f) => f !== 'subject' && f !== 'SANs'),
        'subject',
        'subject.commonName',
        'subject.countries',
        'subject.countries[]',
        'subject.localities',
        'subject.localities[]',
        'subject.organizationalUnits',
        'subject.organizationalUnits[]',
        'subject.organizations',
        'subject.organizations[]',
        'subject.provinces',
        'subject.provinces[]',
        'SANs',
        "SANs['DNS Names']",
        "SANs['DNS Names'][]",
        'runbookUrl',
        ...ROOT_CAUSE_FIELDS,
      ],
    ],
    [
      'cert-expiry-ext-notification-config',
      [
        ...['name', 'applicationIds', 'applicationIds[]', 'message', 'notificationDate', 'threshold', 'ruleId'],
        ...[...EXPIRY_EXTRAS, 'dnsNames[]', 'outlivingCertificates[]'],
      ],
    ],
    ['certmgr-agent-health-notification-config', [...SPEC_FIELDS['evt.healthstatus.certmgr-agent.active']]],
  ])('%s allows the union of its types’ paths', (family, expected) => {
    expect(fieldPaths(FAMILY_FIELD_TREES[family]).sort()).toEqual([...expected].sort());
  });
});
