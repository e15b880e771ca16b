/**
 * Seeded generators for routing tests: routers (spec filter patterns with random values, filters the prefilter
 * index cannot use, filters that error, filters that do not compile), integrations, monitoring configurations
 * and events of all five types (including malformed data the index must not be fooled by).
 */
import type { EventType, EventTypeId, InternalEvent } from '../../src/events/families.js';
import { EVENT_TYPES, familyOf } from '../../src/events/families.js';
import type { RoutingSnapshot } from '../../src/routing/match.js';
import { RoutingSnapshots } from '../../src/routing/snapshot.js';
import type { IntegrationRecord, MonitoringConfigRecord, RouterRecord, Store } from '../../src/store/types.js';
import {
  agentActive,
  agentNotReady,
  CLUSTER_DEV,
  CLUSTER_PROD,
  CLUSTER_STAGING,
  certificateResourceActive,
  certificateResourceNotReady,
  expiringCertificate,
  issuerActive,
  issuerNotReady,
} from '../fixtures/events.js';
import { ROUTER_POLICY_DEFAULTS } from '../../src/model/records.js';

const COMPANY = '11111111-1111-4111-8111-111111111111';
const OTHER_COMPANY = '22222222-2222-4222-8222-222222222222';

export type Rng = () => number;

/** mulberry32: small, fast, good enough for test data. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
const chance = (r: Rng, p: number): boolean => r() < p;

// Small value pools, so that generated events hit generated routers often.
const POOLS = {
  clusterIds: [CLUSTER_PROD.id, CLUSTER_STAGING.id, CLUSTER_DEV.id, 'e5a1c3b2-7d4f-4e6a-9b8c-0d1e2f3a4b5c'],
  clusterNames: [CLUSTER_PROD.name, CLUSTER_STAGING.name, CLUSTER_DEV.name, 'prod-us-east-1'],
  namespaces: ['cert-manager', 'shop', 'gateway', 'istio-system'],
  issuerNames: ['letsencrypt-prod', 'letsencrypt-staging', 'ca-issuer', 'vault-issuer'],
  resourceIds: ['9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a'],
  reasons: ['ErrUpdateACMEAccount', 'DoesNotExist', 'Ready', 'ACMEAccountRegistered'],
  words: ['ACME', 'Secret', 'expired', 'x', 'für', '😀', 'cafe\u0301'],
  /** Overlapping, empty, unicode and over-long literals for contains / startsWith / endsWith / matches('^…'). */
  substrings: [
    'ACME',
    'AC',
    'CME',
    'ACME ACME',
    'Secret',
    'ret',
    '',
    'happened to the',
    'für',
    'ü',
    '😀',
    'e',
    'é',
    'e\u0301',
    'x',
    'log for details',
    'AC'.repeat(200),
  ],
  prefixes: [
    '',
    'A',
    'ACME',
    'Secret ',
    'x',
    'prod',
    'pro',
    'cert-',
    'cert-manager',
    'cert-manager-and-more',
    'letsencrypt-',
    'Certificate for ',
    'für',
    '😀',
  ],
  suffixes: [
    '',
    's',
    'details',
    'for details',
    'manager',
    '-1',
    '-prod',
    'issuer',
    'days',
    ' 7 days',
    'example.com',
    '.example.com',
    '😀',
    '\u0301',
  ],
  regexPrefixes: [
    '^ACME',
    '^ACMEE?',
    '^Secre\\w',
    '^ACME .*resource$',
    '^Secret\\s',
    '^x+',
    '^prod-(eu|us)',
    '^Err',
    '^cert-manager$',
    '^Certificate for pay',
    '^ErrU?pdate',
    '^Er+',
    '^cert-?manager',
  ],
  commonNames: ['shop.example.com', 'api.internal.example.org', 'a.example.com'],
  dnsNames: ['shop.example.com', 'www.shop.example.com', 'api.internal.example.org'],
  appIds: ['payments-app', 'checkout-app', 'inventory-app', 'billing-app', "o'brien-app"],
  ruleIds: [1, 2, 3, 4],
  thresholds: [30, 14, 7],
  durations: ['1h35m24s', '0h12m3.5s', '2h0m12.25s'],
} as const;

