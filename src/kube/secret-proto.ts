/**
 * A LIST page of Secrets in the apiserver's protobuf encoding (`application/vnd.kubernetes.protobuf`), read
 * into the fields a Secret informer uses, pure. The apiserver encodes a protobuf page several times faster than
 * JSON (a Secret's data is bytes there, base64 in JSON), and here each Secret costs only the fields read: the
 * data values not asked for (`tls.key`) are skipped without being copied, so they never become strings in this
 * process. Wire format: the 4-byte magic `k8s\0`, then a runtime.Unknown {1: typeMeta, 2: raw, 3: contentEncoding,
 * 4: contentType} whose `raw` is a v1.SecretList {1: ListMeta {2: resourceVersion, 3: continue}, 2: repeated
 * Secret {1: ObjectMeta {1: name, 3: namespace, 5: uid, 6: resourceVersion, 11: labels, 12: annotations}, 2: data
 * (map<string, bytes>), 3: type}} (k8s.io/api core/v1 and apimachinery meta/v1 generated.proto). Anything else
 * is skipped by its wire type, so fields added later do not break the reading.
 *
 * The wire reading (varints, tags, lengths, skipping by wire type, bounds: "premature EOF") is @bufbuild/protobuf's
 * `BinaryReader` (a dependency already, under @bufbuild/cel; what its generated code reads with), rather than a
 * hand-written reader. No generated message classes: only the fields above are read, each nested message by its
 * bounds in the one page buffer (`bytes()` is a subarray, never a copy).
 */

import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';

