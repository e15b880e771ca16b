/**
 * Serving discovery on the REAL kube-apiserver v1.20.2 + etcd: the Ingress informer feeds the EndpointIndex as
 * Ingresses are created, given a load balancer address (status), annotated and deleted; the Gateway informer stays
 * quiet while the Gateway API CRD is not installed (one info line, no warning or error, however often it looks
 * again), finds it once installed (served as v1beta1 only: the fallback) and indexes a Gateway's listener; the
 * reload hint lists the real pods of a namespace page by page. Set CERTMGR_NOTIFY_KUBE_TESTS=0 to skip.
 */
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api, type V1CustomResourceDefinition, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/kube/client.js';
import { realClock } from '../../../src/runtime/timers.js';
import { PROBE_ADDRESS_ANNOTATION } from '../../../src/emitter/serving/discover.js';
import { findConsumers } from '../../../src/emitter/serving/consumers.js';
import { servingInformers, type ServingInformers } from '../../../src/emitter/serving/informers.js';
import { captureLogger } from '../../operator/support.js';
import {
  applyManifest,
  ensureKubeBinaries,
  ensureNamespace,
  startKubeEnv,
  waitFor,
  waitForCrdsEstablished,
  type KubeEnv,
} from '../../support/kube.js';

const skip = process.env['CERTMGR_NOTIFY_KUBE_TESTS'] === '0';
const NS = 'shop';

/** A minimal Gateway CRD (gateway.networking.k8s.io), served as v1beta1 only; no schema beyond the shape. */
const gatewayCrd: V1CustomResourceDefinition = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  // the Gateway API's own CRDs carry this (a *.k8s.io group needs it)
  metadata: {
    name: 'gateways.gateway.networking.k8s.io',
    annotations: { 'api-approved.kubernetes.io': 'https://github.com/kubernetes-sigs/gateway-api/pull/1538' },
  },
  spec: {
    group: 'gateway.networking.k8s.io',
    scope: 'Namespaced',
    names: { kind: 'Gateway', listKind: 'GatewayList', plural: 'gateways', singular: 'gateway' },
    versions: [
      {
        name: 'v1beta1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
              status: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
            },
          },
        },
      },
    ],
  },
};

