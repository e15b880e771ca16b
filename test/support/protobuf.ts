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