const q = (s: string): string => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
const suffix = (r: Rng): string => pick(r, ['.notready', '.active']);

type FilterGen = (r: Rng, id: EventTypeId) => string;

/** Health families (issuer and certificate resource). */
const HEALTH_INDEXABLE: FilterGen[] = [
  (r) => `type.endsWith(${q(suffix(r))})`,
  (r) =>
    `type.endsWith('.notready') && (data.clusterId == ${q(pick(r, POOLS.clusterIds))} || data.clusterId == ${q(pick(r, POOLS.clusterIds))})`,
  (r) => `type.endsWith('.notready') && (data.namespace == ${q(pick(r, POOLS.namespaces))})`,
  (r) => `type.endsWith('.active') && data.issuerName == ${q(pick(r, POOLS.issuerNames))}`,
  (r) => `type.endsWith(${q(suffix(r))}) && data.clusterName == ${q(pick(r, POOLS.clusterNames))}`,
  (r) => `data.clusterName in [${q(pick(r, POOLS.clusterNames))}, ${q(pick(r, POOLS.clusterNames))}]`,
  (r, id) => `type == ${q(pick(r, familyOf(id).types))} && data.namespace == ${q(pick(r, POOLS.namespaces))}`,
  (r) => `!type.endsWith('.active') && data.issuerName == ${q(pick(r, POOLS.issuerNames))}`,
  (r) => `data.namespace == ${q(pick(r, POOLS.namespaces))} && data.namespace == ${q(pick(r, POOLS.namespaces))}`,
  (r) =>
    `(type.endsWith('.active') && data.clusterName == ${q(pick(r, POOLS.clusterNames))}) || (type.endsWith('.notready') && data.clusterName == ${q(pick(r, POOLS.clusterNames))})`,
  // Fields some types of the family lack: evaluation errors for those (the index must not hide them).
  (r) => `data.resourceId == ${q(pick(r, POOLS.resourceIds))}`,
  (r) => `data.unhealthyDuration == ${q(pick(r, POOLS.durations))} && data.namespace == ${q(pick(r, POOLS.namespaces))}`,
  // Indexed, errors when the indexed field matches.
  (r) => `int(data.namespace) == 1 && data.clusterName == ${q(pick(r, POOLS.clusterNames))}`,
  (r) => `data.statusReason == ${q(pick(r, POOLS.reasons))} && data.statusMessage.contains(${q(pick(r, POOLS.words))})`,
  (r) => `type == 'evt.policy.expiringcertificates.failed' && data.namespace == ${q(pick(r, POOLS.namespaces))}`,
  () => 'false',
];

