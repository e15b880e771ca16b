/**
 * The reload hint: which workloads mount a TLS Secret (volumes, projected sources, env, envFrom), named by their
 * owner, deduplicated and bounded; the pod list is paginated and bounded (pages, timeout) and never throws.
 */
import type { CoreV1Api, V1OwnerReference } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  MAX_CONSUMERS,
  consumerNames,
  consumersOf,
  describeConsumers,
  findConsumers,
  podMountsSecret,
  workloadOf,
  type PodLike,
  type PodLister,
} from '../../../src/emitter/serving/consumers.js';
import { FakeClock, flush } from '../../runtime/fake-clock.js';

// client-node's CoreV1Api is a PodLister as it is
const _typed: (api: CoreV1Api) => PodLister = (api) => api;
void _typed;

const owner = (kind: string, name: string, controller = true): V1OwnerReference => ({
  apiVersion: 'apps/v1',
  kind,
  name,
  uid: `u-${name}`,
  controller,
});

function pod(
  name: string,
  spec: PodLike['spec'],
  o: { owners?: V1OwnerReference[]; labels?: Record<string, string>; phase?: string } = {},
): PodLike {
  return {
    metadata: { name, namespace: 'shop', ...(o.owners ? { ownerReferences: o.owners } : {}), ...(o.labels ? { labels: o.labels } : {}) },
    ...(spec ? { spec } : {}),
    ...(o.phase ? { status: { phase: o.phase } } : {}),
  };
}

const container = (extra: Record<string, unknown> = {}) => ({ name: 'app', image: 'app:1', ...extra });

describe('podMountsSecret', () => {
  const cases: [string, PodLike['spec'], boolean][] = [
    ['a secret volume', { containers: [container()], volumes: [{ name: 'tls', secret: { secretName: 'web-tls' } }] }, true],
    [
      'a secret volume of another Secret',
      { containers: [container()], volumes: [{ name: 'tls', secret: { secretName: 'other' } }] },
      false,
    ],
    [
      'a projected source',
      {
        containers: [container()],
        volumes: [{ name: 'p', projected: { sources: [{ configMap: { name: 'c' } }, { secret: { name: 'web-tls' } }] } }],
      },
      true,
    ],
    [
      'an env secretKeyRef',
      { containers: [container({ env: [{ name: 'CERT', valueFrom: { secretKeyRef: { name: 'web-tls', key: 'tls.crt' } } }] })] },
      true,
    ],
    ['an envFrom secretRef', { containers: [container({ envFrom: [{ secretRef: { name: 'web-tls' } }] })] }, true],
    [
      'an init container env',
      { containers: [container()], initContainers: [container({ envFrom: [{ secretRef: { name: 'web-tls' } }] })] },
      true,
    ],
    [
      'a configMap of the same name',
      {
        containers: [container({ envFrom: [{ configMapRef: { name: 'web-tls' } }] })],
        volumes: [{ name: 'c', configMap: { name: 'web-tls' } }],
      },
      false,
    ],
    ['no spec', undefined, false],
  ];
  it.each(cases)('%s → %s', (_, spec, mounts) => {
    expect(podMountsSecret(pod('p', spec), 'web-tls')).toBe(mounts);
  });
});

describe('workloadOf', () => {
  const cases: [string, PodLike, string][] = [
    [
      'a ReplicaSet with the pod-template hash label',
      pod('web-5d8f7c9b6-x2x4q', undefined, {
        owners: [owner('ReplicaSet', 'web-5d8f7c9b6')],
        labels: { 'pod-template-hash': '5d8f7c9b6' },
      }),
      'Deployment/web',
    ],
    [
      'a ReplicaSet with a hash-like suffix and no label',
      pod('p', undefined, { owners: [owner('ReplicaSet', 'api-gateway-7fb96c846b')] }),
      'Deployment/api-gateway',
    ],
    [
      'a ReplicaSet whose label does not match its suffix',
      pod('p', undefined, { owners: [owner('ReplicaSet', 'legacy-set')], labels: { 'pod-template-hash': 'abc' } }),
      'ReplicaSet/legacy-set',
    ],
    ['a ReplicaSet of its own (no hash suffix)', pod('p', undefined, { owners: [owner('ReplicaSet', 'frontend')] }), 'ReplicaSet/frontend'],
    ['a StatefulSet', pod('db-0', undefined, { owners: [owner('StatefulSet', 'db')] }), 'StatefulSet/db'],
    ['a DaemonSet', pod('proxy-abcde', undefined, { owners: [owner('DaemonSet', 'proxy')] }), 'DaemonSet/proxy'],
    ['a Job', pod('renew-1-xyz', undefined, { owners: [owner('Job', 'renew-1')] }), 'Job/renew-1'],
    [
      'the controller among several owners',
      pod('p', undefined, { owners: [owner('Foo', 'not-this', false), owner('StatefulSet', 'db')] }),
      'StatefulSet/db',
    ],
    ['no owner', pod('lonely', undefined), 'Pod/lonely'],
  ];
  it.each(cases)('%s → %s', (_, p, name) => {
    expect(workloadOf(p)).toBe(name);
  });
});

