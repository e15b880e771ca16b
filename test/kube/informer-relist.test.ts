/**
 * ResilientInformer `relistAfterError` (the emitter's health informers): after a failed watch the informer
 * relists instead of resuming, so a controller sees only the current state, never the replayed intermediate
 * ones; normal closes and client-node's idle timeout still resume. Scripted Watch, fake clock.
 */
import type { KubernetesObject, Watch } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ResilientInformer } from '../../src/kube/informer.js';
import { FakeClock, flush } from '../runtime/fake-clock.js';
import { ScriptedWatch } from './scripted-watch.js';

const obj = (name: string, rv: string, ready: string): KubernetesObject & { ready: string } => ({
  metadata: { name, namespace: 'ns', resourceVersion: rv },
  ready,
});

function setup(relistAfterError: boolean) {
  const clock = new FakeClock();
  const watch = new ScriptedWatch();
  let items: KubernetesObject[] = [obj('a', '5', 'False')];
  let rv = '10';
  let lists = 0;
  const inf = new ResilientInformer<KubernetesObject>({
    name: 'issuers',
    kc: {} as never,
    path: '/apis/cert-manager.io/v1/issuers',
    list: async () => {
      lists++;
      return { metadata: { resourceVersion: rv }, items } as never;
    },
    log: pino({ level: 'silent' }),
    backoff: { baseMs: 100, maxMs: 400 },
    clock,
    watch: watch as unknown as Watch,
    relistAfterError,
  });
  const seen: string[] = [];
  inf.on('update', (o) => seen.push(`update ${(o as { ready?: string }).ready}`));
  return {
    clock,
    watch,
    inf,
    seen,
    lists: () => lists,
    /** what the apiserver holds after the object flapped while the informer was blind */
    server(next: KubernetesObject[], nextRv: string) {
      items = next;
      rv = nextRv;
    },
  };
}

const cut = () => Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } });

describe('ResilientInformer relistAfterError', () => {
  it('a failed watch relists: the controller sees the current state only, never the replayed flap', async () => {
    const t = setup(true);
    await t.inf.start();
    await flush();
    const watchesBefore = t.watch.calls.length;
    t.watch.last.done(cut());
    // meanwhile a → True (rv 11) → False (rv 12): a resumed watch would replay both
    t.server([obj('a', '12', 'False')], '12');
    await t.clock.advance(100);
    await flush();
    expect(t.lists()).toBe(2);
    expect(t.seen).toEqual(['update False']); // one update, to the current object
    expect(t.inf.get('a', 'ns')?.metadata?.resourceVersion).toBe('12');
    // the 410 answer is local (no request); the real watch then starts from the list's resourceVersion
    expect(t.watch.calls.length).toBe(watchesBefore + 1);
    expect(t.watch.last.query['resourceVersion']).toBe('12');
    expect(t.inf.stats).toMatchObject({ restarts: 1, errors: 1, lists: 2 });
  });

  it('a normal close and client-node’s idle timeout still resume from the resourceVersion (no relist every 30 s)', async () => {
    const t = setup(true);
    await t.inf.start();
    await flush();
    t.watch.last.cb('MODIFIED', obj('a', '11', 'True'));
    t.watch.last.done(null);
    await flush();
    expect(t.watch.last.query['resourceVersion']).toBe('11');
    t.watch.last.done(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }));
    await flush();
    expect(t.watch.last.query['resourceVersion']).toBe('11');
    expect(t.lists()).toBe(1);
  });

  it('a failed list is not followed by a second one once it succeeds', async () => {
    let fail = 1;
    const clock = new FakeClock();
    const watch = new ScriptedWatch();
    let lists = 0;
    const inf = new ResilientInformer<KubernetesObject>({
      name: 'issuers',
      kc: {} as never,
      path: '/x',
      list: async () => {
        lists++;
        if (fail-- > 0) throw Object.assign(new Error('ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return { metadata: { resourceVersion: '1' }, items: [] } as never;
      },
      log: pino({ level: 'silent' }),
      backoff: { baseMs: 100, maxMs: 400 },
      clock,
      watch: watch as unknown as Watch,
      relistAfterError: true,
    });
    await inf.start();
    await flush();
    await clock.advance(100);
    await flush();
    expect(inf.hasSynced).toBe(true);
    expect(lists).toBe(2);
    expect(watch.calls).toHaveLength(1);
    expect(watch.last.query['resourceVersion']).toBe('1');
  });

  it('without the option a failed watch resumes (the operator’s informers)', async () => {
    const t = setup(false);
    await t.inf.start();
    await flush();
    t.watch.last.done(cut());
    await t.clock.advance(100);
    await flush();
    expect(t.lists()).toBe(1);
    expect(t.watch.last.query['resourceVersion']).toBe('10');
  });
});

describe('ResilientInformer relist: one copy of unchanged objects', () => {
  it('keeps the cached object of an unchanged resourceVersion and transforms only what changed', async () => {
    const clock = new FakeClock();
    const watch = new ScriptedWatch();
    let items = [obj('a', '5', 'True'), obj('b', '6', 'True')];
    const transformed: string[] = [];
    const inf = new ResilientInformer<KubernetesObject & { ready: string; kept: true }, KubernetesObject & { ready: string }>({
      name: 'certificates',
      kc: {} as never,
      path: '/apis/cert-manager.io/v1/certificates',
      list: async () => ({ metadata: { resourceVersion: '20' }, items }) as never,
      transform: (o) => {
        transformed.push(`${o.metadata?.name}@${o.metadata?.resourceVersion}`);
        return { metadata: o.metadata ?? {}, ready: o.ready, kept: true };
      },
      log: pino({ level: 'silent' }),
      backoff: { baseMs: 100, maxMs: 400 },
      clock,
      watch: watch as unknown as Watch,
      relistAfterError: true,
    });
    const updates: string[] = [];
    inf.on('update', (o) => updates.push(o.metadata?.name ?? ''));
    await inf.start();
    await flush();
    const a = inf.get('a', 'ns');
    expect(transformed).toEqual(['a@5', 'b@6']);
    // b changed while the watch was down; a did not
    items = [obj('a', '5', 'True'), obj('b', '9', 'False')];
    watch.last.done(cut());
    await clock.advance(100);
    await flush();
    expect(inf.stats.lists).toBe(2);
    expect(transformed).toEqual(['a@5', 'b@6', 'b@9']);
    expect(inf.get('a', 'ns')).toBe(a); // the same object, not a second copy
    expect(inf.get('b', 'ns')).toMatchObject({ ready: 'False', kept: true });
    expect(updates).toEqual(['b']);
    await inf.stop();
  });
});