/** Substring, prefix, suffix and anchored-regex predicates on the health families' strings (now indexable). */
const HEALTH_STRINGS: FilterGen[] = [
  (r) => `data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.statusMessage.startsWith(${q(pick(r, POOLS.prefixes))})`,
  (r) => `data.statusMessage.endsWith(${q(pick(r, POOLS.suffixes))})`,
  (r) => `data.statusMessage.matches(${q(pick(r, POOLS.regexPrefixes))})`,
  (r) => `type.endsWith(${q(suffix(r))}) && data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.clusterName.startsWith(${q(pick(r, POOLS.prefixes))}) && data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.namespace.endsWith(${q(pick(r, POOLS.suffixes))}) || data.namespace.endsWith(${q(pick(r, POOLS.suffixes))})`,
  (r) =>
    `data.issuerName.startsWith(${q(pick(r, POOLS.prefixes))}) || (type.endsWith('.active') && data.issuerName.startsWith(${q(pick(r, POOLS.prefixes))}))`,
  (r) => `data.statusMessage.contains(${q(pick(r, POOLS.substrings))}) || data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.statusMessage.contains(${q(pick(r, POOLS.substrings))}) && data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.namespace == ${q(pick(r, POOLS.namespaces))} && data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.clusterName.matches(${q(pick(r, POOLS.regexPrefixes))}) && data.statusReason.startsWith(${q(pick(r, POOLS.prefixes))})`,
  // Mixed kinds under ||: the index files them under "contains one of the literals".
  (r) => `data.statusMessage.startsWith(${q(pick(r, POOLS.prefixes))}) || data.statusMessage.endsWith(${q(pick(r, POOLS.suffixes))})`,
  (r) => `data.namespace == ${q(pick(r, POOLS.namespaces))} || data.namespace.contains(${q(pick(r, ['manager', 'op', 'x', '']))})`,
  (r) =>
    `(data.clusterName.startsWith(${q(pick(r, POOLS.prefixes))}) && int(data.namespace) == 1) || data.clusterName.endsWith(${q(pick(r, POOLS.suffixes))})`,
  // matches() on the short fields is cheap enough to be indexed (on the free-text ones it is priced per event).
  (r) => `data.statusReason.matches(${q(pick(r, POOLS.regexPrefixes))})`,
  (r) => `data.namespace.matches(${q(pick(r, POOLS.regexPrefixes))}) || data.namespace.startsWith('gate')`,
  // Errors when the literal is found (or, for types without the field, always): the index must not hide them.
  (r) => `int(data.namespace) == 1 && data.statusMessage.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.unhealthyDuration.startsWith(${q(pick(r, ['1h', '0h', '']))})`,
  (r) => `data.resourceId.endsWith(${q(pick(r, ['4d', '1a', '']))}) && data.statusMessage.contains(${q(pick(r, POOLS.words))})`,
  // Over the per-event budget on long messages, whatever the namespace: always a candidate.
  (r) => `data.namespace == ${q(pick(r, POOLS.namespaces))} && data.statusMessage.matches('A.*C.*E')`,
  (r) => `data.statusMessage.startsWith(${q(pick(r, POOLS.prefixes))}) && data.statusMessage.matches('A.*C.*E')`,
];

const HEALTH_OTHER: FilterGen[] = [
  () => '',
  (r) => `data.namespace != ${q(pick(r, POOLS.namespaces))}`,
  () => "!data.clusterName.startsWith('prod')",
  (r) => `data.statusMessage.contains(${q(pick(r, POOLS.words))}) || data.clusterName == ${q(pick(r, POOLS.clusterNames))}`,
  () => "data.statusReason.matches('Err')",
  (r) => `data.clusterId == ${q(pick(r, POOLS.clusterIds))} || data.namespace == ${q(pick(r, POOLS.namespaces))}`,
  () => "data.statusReason.matches('^Err')",
  () => 'size(data.statusMessage) > 60',
  () => 'int(data.namespace) == 1',
  (r) => `type.endsWith('.active') || data.issuerName == ${q(pick(r, POOLS.issuerNames))}`,
  (r) => `data.namespace == ${q(pick(r, POOLS.namespaces))} ? true : data.clusterName == ${q(pick(r, POOLS.clusterNames))}`,
  (r) => `!(data.namespace == ${q(pick(r, POOLS.namespaces))})`,
  (r) => `!(type.endsWith('.active') && data.clusterName == ${q(pick(r, POOLS.clusterNames))})`,
  // Does not compile (unknown field): FILTER_ERROR with the compile error, for every event of the family.
  () => 'data.nope == 1',
];

const CERT_ONLY: FilterGen[] = [
  (r) => `data.subject.commonName == ${q(pick(r, POOLS.commonNames))}`,
  (r) => `${q(pick(r, POOLS.dnsNames))} in data.SANs['DNS Names']`,
  (r) => `type.endsWith('.notready') && ${q(pick(r, POOLS.dnsNames))} in data.SANs['DNS Names']`,
  () => "data.SANs['DNS Names'].exists(n, n.endsWith('.example.com'))",
  () => "data.subject.organizations.exists(o, o == 'Example GmbH')",
  (r) => `data.subject.commonName.endsWith(${q(pick(r, POOLS.suffixes))})`,
  (r) => `type.endsWith('.notready') && data.subject.commonName.startsWith(${q(pick(r, ['shop', 'api.', 'a', '']))})`,
];

