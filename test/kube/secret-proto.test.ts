/**
 * readSecretList / readStatus on hand-encoded protobuf (the real apiserver's pages are compared with its JSON in
 * informer-pages.int.test.ts): the fields read, the data keys kept (others skipped), unknown fields of every wire
 * type skipped, and bytes that are not a page refused.
 */
import { describe, expect, it } from 'vitest';
import { readSecretList, readStatus } from '../../src/kube/secret-proto.js';
import { entry, k8sEnvelope, ld, str, varint } from '../support/protobuf.js';

const vi = (field: number, n: number): number[] => [...varint(field * 8), ...varint(n)];
const fixed64 = (field: number): number[] => [...varint(field * 8 + 1), 1, 2, 3, 4, 5, 6, 7, 8];
const fixed32 = (field: number): number[] => [...varint(field * 8 + 5), 1, 2, 3, 4];
const k8s = (raw: number[]): Buffer => k8sEnvelope(raw);

const KEY = Buffer.from('-----BEGIN PRIVATE KEY-----secret');
const CRT = Buffer.from([0, 1, 2, 250, 255]);

function secret(name: string): number[] {
  const meta = [
    ...str(1, name),
    ...str(2, 'gen-'),
    ...str(3, 'shop'),
    ...str(5, `uid-${name}`),
    ...str(6, '42'),
    ...vi(7, 3),
    ...ld(8, [...vi(1, 1_700_000_000)]),
    ...entry(11, 'app', 'web'),
    ...entry(11, 'tier', 'front'),
    ...entry(12, 'cert-manager.io/certificate-name', name),
    ...ld(17, [...str(1, 'kubectl')]),
    ...fixed64(99),
    ...fixed32(98),
  ];
  return [
    ...ld(1, meta),
    ...entry(2, 'ca.crt', 'CA'),
    ...entry(2, 'tls.crt', CRT),
    ...entry(2, 'tls.key', KEY),
    ...str(3, 'kubernetes.io/tls'),
    ...vi(5, 1),
  ];
}

describe('readSecretList', () => {
  const page = k8s([
    ...ld(1, [...str(1, '/self'), ...str(2, '1234'), ...str(3, 'next-token'), ...vi(4, 7)]),
    ...ld(2, secret('a')),
    ...ld(2, secret('b')),
  ]);

  it('reads the fields and the data keys asked for; skips everything else', () => {
    const list = readSecretList(page, new Set(['tls.crt']));
    expect(list.metadata).toEqual({ resourceVersion: '1234', continue: 'next-token' });
    expect(list.items).toEqual(
      ['a', 'b'].map((n) => ({
        metadata: {
          name: n,
          namespace: 'shop',
          uid: `uid-${n}`,
          resourceVersion: '42',
          labels: { app: 'web', tier: 'front' },
          annotations: { 'cert-manager.io/certificate-name': n },
        },
        data: { 'tls.crt': CRT.toString('base64') },
        type: 'kubernetes.io/tls',
      })),
    );
    expect(JSON.stringify(list)).not.toContain(KEY.toString('base64').slice(0, 12));
  });

  it('an empty list, and a Secret without data', () => {
    expect(readSecretList(k8s([...ld(1, str(2, '9'))]), new Set(['tls.crt']))).toEqual({ metadata: { resourceVersion: '9' }, items: [] });
    expect(readSecretList(k8s(ld(2, ld(1, str(1, 'x')))), new Set(['tls.crt'])).items).toEqual([{ metadata: { name: 'x' } }]);
  });

  it.each([
    ['JSON', Buffer.from('{"kind":"SecretList"}'), /^protobuf: not a Kubernetes protobuf response/],
    ['no magic', Buffer.from([1, 2]), /^protobuf: not a Kubernetes protobuf response/],
    ['truncated', page.subarray(0, page.length - 5), /^protobuf: .*(premature EOF|beyond its message)/],
    ['a length beyond the message', k8s([...varint(2 * 8 + 2), 100, 1, 2]), /^protobuf: length beyond its message/],
    ['a length beyond the page', Buffer.from([0x6b, 0x38, 0x73, 0x00, ...varint(2 * 8 + 2), 100]), /^protobuf: length beyond/],
    ['an unknown wire type', k8s([...varint(3 * 8 + 3)]), /^protobuf: unsupported wire type 3/],
    ['an illegal wire type', k8s([...varint(3 * 8 + 7)]), /^protobuf: illegal tag/],
    ['a tag varint too long', k8s(Array<number>(11).fill(0xff)), /^protobuf: invalid varint/],
    ['no body', Buffer.from([0x6b, 0x38, 0x73, 0x00, ...str(4, 'x')]), /^protobuf: response without a body/],
  ])('refuses %s', (_, bytes, message) => {
    expect(() => readSecretList(bytes, new Set(['tls.crt']))).toThrow(message);
  });
});

describe('readStatus', () => {
  it('message, reason and code of a protobuf Status; undefined for anything else', () => {
    const st = Buffer.from([
      0x6b,
      0x38,
      0x73,
      0x00,
      ...ld(2, [...ld(1, []), ...str(2, 'Failure'), ...str(3, 'too old'), ...str(4, 'Expired'), ...vi(6, 410)]),
    ]);
    expect(readStatus(st)).toEqual({ message: 'too old', reason: 'Expired', code: 410 });
    expect(readStatus(Buffer.from('{}'))).toBeUndefined();
    expect(readStatus(st.subarray(0, st.length - 3))).toBeUndefined();
  });
});