describe.skipIf(skip)('serving informers on a real apiserver', () => {
  let env: KubeEnv;
  let serving: ServingInformers;
  const captured = captureLogger('debug');
  const heard: string[] = [];
  let networking: NetworkingV1Api;
  let core: CoreV1Api;

  const lines = () => captured.lines.map((l) => JSON.parse(l) as { level: number; msg: string; informer?: string });
  const gatewayLines = () => lines().filter((l) => l.informer === 'gateways' && l.level >= 30);
  const hosts = (ns: string, secret: string) =>
    serving.index.endpointsOf(ns, secret).map((e) => `${e.host}@${e.address ?? `!${e.reason}`}`);

  beforeAll(async () => {
    await ensureKubeBinaries();
    env = await startKubeEnv({ watchCache: true });
    const kc = env.kubeConfig();
    await ensureNamespace(kc, NS);
    networking = kc.makeApiClient(NetworkingV1Api);
    core = kc.makeApiClient(CoreV1Api);
    serving = servingInformers({
      kc,
      kube: new KubeClient(kc),
      namespace: undefined,
      log: captured.logger,
      clock: realClock,
      backoff: { baseMs: 100, maxMs: 1000 },
      pageSize: 2,
      gatewayRecheckMs: 200,
    });
    serving.index.onChange((ns, name) => heard.push(`${ns}/${name}`));
    await Promise.all(serving.all.map((i) => i.start()));
    await Promise.all(serving.all.map((i) => i.synced));
  }, 240_000);

  afterAll(async () => {
    await Promise.all((serving?.all ?? []).map((i) => i.stop()));
    await env?.stop();
  });

  it('an Ingress gives its Secret endpoints: not probed without an address, at the load balancer once it has one, at the annotation; deleted, none', async () => {
    await networking.createNamespacedIngress({
      namespace: NS,
      body: {
        metadata: { name: 'web' },
        spec: {
          tls: [{ hosts: ['shop.example.com', 'www.shop.example.com'], secretName: 'shop-tls' }],
          rules: [
            {
              host: 'shop.example.com',
              http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] },
            },
          ],
        },
      },
    });
    await waitFor('the Ingress indexed', () => serving.index.endpointsOf(NS, 'shop-tls').length === 2);
    expect(hosts(NS, 'shop-tls')[0]).toMatch(/^shop\.example\.com@!no address: the Ingress has no load balancer address/);
    expect(heard).toContain(`${NS}/shop-tls`);

    // the ingress controller writes the load balancer address into the status
    const ing = await networking.readNamespacedIngress({ name: 'web', namespace: NS });
    ing.status = { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } };
    await networking.replaceNamespacedIngressStatus({ name: 'web', namespace: NS, body: ing });
    await waitFor('the load balancer address', () => hosts(NS, 'shop-tls')[0] === 'shop.example.com@192.0.2.10:443');
    expect(hosts(NS, 'shop-tls')).toEqual(['shop.example.com@192.0.2.10:443', 'www.shop.example.com@192.0.2.10:443']);

    const annotated = await networking.readNamespacedIngress({ name: 'web', namespace: NS });
    annotated.metadata!.annotations = { [PROBE_ADDRESS_ANNOTATION]: 'ingress-nginx-controller.ingress-nginx.svc:443' };
    await networking.replaceNamespacedIngress({ name: 'web', namespace: NS, body: annotated });
    await waitFor(
      'the annotated address',
      () => hosts(NS, 'shop-tls')[0] === 'shop.example.com@ingress-nginx-controller.ingress-nginx.svc:443',
    );
    expect(serving.ingresses.get('web', NS)).toMatchObject({
      probeAddress: 'ingress-nginx-controller.ingress-nginx.svc:443',
      lbAddress: '192.0.2.10',
    });

    await networking.deleteNamespacedIngress({ name: 'web', namespace: NS });
    await waitFor('the Ingress gone', () => serving.index.endpointsOf(NS, 'shop-tls').length === 0);
  });

  it('without the Gateway API: synced with nothing, one info line, no warning or error however often it looks again', async () => {
    const gw = serving.gateways!;
    expect(gw.hasSynced).toBe(true);
    const listsBefore = gw.stats.lists;
    await waitFor('three more looks', () => gw.stats.lists >= listsBefore + 3, { timeoutMs: 60_000 });
    const said = gatewayLines();
    expect(said.map((l) => [l.level, l.msg])).toEqual([
      [30, 'Gateway API not installed (no gateways.gateway.networking.k8s.io v1 or v1beta1): Gateway listeners are not probed'],
    ]);
    expect(gw.stats.errors).toBe(0);
    expect(lines().filter((l) => l.level >= 40)).toEqual([]);
  });

  it('the Gateway API installed later (v1beta1 only): found, and a Gateway listener is indexed', async () => {
    const kc = env.kubeConfig();
    await applyManifest(kc, gatewayCrd);
    await waitForCrdsEstablished(kc, ['gateways.gateway.networking.k8s.io']);
    await waitFor('the Gateway API found', () => gatewayLines().some((l) => l.msg === 'Gateway API found: watching Gateways'), {
      timeoutMs: 60_000,
    });
    const custom = kc.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group: 'gateway.networking.k8s.io',
      version: 'v1beta1',
      plural: 'gateways',
      namespace: NS,
      body: {
        apiVersion: 'gateway.networking.k8s.io/v1beta1',
        kind: 'Gateway',
        metadata: { name: 'edge', annotations: { [PROBE_ADDRESS_ANNOTATION]: '[fd00::1]:8443' } },
        spec: {
          gatewayClassName: 'example',
          listeners: [
            {
              name: 'api',
              protocol: 'HTTPS',
              port: 443,
              hostname: 'api.example.com',
              tls: { mode: 'Terminate', certificateRefs: [{ kind: 'Secret', name: 'api-tls' }] },
            },
            { name: 'http', protocol: 'HTTP', port: 80 },
          ],
        },
      },
    });
    await waitFor('the Gateway indexed', () => serving.index.endpointsOf(NS, 'api-tls').length === 1);
    expect(serving.index.endpointsOf(NS, 'api-tls')[0]).toEqual({
      host: 'api.example.com',
      address: '[fd00::1]:8443',
      source: { kind: 'Gateway', namespace: NS, name: 'edge' },
      secret: { namespace: NS, name: 'api-tls' },
    });
    // found while watching: no warning, no error (the informer no longer looks again)
    expect(lines().filter((l) => l.level >= 40)).toEqual([]);
    await custom.deleteNamespacedCustomObject({
      group: 'gateway.networking.k8s.io',
      version: 'v1beta1',
      plural: 'gateways',
      namespace: NS,
      name: 'edge',
    });
    await waitFor('the Gateway gone', () => serving.index.endpointsOf(NS, 'api-tls').length === 0);
  }, 90_000);

  it('the reload hint: the pods of the namespace that mount the Secret, by workload, over several pages', async () => {
    const pod = (name: string, o: { owner?: [string, string]; labels?: Record<string, string>; mount?: boolean }): V1Pod => ({
      metadata: {
        name,
        ...(o.labels ? { labels: o.labels } : {}),
        ...(o.owner
          ? {
              ownerReferences: [
                {
                  apiVersion: 'apps/v1',
                  kind: o.owner[0],
                  name: o.owner[1],
                  uid: '7d7b3c5e-0000-4000-8000-000000000001',
                  controller: true,
                },
              ],
            }
          : {}),
      },
      spec: {
        automountServiceAccountToken: false, // no token controller here
        containers: [{ name: 'app', image: 'example/app:1', ...(o.mount ? { envFrom: [{ secretRef: { name: 'shop-tls' } }] } : {}) }],
        volumes: o.mount ? [{ name: 'tls', secret: { secretName: 'shop-tls' } }] : [],
      },
    });
    // no controller manager here: the service account admission wants the namespace's default one to exist
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'default' } } });
    const hash = { 'pod-template-hash': '5d8f7c9b6' };
    for (const p of [
      pod('web-5d8f7c9b6-aaaaa', { owner: ['ReplicaSet', 'web-5d8f7c9b6'], labels: hash, mount: true }),
      pod('web-5d8f7c9b6-bbbbb', { owner: ['ReplicaSet', 'web-5d8f7c9b6'], labels: hash, mount: true }),
      pod('db-0', { owner: ['StatefulSet', 'db'] }),
      pod('solo', { mount: true }),
      pod('zz-proxy-x1', { owner: ['DaemonSet', 'proxy'], mount: true }),
    ])
      await core.createNamespacedPod({ namespace: NS, body: p });
    const c = await findConsumers(core, NS, 'shop-tls', { clock: realClock, pageSize: 2 });
    expect(c).toEqual({ workloads: ['Pod/solo', 'Deployment/web', 'DaemonSet/proxy'], more: 0, partial: false });
    const cut = await findConsumers(core, NS, 'shop-tls', { clock: realClock, pageSize: 2, maxPages: 1 });
    expect(cut).toMatchObject({ partial: true, cutBy: 'more than 1 pages of 2 pods' });
  });
});
