/**
 * dropBase64Members: the members named are gone, the JSON stays valid and means the same otherwise, whatever
 * the members' positions; values that are not plain base64 strings are left alone.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { dropBase64Members } from '../../src/kube/drop-members.js';

const drop = (o: unknown, keys = ['tls.key', 'ca.crt']): unknown =>
  JSON.parse(dropBase64Members(Buffer.from(JSON.stringify(o)), keys).toString());

describe('dropBase64Members', () => {
  it.each([
    ['first', { 'ca.crt': 'QUJD', 'tls.crt': 'Q1JU', x: 1 }, { 'tls.crt': 'Q1JU', x: 1 }],
    ['last', { 'tls.crt': 'Q1JU', 'tls.key': 'S0VZ' }, { 'tls.crt': 'Q1JU' }],
    ['first and last', { 'ca.crt': 'QUJD', 'tls.crt': 'Q1JU', 'tls.key': 'S0VZ' }, { 'tls.crt': 'Q1JU' }],
    ['the only one', { 'tls.key': 'S0VZ' }, {}],
    ['adjacent, last', { a: 1, 'ca.crt': 'QUJD', 'tls.key': 'S0VZ' }, { a: 1 }],
    ['adjacent, first', { 'ca.crt': 'QUJD', 'tls.key': 'S0VZ', a: 1 }, { a: 1 }],
    ['all', { 'ca.crt': 'QUJD', 'tls.key': 'S0VZ' }, {}],
    ['empty value', { 'tls.key': '', b: [1] }, { b: [1] }],
  ])('%s', (_, data, want) => {
    expect(drop({ items: [{ data }, { data }] })).toEqual({ items: [{ data: want }, { data: want }] });
  });

  it('leaves values that are not plain base64 strings, and keys merely containing the name', () => {
    const o = {
      metadata: { annotations: { 'tls.key': 'not "base64" here', 'x-tls.key': 'QUJD' } },
      managedFields: [{ 'f:tls.key': {} }],
      data: { 'tls.key': 'S0VZ' },
      note: 'a string with "tls.key":"QUJD" inside',
    };
    expect(drop(o)).toEqual({ ...o, data: {} });
  });

  it('returns the same buffer when nothing matches', () => {
    const b = Buffer.from('{"data":{"tls.crt":"QUJD"}}');
    expect(dropBase64Members(b, ['tls.key'])).toBe(b);
  });

  it('random objects: the named base64 members removed anywhere, everything else kept', () => {
    const b64 = fc.base64String({ maxLength: 24 });
    const key = fc.constantFrom('tls.key', 'ca.crt', 'tls.crt', 'a', 'b.c', 'tls.keys');
    const obj = fc.dictionary(key, fc.oneof(b64, fc.integer(), fc.constant('x"y')), { maxKeys: 6 });
    fc.assert(
      fc.property(fc.array(obj, { maxLength: 4 }), (items) => {
        const want = items.map((o) =>
          Object.fromEntries(
            Object.entries(o).filter(([k, v]) => !((k === 'tls.key' || k === 'ca.crt') && typeof v === 'string' && /^[A-Za-z0-9+/=]*$/.test(v))),
          ),
        );
        expect(drop({ items })).toEqual({ items: want });
      }),
    );
  });
});
