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
 */

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

class Reader {
  constructor(
    readonly buf: Buffer,
    public pos: number,
    readonly end: number,
  ) {}

  get done(): boolean {
    return this.pos >= this.end;
  }

  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end) throw new Error('protobuf: truncated varint');
      const b = this.buf[this.pos++]!;
      // beyond 2^53 (not a length or a field number this reader needs) the value is only skipped
      if (shift < 53) result += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (!(b & 0x80)) return result;
      if (shift > 70) throw new Error('protobuf: varint too long');
    }
  }

  /** [start, end) of a length-delimited field's bytes */
  bytes(): [number, number] {
    const n = this.varint();
    const start = this.pos;
    if (start + n > this.end) throw new Error('protobuf: length beyond its message');
    this.pos = start + n;
    return [start, start + n];
  }

  string(): string {
    const [s, e] = this.bytes();
    return this.buf.toString('utf8', s, e);
  }

  sub(): Reader {
    const [s, e] = this.bytes();
    return new Reader(this.buf, s, e);
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`protobuf: unsupported wire type ${wire}`);
    if (this.pos > this.end) throw new Error('protobuf: field beyond its message');
  }
}

/** Calls `each(field, wire, reader)` for every field of the message; `each` must consume the field (or skip it). */
function fields(r: Reader, each: (field: number, wire: number) => void): void {
  while (!r.done) {
    const tag = r.varint();
    each(Math.floor(tag / 8), tag & 7);
  }
}

/** A map<string, string|bytes> entry {1: key, 2: value}. */
function entry(r: Reader): [string, [number, number]] {
  let key = '';
  let value: [number, number] = [0, 0];
  fields(r, (f, w) => {
    if (f === 1 && w === 2) key = r.string();
    else if (f === 2 && w === 2) value = r.bytes();
    else r.skip(w);
  });
  return [key, value];
}

function objectMeta(r: Reader): ProtoSecret['metadata'] {
  const md: ProtoSecret['metadata'] = {};
  fields(r, (f, w) => {
    if (w !== 2) return r.skip(w);
    if (f === 1) md.name = r.string();
    else if (f === 3) md.namespace = r.string();
    else if (f === 5) md.uid = r.string();
    else if (f === 6) md.resourceVersion = r.string();
    else if (f === 11 || f === 12) {
      const [k, [s, e]] = entry(r.sub());
      const map = f === 11 ? (md.labels ??= {}) : (md.annotations ??= {});
      map[k] = r.buf.toString('utf8', s, e);
    } else r.skip(w);
  });
  return md;
}

function secret(r: Reader, dataKeys: ReadonlySet<string>): ProtoSecret {
  const s: ProtoSecret = { metadata: {} };
  fields(r, (f, w) => {
    if (w !== 2) return r.skip(w);
    if (f === 1) s.metadata = objectMeta(r.sub());
    else if (f === 2) {
      const [k, [start, end]] = entry(r.sub());
      if (dataKeys.has(k)) (s.data ??= {})[k] = r.buf.toString('base64', start, end);
    } else if (f === 3) s.type = r.string();
    else r.skip(w);
  });
  return s;
}

/**
 * Reads a SecretList page; only the data keys in `dataKeys` are kept (as base64, like the JSON form). Throws on
 * bytes that are not such a page (wrong magic, truncated fields).
 */
export function readSecretList(buf: Buffer, dataKeys: ReadonlySet<string>): ProtoSecretList {
  if (buf.length < 4 || MAGIC.some((b, i) => buf[i] !== b)) throw new Error('protobuf: not a Kubernetes protobuf response');
  const unknown = new Reader(buf, 4, buf.length);
  let raw: Reader | undefined;
  fields(unknown, (f, w) => {
    if (f === 2 && w === 2) raw = unknown.sub();
    else unknown.skip(w);
  });
  if (!raw) throw new Error('protobuf: response without a body');
  const list: ProtoSecretList = { metadata: {}, items: [] };
  const r = raw;
  fields(r, (f, w) => {
    if (w !== 2) return r.skip(w);
    if (f === 1) {
      const m = r.sub();
      fields(m, (mf, mw) => {
        if (mf === 2 && mw === 2) list.metadata.resourceVersion = m.string();
        else if (mf === 3 && mw === 2) list.metadata.continue = m.string();
        else m.skip(mw);
      });
    } else if (f === 2) list.items.push(secret(r.sub(), dataKeys));
    else r.skip(w);
  });
  return list;
}

/** A Status (an error response) in protobuf: {3: message, 4: reason, 6: code}; undefined when unreadable. */
export function readStatus(buf: Buffer): { message?: string; reason?: string; code?: number } | undefined {
  try {
    if (buf.length < 4 || MAGIC.some((b, i) => buf[i] !== b)) return undefined;
    const unknown = new Reader(buf, 4, buf.length);
    let raw: Reader | undefined;
    fields(unknown, (f, w) => {
      if (f === 2 && w === 2) raw = unknown.sub();
      else unknown.skip(w);
    });
    if (!raw) return undefined;
    const r = raw;
    const st: { message?: string; reason?: string; code?: number } = {};
    fields(r, (f, w) => {
      if (f === 3 && w === 2) st.message = r.string();
      else if (f === 4 && w === 2) st.reason = r.string();
      else if (f === 6 && w === 0) st.code = r.varint();
      else r.skip(w);
    });
    return st;
  } catch {
    return undefined;
  }
}
