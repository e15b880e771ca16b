/**
 * ResilientInformer `relistByMetadata` (the emitter's informers): a relist lists metadata only, keeps every cached
 * object whose resourceVersion is unchanged (the same object: not read, not transformed again), GETs only the
 * changed and new ones, drops the deleted ones, and drops the watch's replayed events of an object its GET read at
 * a newer version (no step back to an older state). Too many changes, a paginated answer or a resourceVersion that
 * is not a number list whole objects as before; a refused metadata relist (410) falls back to the pages from etcd.
 * Scripted Watch, fake clock, scripted list and get functions.
 */
import type { KubernetesObject, Watch } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ResilientInformer, type ListPage } from '../../src/kube/informer.js';
import { MAX_RELIST_GETS, isStale, revision } from '../../src/kube/metadata-relist.js';
import { FakeClock, flush } from '../runtime/fake-clock.js';
import { ScriptedWatch } from './scripted-watch.js';

type Obj = KubernetesObject & { ready?: string };
const obj = (name: string, rv: string, ready = 'True'): Obj => ({ metadata: { name, namespace: 'ns', resourceVersion: rv }, ready });
const meta = (o: Obj): KubernetesObject => ({ metadata: { ...o.metadata } });
const cut = () => Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } });
const status = (code: number, message = 'x') => Object.assign(new Error(`HTTP ${code}`), { code, body: JSON.stringify({ code, message }) });

/** The apiserver: `objects` now (GETs read them), `listed` what a list answers (default: `objects`) at `rv`. */
function setup(o: { initial: Obj[]; rv: string }) {
  const clock = new FakeClock();
  const watch = new ScriptedWatch();
  const server = {
    objects: o.initial,
    listed: undefined as Obj[] | undefined,
    rv: o.rv,
    metaError: undefined as Error | undefined,
    getErrors: 0,
    cont: '',
  };
  const calls = { lists: [] as ListPage[], metaLists: [] as { resourceVersion: string }[], gets: [] as string[], transforms: 0 };
  const inf = new ResilientInformer<Obj>({
    name: 'certificates',
    kc: {} as never,
    path: '/apis/cert-manager.io/v1/certificates',
    list: async (page, each) => {
      calls.lists.push(page);
      for (const x of server.listed ?? server.objects) each!(structuredClone(x));
      return { metadata: { resourceVersion: server.rv }, items: [] } as never;
    },
    relistByMetadata: {
      list: async (page, each) => {
        calls.metaLists.push(page);
        if (server.metaError) throw server.metaError;
        for (const x of server.listed ?? server.objects) each(meta(x));
        return { metadata: { resourceVersion: server.rv, ...(server.cont ? { continue: server.cont } : {}) }, items: [] } as never;
      },
      get: async (name) => {
        calls.gets.push(name);
        if (server.getErrors > 0 && server.getErrors--) throw status(403, 'secrets "b" is forbidden');
        const x = server.objects.find((y) => y.metadata?.name === name);
        return x && structuredClone(x);
      },
    },
    transform: (x) => (calls.transforms++, { ...x }),
    streamed: true,
    relistAfterError: true,
    log: pino({ level: 'silent' }),
    backoff: { baseMs: 100, maxMs: 400, jitter: 0 },
    clock,
    watch: watch as unknown as Watch,
  });
  const events: string[] = [];
  inf.on('add', (x) => events.push(`add ${x.metadata?.name}@${x.metadata?.resourceVersion}`));
  inf.on('update', (x) => events.push(`update ${x.metadata?.name}@${x.metadata?.resourceVersion} ${x.ready}`));
  inf.on('delete', (x) => events.push(`delete ${x.metadata?.name}`));
  /** the watch breaks; the informer relists after its backoff */
  const relist = async (): Promise<void> => {
    watch.last.done(cut());
    await clock.advance(100);
    await flush();
  };
  const state = () =>
    inf
      .list()
      .map((x) => `${x.metadata?.name}@${x.metadata?.resourceVersion} ${x.ready}`)
      .sort();
  return { clock, watch, inf, server, calls, events, relist, state };
}

