/** ResilientInformer over a scripted Watch: restarts after errors with backoff, relists after 410, reports lists. */
import type { KubernetesObject, Watch } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ResilientInformer } from '../../src/kube/informer.js';
import { FakeClock, flush } from '../runtime/fake-clock.js';
import { ScriptedWatch } from './scripted-watch.js';

const obj = (name: string, rv: string): KubernetesObject => ({ metadata: { name, namespace: 'ns', resourceVersion: rv } });

function setup(
  items: () => KubernetesObject[],
  rv: () => string,
  extra: { fieldSelector?: string; transform?: (o: KubernetesObject) => KubernetesObject } = {},
) {
  const clock = new FakeClock();
  const watch = new ScriptedWatch();
  let lists = 0;
  const inf = new ResilientInformer<KubernetesObject>({
    name: 'things',
    kc: {} as never,
    path: '/apis/x/v1/things',
    list: async () => {
      lists++;
      return { metadata: { resourceVersion: rv() }, items: items() } as never;
    },
    log: pino({ level: 'silent' }),
    backoff: { baseMs: 100, maxMs: 400 },
    clock,
    watch: watch as unknown as Watch,
    ...extra,
  });
  const seen: string[] = [];
  inf.on('add', (o) => seen.push(`add ${o.metadata?.name}`));
  inf.on('update', (o) => seen.push(`update ${o.metadata?.name}`));
  inf.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
  const listed: number[] = [];
  inf.onList((xs) => listed.push(xs.length));
  return { clock, watch, inf, seen, listed, lists: () => lists };
}

