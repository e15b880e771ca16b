/** Loopback receivers and fixtures shared by the integration tests. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EventType, InternalEvent } from '../../src/events/families.js';
import type { EventDataByType } from '../../src/events/types.js';
import type { IntegrationRecord, IntegrationType } from '../../src/store/types.js';
import { EgressPolicy, parseEgressAllow } from '../../src/integrations/egress.js';
import {
  integrationOptions,
  type GroupMember,
  type IntegrationOptions,
  type Notification,
  type NotificationGroup,
} from '../../src/integrations/types.js';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Names and values as sent, alternating (names a header map would mangle, e.g. constructor, stay readable). */
  rawHeaders: string[];
  body: string;
}

export type Handler = (req: Received, res: ServerResponse) => void;

export interface Receiver {
  /** Base URL, e.g. http://127.0.0.1:12345 */
  url: string;
  requests: Received[];
  handle(h: Handler): void;
  close(): Promise<void>;
}

/**
 * A real HTTP server on 127.0.0.1 that records every request; answers 200 "ok" by default. `port` 0 (default)
 * takes a free one; a given port brings a closed receiver back on the same address (fault tests).
 */
export async function startReceiver(initial?: Handler, port = 0): Promise<Receiver> {
  let handler: Handler = initial ?? ((_req, res) => res.end('ok'));
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(r);
      handler(r, res);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    requests,
    handle: (h) => {
      handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const CLUSTER_ID = '6f1c2b3a-1111-4c2d-9e8f-0a1b2c3d4e5f';
const RESOURCE_ID = '9a8b7c6d-2222-4e5f-8a9b-1c2d3e4f5a6b';
export const CERT_ID = 'c0ffee00-3333-4abc-8def-123456789abc';
export const APP_ID = 'a11ce000-4444-4bbb-9ccc-abcdefabcdef';

const issuerNotReady: EventDataByType['evt.healthstatus.certmgr-issuer.notready'] = {
  clusterId: CLUSTER_ID,
  clusterName: 'prod',
  issuerName: 'letsencrypt-prod',
  namespace: 'cert-manager',
  resourceId: RESOURCE_ID,
  statusMessage: 'Failed to update ACME account:400 urn:ietf:params:acme:error:invalidContact',
  statusReason: 'ErrUpdateACMEAccount',
  statusTransition: '2026-03-01T10:00:00Z',
};

const certSubject = {
  commonName: 'shop.example.com',
  countries: ['DE'],
  localities: ['Berlin'],
  organizationalUnits: ['Web'],
  organizations: ['Example GmbH'],
  provinces: [],
};

const certNotReady: EventDataByType['evt.healthstatus.certmgr-certificate-resource.notready'] = {
  clusterName: 'prod',
  clusterId: CLUSTER_ID,
  certificateName: 'shop-tls',
  namespace: 'shop',
  issuerName: 'letsencrypt-prod',
  statusMessage: 'Issuing certificate as Secret does not exist',
  unhealthyDuration: '0h12m3.5s',
  statusReason: 'DoesNotExist',
  statusTransition: '2026-03-01T10:05:00Z',
  subject: certSubject,
  SANs: { 'DNS Names': ['shop.example.com', 'www.shop.example.com'] },
};

const agentNotReady: EventDataByType['evt.healthstatus.certmgr-agent.notready'] = {
  clusterId: issuerNotReady.clusterId,
  clusterName: issuerNotReady.clusterName,
  lastSeenAt: '2026-03-01T10:00:00Z',
  statusTransition: '2026-03-01T10:15:00Z',
  statusMessage: 'The certmgr-notify agent of this cluster has not reported its inventory for 15m0s',
  statusReason: 'AgentSilent',
  agentVersion: '1.4.0',
};

export const EVENTS: Record<EventType, InternalEvent> = {
  'evt.healthstatus.certmgr-issuer.notready': { type: 'evt.healthstatus.certmgr-issuer.notready', data: { ...issuerNotReady } },
  'evt.healthstatus.certmgr-issuer.active': {
    type: 'evt.healthstatus.certmgr-issuer.active',
    data: {
      ...issuerNotReady,
      statusMessage: 'The ACME account was registered with the ACME server',
      statusReason: 'ACMEAccountRegistered',
      statusTransition: '2026-03-01T11:00:00Z',
      unhealthyDuration: '1h0m0.25s',
    } satisfies EventDataByType['evt.healthstatus.certmgr-issuer.active'],
  },
  'evt.healthstatus.certmgr-certificate-resource.notready': {
    type: 'evt.healthstatus.certmgr-certificate-resource.notready',
    data: { ...certNotReady },
  },
  'evt.healthstatus.certmgr-certificate-resource.active': {
    type: 'evt.healthstatus.certmgr-certificate-resource.active',
    data: {
      ...certNotReady,
      resourceId: RESOURCE_ID,
      statusMessage: 'Certificate is up to date and has not expired',
      statusReason: 'Ready',
      statusTransition: '2026-03-01T10:20:00Z',
      unhealthyDuration: '0h15m0s',
    } satisfies EventDataByType['evt.healthstatus.certmgr-certificate-resource.active'],
  },
  'evt.policy.expiringcertificates.failed': {
    type: 'evt.policy.expiringcertificates.failed',
    data: {
      name: 'Certificate expiration',
      applicationIds: [APP_ID],
      message: `Certificate shop.example.com (id ${CERT_ID}), serial 04:A3:7F, issued by R11, application ${APP_ID}, expires in 30 days on 2026-03-31T00:00:00Z`,
      notificationDate: '2026-03-01T09:00:00.123+00:00',
      threshold: 30,
      ruleId: 2,
    } satisfies EventDataByType['evt.policy.expiringcertificates.failed'],
  },
  'evt.healthstatus.certmgr-agent.notready': {
    type: 'evt.healthstatus.certmgr-agent.notready',
    data: { ...agentNotReady },
  },
  'evt.healthstatus.certmgr-agent.active': {
    type: 'evt.healthstatus.certmgr-agent.active',
    data: {
      ...agentNotReady,
      lastSeenAt: '2026-03-01T11:00:00Z',
      statusTransition: '2026-03-01T11:00:00Z',
      statusMessage: 'The certmgr-notify agent of this cluster reports its inventory again',
      statusReason: 'AgentReporting',
      unhealthyDuration: '0h45m0s',
    } satisfies EventDataByType['evt.healthstatus.certmgr-agent.active'],
  },
};

export const ALL_TYPES = Object.keys(EVENTS) as EventType[];

export function integration(
  type: IntegrationType,
  secrets: Record<string, string> = {},
  config: Record<string, unknown> = {},
): IntegrationRecord {
  return {
    id: '11111111-2222-4333-8444-555555555555',
    companyId: '00000000-0000-4000-8000-000000000001',
    name: `${type.toLowerCase()}-integration`,
    type,
    enabled: true,
    config,
    secrets,
    managedBy: null,
    createdAt: 0,
    updatedAt: 0,
  };
}

export function notification(integ: IntegrationRecord, event: InternalEvent, over: Partial<Notification> = {}): Notification {
  return {
    id: 'dlv-0001',
    eventId: 'evt-0001',
    event,
    occurredAt: Date.parse('2026-03-01T10:00:05Z'),
    router: { id: 'rtr-1', name: 'prod issuers' },
    integration: integ,
    attempt: 1,
    ...over,
  };
}

/** The loopback receivers need the allow-list; SSRF tests use the default policy (no allow) instead. */
const LOOPBACK_EGRESS = new EgressPolicy(parseEgressAllow(['127.0.0.1/32']));

export function opts(over: Partial<IntegrationOptions> = {}): IntegrationOptions {
  return integrationOptions({ timeoutMs: 2000, userAgent: 'certmgr-notify-test/1.0', egress: LOOPBACK_EGRESS, ...over });
}

/** A certificate of the issuer outage: `i` names it (shop-0, shop-1, ...). */
export function certEvent(i: number, active = false, data: Record<string, unknown> = {}): InternalEvent {
  const base = active
    ? EVENTS['evt.healthstatus.certmgr-certificate-resource.active']
    : EVENTS['evt.healthstatus.certmgr-certificate-resource.notready'];
  return {
    type: base.type,
    data: { ...base.data, certificateName: `shop-${i}`, namespace: `team-${i % 7}`, statusReason: 'IssuerNotReady', ...data },
  };
}

const member = (i: number, active: boolean, data?: Record<string, unknown>): GroupMember => ({
  eventId: `evt-${active ? 'up' : 'down'}-${i}`,
  event: certEvent(i, active, data),
  occurredAt: Date.parse('2026-03-01T10:00:05Z') - i * 1000,
});

/**
 * The group of an issuer outage (router groupBy data.issuerName + data.clusterName): `firing` certificates not
 * ready and `resolved` recovered; the lists hold at most `listed` members each (the contract: 20), the counts the rest.
 */
export function outageGroup(firing: number, resolved = 0, listed = 20, data?: Record<string, unknown>): NotificationGroup {
  return {
    key: 'grp:0123456789abcdef',
    labels: { 'data.issuerName': 'letsencrypt-prod', 'data.clusterName': 'prod' },
    firing: Array.from({ length: Math.min(firing, listed) }, (_, i) => member(i, false, data)),
    resolved: Array.from({ length: Math.min(resolved, listed) }, (_, i) => member(firing + i, true, data)),
    firingCount: firing,
    resolvedCount: resolved,
    allResolved: firing === 0,
  };
}

/** A notification of a group: its event is the newest member's. */
export function groupNotification(integ: IntegrationRecord, group: NotificationGroup, over: Partial<Notification> = {}): Notification {
  const newest = group.firing[0] ?? group.resolved[0]!;
  return notification(integ, newest.event, { id: 'dlv-group-1', eventId: newest.eventId, group, ...over });
}
