/**
 * ResilientInformer `streamed` (the emitter's informers): the first list asks for resourceVersion=0 (the
 * apiserver's watch cache), a relist for the last resourceVersion seen without a limit, and a relist the
 * apiserver refuses (410, 504) falls back to the paginated list from etcd; a server that paginates anyway gets
 * continue requests without a resourceVersion. Items arrive through `each` as the list function streams them.
 * Scripted Watch, fake clock, a scripted list function.
 */
import type { KubernetesObject, Watch } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ResilientInformer, type ListPage } from '../../src/kube/informer.js';
import { FakeClock, flush } from '../runtime/fake-clock.js';
import { ScriptedWatch } from './scripted-watch.js';

const obj = (name: string, rv: string): KubernetesObject => ({ metadata: { name, namespace: 'ns', resourceVersion: rv } });
const cut = () => Object.assign(new TypeError('terminated'), { cause: { code: 'UND_ERR_SOCKET' } });

/** `answer(page)`: the items streamed, the list's resourceVersion and continue, or an error thrown */
function setup(answer: (page: ListPage) => { items: KubernetesObject[]; rv: string; cont?: string } | Error) {
  const clock = new FakeClock();
  const watch = new ScriptedWatch();
  const pages: ListPage[] = [];
  const inf = new ResilientInformer<KubernetesObject>({
    name: 'certificates',
    kc: {} as never,
    path: '/apis/cert-manager.io/v1/certificates',
    list: async (page, each) => {
      pages.push(page);
      const a = answer(page);
      if (a instanceof Error) throw a;
      for (const o of a.items) each!(o);
      return { metadata: { resourceVersion: a.rv, ...(a.cont ? { continue: a.cont } : {}) }, items: [] } as never;
    },
    streamed: true,
    relistAfterError: true,
    pageSize: 2,
    log: pino({ level: 'silent' }),
    backoff: { baseMs: 100, maxMs: 400 },
    clock,
    watch: watch as unknown as Watch,
  });
  return { clock, watch, inf, pages };
}

const status = (code: number, message = 'x') => Object.assign(new Error(`HTTP ${code}`), { code, body: JSON.stringify({ code, message }) });
const REFUSALS = [
  ['410', status(410, 'too old resource version: 10 (20)')],
  ['504 Too large resource version', status(504, 'Too large resource version: 10, current: 9')],
] as const;

describe('ResilientInformer streamed', () => {
  it('lists from the cache (resourceVersion=0), relists from the last resourceVersion seen without a limit', async () => {
    let relisted = false;
    const t = setup((p) =>
      p.resourceVersion === '0'
        ? { items: [obj('a', '5'), obj('b', '6'), obj('c', '7')], rv: '10' }
        : ((relisted = true), { items: [obj('a', '5'), obj('d', '13')], rv: '14' }),
    );
    await t.inf.start();
    await flush();
    expect(t.pages).toEqual([{ limit: 2, resourceVersion: '0' }]);
    expect(t.inf.list().map((o) => o.metadata?.name)).toEqual(['a', 'b', 'c']);
    expect(t.watch.last.query['resourceVersion']).toBe('10');
    t.watch.last.cb('MODIFIED', obj('b', '12'));
    t.watch.last.done(cut());
    await t.clock.advance(100);
    await flush();
    expect(relisted).toBe(true);
    expect(t.pages[1]).toEqual({ resourceVersion: '12' }); // the watch event's, newer than the list's
    expect(
      t.inf
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['a', 'd']);
    expect(t.watch.last.query['resourceVersion']).toBe('14');
  });

  for (const [what, refusal] of REFUSALS) {
    it(`a relist refused with ${what} falls back to the paginated list from etcd`, async () => {
      const t = setup((p) => {
        if (p.resourceVersion === '0') return { items: [obj('a', '5')], rv: '10' };
        if (p.resourceVersion !== undefined) return refusal;
        return p.continue === undefined
          ? { items: [obj('a', '5'), obj('b', '20')], rv: '21', cont: 'k' }
          : { items: [obj('c', '21')], rv: '21' };
      });
      await t.inf.start();
      await flush();
      t.watch.last.done(cut());
      await t.clock.advance(100);
      await flush();
      expect(t.pages).toEqual([{ limit: 2, resourceVersion: '0' }, { resourceVersion: '10' }, { limit: 2 }, { limit: 2, continue: 'k' }]);
      expect(t.inf.list().map((o) => o.metadata?.name)).toEqual(['a', 'b', 'c']);
      expect(t.watch.last.query['resourceVersion']).toBe('21');
    });
  }

  it('a relist refused otherwise (a 504 timeout: a cache still filling after a restart) is an error, retried as it was', async () => {
    let fail = true;
    const t = setup((p) =>
      p.resourceVersion === '0'
        ? { items: [obj('a', '5')], rv: '10' }
        : fail
          ? ((fail = false), status(504, 'the server was unable to return a response in the time allotted'))
          : { items: [], rv: '30' },
    );
    await t.inf.start();
    await flush();
    t.watch.last.done(cut());
    await t.clock.advance(100);
    await flush();
    expect(t.pages).toEqual([{ limit: 2, resourceVersion: '0' }, { resourceVersion: '10' }]);
    expect(t.inf.stats.errors).toBe(2);
    await t.clock.advance(400);
    await flush();
    expect(t.pages.at(-1)).toEqual({ resourceVersion: '10' });
    expect(t.inf.list()).toEqual([]);
  });

  it('a server that paginates the first list (no watch cache) gets continue requests without a resourceVersion', async () => {
    const t = setup((p) =>
      p.continue === undefined ? { items: [obj('a', '5'), obj('b', '6')], rv: '10', cont: 'x' } : { items: [obj('c', '7')], rv: '10' },
    );
    await t.inf.start();
    await flush();
    expect(t.pages).toEqual([
      { limit: 2, resourceVersion: '0' },
      { limit: 2, continue: 'x' },
    ]);
    expect(t.inf.stats.pages).toBe(2);
    expect(t.inf.list()).toHaveLength(3);
  });
});