describe('consumersOf / describeConsumers', () => {
  const mounting = (name: string, o: Parameters<typeof pod>[2] = {}) =>
    pod(name, { containers: [container()], volumes: [{ name: 't', secret: { secretName: 'web-tls' } }] }, o);

  it('deduplicates by workload and skips pods that ended', () => {
    const rs = { owners: [owner('ReplicaSet', 'web-5d8f7c9b6')], labels: { 'pod-template-hash': '5d8f7c9b6' } };
    const found = consumersOf(
      [
        mounting('web-5d8f7c9b6-a', rs),
        mounting('web-5d8f7c9b6-b', rs),
        mounting('done', { phase: 'Succeeded' }),
        mounting('solo'),
        pod('other', { containers: [container()] }),
      ],
      'web-tls',
    );
    expect([...found]).toEqual(['Deployment/web', 'Pod/solo']);
  });

  it('describes: names, "and N more", a cut list', () => {
    expect(describeConsumers({ workloads: ['Deployment/web', 'Pod/x'], more: 3, partial: false })).toBe('Deployment/web, Pod/x and 3 more');
    expect(describeConsumers({ workloads: ['Deployment/web'], more: 0, partial: true })).toBe('Deployment/web (pods listed in part)');
    expect(describeConsumers({ workloads: [], more: 0, partial: false })).toBe('');
    expect(consumerNames({ workloads: ['Deployment/web'], more: 2, partial: false })).toEqual(['Deployment/web', 'and 2 more']);
    expect(consumerNames({ workloads: ['Deployment/web'], more: 0, partial: true })).toEqual(['Deployment/web']);
  });
});

/** A pod lister over `pods` in pages of the requested size, with `_continue` tokens; counts requests. */
function lister(pods: PodLike[], o: { hang?: boolean; fail?: boolean } = {}): PodLister & { requests: number } {
  const l = {
    requests: 0,
    listNamespacedPod(req: { namespace: string; limit?: number; _continue?: string }) {
      l.requests++;
      if (o.fail)
        return Promise.reject(
          Object.assign(new Error('forbidden'), { code: 403, body: '{"reason":"Forbidden","message":"pods is forbidden"}' }),
        );
      if (o.hang) return new Promise<never>(() => {});
      const from = Number(req._continue ?? 0);
      const to = from + (req.limit ?? pods.length);
      return Promise.resolve({ items: pods.slice(from, to), metadata: to < pods.length ? { _continue: String(to) } : {} });
    },
  };
  return l;
}

describe('findConsumers', () => {
  const mounting = (i: number) =>
    pod(
      `p${i}`,
      { containers: [container()], volumes: [{ name: 't', secret: { secretName: 'web-tls' } }] },
      { owners: [owner('StatefulSet', `s${i}`)] },
    );

  it('reads every page; at most ten names and the count of the rest', async () => {
    const api = lister([...Array.from({ length: 13 }, (_, i) => mounting(i)), pod('x', { containers: [container()] })]);
    const c = await findConsumers(api, 'shop', 'web-tls', { clock: new FakeClock(), pageSize: 5 });
    expect(api.requests).toBe(3);
    expect(c).toEqual({ workloads: Array.from({ length: MAX_CONSUMERS }, (_, i) => `StatefulSet/s${i}`), more: 3, partial: false });
  });

  it('stops after maxPages: partial, saying why', async () => {
    const api = lister(Array.from({ length: 30 }, (_, i) => mounting(i)));
    const c = await findConsumers(api, 'shop', 'web-tls', { clock: new FakeClock(), pageSize: 5, maxPages: 2 });
    expect(api.requests).toBe(2);
    expect(c).toMatchObject({ more: 0, partial: true, cutBy: 'more than 2 pages of 5 pods' });
    expect(c.workloads).toHaveLength(10);
  });

  it('a list that does not answer ends at the timeout: partial, nothing thrown', async () => {
    const clock = new FakeClock();
    const p = findConsumers(lister([], { hang: true }), 'shop', 'web-tls', { clock, timeoutMs: 5000 });
    await flush();
    await clock.advance(5000);
    expect(await p).toEqual({ workloads: [], more: 0, partial: true, cutBy: 'timeout after 5000 ms' });
    expect(clock.pending).toBe(0);
  });

  it('a refused list: partial with the error, nothing thrown', async () => {
    const clock = new FakeClock();
    const c = await findConsumers(lister([], { fail: true }), 'shop', 'web-tls', { clock });
    expect(c).toMatchObject({ workloads: [], partial: true, cutBy: 'HTTP 403 Forbidden: pods is forbidden' });
    expect(clock.pending).toBe(0);
  });
});