const EXPIRY_INDEXABLE: FilterGen[] = [
  (r) => `${q(pick(r, POOLS.appIds))} in data.applicationIds`,
  (r) => `data.ruleId == ${pick(r, POOLS.ruleIds)}`,
  (r) => `data.ruleId == ${pick(r, POOLS.ruleIds)}.0`,
  (r) => `data.ruleId in [${pick(r, POOLS.ruleIds)}, ${pick(r, POOLS.ruleIds)}]`,
  (r) => `data.threshold == ${pick(r, POOLS.thresholds)} && ${q(pick(r, POOLS.appIds))} in data.applicationIds`,
  (r) => `data.name == ${q(`Certificate expiration: ${pick(r, POOLS.thresholds)} days`)}`,
  (r) => `${q(pick(r, POOLS.appIds))} in data.applicationIds || ${q(pick(r, POOLS.appIds))} in data.applicationIds`,
  (r) => `${q(pick(r, POOLS.appIds))} in data.applicationIds && data.applicationIds[1] == ${q(pick(r, POOLS.appIds))}`,
  (r) => `type.endsWith('.failed') && data.ruleId == ${pick(r, POOLS.ruleIds)}`,
  (r) => `${q(pick(r, POOLS.appIds))} in data.applicationIds && ${q(pick(r, POOLS.appIds))} in data.applicationIds`,
];

const EXPIRY_STRINGS: FilterGen[] = [
  (r) => `data.message.contains(${q(pick(r, [...POOLS.appIds, ...POOLS.substrings, 'payments', 'no application']))})`,
  (r) => `data.message.startsWith(${q(pick(r, POOLS.prefixes))})`,
  (r) => `data.message.endsWith(${q(pick(r, POOLS.suffixes))})`,
  (r) => `data.message.matches(${q(pick(r, POOLS.regexPrefixes))})`,
  (r) => `data.name.endsWith(${q(pick(r, [' 7 days', '30 days', 'days', '']))}) && data.message.contains(${q(pick(r, POOLS.appIds))})`,
  (r) => `${q(pick(r, POOLS.appIds))} in data.applicationIds && data.message.contains(${q(pick(r, POOLS.substrings))})`,
  (r) => `data.message.contains(${q(pick(r, POOLS.appIds))}) || data.message.contains(${q(pick(r, POOLS.appIds))})`,
  (r) => `data.ruleId == ${pick(r, POOLS.ruleIds)} || data.message.contains('x')`,
];

const EXPIRY_OTHER: FilterGen[] = [
  () => '',
  () => "data.applicationIds.exists(a, a.startsWith('pay'))",
  () => 'size(data.applicationIds) == 0',
  () => 'data.ruleId > 2',
  () => "data.message.contains('payments') || data.ruleId == 2",
  (r) => `data.applicationIds[0] == ${q(pick(r, POOLS.appIds))}`,
  () => 'data.ruleId == 1 || data.threshold == 7',
  () => "data.ruleId == 'x'",
];

/** A random filter for the family: `indexableShare` of them from the spec-like patterns. */
function randomFilter(r: Rng, id: EventTypeId, indexableShare = 0.75): string {
  // A third of the indexable ones are substring/prefix/suffix predicates.
  const strings = chance(r, 1 / 3);
  if (id === 'cert-expiry-ext-notification-config') {
    return pick(r, chance(r, indexableShare) ? (strings ? EXPIRY_STRINGS : EXPIRY_INDEXABLE) : EXPIRY_OTHER)(r, id);
  }
  const indexable = id === 'certmgr-cert-resource-health-notification-config' ? [...HEALTH_INDEXABLE, ...CERT_ONLY] : HEALTH_INDEXABLE;
  return pick(r, chance(r, indexableShare) ? (strings ? HEALTH_STRINGS : indexable) : HEALTH_OTHER)(r, id);
}

