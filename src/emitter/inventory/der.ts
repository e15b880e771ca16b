/**
 * The few X.509 facts the inventory keeps, read straight from the DER bytes: serial, validity, subject and
 * issuer names, DNS names. node:crypto's X509Certificate parses the whole certificate in OpenSSL and formats
 * every field (plus native allocations): at scale that is the largest CPU cost of the agent's initial sync. This
 * walk reads only the fields kept.
 *
 * It answers only when its result is certainly what X509Certificate (and the x509.ts helpers) would give:
 * common attribute types, plain ASCII values that need no escaping, DNS names of plain characters, UTC times
 * to the second. For anything else it returns undefined and facts.ts asks X509Certificate, so no certificate
 * ever reads differently (test/emitter/inventory/der.test.ts compares both).
 */

/** what parseChain reads of the leaf (the same texts as X509Certificate's getters, after x509.ts) */
export interface DerFacts {
  /** hex, upper case, as X509Certificate.serialNumber */
  serial: string;
  notBefore: number;
  notAfter: number;
  /** RDNs one per entry, `CN=value` (X509Certificate's lines) */
  subject: string[];
  issuer: string[];
  dnsNames: string[];
}

/** Short names OpenSSL prints (XN_FLAG_FN_SN) for the attribute types certificates carry. */
const ATTRIBUTE_NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.4': 'SN',
  '2.5.4.5': 'serialNumber',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.9': 'street',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.12': 'title',
  '2.5.4.42': 'GN',
  '0.9.2342.19200300.100.1.25': 'DC',
  '0.9.2342.19200300.100.1.1': 'UID',
  '1.2.840.113549.1.9.1': 'emailAddress',
};
const SAN_OID = '2.5.29.17';

/** values printed verbatim by OpenSSL's RFC 2253 escaping (no `,+"\<>;#`, no edge spaces, ASCII) */
const PLAIN_VALUE = /^[A-Za-z0-9.*_\-:/@()'=?&!][A-Za-z0-9 .*_\-:/@()'=?&!]*$/;
const PLAIN_DNS = /^[A-Za-z0-9.*_-]+$/;

/** A DER TLV: tag, content [start, end). Throws (caught by the caller) on anything malformed. */
interface Tlv {
  tag: number;
  start: number;
  end: number;
}

class Malformed extends Error {}

function tlv(b: Uint8Array, at: number, limit: number): Tlv {
  if (at + 2 > limit) throw new Malformed();
  const tag = b[at]!;
  if ((tag & 0x1f) === 0x1f) throw new Malformed(); // multi-byte tags: none in what we read
  let len = b[at + 1]!;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > limit) throw new Malformed();
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[start + i]!;
    start += n;
    if (len < 128 || (n > 1 && b[at + 2] === 0)) throw new Malformed(); // not the shortest form: not DER
  }
  const end = start + len;
  if (end > limit) throw new Malformed();
  return { tag, start, end };
}

function want(t: Tlv, tag: number): Tlv {
  if (t.tag !== tag) throw new Malformed();
  return t;
}

function oid(b: Uint8Array, t: Tlv): string {
  if (t.end <= t.start) throw new Malformed();
  const parts: number[] = [];
  let v = 0;
  for (let i = t.start; i < t.end; i++) {
    v = v * 128 + (b[i]! & 0x7f);
    if (v > Number.MAX_SAFE_INTEGER / 128) throw new Malformed();
    if (!(b[i]! & 0x80)) {
      if (parts.length === 0) parts.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else parts.push(v);
      v = 0;
    }
  }
  if (b[t.end - 1]! & 0x80) throw new Malformed();
  return parts.join('.');
}

function ascii(b: Uint8Array, t: Tlv): string {
  let s = '';
  for (let i = t.start; i < t.end; i++) {
    const c = b[i]!;
    if (c < 0x20 || c > 0x7e) throw new Malformed();
    s += String.fromCharCode(c);
  }
  return s;
}

const UTF8_STRING = 0x0c;
const PRINTABLE_STRING = 0x13;
const IA5_STRING = 0x16;

