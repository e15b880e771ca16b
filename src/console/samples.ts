/** A sample event of each type for the routers' try-it panel (the shapes of docs/webhook-payload.v1.examples.json). */
const CLUSTER = { clusterId: '3f6c2a9e-8b1d-4c7a-9e52-1d0b7f4a6c31', clusterName: 'prod-eu-west-1' };

const SAMPLES: Record<string, Record<string, unknown>> = {
  'evt.healthstatus.certmgr-issuer.notready': {
    ...CLUSTER,
    issuerName: 'letsencrypt-prod',
    namespace: 'cert-manager',
    resourceId: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
    statusMessage: 'Failed to register ACME account: the ACME server refused the contact email',
    statusReason: 'ErrRegisterACMEAccount',
    statusTransition: '2025-03-14T09:26:53Z',
  },
  'evt.healthstatus.certmgr-issuer.active': {
    ...CLUSTER,
    issuerName: 'letsencrypt-prod',
    namespace: 'cert-manager',
    resourceId: '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
    statusMessage: 'The ACME account was registered with the ACME server',
    statusReason: 'ACMEAccountRegistered',
    statusTransition: '2025-03-14T11:02:17Z',
    unhealthyDuration: '1h35m24s',
  },
  'evt.healthstatus.certmgr-certificate-resource.notready': {
    ...CLUSTER,
    certificateName: 'shop-frontend-tls',
    namespace: 'shop',
    issuerName: 'ca-issuer',
    statusMessage: 'Issuing certificate as Secret does not exist',
    unhealthyDuration: '0h12m3.5s',
    statusReason: 'DoesNotExist',
    statusTransition: '2025-03-15T22:41:09Z',
    subject: { commonName: 'shop.example.com', countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
    SANs: { 'DNS Names': ['shop.example.com'] },
  },
  'evt.healthstatus.certmgr-certificate-resource.active': {
    ...CLUSTER,
    certificateName: 'shop-frontend-tls',
    namespace: 'shop',
    issuerName: 'ca-issuer',
    resourceId: '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a',
    statusMessage: 'Certificate is up to date and has not expired',
    statusReason: 'Ready',
    statusTransition: '2025-03-16T06:15:42Z',
    unhealthyDuration: '2h0m12.25s',
    subject: { commonName: 'shop.example.com', countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
    SANs: { 'DNS Names': ['shop.example.com'] },
  },
  'evt.policy.expiringcertificates.failed': {
    name: 'Certificate expiration: 14 days',
    applicationIds: ['payments-app'],
    message: 'Certificate payments.example.com issued by Example Issuing CA for application payments-app expires in 14 days',
    notificationDate: '2025-03-18T08:00:00.123+01:00',
    threshold: 14,
    ruleId: 2,
  },
  'evt.healthstatus.certmgr-agent.notready': {
    ...CLUSTER,
    lastSeenAt: '2025-03-16T04:00:00.250Z',
    statusTransition: '2025-03-16T04:15:00.250Z',
    statusMessage: 'The certmgr-notify agent of this cluster has not reported its inventory for 15m0s',
    statusReason: 'AgentSilent',
    agentVersion: '1.4.0',
  },
  'evt.healthstatus.certmgr-agent.active': {
    ...CLUSTER,
    lastSeenAt: '2025-03-16T06:15:00Z',
    statusTransition: '2025-03-16T06:15:00Z',
    statusMessage: 'The certmgr-notify agent of this cluster reports its inventory again',
    statusReason: 'AgentReporting',
    agentVersion: '1.4.1',
    unhealthyDuration: '1h59m59.75s',
  },
};

/** The sample data of `type` as indented JSON ({} for a type without a sample). */
export function sampleData(type: string): string {
  return JSON.stringify(SAMPLES[type] ?? {}, null, 2);
}

/** The event types with a sample, in the order above. */
export const SAMPLE_TYPES: readonly string[] = Object.keys(SAMPLES);