const INTEGRATIONS: IntegrationRecord[] = [
  integration('i-enabled', COMPANY, true),
  integration('i-enabled-2', COMPANY, true),
  integration('i-disabled', COMPANY, false),
  integration('i-other-company', OTHER_COMPANY, true),
];

function integration(id: string, companyId: string, enabled: boolean): IntegrationRecord {
  return { id, companyId, name: id, type: 'WEBHOOK', enabled, config: {}, secrets: {}, managedBy: null, createdAt: 0, updatedAt: 0 };
}

export function router(id: string, eventTypeId: EventTypeId, filter: string, over: Partial<RouterRecord> = {}): RouterRecord {
  return {
    id,
    companyId: COMPANY,
    name: id,
    eventTypeId,
    enabled: true,
    filter,
    integrationId: 'i-enabled',
    templateId: null,
    generation: 'ROUTER',
    ...ROUTER_POLICY_DEFAULTS,
    managedBy: null,
    createdAt: 0,
    updatedAt: 0,
    ...over,
  };
}

/** `n` routers of each family; most enabled and with a usable integration. */
export function randomRouters(r: Rng, n: number, indexableShare?: number): RouterRecord[] {
  const out: RouterRecord[] = [];
  for (const id of [
    'certmgr-issuer-health-notification-config',
    'certmgr-cert-resource-health-notification-config',
    'cert-expiry-ext-notification-config',
  ] as const) {
    for (let i = 0; i < n; i++) {
      out.push(
        router(`${id}-${i}`, id, randomFilter(r, id, indexableShare), {
          enabled: !chance(r, 0.05),
          integrationId: chance(r, 0.9) ? pick(r, ['i-enabled', 'i-enabled-2']) : pick(r, ['i-disabled', 'i-other-company', 'i-missing']),
        }),
      );
    }
  }
  return out;
}

export function randomMonitoring(r: Rng): Pick<MonitoringConfigRecord, 'enabled' | 'applicationIds' | 'includeUnassignedCertificates'> {
  if (chance(r, 0.5)) return { enabled: true, applicationIds: [], includeUnassignedCertificates: true };
  return {
    enabled: chance(r, 0.9),
    applicationIds: [pick(r, POOLS.appIds), pick(r, POOLS.appIds)],
    includeUnassignedCertificates: chance(r, 0.5),
  };
}

const current: { routers: RouterRecord[]; integrations: IntegrationRecord[]; monitoring: MonitoringConfigRecord | null } = {
  routers: [],
  integrations: [],
  monitoring: null,
};
const memoryStore = {
  listRouters: async () => current.routers,
  listIntegrations: async () => current.integrations,
  getMonitoringConfig: async () => current.monitoring,
  listLiveSilences: async () => [],
  // every snapshotOf() invalidates first, so the fingerprint only has to exist
  routingFingerprint: async () => 'memory',
} as unknown as Store;
/** One instance for the whole run: its compile cache is shared by every snapshot (as in production across reloads). */
const snapshots = new RoutingSnapshots(memoryStore);

/** A snapshot built by the production RoutingSnapshots over an in-memory store. */
export async function snapshotOf(
  routers: RouterRecord[],
  monitoring: Pick<MonitoringConfigRecord, 'enabled' | 'applicationIds' | 'includeUnassignedCertificates'> = {
    enabled: true,
    applicationIds: [],
    includeUnassignedCertificates: true,
  },
  integrations: IntegrationRecord[] = INTEGRATIONS,
): Promise<RoutingSnapshot> {
  current.routers = routers;
  current.integrations = integrations;
  current.monitoring = { id: 'm', companyId: COMPANY, thresholds: [30, 14, 7], updatedAt: 0, ...monitoring };
  snapshots.invalidate(COMPANY);
  return snapshots.get(COMPANY);
}

/** A random event of the given (or a random) type, sometimes with missing or wrongly typed data. */
export function randomEvent(r: Rng, type: EventType = pick(r, EVENT_TYPES)): InternalEvent {
  const e = wellFormed(r, type);
  if (chance(r, 0.2)) malform(r, e.data);
  return e;
}

