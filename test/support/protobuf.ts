/** Hand encoding of protobuf fields, for tests of the readers in src/kube (secret-proto.ts, list-stream.ts). */

export const varint = (n: number): number[] => {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
};
/** a length-delimited field */
export const ld = (field: number, bytes: number[] | Buffer): number[] => [...varint(field * 8 + 2), ...varint(bytes.length), ...bytes];
export const str = (field: number, s: string): number[] => ld(field, Buffer.from(s));
/** a map entry {1: key, 2: value} */
export const entry = (field: number, k: string, v: Buffer | string): number[] => ld(field, [...str(1, k), ...ld(2, Buffer.from(v))]);
/**
 * The `k8s\0` envelope of a protobuf SecretList around `raw` (the list message's bytes). `skippedVarint`: a varint
 * field the reader must skip before the raw object; `trailer`: the contentType field after it.
 */
export const k8sEnvelope = (raw: number[], opts: { skippedVarint?: boolean; trailer?: boolean } = {}): Buffer =>
  Buffer.from([
    0x6b,
    0x38,
    0x73,
    0x00,
    ...ld(1, [...str(1, 'v1'), ...str(2, 'SecretList')]),
    ...(opts.skippedVarint ? [...varint(3 * 8), ...varint(300)] : []),
    ...ld(2, raw),
    ...(opts.trailer === false ? [] : str(4, 'application/vnd.kubernetes.protobuf')),
  ]);
