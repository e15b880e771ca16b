/**
 * The streamed LIST readers (src/kube/list-stream.ts) on every way of cutting a body into chunks: items come out
 * whole and in order, whatever falls on a chunk boundary (inside a string, an escape, a multibyte character, a
 * varint); hostile bodies (unterminated, too deep, an item too large, not a list) end in an error naming it.
 */
import { describe, expect, it } from 'vitest';
import { JsonListStream, ProtoListStream, type ListStreamLimits } from '../../src/kube/list-stream.js';
import { readSecret } from '../../src/kube/secret-proto.js';
import { entry, k8sEnvelope, ld, str, varint } from '../support/protobuf.js';

/** `body` pushed in pieces of `size` bytes (each a fresh array, reused after the push: the reader must copy). */
function chunked(body: Buffer, size: number, push: (c: Uint8Array) => void): void {
  const scratch = new Uint8Array(size);
  for (let i = 0; i < body.length; i += size) {
    const piece = body.subarray(i, i + size);
    const c = scratch.subarray(0, piece.length);
    c.set(piece);
    push(c);
    c.fill(0x7b); // what a reused network buffer would hold next
  }
}

function readJson(
  body: Buffer | string,
  size: number,
  limits?: ListStreamLimits,
): { items: unknown[]; env: ReturnType<JsonListStream['end']> } {
  const items: unknown[] = [];
  const s = new JsonListStream((o) => items.push(o), limits);
  chunked(Buffer.from(body), size, (c) => s.push(c));
  return { items, env: s.end() };
}

const ITEMS = [
  { metadata: { name: 'a', annotations: { note: 'quote " backslash \\ brace } bracket ] {[' } } },
  { metadata: { name: 'é—😀', labels: { 'x/y': '\u00e9\u0000\n\t' } }, spec: { list: [1, [2, [3]], { deep: { er: true } }] } },
  { metadata: { name: 'c' }, data: { 'tls.crt': 'QUJD', empty: '' }, n: -1.5e3, f: false, z: null },
];