function wellFormed(r: Rng, type: EventType): InternalEvent {
  const cluster = { clusterId: pick(r, POOLS.clusterIds), clusterName: pick(r, POOLS.clusterNames) };
  const health = {
    ...cluster,
    namespace: pick(r, POOLS.namespaces),
    issuerName: pick(r, POOLS.issuerNames),
    statusReason: pick(r, POOLS.reasons),
    statusMessage: statusMessage(r),
  };
  const cert = () => ({
    subject: {
      commonName: pick(r, POOLS.commonNames),
      countries: [],
      localities: [],
      organizationalUnits: [],
      organizations: chance(r, 0.5) ? ['Example GmbH'] : [],
      provinces: [],
    },
    SANs: chance(r, 0.2) ? {} : { 'DNS Names': [pick(r, POOLS.dnsNames), pick(r, POOLS.dnsNames)] },
  });
  switch (type) {
    case 'evt.healthstatus.certmgr-issuer.notready':
      return issuerNotReady({ ...health, resourceId: pick(r, POOLS.resourceIds) });
    case 'evt.healthstatus.certmgr-issuer.active':
      return issuerActive({ ...health, resourceId: pick(r, POOLS.resourceIds), unhealthyDuration: pick(r, POOLS.durations) });
    case 'evt.healthstatus.certmgr-certificate-resource.notready':
      return certificateResourceNotReady({ ...health, ...cert(), unhealthyDuration: pick(r, POOLS.durations) });
    case 'evt.healthstatus.certmgr-certificate-resource.active':
      return certificateResourceActive({ ...health, ...cert(), resourceId: pick(r, POOLS.resourceIds) });
    case 'evt.policy.expiringcertificates.failed': {
      const threshold = pick(r, POOLS.thresholds);
      const apps = Array.from({ length: Math.floor(r() * 4) }, () => pick(r, POOLS.appIds));
      return expiringCertificate({
        name: `Certificate expiration: ${threshold} days`,
        applicationIds: apps,
        threshold,
        ruleId: pick(r, POOLS.ruleIds),
        message: `Certificate for ${apps.join(', ') || 'no application'} expires in ${threshold} days`,
      });
    }
    case 'evt.healthstatus.certmgr-agent.notready':
      return agentNotReady(cluster);
    case 'evt.healthstatus.certmgr-agent.active':
      return agentActive({ ...cluster, unhealthyDuration: pick(r, POOLS.durations) });
  }
}

/** Mostly short, with the pools' words; sometimes a literal alone, empty, or long enough to exceed the evaluation budget of costly filters. */
function statusMessage(r: Rng): string {
  const roll = r();
  if (roll < 0.05) return `${pick(r, POOLS.words)} ${'ACME '.repeat(6000)}resource`;
  if (roll < 0.1) return pick(r, [...POOLS.substrings, ...POOLS.prefixes, ...POOLS.suffixes]);
  return `${pick(r, POOLS.words)} ${pick(r, POOLS.words)} happened to the resource, see the controller log for details`;
}

/** Data the schema would reject: missing fields, other types, odd containers. The index must fall back, not guess. */
function malform(r: Rng, data: Record<string, unknown>): void {
  const field = pick(r, [
    'clusterId',
    'clusterName',
    'namespace',
    'issuerName',
    'resourceId',
    'subject',
    'SANs',
    'applicationIds',
    'ruleId',
    'threshold',
    'name',
    'statusMessage',
    'statusReason',
    'message',
  ]);
  const value = pick(r, [
    undefined,
    null,
    42,
    2,
    2.5,
    2n,
    '2',
    true,
    [],
    ['payments-app', 'payments-app'],
    ['payments-app', 7],
    { 'payments-app': 1, commonName: 'a.example.com', 'DNS Names': 'shop.example.com' },
    pick(r, POOLS.namespaces),
    pick(r, POOLS.clusterNames),
  ]);
  if (value === undefined) delete data[field];
  else data[field] = value;
}