export const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** What is read of one Secret: its data values as base64, as in the JSON form (the informer's transform is shared). */
export interface ProtoSecret {
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  type?: string;
  data?: Record<string, string>;
}

export interface ProtoSecretList {
  metadata: { resourceVersion?: string; continue?: string };
  items: ProtoSecret[];
}

const MAGIC = [0x6b, 0x38, 0x73, 0x00];

/** Calls `each(field, wire)` for every field of the message ending at `end`; `each` consumes the field (or skips it). */
function fields(r: BinaryReader, end: number, each: (field: number, wire: WireType) => void): void {
  while (r.pos < end) {
    const [field, wire] = r.tag();
    // groups (deprecated, never used by Kubernetes) are refused rather than skipped
    if (wire === WireType.StartGroup || wire === WireType.EndGroup) throw new Error(`unsupported wire type ${wire}`);
    each(field, wire);
  }
  if (r.pos > end) throw new Error('field beyond its message');
}

/** The end of the length-delimited message at the reader's position, within the enclosing message's `limit`. */
function sub(r: BinaryReader, limit: number): number {
  const end = r.uint32() + r.pos;
  if (end > limit) throw new Error('length beyond its message');
  return end;
}

/** A map<string, string|bytes> entry {1: key, 2: value}: the key and the value's [start, end) in the buffer. */
function entry(r: BinaryReader, end: number): [string, number, number] {
  let key = '';
  let start = 0;
  let stop = 0;
  fields(r, end, (f, w) => {
    if (f === 1 && w === WireType.LengthDelimited) key = r.string();
    else if (f === 2 && w === WireType.LengthDelimited) {
      // a subarray of the page, not a copy: only its bounds are kept
      const n = r.bytes().length;
      stop = r.pos;
      start = stop - n;
    } else r.skip(w);
  });
  return [key, start, stop];
}

function objectMeta(r: BinaryReader, end: number, buf: Buffer): ProtoSecret['metadata'] {
  const md: ProtoSecret['metadata'] = {};
  fields(r, end, (f, w) => {
    if (w !== WireType.LengthDelimited) return void r.skip(w);
    if (f === 1) md.name = r.string();
    else if (f === 3) md.namespace = r.string();
    else if (f === 5) md.uid = r.string();
    else if (f === 6) md.resourceVersion = r.string();
    else if (f === 11 || f === 12) {
      const [k, s, e] = entry(r, sub(r, end));
      const map = f === 11 ? (md.labels ??= {}) : (md.annotations ??= {});
      map[k] = buf.toString('utf8', s, e);
    } else r.skip(w);
  });
  return md;
}

function secret(r: BinaryReader, end: number, buf: Buffer, dataKeys: ReadonlySet<string>): ProtoSecret {
  const s: ProtoSecret = { metadata: {} };
  fields(r, end, (f, w) => {
    if (w !== WireType.LengthDelimited) return void r.skip(w);
    if (f === 1) s.metadata = objectMeta(r, sub(r, end), buf);
    else if (f === 2) {
      // a value not asked for (tls.key) is only stepped over: it never becomes a string
      const [k, start, stop] = entry(r, sub(r, end));
      if (dataKeys.has(k)) (s.data ??= {})[k] = buf.toString('base64', start, stop);
    } else if (f === 3) s.type = r.string();
    else r.skip(w);
  });
  return s;
}

/** A reader past the magic, at the runtime.Unknown's `raw` (field 2), and that message's end; undefined without one. */
function body(buf: Buffer): [BinaryReader, number] | undefined {
  const r = new BinaryReader(buf);
  r.pos = 4;
  let raw: [number, number] | undefined;
  fields(r, buf.length, (f, w) => {
    if (f === 2 && w === WireType.LengthDelimited) {
      const end = sub(r, buf.length);
      raw = [r.pos, end];
      r.pos = end;
    } else r.skip(w);
  });
  if (!raw) return undefined;
  r.pos = raw[0];
  return [r, raw[1]];
}

const isK8s = (buf: Buffer): boolean => buf.length >= 4 && MAGIC.every((b, i) => buf[i] === b);

/**
 * Reads a SecretList page; only the data keys in `dataKeys` are kept (as base64, like the JSON form). Throws
 * `protobuf: …` on bytes that are not such a page (wrong magic, truncated or overlong fields, groups).
 */
export function readSecretList(buf: Buffer, dataKeys: ReadonlySet<string>): ProtoSecretList {
  if (!isK8s(buf)) throw new Error('protobuf: not a Kubernetes protobuf response');
  try {
    const found = body(buf);
    if (!found) throw new Error('response without a body');
    const [r, end] = found;
    const list: ProtoSecretList = { metadata: {}, items: [] };
    fields(r, end, (f, w) => {
      if (w !== WireType.LengthDelimited) return void r.skip(w);
      if (f === 1) {
        fields(r, sub(r, end), (mf, mw) => {
          if (mf === 2 && mw === WireType.LengthDelimited) list.metadata.resourceVersion = r.string();
          else if (mf === 3 && mw === WireType.LengthDelimited) list.metadata.continue = r.string();
          else r.skip(mw);
        });
      } else if (f === 2) list.items.push(secret(r, sub(r, end), buf, dataKeys));
      else r.skip(w);
    });
    return list;
  } catch (e) {
    // the library's words ("premature EOF", "invalid varint", "illegal tag") with what was being read
    throw new Error(`protobuf: ${(e as Error).message} (reading a SecretList page)`, { cause: e });
  }
}

/** Reads one Secret message (an item of a streamed list: list-stream.ts), as readSecretList reads each of a page. */
export function readSecret(buf: Buffer, dataKeys: ReadonlySet<string>): ProtoSecret {
  try {
    return secret(new BinaryReader(buf), buf.length, buf, dataKeys);
  } catch (e) {
    throw new Error(`protobuf: ${(e as Error).message} (reading a Secret)`, { cause: e });
  }
}

/** A Status (an error response) in protobuf: {3: message, 4: reason, 6: code}; undefined when unreadable. */
export function readStatus(buf: Buffer): { message?: string; reason?: string; code?: number } | undefined {
  if (!isK8s(buf)) return undefined;
  try {
    const found = body(buf);
    if (!found) return undefined;
    const [r, end] = found;
    const st: { message?: string; reason?: string; code?: number } = {};
    fields(r, end, (f, w) => {
      if (f === 3 && w === WireType.LengthDelimited) st.message = r.string();
      else if (f === 4 && w === WireType.LengthDelimited) st.reason = r.string();
      else if (f === 6 && w === WireType.Varint) st.code = r.int32();
      else r.skip(w);
    });
    return st;
  } catch {
    return undefined;
  }
}
