/** The emitter's state store (ConfigMaps in its own namespace); see state.ts. */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { decodeHealthState, type HealthState } from './health/diff.js';
import { ConfigMapState } from './state.js';

export const DEFAULT_STATE_NAME = 'certmgr-notify-emitter';
/**
 * 128 shards: a stored episode is at most HEALTH_ENTRY_MAX_BYTES + key, so 10,000 open episodes stay far below
 * the 1 MiB a ConfigMap may hold, even in the worst case. Each write rewrites one whole shard in etcd: smaller
 * shards make the controller's one-key writes cheaper, fewer shards coalesce more of a burst (docs/emitter.md).
 */
export const HEALTH_STATE_SHARDS = 128;
/** Bytes (UTF-8 JSON) of a stored health state value at most: the variable texts are cut to fit. */
export const HEALTH_ENTRY_MAX_BYTES = 2048;
/** Per-field caps (characters), the event schema's (src/events/schemas.ts) */
const ISSUER_NAME_MAX = 253;
const DNS_NAME_MAX = 253;
const SUBJECT_TEXT_MAX = 256;
const SUBJECT_LISTS = ['organizations', 'organizationalUnits', 'countries', 'localities', 'provinces'] as const;

const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

/** At most `maxChars` code units (not splitting a surrogate pair) and at most `maxBytes` as a JSON string. */
function cut(text: string, maxChars: number, maxBytes: number): string {
  let t = text.length > maxChars ? text.slice(0, maxChars) : text;
  if (/[\uD800-\uDBFF]$/.test(t) && text.length > t.length) t = t.slice(0, -1);
  if (jsonBytes(t) <= maxBytes) return t;
  let out = '';
  let bytes = 2; // the quotes
  for (const cp of t) {
    const b = jsonBytes(cp) - 2;
    if (bytes + b > maxBytes) break;
    out += cp;
    bytes += b;
  }
  return out;
}

/**
 * What is stored of a health state: its identity is kept so that a resource deleted while the emitter was down
 * still gets its `.active` (statusReason `Deleted`), but a Certificate's (or a Secret's, serving.ts) issuerName,
 * subject and dnsNames are cut to fit HEALTH_ENTRY_MAX_BYTES (whole names, in order; dnsNames before the subject
 * lists). Memory keeps the full identity; only an `.active` sent after a restart for a deleted Certificate carries
 * the shortened lists.
 */
export function storedHealthState(s: HealthState, maxBytes = HEALTH_ENTRY_MAX_BYTES): HealthState {
  const { runbookUrl, ...rest } = s.id;
  if (runbookUrl === undefined) return storedIdentity(s, maxBytes);
  // the runbook URL (docs/annotations.md) is kept whole when it fits after the identity, else dropped: a cut URL
  // would be a wrong link. Only a `.active` for a resource deleted while the emitter was down can lack it.
  const base = storedIdentity({ ...s, id: rest }, maxBytes);
  const withUrl = { ...base, id: { ...base.id, runbookUrl } };
  return jsonBytes(withUrl) <= maxBytes ? withUrl : base;
}

function storedIdentity(s: HealthState, maxBytes: number): HealthState {
  const id = s.id;
  // a Secret without a Certificate (serving problems) has a certificate identity too: its leaf's subject and names
  if (id.kind !== 'Certificate' && id.kind !== 'Secret') return s;
  const subject = id.subject;
  const skeleton: HealthState = {
    ...s,
    id: {
      ...id,
      issuerName: '',
      subject: subject && { commonName: '', countries: [], localities: [], organizationalUnits: [], organizations: [], provinces: [] },
      SANs: {},
    },
  };
  let budget = maxBytes - jsonBytes(skeleton);
  const text = (t: string, maxChars: number): string => {
    const c = cut(t, maxChars, Math.max(2, budget));
    budget -= jsonBytes(c) - 2;
    return c;
  };
  /** whole entries while they fit; `open` is what the first entry adds (a key, or nothing for [] already there) */
  const list = (items: readonly string[], maxChars: number, open: number): string[] => {
    const out: string[] = [];
    for (const item of items) {
      const t = item.length > maxChars ? cut(item, maxChars, Infinity) : item;
      const b = jsonBytes(t) + (out.length === 0 ? open : 1);
      if (b > budget) break;
      out.push(t);
      budget -= b;
    }
    return out;
  };
  const next = skeleton.id;
  next.issuerName = text(id.issuerName ?? '', ISSUER_NAME_MAX);
  if (subject && next.subject) next.subject.commonName = text(subject.commonName, SUBJECT_TEXT_MAX);
  const dns = list(id.SANs?.['DNS Names'] ?? [], DNS_NAME_MAX, jsonBytes('DNS Names') + 3);
  if (dns.length > 0) next.SANs = { 'DNS Names': dns };
  if (subject && next.subject) for (const k of SUBJECT_LISTS) next.subject[k] = list(subject[k], SUBJECT_TEXT_MAX, 0);
  return skeleton;
}

/** `<name>-health-0…127`: open episodes whose `.notready` was sent. */
export function emitterStates(o: {
  core: CoreV1Api;
  namespace: string;
  name: string;
  log: Logger;
  /** default HEALTH_STATE_SHARDS; entries of another count are moved on load */
  healthShards?: number;
}): {
  health: ConfigMapState<HealthState>;
} {
  const common = { core: o.core, namespace: o.namespace, log: o.log };
  return {
    health: new ConfigMapState<HealthState>({
      ...common,
      name: `${o.name}-health`,
      shards: o.healthShards ?? HEALTH_STATE_SHARDS,
      persist: (s) => s.notified,
      encode: storedHealthState,
      decode: decodeHealthState,
    }),
  };
}
