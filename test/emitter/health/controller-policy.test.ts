/**
 * The health controller's policy shell with in-memory fakes (no server): which annotations it reads for a
 * Certificate (its own Secret's, not another's), and that a bad value is reported once per change.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { InternalEvent } from '../../../src/events/families.js';
import { HealthController, healthKey } from '../../../src/emitter/health/controller.js';
import type { HealthState } from '../../../src/emitter/health/diff.js';
import type { CertManagerObject, HealthKind } from '../../../src/emitter/health/observe.js';
import type { TlsSecretFacts } from '../../../src/emitter/inventory/facts.js';
import type { KeyedState } from '../../../src/emitter/state.js';
import type { ResilientInformer } from '../../../src/kube/informer.js';
import type { EventRecorder } from '../../../src/kube/events.js';
import { CLUSTER, certificate, ready } from '../fixtures.js';

const NOW = Date.now();
const MIN = 60_000;

/** A cache of objects by namespace/name with the informer methods the controller uses. */
function fakeInformer<T extends { metadata?: { name?: string; namespace?: string } }>(items: T[] = []) {
  const byKey = new Map(items.map((o) => [`${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, o]));
  return {
    on: () => {},
    onList: () => {},
    get: (name: string, namespace?: string) => byKey.get(`${namespace ?? ''}/${name}`),
    list: () => [...byKey.values()],
    put: (o: T) => byKey.set(`${o.metadata?.namespace ?? ''}/${o.metadata?.name}`, o),
  };
}

function secret(name: string, certificateName: string, annotations: Record<string, string>): TlsSecretFacts {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'shop', annotations: { 'cert-manager.io/certificate-name': certificateName, ...annotations } },
    chain: null,
  };
}

function setup(certs: CertManagerObject[], secrets: TlsSecretFacts[]) {
  const sent: InternalEvent[] = [];
  const recorded: string[] = [];
  const state = new Map<string, HealthState>();
  const keyed: KeyedState<HealthState> = {
    get: (k) => state.get(k),
    keys: () => [...state.keys()],
    set: async (k, v) => void (v ? state.set(k, v) : state.delete(k)),
  };
  const events: EventRecorder = { record: async (_o, _t, reason, message) => void recorded.push(`${reason}: ${message}`) };
  const certInf = fakeInformer(certs);
  const informers = { Issuer: fakeInformer(), ClusterIssuer: fakeInformer(), Certificate: certInf } as unknown as Record<
    HealthKind,
    ResilientInformer<CertManagerObject>
  >;
  const c = new HealthController({
    informers,
    state: keyed,
    sink: { send: async (es) => (sent.push(...es), es.map((_, i) => ({ id: String(i) })) as never) },
    health: { cluster: CLUSTER, gracePeriodMs: MIN, unknownGracePeriodMs: MIN, issuingGracePeriodMs: MIN },
    log: pino({ level: 'silent' }),
    secrets: fakeInformer(secrets),
    events,
  });
  return { c, sent, recorded, certInf };
}

const failing = (name: string, annotations: Record<string, string> = {}): CertManagerObject => {
  const c = certificate({ name, conditions: [ready('False', NOW - 10 * MIN)] });
  return { ...c, metadata: { ...c.metadata, annotations } };
};

describe('HealthController: per-resource policy', () => {
  it('reads the Certificate’s own Secret (spec.secretName named back by cert-manager.io/certificate-name), not another’s', async () => {
    const { c, sent } = setup(
      [failing('quiet'), failing('loud')],
      [
        secret('quiet', 'quiet', { 'notify.certmgr.io/ignore': 'true' }),
        // a Secret of that name written for another Certificate says nothing about `loud`
        secret('loud', 'someone-else', { 'notify.certmgr.io/ignore': 'true' }),
      ],
    );
    await c.reconcile('Certificate/shop/quiet');
    await c.reconcile('Certificate/shop/loud');
    expect(sent.map((e) => e.data['certificateName'])).toEqual(['loud']);
  });

  it('the Secret’s runbook URL wins over the Certificate’s', async () => {
    const { c, sent } = setup(
      [failing('web', { 'notify.certmgr.io/runbook-url': 'https://cert.example/rb' })],
      [secret('web', 'web', { 'notify.certmgr.io/runbook-url': 'https://secret.example/rb' })],
    );
    await c.reconcile('Certificate/shop/web');
    expect(sent[0]?.data['runbookUrl']).toBe('https://secret.example/rb');
  });

  it('a bad value: one Kubernetes Event per change of the problem, not one per reconcile', async () => {
    const { c, recorded, certInf } = setup([failing('typo', { 'notify.certmgr.io/expiry-thresholds': '0' })], []);
    await c.reconcile('Certificate/shop/typo');
    await c.reconcile('Certificate/shop/typo');
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatch(/^InvalidAnnotation: notify\.certmgr\.io\/expiry-thresholds: "0"/);
    certInf.put(failing('typo', { 'notify.certmgr.io/expiry-thresholds': '7' })); // fixed
    await c.reconcile('Certificate/shop/typo');
    certInf.put(failing('typo', { 'notify.certmgr.io/expiry-thresholds': '0' })); // broken again
    await c.reconcile('Certificate/shop/typo');
    expect(recorded).toHaveLength(2);
  });
});

describe('HealthController: rechecks', () => {
  const healthy = (name: string, notAfterMs: number): CertManagerObject =>
    certificate({ name, conditions: [ready('True', NOW - 10 * MIN)], status: { notAfter: new Date(notAfterMs).toISOString() } });

  it('no delayed add of its own when the periodic resync comes first; an exact one when notAfter is nearer', async () => {
    const { c } = setup([healthy('far', Date.now() + 90 * 24 * 60 * MIN), healthy('near', Date.now() + 2 * MIN)], []);
    expect(await c.reconcile(healthKey('Certificate', 'shop', 'far'))).toBeUndefined();
    const near = await c.reconcile(healthKey('Certificate', 'shop', 'near'));
    expect(near?.requeueAfter).toBeGreaterThan(MIN);
    expect(near?.requeueAfter).toBeLessThanOrEqual(2 * MIN);
  });
});