describe('ResilientInformer', () => {
  it('fieldSelector goes into the watch query; transform applies to listed and watched objects, not to a Status', async () => {
    const label = (o: KubernetesObject): KubernetesObject => ({ ...o, metadata: { ...o.metadata, labels: { seen: 'yes' } } });
    const t = setup(
      () => [obj('a', '5')],
      () => '10',
      { fieldSelector: 'type=kubernetes.io/tls', transform: label },
    );
    const raw: unknown[] = [];
    t.inf.on('add', (o) => raw.push(o.metadata?.labels));
    await t.inf.start();
    await t.inf.synced;
    await flush();
    expect(t.watch.last.query['fieldSelector']).toBe('type=kubernetes.io/tls');
    t.watch.last.cb('ADDED', obj('b', '11'));
    await flush();
    expect(raw).toEqual([{ seen: 'yes' }, { seen: 'yes' }]);
    expect(t.inf.get('b', 'ns')?.metadata?.labels).toEqual({ seen: 'yes' });
    const status = { kind: 'Status', metadata: {}, code: 500 } as KubernetesObject;
    expect(() => t.watch.last.cb('ERROR', status)).not.toThrow();
    await t.inf.stop();
  });

  it('lists, becomes synced, then watches from the list resourceVersion', async () => {
    const t = setup(
      () => [obj('a', '5')],
      () => '10',
    );
    await t.inf.start();
    await t.inf.synced;
    await flush();
    expect(t.inf.hasSynced).toBe(true);
    expect(t.seen).toEqual(['add a']);
    expect(t.listed).toEqual([1]);
    expect(t.watch.last.query['resourceVersion']).toBe('10');
    t.watch.last.cb('MODIFIED', obj('a', '11'));
    expect(t.seen).toEqual(['add a', 'update a']);
    expect(t.inf.get('a', 'ns')?.metadata?.resourceVersion).toBe('11');
  });

  it('an error (cut connection) restarts the watch from the last resourceVersion, with growing backoff', async () => {
    const t = setup(
      () => [obj('a', '5')],
      () => '10',
    );
    await t.inf.start();
    await flush();
    t.watch.last.cb('MODIFIED', obj('a', '12'));
    const n = t.watch.calls.length;
    t.watch.last.done(Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } }));
    await t.clock.advance(99);
    expect(t.watch.calls.length).toBe(n); // waiting for the backoff
    await t.clock.advance(1);
    expect(t.watch.calls.length).toBe(n + 1);
    expect(t.watch.last.query['resourceVersion']).toBe('12'); // resumed, no relist
    expect(t.lists()).toBe(1);
    // fails again at once: 200 ms, then 400 (cap)
    t.watch.last.done(new Error('ECONNREFUSED'));
    await t.clock.advance(199);
    expect(t.watch.calls.length).toBe(n + 1);
    await t.clock.advance(1);
    expect(t.watch.calls.length).toBe(n + 2);
    expect(t.inf.stats).toMatchObject({ restarts: 2, errors: 2 });
  });

  it('410 Gone relists: objects deleted meanwhile fire delete, changed ones update; onList reports the relist', async () => {
    let items = [obj('a', '5'), obj('b', '6')];
    let rv = '10';
    const t = setup(
      () => items,
      () => rv,
    );
    await t.inf.start();
    await flush();
    items = [obj('a', '20')];
    rv = '30';
    t.watch.last.cb('ERROR', { code: 410, reason: 'Expired' } as never);
    t.watch.last.done(null); // the server closes the stream after the ERROR event
    await flush();
    expect(t.lists()).toBe(2);
    expect(t.seen).toEqual(['add a', 'add b', 'delete b', 'update a']);
    expect(t.listed).toEqual([2, 1]);
    expect(t.watch.last.query['resourceVersion']).toBe('30');
  });

  it('an HTTP 410 on the watch request also relists (no error reported)', async () => {
    const t = setup(
      () => [obj('a', '5')],
      () => '10',
    );
    await t.inf.start();
    await flush();
    t.watch.last.done(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await flush();
    expect(t.lists()).toBe(2);
    expect(t.inf.stats.errors).toBe(0);
  });

  /** An informer whose list throws `error()` the first `times` calls, then lists nothing. */
  function failingList(times: number, error: () => Error) {
    const clock = new FakeClock();
    const inf = new ResilientInformer<KubernetesObject>({
      name: 'x',
      kc: {} as never,
      path: '/x',
      list: async () => {
        if (times-- > 0) throw error();
        return { metadata: { resourceVersion: '1' }, items: [] } as never;
      },
      log: pino({ level: 'silent' }),
      backoff: { baseMs: 100, maxMs: 1_000 },
      clock,
      watch: new ScriptedWatch() as unknown as Watch,
    });
    return { clock, inf };
  }

  it('a failing list is retried with backoff until it succeeds; synced only then', async () => {
    const { clock, inf } = failingList(2, () => Object.assign(new Error('Forbidden'), { code: 403 }));
    await inf.start();
    await flush();
    expect(inf.hasSynced).toBe(false);
    await clock.advance(100);
    expect(inf.hasSynced).toBe(false);
    await clock.advance(200);
    expect(inf.hasSynced).toBe(true);
    expect(inf.stats).toMatchObject({ errors: 2, restarts: 2, lastError: 'HTTP 403' });
  });

  it('a list that hit the request deadline (no response headers in time) is tried again at once, with no backoff', async () => {
    const { clock, inf } = failingList(
      2,
      () =>
        new TypeError('fetch failed', { cause: Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }) }),
    );
    await inf.start();
    await flush();
    await clock.advance(0);
    await flush();
    await clock.advance(0);
    await flush();
    expect(inf.hasSynced).toBe(true);
    expect(inf.stats).toMatchObject({ errors: 2, restarts: 2, lastError: 'TypeError: fetch failed (UND_ERR_HEADERS_TIMEOUT)' });
  });

  it('a 404 (CRD not installed) names the CRD in a warning logged once per 10 minutes, not a bare HTTP 404 every retry', async () => {
    let installed = false;
    const clock = new FakeClock();
    const lines: { level: number; msg: string; path?: string }[] = [];
    const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as (typeof lines)[number]) });
    const inf = new ResilientInformer<KubernetesObject>({
      name: 'certificates',
      kc: {} as never,
      path: '/apis/cert-manager.io/v1/namespaces/apps/certificates',
      list: async () => {
        if (!installed) throw Object.assign(new Error('HTTP-Code: 404'), { code: 404, body: '{"kind":"Status","reason":"NotFound"}' });
        return { metadata: { resourceVersion: '1' }, items: [] } as never;
      },
      log,
      backoff: { baseMs: 100, maxMs: 100 },
      clock,
      watch: new ScriptedWatch() as unknown as Watch,
    });
    const warns = () => lines.filter((l) => l.level === 40).map((l) => l.msg);
    await inf.start();
    await flush();
    for (let i = 0; i < 5; i++) await clock.advance(100);
    expect(inf.stats.errors).toBe(6);
    expect(warns()).toEqual([
      'cert-manager CRD certificates.cert-manager.io v1 not found (HTTP 404): install cert-manager in this cluster; retrying until it appears',
    ]);
    expect(lines.filter((l) => l.level === 20)).toHaveLength(5); // the retries, at debug
    expect(inf.stats.lastError).toMatch(/^cert-manager CRD certificates.cert-manager.io v1 not found/); // quoted by whenSynced
    await clock.advance(10 * 60_000);
    expect(warns()).toHaveLength(2);
    installed = true;
    await clock.advance(100);
    expect(inf.hasSynced).toBe(true);
    await inf.stop();
  });

  it('stop() ends it for good (the abort error is not a failure)', async () => {
    const t = setup(
      () => [],
      () => '1',
    );
    await t.inf.start();
    await flush();
    const n = t.watch.calls.length;
    await t.inf.stop();
    t.watch.last.done(Object.assign(new Error('aborted'), { name: 'AbortError' }));
    await t.clock.advance(5_000);
    expect(t.watch.calls.length).toBe(n);
    expect(t.inf.stats.errors).toBe(0);
  });
});

describe('ResilientInformer paginated list', () => {
  it('requests the next page before transforming the current one; the result is every page, in order', async () => {
    const log: string[] = [];
    const pages: Record<string, { items: KubernetesObject[]; next?: string }> = {
      '': { items: [obj('a', '1'), obj('b', '2')], next: 'p2' },
      p2: { items: [obj('c', '3')], next: 'p3' },
      p3: { items: [obj('d', '4')] },
    };
    const inf = new ResilientInformer<KubernetesObject>({
      name: 'things',
      kc: {} as never,
      path: '/apis/x/v1/things',
      pageSize: 2,
      list: async (page) => {
        log.push(`list ${page.continue ?? 'first'}`);
        const p = pages[page.continue ?? '']!;
        return { metadata: { resourceVersion: '9', ...(p.next ? { continue: p.next } : {}) }, items: p.items } as never;
      },
      transform: (o) => {
        log.push(`transform ${o.metadata?.name}`);
        return o;
      },
      log: pino({ level: 'silent' }),
      clock: new FakeClock(),
      watch: new ScriptedWatch() as unknown as Watch,
    });
    await inf.start();
    await inf.synced;
    expect(log).toEqual(['list first', 'list p2', 'transform a', 'transform b', 'list p3', 'transform c', 'transform d']);
    expect(inf.list().map((o) => o.metadata?.name)).toEqual(['a', 'b', 'c', 'd']);
    expect(inf.stats.pages).toBe(3);
    await inf.stop();
  });
});
