/**
 * The health controller with endpoint verdicts, on in-memory fakes (no server): a change of a Secret's verdicts
 * reconciles the Certificate that owns the Secret, or the Secret itself when no Certificate manages it; the
 * episode opens after the grace period, closes when the endpoint serves the Secret's certificate again, and a
 * deleted Secret resolves.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { InternalEvent } from '../../../src/events/families.js';
import { HealthController } from '../../../src/emitter/health/controller.js';
import type { HealthState } from '../../../src/emitter/health/diff.js';
import type { CertManagerObject, HealthKind } from '../../../src/emitter/health/observe.js';
import type { TlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import type { EndpointVerdict, ServingVerdicts } from '../../../src/emitter/serving/types.js';
import type { KeyedState } from '../../../src/emitter/state.js';
import type { ResilientInformer } from '../../../src/kube/informer.js';
import type { ServingStatus } from '../../../src/model/serving.js';
import { CLUSTER, certificate, iso, ready } from '../fixtures.js';

const NOW = Date.now();
const MIN = 60_000;
const DAY = 24 * 60 * MIN;

type Handler<T> = (o: T) => void;

/** A cache by namespace/name with the informer methods the controller uses; `remove` fires 'delete'. */
function fakeInformer<T extends { metadata?: { name?: string; namespace?: string } }>(items: T[] = []) {
  const byKey = new Map(items.map((o) => [`${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, o]));
  const handlers = new Map<string, Handler<T>[]>();
  return {
    on: (ev: string, h: Handler<T>) => void handlers.set(ev, [...(handlers.get(ev) ?? []), h]),
    onList: () => {},
    get: (name: string, namespace?: string) => byKey.get(`${namespace ?? ''}/${name}`),
    list: () => [...byKey.values()],
    remove(o: T) {
      byKey.delete(`${o.metadata?.namespace ?? ''}/${o.metadata?.name}`);
      for (const h of handlers.get('delete') ?? []) h(o);
    },
  };
}

/** ServingVerdicts as the prober offers them: `set` changes a Secret's verdicts and tells the listeners. */
function fakeVerdicts() {
  const bySecret = new Map<string, EndpointVerdict[]>();
  const listeners: ((ns: string, name: string) => void)[] = [];
  const api: ServingVerdicts = {
    of: (ns, name) => bySecret.get(`${ns}/${name}`) ?? [],
    onChange: (l) => void listeners.push(l),
  };
  return {
    api,
    set(ns: string, name: string, verdicts: EndpointVerdict[]) {
      bySecret.set(`${ns}/${name}`, verdicts);
      for (const l of listeners) l(ns, name);
    },
  };
}

const leaf = (serial: string, notAfter: number) => ({
  serial,
  issuer: 'CN=R11',
  subject: 'CN=shop.example.com',
  dnsNames: ['shop.example.com'],
  notBefore: notAfter - 90 * DAY,
  notAfter,
});

function verdict(status: ServingStatus, host = 'shop.example.com'): EndpointVerdict {
  const expected = leaf('0B2C', NOW + 60 * DAY);
  return {
    host,
    address: '10.0.0.7:443',
    source: { kind: 'Ingress', namespace: 'shop', name: 'web' },
    status,
    // long past the grace period
    since: NOW - 30 * MIN,
    expected,
    served: status === 'ok' ? expected : leaf('0A1B', NOW + 5 * DAY),
    consumers: ['Deployment/web'],
  };
}

function tlsSecret(name: string, certificateName?: string): TlsSecretFacts {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace: 'shop',
      ...(certificateName ? { annotations: { 'cert-manager.io/certificate-name': certificateName } } : {}),
    },
    chain: {
      serial: '0B2C',
      notBefore: iso(NOW - 30 * DAY),
      notAfter: iso(NOW + 60 * DAY),
      subject: 'CN=shop.example.com',
      commonName: 'shop.example.com',
      dnsNames: ['shop.example.com'],
      issuer: 'CN=R11',
      chainNotAfter: iso(NOW + 60 * DAY),
    },
  };
}

const healthyCertificate = (name: string, secretName = name): CertManagerObject =>
  certificate({
    name,
    conditions: [ready('True', NOW - 30 * DAY)],
    status: { notAfter: iso(NOW + 60 * DAY), renewalTime: iso(NOW + 30 * DAY) },
    spec: { secretName },
  });

const running: HealthController[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop()));
});

function setup(certs: CertManagerObject[], secrets: TlsSecretFacts[] | undefined) {
  const sent: InternalEvent[] = [];
  const state = new Map<string, HealthState>();
  const keyed: KeyedState<HealthState> = {
    get: (k) => state.get(k),
    keys: () => [...state.keys()],
    set: async (k, v) => void (v ? state.set(k, v) : state.delete(k)),
  };
  const informers = { Issuer: fakeInformer(), ClusterIssuer: fakeInformer(), Certificate: fakeInformer(certs) } as unknown as Record<
    HealthKind,
    ResilientInformer<CertManagerObject>
  >;
  const secretCache = secrets ? fakeInformer(secrets) : undefined;
  const verdicts = fakeVerdicts();
  const unhealthy: Record<string, number> = {};
  const rootCauseLookups: string[] = [];
  const c = new HealthController({
    informers,
    state: keyed,
    sink: { send: async (es) => (sent.push(...es), es.map((_, i) => ({ id: String(i) })) as never) },
    health: { cluster: CLUSTER, gracePeriodMs: 5 * MIN, unknownGracePeriodMs: 10 * MIN, issuingGracePeriodMs: 15 * MIN },
    log: pino({ level: 'silent' }),
    resyncMs: 60 * MIN,
    ...(secretCache ? { secrets: secretCache } : {}),
    serving: verdicts.api,
    metrics: { unhealthy: (kind, n) => void (unhealthy[kind] = n) },
    rootCauses: {
      find: async (cert) => {
        rootCauseLookups.push(cert.metadata?.name ?? '');
        return { class: 'pending', hint: 'wait', message: 'an Order is pending', resource: 'Order shop/x' };
      },
    },
  });
  running.push(c);
  /** what was sent, as `<certificateName> <last type part> <statusReason>` */
  const seen = () => sent.map((e) => `${String(e.data['certificateName'])} ${e.type.split('.').pop()} ${String(e.data['statusReason'])}`);
  const settle = () => c.queue.whenIdle();
  return { c, sent, seen, settle, verdicts, secretCache, state, unhealthy, rootCauseLookups };
}

describe('HealthController: serving verdicts', () => {
  it('a verdict change reconciles the Certificate that owns the Secret (its annotation), not one pointing at another’s Secret', async () => {
    const t = setup([healthyCertificate('web-tls'), healthyCertificate('intruder', 'web-tls')], [tlsSecret('web-tls', 'web-tls')]);
    t.c.start();
    await t.settle();
    expect(t.sent).toEqual([]);
    t.verdicts.set('shop', 'web-tls', [verdict('ok'), verdict('stale', 'www.shop.example.com')]);
    await t.settle();
    expect(t.seen()).toEqual(['web-tls notready ServingStale']);
    // a resync of the Certificate whose spec.secretName names a Secret cert-manager wrote for another: not its endpoints
    await t.c.reconcile('Certificate/shop/intruder');
    expect(t.seen()).toEqual(['web-tls notready ServingStale']);
    expect(t.sent[0]?.data['statusMessage']).toContain('www.shop.example.com (10.0.0.7:443, Ingress shop/web) serves an older certificate');
    // no root cause lookup for a serving problem (it explains issuance): the message is the serving one alone
    expect(t.rootCauseLookups).toEqual([]);
    expect(t.sent[0]?.data['rootCause']).toBeUndefined();
    // still stale: nothing more; serving the Secret's certificate again resolves
    t.verdicts.set('shop', 'web-tls', [verdict('ok'), verdict('mismatch', 'www.shop.example.com')]);
    await t.settle();
    t.verdicts.set('shop', 'web-tls', [verdict('ok'), verdict('ok', 'www.shop.example.com')]);
    await t.settle();
    expect(t.seen()).toEqual(['web-tls notready ServingStale', 'web-tls active ServingOk']);
  });

  it('ok verdicts of a Secret with no open episode reconcile nothing; a problem, and its end, do', async () => {
    const t = setup([healthyCertificate('web-tls')], [tlsSecret('web-tls', 'web-tls')]);
    t.c.start();
    await t.settle();
    const reconciled: string[] = [];
    const reconcile = t.c.reconcile.bind(t.c);
    t.c.reconcile = (key) => (reconciled.push(key), reconcile(key));
    t.verdicts.set('shop', 'web-tls', [verdict('pending'), verdict('ok', 'www.shop.example.com')]);
    t.verdicts.set('shop', 'web-tls', [verdict('ok'), verdict('ok', 'www.shop.example.com')]);
    await t.settle();
    expect(reconciled).toEqual([]);
    t.verdicts.set('shop', 'web-tls', [verdict('ok'), verdict('mismatch', 'www.shop.example.com')]);
    await t.settle();
    t.verdicts.set('shop', 'web-tls', [verdict('ok'), verdict('ok', 'www.shop.example.com')]);
    await t.settle();
    expect(reconciled).toEqual(['Certificate/shop/web-tls', 'Certificate/shop/web-tls']);
    expect(t.seen()).toEqual(['web-tls notready ServingMismatch', 'web-tls active ServingOk']);
  });

  it('a Secret without a Certificate is a resource of its own (Secret/<ns>/<name>); its deletion resolves it', async () => {
    const legacy = tlsSecret('legacy-tls');
    const t = setup([], [legacy]);
    t.c.start();
    t.verdicts.set('shop', 'legacy-tls', [verdict('expired')]);
    await t.settle();
    expect(t.seen()).toEqual(['legacy-tls notready ServingExpired']);
    expect([...t.state.keys()]).toEqual(['Secret/shop/legacy-tls']);
    expect(t.unhealthy['Secret']).toBe(1);
    t.secretCache!.remove(legacy);
    await t.settle();
    expect(t.seen()).toEqual(['legacy-tls notready ServingExpired', 'legacy-tls active Deleted']);
    expect(t.state.size).toBe(0);
  });

  it('verdicts that changed before start are looked at once the caches are synced', async () => {
    const t = setup([healthyCertificate('web-tls')], [tlsSecret('web-tls', 'web-tls'), tlsSecret('legacy-tls')]);
    t.verdicts.set('shop', 'web-tls', [verdict('unreachable')]);
    t.verdicts.set('shop', 'legacy-tls', [verdict('stale')]);
    await t.settle();
    expect(t.sent).toEqual([]);
    t.c.start();
    await t.settle();
    expect(t.seen().sort()).toEqual(['legacy-tls notready ServingStale', 'web-tls notready ServingUnreachable']);
  });

  it('without the Secret cache: the Certificates whose spec.secretName it is', async () => {
    const t = setup([healthyCertificate('web'), healthyCertificate('other', 'other-tls')], undefined);
    t.c.start();
    await t.settle();
    t.verdicts.set('shop', 'web', [verdict('mismatch')]);
    await t.settle();
    expect(t.seen()).toEqual(['web notready ServingMismatch']);
  });
});