/** Name ::= SEQUENCE OF RDN; only single-valued RDNs of known types with plain values (else undefined) */
function name(b: Uint8Array, t: Tlv): string[] | undefined {
  want(t, 0x30);
  const out: string[] = [];
  for (let at = t.start; at < t.end;) {
    const set = want(tlv(b, at, t.end), 0x31);
    at = set.end;
    const atv = want(tlv(b, set.start, set.end), 0x30);
    if (atv.end !== set.end) return undefined; // multi-valued RDN (`+`): OpenSSL's layout, not ours
    const type = want(tlv(b, atv.start, atv.end), 0x06);
    const value = tlv(b, type.end, atv.end);
    if (value.end !== atv.end) throw new Malformed();
    const short = ATTRIBUTE_NAMES[oid(b, type)];
    if (short === undefined) return undefined;
    if (value.tag !== UTF8_STRING && value.tag !== PRINTABLE_STRING && value.tag !== IA5_STRING) return undefined;
    const v = ascii(b, value);
    if (!PLAIN_VALUE.test(v) || v.endsWith(' ')) return undefined;
    out.push(`${short}=${v}`);
  }
  return out;
}

const UTC_TIME = 0x17;
const GENERALIZED_TIME = 0x18;

/** UTCTime `YYMMDDHHMMSSZ` or GeneralizedTime `YYYYMMDDHHMMSSZ` to ms; other forms undefined */
function time(b: Uint8Array, t: Tlv): number | undefined {
  const s = ascii(b, t);
  let m: RegExpExecArray | null;
  let year: number;
  if (t.tag === UTC_TIME && (m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    const yy = Number(m[1]);
    year = yy >= 50 ? 1900 + yy : 2000 + yy; // RFC 5280 4.1.2.5.1
  } else if (t.tag === GENERALIZED_TIME && (m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s))) {
    year = Number(m[1]);
  } else return undefined;
  const [mo, d, h, mi, sec] = [2, 3, 4, 5, 6].map((i) => Number(m![i]));
  const ms = Date.UTC(year, mo! - 1, d, h, mi, sec);
  const back = new Date(ms);
  // Date.UTC rolls 31 February over to March: OpenSSL rejects such a date, so let it decide
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== mo! - 1 || back.getUTCDate() !== d || h! > 23 || mi! > 59 || sec! > 59)
    return undefined;
  return ms;
}

/** subjectAltName's dNSNames; undefined when it holds something the fast path does not read the same way */
function dnsNames(b: Uint8Array, t: Tlv): string[] | undefined {
  want(t, 0x30);
  const out: string[] = [];
  for (let at = t.start; at < t.end;) {
    const g = tlv(b, at, t.end);
    at = g.end;
    if (g.tag === 0x82) {
      const v = ascii(b, g);
      if (!PLAIN_DNS.test(v)) return undefined;
      out.push(v);
    } else if (g.tag !== 0x87) return undefined; // IP addresses are skipped as dnsNamesOf does; others: ask OpenSSL
  }
  return out;
}