describe('ResilientInformer relistByMetadata', () => {
  it('the first list reads whole objects; a relist with nothing changed keeps every cached object as it is (no GET, no transform)', async () => {
    const t = setup({ initial: [obj('a', '5'), obj('b', '6')], rv: '10' });
    await t.inf.start();
    await flush();
    expect(t.calls.lists).toHaveLength(1);
    expect(t.calls.metaLists).toHaveLength(0);
    const a = t.inf.get('a', 'ns');
    const transforms = t.calls.transforms;
    t.server.rv = '20';
    await t.relist();
    expect(t.calls.metaLists).toEqual([{ resourceVersion: '10' }]);
    expect(t.calls.lists).toHaveLength(1); // no whole list
    expect(t.calls.gets).toEqual([]);
    expect(t.calls.transforms).toBe(transforms);
    expect(t.inf.get('a', 'ns')).toBe(a);
    expect(t.inf.stats).toMatchObject({ lists: 2, metadataRelists: 1, relistGets: 0 });
    expect(t.watch.last.query['resourceVersion']).toBe('20');
  });

  it('GETs only the changed and the new objects; the deleted one is gone; the controllers see each change once', async () => {
    const t = setup({ initial: [obj('a', '5'), obj('b', '6'), obj('c', '7')], rv: '10' });
    await t.inf.start();
    await flush();
    t.events.length = 0;
    t.server.objects = [obj('a', '5'), obj('b', '15', 'False'), obj('d', '16')];
    t.server.rv = '20';
    await t.relist();
    expect(t.calls.gets.sort()).toEqual(['b', 'd']);
    expect(t.calls.lists).toHaveLength(1);
    expect(t.state()).toEqual(['a@5 True', 'b@15 False', 'd@16 True']);
    expect(t.events.sort()).toEqual(['add d@16', 'delete c', 'update b@15 False']);
    expect(t.inf.stats).toMatchObject({ metadataRelists: 1, relistGets: 2 });
  });

  it('an object read by GET newer than the list: the watch replays its older changes, dropped; newer ones apply', async () => {
    const t = setup({ initial: [obj('a', '5'), obj('b', '6')], rv: '10' });
    await t.inf.start();
    await flush();
    // listed at 20 with b@15 (True), but by the GET b is already at 22 (False)
    t.server.listed = [obj('a', '5'), obj('b', '15')];
    t.server.objects = [obj('a', '5'), obj('b', '22', 'False')];
    t.server.rv = '20';
    await t.relist();
    expect(t.state()).toEqual(['a@5 True', 'b@22 False']);
    t.events.length = 0;
    // the watch from 20 replays b's change at 22 (the GET's own) and one before it: neither steps the cache back
    t.watch.last.cb('MODIFIED', obj('b', '21', 'True'));
    t.watch.last.cb('MODIFIED', obj('b', '22', 'False'));
    expect(t.state()).toEqual(['a@5 True', 'b@22 False']);
    expect(t.events).toEqual([]);
    // a change of another object, and b's next one, apply as usual
    t.watch.last.cb('MODIFIED', obj('a', '23', 'False'));
    t.watch.last.cb('MODIFIED', obj('b', '24', 'True'));
    expect(t.state()).toEqual(['a@23 False', 'b@24 True']);
    expect(t.events).toEqual(['update a@23 False', 'update b@24 True']);
  });

  it('an older replayed deletion of an object the GET read after it was created again is dropped', async () => {
    const t = setup({ initial: [obj('a', '5')], rv: '10' });
    await t.inf.start();
    await flush();
    t.server.listed = [obj('a', '18')]; // changed at 18: read by GET
    t.server.objects = [obj('a', '30')]; // deleted at 25, created again at 30, after the list at 20
    t.server.rv = '20';
    await t.relist();
    t.events.length = 0;
    t.watch.last.cb('DELETED', obj('a', '25'));
    expect(t.state()).toEqual(['a@30 True']);
    t.watch.last.cb('ADDED', obj('a', '30'));
    expect(t.state()).toEqual(['a@30 True']);
    expect(t.events).toEqual([]); // no deletion and creation that the cache had already gone past
  });

  it('an object deleted between the list and its GET is left out (the watch replays its deletion)', async () => {
    const t = setup({ initial: [obj('a', '5')], rv: '10' });
    await t.inf.start();
    await flush();
    t.server.listed = [obj('a', '5'), obj('b', '12')];
    t.server.objects = [obj('a', '5')];
    t.server.rv = '20';
    await t.relist();
    expect(t.calls.gets).toEqual(['b']);
    expect(t.state()).toEqual(['a@5 True']);
  });

  it(`more than ${MAX_RELIST_GETS} changed objects: the relist reads whole objects, from the same resourceVersion`, async () => {
    const many = (rv: number) => Array.from({ length: MAX_RELIST_GETS + 1 }, (_, i) => obj(`o${i}`, String(rv + i)));
    const t = setup({ initial: many(100), rv: '1000' });
    await t.inf.start();
    await flush();
    t.server.objects = many(2000);
    t.server.rv = '3000';
    await t.relist();
    expect(t.calls.gets).toEqual([]);
    expect(t.calls.metaLists).toEqual([{ resourceVersion: '1000' }]);
    expect(t.calls.lists.at(-1)).toEqual({ resourceVersion: '1000' });
    expect(t.inf.get('o7', 'ns')?.metadata?.resourceVersion).toBe('2007');
    expect(t.inf.stats).toMatchObject({ lists: 2, metadataRelists: 0, relistGets: 0 });
  });

  it('a paginated metadata answer or a resourceVersion that is not a number: whole objects', async () => {
    for (const server of [
      { rv: '20', cont: 'next' },
      { rv: 'abc', cont: '' },
    ]) {
      const t = setup({ initial: [obj('a', '5')], rv: '10' });
      await t.inf.start();
      await flush();
      t.server.objects = [obj('a', '15', 'False')];
      Object.assign(t.server, server);
      await t.relist();
      expect(t.calls.gets).toEqual([]);
      expect(t.calls.lists).toHaveLength(2);
      expect(t.state()).toEqual(['a@15 False']);
    }
  });

  it('a metadata relist refused with 410 falls back to the paginated list from etcd', async () => {
    const t = setup({ initial: [obj('a', '5')], rv: '10' });
    await t.inf.start();
    await flush();
    t.server.metaError = status(410, 'too old resource version: 10 (20)');
    t.server.objects = [obj('a', '15', 'False')];
    t.server.rv = '20';
    await t.relist();
    expect(t.calls.lists.at(-1)).toEqual({ limit: 1000 });
    expect(t.state()).toEqual(['a@15 False']);
  });

  it('a refused GET (403: an agent without `get` on Secrets) lists whole objects instead; the relist does not fail', async () => {
    const t = setup({ initial: [obj('a', '5'), obj('b', '6')], rv: '10' });
    await t.inf.start();
    await flush();
    t.server.objects = [obj('a', '5'), obj('b', '15', 'False')];
    t.server.rv = '20';
    t.server.getErrors = 1;
    await t.relist();
    expect(t.inf.stats.errors).toBe(1); // the cut watch only
    expect(t.calls.lists.at(-1)).toEqual({ resourceVersion: '10' });
    expect(t.state()).toEqual(['a@5 True', 'b@15 False']);
    expect(t.inf.stats).toMatchObject({ lists: 2, metadataRelists: 0 });
  });
});

describe('metadata relist decisions', () => {
  it('revision: etcd revisions as numbers, anything else undefined', () => {
    expect(revision('123')).toBe(123);
    expect(revision(undefined)).toBeUndefined();
    expect(revision('')).toBeUndefined();
    expect(revision('12a')).toBeUndefined();
    expect(revision('1234567890123456')).toBeUndefined(); // past what a double holds exactly
  });

  it('isStale: only events of a fetched object at or before its fetched revision; a newer one clears it', () => {
    const ahead = new Map([['ns/b', 22]]);
    expect(isStale(ahead, obj('a', '1'))).toBe(false);
    expect(isStale(ahead, obj('b', '21'))).toBe(true);
    expect(isStale(ahead, obj('b', '22'))).toBe(true);
    expect(isStale(ahead, obj('b', 'x'))).toBe(false); // not comparable: applied, and no longer filtered
    expect(ahead.size).toBe(0);
    ahead.set('ns/b', 22);
    expect(isStale(ahead, obj('b', '23'))).toBe(false);
    expect(isStale(ahead, obj('b', '21'))).toBe(false);
  });
});