describe('JsonListStream', () => {
  const body = JSON.stringify({ apiVersion: 'v1', items: ITEMS, kind: 'SecretList', metadata: { resourceVersion: '42', continue: 'tok' } });

  it('cuts every item out whole, at every chunk size from 1 byte up', () => {
    for (const size of [1, 2, 3, 5, 7, 13, 64, body.length]) {
      const { items, env } = readJson(body, size);
      expect(items).toEqual(ITEMS);
      expect(env).toEqual({ apiVersion: 'v1', kind: 'SecretList', metadata: { resourceVersion: '42', continue: 'tok' } });
    }
  });

  it('reads the metadata before or after the items, whitespace anywhere, an empty list, no continue', () => {
    const pretty = JSON.stringify({ metadata: { resourceVersion: '7', continue: '' }, kind: 'L', items: ITEMS }, null, 2);
    expect(readJson(pretty, 3)).toEqual({ items: ITEMS, env: { kind: 'L', metadata: { resourceVersion: '7' } } });
    expect(readJson('{"items":[],"metadata":{}}', 1)).toEqual({ items: [], env: { metadata: {} } });
    expect(readJson('{"items":null,"metadata":{"resourceVersion":"1"}}', 4).items).toEqual([]);
  });

  it('does not take a nested "items" or a key that only starts with it for the list', () => {
    const b = JSON.stringify({ itemsX: [1], metadata: { items: [2] }, items: [{ items: [{ a: 1 }] }] });
    expect(readJson(b, 2).items).toEqual([{ items: [{ a: 1 }] }]);
  });

  it('refuses hostile bodies with what and where', () => {
    const err = (b: string, limits?: ListStreamLimits): string => {
      try {
        readJson(b, 3, limits);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err('{"items":[{"a":"unterminated')).toMatch(/^JSON list: unterminated list at byte \d+$/);
    expect(err('{"items":[{"a":1}')).toMatch(/unterminated list/);
    expect(err('')).toMatch(/empty body/);
    expect(err('[{"a":1}]')).toMatch(/not a JSON object at byte 0/);
    expect(err('{"items":[1,2]}')).toMatch(/items\[0\] is not an object at byte 10/);
    expect(err('{"items":[{"a":1},"x"]}')).toMatch(/items\[1\] is not an object/);
    expect(err('{"items":[{"a":[[[[[1]]]]]}]}', { maxDepth: 6 })).toMatch(/nesting deeper than 6 at byte 18/);
    expect(err(`{"items":[{"a":"${'x'.repeat(100)}"}]}`, { maxItemBytes: 50 })).toMatch(/items\[0\] larger than 50 bytes/);
    expect(err(`{"items":[{"a":1}],"metadata":{"x":"${'x'.repeat(100)}"}}`, { maxEnvelopeBytes: 60 })).toMatch(
      /envelope larger than 60 bytes/,
    );
    expect(err('{"items":[{"a":1}]}}')).toMatch(/data after the list|unbalanced/);
    expect(err('{"items":[{"a":tru}]}')).toMatch(/^JSON list: items\[0\]: /);
    expect(err('{"items":[{"a":1}],"items":[]}')).toMatch(/a second "items"/);
  });
});

// protobuf, hand-encoded (test/support/protobuf.ts)
// with a varint field in the envelope the reader must skip
const k8s = (raw: number[], trailer = true): Buffer => k8sEnvelope(raw, { skippedVarint: true, trailer });
const KEY = Buffer.from('-----BEGIN PRIVATE KEY-----secret');
const crt = (i: number): Buffer => Buffer.alloc(200 + i * 37, i);
const secretMsg = (i: number): number[] => [
  ...ld(1, [...str(1, `s${i}-é`), ...str(3, 'ns'), ...str(6, String(100 + i)), ...entry(12, 'a', 'ü'.repeat(i))]),
  ...entry(2, 'tls.crt', crt(i)),
  ...entry(2, 'tls.key', KEY),
  ...str(3, 'kubernetes.io/tls'),
];
const list = (n: number, meta = [...str(2, '99'), ...str(3, 'next')]): number[] => {
  const out = [...ld(1, meta)];
  for (let i = 0; i < n; i++) out.push(...ld(2, secretMsg(i)));
  return out;
};
const keep = new Set(['tls.crt']);

function readProto(body: Buffer, size: number, limits?: ListStreamLimits): { items: unknown[]; meta: unknown } {
  const items: unknown[] = [];
  const s = new ProtoListStream((b) => items.push(readSecret(b, keep)), limits);
  chunked(body, size, (c) => s.push(c));
  return { items, meta: s.end().metadata };
}

describe('ProtoListStream', () => {
  const body = k8s(list(5));
  const expected = Array.from({ length: 5 }, (_, i) => ({
    metadata: { name: `s${i}-é`, namespace: 'ns', resourceVersion: String(100 + i), annotations: { a: 'ü'.repeat(i) } },
    data: { 'tls.crt': crt(i).toString('base64') },
    type: 'kubernetes.io/tls',
  }));

  it('hands on every item whole, at every chunk size from 1 byte up, and the list metadata', () => {
    for (const size of [1, 2, 3, 7, 100, 333, body.length]) {
      const { items, meta } = readProto(body, size);
      expect(items).toEqual(expected);
      expect(meta).toEqual({ resourceVersion: '99', continue: 'next' });
    }
    expect(readProto(k8s(list(0, [...str(2, '5'), ...str(3, '')]), false), 2)).toEqual({ items: [], meta: { resourceVersion: '5' } });
  });

  it('never keeps the private key: the item bytes hold it, the item read does not', () => {
    const { items } = readProto(body, 9);
    expect(JSON.stringify(items)).not.toContain('PRIVATE');
  });

  it('refuses hostile bodies with what and where', () => {
    const err = (b: Buffer, limits?: ListStreamLimits): string => {
      try {
        readProto(b, 5, limits);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err(body.subarray(0, body.length - 40))).toMatch(/^protobuf list: truncated list at byte \d+$/);
    expect(err(body.subarray(0, 2))).toMatch(/truncated list/);
    expect(err(Buffer.from('{"items":[]}'))).toMatch(/not a Kubernetes protobuf response at byte 4/);
    const max = secretMsg(1).length; // items 0 and 1 fit, item 2 does not
    expect(err(body, { maxItemBytes: max })).toMatch(new RegExp(`item 2 larger than ${max} bytes`));
    expect(err(k8s(list(1, str(2, 'x'.repeat(100)))), { maxEnvelopeBytes: 50 })).toMatch(/list metadata larger than 50 bytes/);
    expect(err(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...str(4, 'x')]))).toMatch(/response without a list/);
    expect(err(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...ld(2, [...ld(2, []), 0x13])]))).toMatch(/unsupported wire type 3/);
    // an item whose length runs past its list message
    expect(err(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...varint(2 * 8 + 2), 3, ...varint(2 * 8 + 2), 10, 1]))).toMatch(
      /field beyond its message/,
    );
    // fixed-width and varint fields running one byte past the list message (its length says 4, resp. 2)
    expect(err(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...varint(2 * 8 + 2), 4, 5 * 8 + 5, 1, 2, 3, 4]))).toMatch(/field beyond its message/);
    expect(err(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...varint(2 * 8 + 2), 2, 5 * 8, 0x80, 0x01]))).toMatch(/field beyond its message/);
    expect(err(Buffer.from([0x6b, 0x38, 0x73, 0x00, ...Array<number>(11).fill(0xff)]))).toMatch(/varint too long/);
  });
});