/** The leaf's facts from its DER bytes, or undefined when X509Certificate must decide (see the file comment). */
export function derFacts(b: Uint8Array): DerFacts | undefined {
  try {
    const cert = want(tlv(b, 0, b.length), 0x30);
    if (cert.end !== b.length) return undefined;
    const tbs = want(tlv(b, cert.start, cert.end), 0x30);
    const sigAlg = want(tlv(b, tbs.end, cert.end), 0x30);
    const sig = want(tlv(b, sigAlg.end, cert.end), 0x03);
    if (sig.end !== cert.end) return undefined;
    // a signature's BIT STRING has no unused bits; OpenSSL refuses more than 7 ("invalid bit string bits left")
    if (sig.end === sig.start || b[sig.start] !== 0) return undefined;
    let f = tlv(b, tbs.start, tbs.end);
    if (f.tag === 0xa0) {
      // [0] EXPLICIT INTEGER v2 (1) or v3 (2): v1 (0) is the DER default, never written; anything else OpenSSL decides
      const v = want(tlv(b, f.start, f.end), 0x02);
      if (v.end !== f.end || v.end - v.start !== 1 || (b[v.start] !== 1 && b[v.start] !== 2)) return undefined;
      f = tlv(b, f.end, tbs.end);
    }
    const serialTlv = want(f, 0x02);
    if (serialTlv.end === serialTlv.start || b[serialTlv.start]! & 0x80) return undefined; // negative: OpenSSL's format
    // a leading 00 only before a byte with the high bit set (the shortest form), else not DER
    if (serialTlv.end - serialTlv.start > 1 && b[serialTlv.start] === 0 && !(b[serialTlv.start + 1]! & 0x80)) return undefined;
    let s = serialTlv.start;
    while (s < serialTlv.end - 1 && b[s] === 0) s++;
    if (s === serialTlv.end - 1 && b[s] === 0) return undefined; // zero
    const serial = Buffer.from(b.subarray(s, serialTlv.end)).toString('hex').toUpperCase();
    const algorithm = want(tlv(b, serialTlv.end, tbs.end), 0x30);
    const issuerTlv = tlv(b, algorithm.end, tbs.end);
    const issuer = name(b, issuerTlv);
    const validity = want(tlv(b, issuerTlv.end, tbs.end), 0x30);
    const nb = tlv(b, validity.start, validity.end);
    const na = tlv(b, nb.end, validity.end);
    if (na.end !== validity.end) return undefined;
    const notBefore = time(b, nb);
    const notAfter = time(b, na);
    const subjectTlv = tlv(b, validity.end, tbs.end);
    const subject = name(b, subjectTlv);
    const spki = want(tlv(b, subjectTlv.end, tbs.end), 0x30);
    if (!issuer || !subject || notBefore === undefined || notAfter === undefined) return undefined;
    let names: string[] = [];
    let sawSan = false;
    // after the key: [1] issuerUniqueID, [2] subjectUniqueID, [3] extensions, each optional, at most once, in order;
    // any other member is OpenSSL's to refuse ("wrong tag")
    let order = 0;
    for (let at = spki.end; at < tbs.end;) {
      const o = tlv(b, at, tbs.end);
      at = o.end;
      const rank = o.tag === 0x81 ? 1 : o.tag === 0x82 ? 2 : o.tag === 0xa3 ? 3 : 0;
      if (rank <= order) return undefined;
      order = rank;
      if (rank !== 3) continue;
      const exts = want(tlv(b, o.start, o.end), 0x30);
      if (exts.end !== o.end) return undefined;
      for (let e = exts.start; e < exts.end;) {
        const ext = want(tlv(b, e, exts.end), 0x30);
        e = ext.end;
        const id = want(tlv(b, ext.start, ext.end), 0x06);
        let v = tlv(b, id.end, ext.end);
        if (v.tag === 0x01) {
          // critical: only TRUE is written in DER (FALSE is the default)
          if (v.end - v.start !== 1 || b[v.start] !== 0xff) return undefined;
          v = tlv(b, v.end, ext.end);
        }
        want(v, 0x04);
        if (v.end !== ext.end) return undefined;
        if (oid(b, id) !== SAN_OID) continue;
        if (sawSan) return undefined; // twice: which one OpenSSL shows is its business
        sawSan = true;
        const inner = tlv(b, v.start, v.end);
        if (inner.end !== v.end) return undefined;
        const n = dnsNames(b, inner);
        if (!n) return undefined;
        names = n;
      }
    }
    return { serial, notBefore, notAfter, subject, issuer, dnsNames: names };
  } catch (e) {
    if (e instanceof Malformed) return undefined;
    throw e;
  }
}

/**
 * The DER bytes of one PEM block (`-----BEGIN CERTIFICATE-----` … `-----END CERTIFICATE-----`). Node's base64
 * decoder skips characters outside the alphabet where OpenSSL's PEM reader refuses them: a body that is not plain
 * base64 lines gives no bytes, so derFacts has no answer and X509Certificate decides.
 */
export function pemBody(pem: string): Buffer {
  const from = pem.indexOf(PEM_BEGIN);
  const to = pem.indexOf(PEM_END, from);
  if (from < 0 || to < 0) return Buffer.alloc(0);
  const body = pem.slice(from + PEM_BEGIN.length, to).replace(/\r?\n/g, '');
  if (body.length % 4 !== 0 || !STRICT_BASE64.test(body)) return Buffer.alloc(0);
  return Buffer.from(body, 'base64');
}
const STRICT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const PEM_BEGIN = '-----BEGIN CERTIFICATE-----';
const PEM_END = '-----END CERTIFICATE-----';
