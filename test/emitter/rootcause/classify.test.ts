/** The root-cause classifier over messages as cert-manager, ACME CAs and DNS providers write them (tables). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  MAX_ROOT_CAUSE_MESSAGE,
  ROOT_CAUSE_CLASSES,
  ROOT_CAUSE_HINTS,
  classOfMessage,
  rootCauseOf,
  type ChallengeFacts,
  type IssuanceChain,
  type RequestFacts,
  type RootCauseClass,
} from '../../../src/emitter/rootcause/classify.js';

describe('classOfMessage', () => {
  const table: Array<[string, RootCauseClass | undefined]> = [
    // cert-manager's HTTP-01 self check (acmechallenges/sync.go, http solver Check)
    ["Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'", 'http-self-check'],
    [
      'Waiting for HTTP-01 challenge propagation: failed to perform self check GET request \'http://api.example.com/.well-known/acme-challenge/tok\': Get "http://api.example.com/.well-known/acme-challenge/tok": dial tcp: lookup api.example.com on 10.96.0.10:53: no such host',
      'http-self-check',
    ],
    // the CA failing to validate (ACME problem documents)
    [
      'Error accepting authorization: acme: authorization error for api.example.com: 403 urn:ietf:params:acme:error:unauthorized: 203.0.113.7: Invalid response from http://api.example.com/.well-known/acme-challenge/tok: 404',
      'http-self-check',
    ],
    [
      'Error accepting authorization: acme: authorization error for api.example.com: 400 urn:ietf:params:acme:error:connection: 203.0.113.7: Fetching http://api.example.com/.well-known/acme-challenge/tok: Timeout during connect (likely firewall problem)',
      'http-self-check',
    ],
    // DNS-01
    ['Waiting for DNS-01 challenge propagation: DNS record for "example.com" not yet propagated', 'dns-propagation'],
    [
      'Waiting for DNS-01 challenge propagation: Could not determine authoritative nameservers for "_acme-challenge.example.com."',
      'dns-propagation',
    ],
    [
      'Error accepting authorization: acme: authorization error for example.com: 403 urn:ietf:params:acme:error:unauthorized: No TXT record found at _acme-challenge.example.com',
      'dns-propagation',
    ],
    [
      'acme: authorization error for example.com: 400 urn:ietf:params:acme:error:dns: DNS problem: NXDOMAIN looking up TXT',
      'dns-propagation',
    ],
    // rate limits (Let's Encrypt)
    [
      'Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: Error creating new order :: too many certificates already issued for exact set of domains: api.example.com: see https://letsencrypt.org/docs/rate-limits/',
      'rate-limited',
    ],
    [
      'The certificate request has failed to complete and will be retried: Failed to wait for order resource "api-tls-1-2976254157" to become ready: order is in "errored" state: Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many failed authorizations recently',
      'rate-limited',
    ],
    // credentials: DNS providers, Secrets, Vault
    [
      'Error presenting challenge: Cloudflare API Error for GET "/zones?name=example.com"\n Error: 10000: Authentication error',
      'credentials',
    ],
    [
      'Error presenting challenge: failed to change Route 53 record set: operation error Route 53: ChangeResourceRecordSets, https response error StatusCode: 403, api error AccessDenied: User: arn:aws:sts::1:assumed-role/cm is not authorized to perform: route53:ChangeResourceRecordSets',
      'credentials',
    ],
    ['error getting cloudflare secret: secret "cloudflare-api-token-secret" not found', 'credentials'],
    ['Failed to sign certificate: Error making API request. Code: 403. Errors: * permission denied', 'credentials'],
    // nothing recognised: the caller decides (ca-error for a failure, pending for a wait)
    ['Failed to finalize Order: 400 urn:ietf:params:acme:error:badCSR: Error finalizing order :: invalid public key', undefined],
    ['Waiting on certificate issuance from order api/api-tls-1-2976254157: "pending"', undefined],
    ['', undefined],
  ];
  it.each(table)('%s → %s', (text, cls) => {
    expect(classOfMessage(text)).toBe(cls);
  });
});

const NS = 'api';
const request = (conditions: RequestFacts['conditions']): RequestFacts => ({ namespace: NS, name: 'api-tls-1', conditions });
const approved = {
  type: 'Approved',
  status: 'True',
  reason: 'cert-manager.io',
  message: 'Certificate request has been approved by cert-manager.io',
};
const pendingReady = {
  type: 'Ready',
  status: 'False',
  reason: 'Pending',
  message: 'Waiting on certificate issuance from order api/api-tls-1-2976254157: "pending"',
};
const order = { namespace: NS, name: 'api-tls-1-2976254157', state: 'pending' };
const challenge = (over: Partial<ChallengeFacts> = {}): ChallengeFacts => ({
  namespace: NS,
  name: 'api-tls-1-2976254157-1825524577',
  type: 'HTTP-01',
  dnsName: 'api.example.com',
  state: 'pending',
  presented: true,
  processing: true,
  ...over,
});
const SELF_CHECK = "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";

describe('rootCauseOf', () => {
  const table: Array<[string, IssuanceChain, { class: RootCauseClass; message: string; resource: string } | undefined]> = [
    ['no CertificateRequest', {}, undefined],
    ['the request was issued', { request: request([approved, { type: 'Ready', status: 'True', reason: 'Issued' }]) }, undefined],
    [
      'sample 12: the Challenge three objects down',
      { request: request([approved, pendingReady]), order, challenges: [challenge({ reason: SELF_CHECK })] },
      {
        class: 'http-self-check',
        message: SELF_CHECK,
        resource: 'Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)',
      },
    ],
    [
      'a failed Challenge before a waiting one',
      {
        request: request([approved, pendingReady]),
        order,
        challenges: [
          challenge({ name: 'a', reason: SELF_CHECK }),
          challenge({
            name: 'b',
            type: 'DNS-01',
            dnsName: 'example.com',
            state: 'invalid',
            reason:
              'acme: authorization error for example.com: 403 urn:ietf:params:acme:error:unauthorized: No TXT record found at _acme-challenge.example.com',
          }),
        ],
      },
      {
        class: 'dns-propagation',
        message:
          'acme: authorization error for example.com: 403 urn:ietf:params:acme:error:unauthorized: No TXT record found at _acme-challenge.example.com',
        resource: 'Challenge api/b (DNS-01 example.com)',
      },
    ],
    [
      'a valid Challenge says nothing; the errored Order does',
      {
        request: request([approved, pendingReady]),
        order: {
          ...order,
          state: 'errored',
          reason: 'Failed to finalize Order: 400 urn:ietf:params:acme:error:badCSR: invalid public key',
        },
        challenges: [challenge({ state: 'valid', reason: 'Successfully authorized domain' })],
      },
      {
        class: 'ca-error',
        message: 'Failed to finalize Order: 400 urn:ietf:params:acme:error:badCSR: invalid public key',
        resource: 'Order api/api-tls-1-2976254157',
      },
    ],
    [
      'a rate-limited Order',
      {
        request: request([approved, pendingReady]),
        order: {
          ...order,
          state: 'errored',
          reason: 'Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many new orders recently',
        },
      },
      {
        class: 'rate-limited',
        message: 'Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many new orders recently',
        resource: 'Order api/api-tls-1-2976254157',
      },
    ],
    [
      'denied by an approver',
      {
        request: request([
          {
            type: 'Denied',
            status: 'True',
            reason: 'policy.cert-manager.io',
            message: 'No policy approved this request: [team-a: spec.dnsNames not allowed]',
          },
          { type: 'Ready', status: 'False', reason: 'Denied', message: 'The CertificateRequest was denied by an approval controller' },
        ]),
      },
      {
        class: 'approval-denied',
        message: 'policy.cert-manager.io: No policy approved this request: [team-a: spec.dnsNames not allowed]',
        resource: 'CertificateRequest api/api-tls-1',
      },
    ],
    [
      'a non-ACME request failed (Vault)',
      {
        request: request([
          approved,
          {
            type: 'Ready',
            status: 'False',
            reason: 'Failed',
            message: 'Vault failed to sign certificate: Error making API request. Code: 403. Errors: * permission denied',
          },
        ]),
      },
      {
        class: 'credentials',
        message: 'Vault failed to sign certificate: Error making API request. Code: 403. Errors: * permission denied',
        resource: 'CertificateRequest api/api-tls-1',
      },
    ],
    [
      'a non-ACME request failed with words of no known class',
      {
        request: request([
          approved,
          { type: 'Ready', status: 'False', reason: 'Failed', message: 'certificate signing failed: CA key expired' },
        ]),
      },
      { class: 'ca-error', message: 'certificate signing failed: CA key expired', resource: 'CertificateRequest api/api-tls-1' },
    ],
    [
      'a Challenge waiting without a reason yet',
      { request: request([approved, pendingReady]), order, challenges: [challenge({ processing: false })] },
      {
        class: 'pending',
        message: 'Challenge is pending (presented, not processing)',
        resource: 'Challenge api/api-tls-1-2976254157-1825524577 (HTTP-01 api.example.com)',
      },
    ],
    [
      'waiting for the issuer',
      {
        request: request([
          approved,
          {
            type: 'Ready',
            status: 'False',
            reason: 'Pending',
            message: 'Referenced "ClusterIssuer" not found: clusterissuer.cert-manager.io "letsencrypt" not found',
          },
        ]),
      },
      {
        class: 'pending',
        message: 'Referenced "ClusterIssuer" not found: clusterissuer.cert-manager.io "letsencrypt" not found',
        resource: 'CertificateRequest api/api-tls-1',
      },
    ],
  ];
  it.each(table)('%s', (_name, chain, want) => {
    const got = rootCauseOf(chain);
    if (!want) return expect(got).toBeUndefined();
    expect(got).toEqual({ ...want, hint: ROOT_CAUSE_HINTS[want.class] });
  });

  it('bounds the text: one line, at most MAX_ROOT_CAUSE_MESSAGE code points', () => {
    const long = `${SELF_CHECK}\n${'é'.repeat(5000)}`;
    const got = rootCauseOf({ request: request([approved, pendingReady]), order, challenges: [challenge({ reason: long })] })!;
    expect([...got.message]).toHaveLength(MAX_ROOT_CAUSE_MESSAGE);
    expect(got.message).not.toContain('\n');
    expect(got.message.endsWith('\u2026')).toBe(true);
  });

  it('every class has a one-line hint', () => {
    for (const c of ROOT_CAUSE_CLASSES) expect(ROOT_CAUSE_HINTS[c]).toMatch(/^[^\n]{20,200}$/);
  });
});

describe('docs/emitter.md "Root cause"', () => {
  it('lists every class with its hint as the code has it', () => {
    const doc = readFileSync(new URL('../../../docs/emitter.md', import.meta.url), 'utf8');
    for (const c of ROOT_CAUSE_CLASSES)
      expect(doc).toMatch(new RegExp(`\\| \`${c}\` +\\|[^\\n]*\\| ${escapeRe(ROOT_CAUSE_HINTS[c])} +\\|`));
  });
});

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
