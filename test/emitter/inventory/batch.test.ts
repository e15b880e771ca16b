/** Pure: snapshot chunking and delta coalescing. */
import { describe, expect, it } from 'vitest';
import { ChangeBuffer, packReports, type InventoryChange } from '../../../src/emitter/inventory/batch.js';
import type { CertificateFacts } from '../../../src/model/inventory.js';

describe('packReports', () => {
  it.each([
    [0, 1000, [0]],
    [1, 1000, [1]],
    [1000, 1000, [1000]],
    [1001, 1000, [1000, 1]],
    [2500, 1000, [1000, 1000, 500]],
    [5, 2, [2, 2, 1]],
    [3, 0, [1, 1, 1]],
  ])('%i items by %i → report sizes %j', (n, max, sizes) => {
    const items = Array.from({ length: n }, (_, i) => i);
    const groups = [...packReports(items, max, Infinity, () => 1)];
    expect(groups.map((c) => c.length)).toEqual(sizes);
    expect(groups.flat()).toEqual(items); // in order, none lost or repeated
  });

  it.each([
    { name: 'bytes bind before the count', sizes: [400, 400, 400, 400], maxBytes: 1000, want: [2, 2] },
    { name: 'exactly the budget fits', sizes: [500, 500, 500], maxBytes: 1000, want: [2, 1] },
    { name: 'an item over the budget goes alone', sizes: [100, 5000, 100], maxBytes: 1000, want: [1, 1, 1] },
    { name: 'the count still binds', sizes: [1, 1, 1, 1, 1], maxBytes: 1000, want: [2, 2, 1], maxItems: 2 },
  ])('$name', ({ sizes, maxBytes, want, maxItems }) => {
    const groups = [...packReports(sizes, maxItems ?? 1000, maxBytes, (s) => s)];
    expect(groups.map((g) => g.length)).toEqual(want);
    expect(groups.flat()).toEqual(sizes);
  });

  it('lazy: items are pulled one report at a time', () => {
    let pulled = 0;
    const items = (function* () {
      for (let i = 0; i < 10; i++) {
        pulled++;
        yield i;
      }
    })();
    const g = packReports(items, 3, Infinity, () => 1);
    expect(g.next().value).toEqual([0, 1, 2]);
    expect(pulled).toBe(4); // the fourth told it the report was full
  });
});

const facts = (secretName: string, serial: string): CertificateFacts => ({
  namespace: 'ns',
  secretName,
  serial,
  notBefore: null,
  notAfter: null,
  subject: null,
  dnsNames: [],
  issuer: null,
  applicationIds: [],
  labels: {},
  chainNotAfter: null,
});
const up = (name: string, serial = '1'): InventoryChange => ({ upsert: facts(name, serial) });
const del = (name: string): InventoryChange => ({ delete: { namespace: 'ns', secretName: name } });

describe('ChangeBuffer', () => {
  it.each<{ name: string; changes: InventoryChange[]; upserts: [string, string][]; deletes: string[] }>([
    { name: 'nothing', changes: [], upserts: [], deletes: [] },
    { name: 'the latest upsert wins', changes: [up('a', '1'), up('a', '2'), up('a', '3')], upserts: [['a', '3']], deletes: [] },
    { name: 'upsert then delete = delete', changes: [up('a'), del('a')], upserts: [], deletes: ['a'] },
    { name: 'delete then upsert = upsert', changes: [del('a'), up('a', '9')], upserts: [['a', '9']], deletes: [] },
    {
      name: 'keys are independent, in the order each first changed',
      changes: [up('b'), up('a'), del('c'), up('b', '2')],
      upserts: [
        ['b', '2'],
        ['a', '1'],
      ],
      deletes: ['c'],
    },
  ])('$name', ({ changes, upserts, deletes }) => {
    const b = new ChangeBuffer();
    for (const c of changes) b.add(c);
    const got = b.take(1000);
    expect(got.upserts.map((u) => [u.secretName, u.serial])).toEqual(upserts);
    expect(got.deletes.map((d) => d.secretName)).toEqual(deletes);
    expect(b.size).toBe(0);
  });

  it('take(max) removes at most max, the oldest first; the rest stay', () => {
    const b = new ChangeBuffer();
    for (let i = 0; i < 5; i++) b.add(up(`s${i}`));
    expect(b.take(2).upserts.map((u) => u.secretName)).toEqual(['s0', 's1']);
    expect(b.size).toBe(3);
    b.add(del('s0')); // a change after the first take is a new change
    expect(b.take(10)).toMatchObject({
      upserts: [{ secretName: 's2' }, { secretName: 's3' }, { secretName: 's4' }],
      deletes: [{ secretName: 's0' }],
    });
  });

  it('take(max, maxBytes): within the byte budget, but at least one change', () => {
    const b = new ChangeBuffer();
    for (let i = 0; i < 4; i++) b.add(up(`s${i}`));
    const one = JSON.stringify(facts('s0', '1')).length;
    expect(b.take(10, one * 2).upserts).toHaveLength(2);
    expect(b.take(10, 1).upserts).toHaveLength(1);
    expect(b.size).toBe(1);
  });

  it('a delete carries the location only', () => {
    const b = new ChangeBuffer();
    b.add({ delete: { ...facts('a', '1') } });
    expect(b.take(1).deletes).toEqual([{ namespace: 'ns', secretName: 'a' }]);
  });
});
