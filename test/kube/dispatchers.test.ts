import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { dropKubeConnections, reuseKubeDispatchers } from '../../src/kube/dispatchers.js';

type Create = (cluster: unknown, agentOptions: unknown) => { close(): Promise<void>; closed?: boolean } | undefined;

function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', skipTLSVerify: false }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

const create = (kc: KubeConfig): Create => (kc as unknown as { createDispatcher: Create }).createDispatcher.bind(kc);

describe('reuseKubeDispatchers', () => {
  it('returns the same dispatcher for the same options, a new one when the TLS material changes', () => {
    const kc = kubeConfig();
    const before = create(kc);
    const cluster = kc.getCurrentCluster();
    const opts = { ca: Buffer.from('ca-1'), cert: Buffer.from('cert'), key: Buffer.from('key') };
    // client-node alone: a new Agent per request
    expect(before(cluster, opts)).not.toBe(before(cluster, opts));
    reuseKubeDispatchers(kc);
    reuseKubeDispatchers(kc); // idempotent
    const after = create(kc);
    const a = after(cluster, opts);
    expect(a).toBeDefined();
    expect(after(cluster, { ...opts })).toBe(a);
    expect(after(cluster, { ...opts, cert: Buffer.from('rotated') })).not.toBe(a);
  });

  it('keeps at most four option sets and closes the oldest', async () => {
    const kc = kubeConfig();
    reuseKubeDispatchers(kc);
    const after = create(kc);
    const cluster = kc.getCurrentCluster();
    const made = [0, 1, 2, 3, 4].map((i) => after(cluster, { ca: Buffer.from(`ca-${i}`) })!);
    await new Promise((r) => setImmediate(r));
    expect((made[0] as unknown as { closed: boolean }).closed).toBe(true);
    expect((made[4] as unknown as { closed: boolean }).closed).toBe(false);
    expect(after(cluster, { ca: Buffer.from('ca-4') })).toBe(made[4]);
    expect(after(cluster, { ca: Buffer.from('ca-0') })).not.toBe(made[0]);
  });

  it('no TLS options: no dispatcher (client-node uses the global one)', () => {
    const kc = kubeConfig();
    reuseKubeDispatchers(kc);
    expect(create(kc)(null, {})).toBeUndefined();
  });
});

describe('dropKubeConnections', () => {
  it('closes the pooled dispatchers: the next request gets a new one', async () => {
    const kc = kubeConfig();
    reuseKubeDispatchers(kc);
    const after = create(kc);
    const cluster = kc.getCurrentCluster();
    const opts = { ca: Buffer.from('ca') };
    const first = after(cluster, opts)!;
    dropKubeConnections(kc);
    await new Promise((r) => setImmediate(r));
    expect((first as unknown as { closed: boolean }).closed).toBe(true);
    expect(after(cluster, opts)).not.toBe(first);
    dropKubeConnections(kubeConfig()); // never patched: nothing to do
  });
});
